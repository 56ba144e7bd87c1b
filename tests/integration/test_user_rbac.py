"""The chart's roles for users, on the real API server (RBAC authorizer, and the ClusterRole
aggregation controller of kube-controller-manager).

The two ClusterRoles are applied from `deploy/manifests/phalanx.yaml` (what `kubectl apply -f
deploy/manifests/` and `helm install` make); no binding names them: a namespace user gets them
through the built-in `edit` or `view` ClusterRole, bound in a RoleBinding as a namespace admin
would. Every request is then made as that user, a ServiceAccount of the test namespace with a
token from the TokenRequest API, so the API server decides as it would for a person.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config
from kubernetes.dynamic import DynamicClient

from tests.integration.conftest import Cluster
from tests.integration.operator_fixture import USER_ROLES, _token_kubeconfig, chart_manifests
from tests.integration.waiting import wait_for

pytestmark = pytest.mark.integration

GROUP, VERSION = "phalanx.dev", "v1alpha1"


def _rules_of(role: Any) -> set[tuple[str, str, str]]:
    return {
        (group, resource, verb)
        for rule in role.rules or []
        for group in rule.api_groups or []
        for resource in rule.resources or []
        for verb in rule.verbs or []
    }


@pytest.fixture(scope="module")
def user_roles(cluster: Cluster, phalanx_api: Any) -> Iterator[dict[str, dict[str, Any]]]:
    """The users' ClusterRoles of the plain manifests, applied; removed afterwards (so that
    `helm install` in test_helm.py finds none made by another field manager)."""
    cluster.require_disposable()
    roles = {
        d["metadata"]["name"]: d
        for d in chart_manifests()
        if d["kind"] == "ClusterRole" and d["metadata"]["name"] in USER_ROLES
    }
    assert set(roles) == set(USER_ROLES), "deploy/manifests/phalanx.yaml lacks the user roles"
    resource = DynamicClient(cluster.api_client).resources.get(
        api_version="rbac.authorization.k8s.io/v1", kind="ClusterRole"
    )
    for name, body in roles.items():
        resource.server_side_apply(
            body=body, name=name, field_manager="phalanx-tests", force_conflicts=True
        )
    rbac = client.RbacAuthorizationV1Api(cluster.api_client)
    # The aggregation controller copies their rules into `edit` and `view` (and `admin`).
    for builtin, name in (("edit", "phalanx-podgroup-editor"), ("view", "phalanx-viewer")):
        wanted = {
            (group, resource_, verb)
            for rule in roles[name]["rules"]
            for group in rule["apiGroups"]
            for resource_ in rule["resources"]
            for verb in rule["verbs"]
        }
        wait_for(
            lambda builtin=builtin, wanted=wanted: (
                wanted <= _rules_of(rbac.read_cluster_role(builtin))
            ),
            timeout=60,
            what=f"the rules of {name} to be aggregated into the ClusterRole {builtin}",
        )
    try:
        yield roles
    finally:
        for name in roles:
            try:
                rbac.delete_cluster_role(name)
            except client.ApiException as exc:
                if exc.status != 404:
                    raise


@pytest.fixture
def as_user(cluster: Cluster, tmp_path: Path) -> Iterator[Any]:
    """`as_user(namespace, user, builtin, cluster_wide=False)`: a ServiceAccount `user` of
    `namespace` bound to the built-in ClusterRole `builtin` (by a RoleBinding in that namespace,
    or a ClusterRoleBinding); an API client authenticated as it, and its user name."""
    rbac = client.RbacAuthorizationV1Api(cluster.api_client)
    cluster_bindings: list[str] = []

    def make(namespace: str, user: str, builtin: str, cluster_wide: bool = False) -> Any:
        cluster.core.create_namespaced_service_account(namespace, {"metadata": {"name": user}})
        binding = {
            "metadata": {"name": f"{namespace}-{user}-{builtin}"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": builtin,
            },
            "subjects": [{"kind": "ServiceAccount", "name": user, "namespace": namespace}],
        }
        if cluster_wide:
            rbac.create_cluster_role_binding(binding)
            cluster_bindings.append(binding["metadata"]["name"])
        else:
            rbac.create_namespaced_role_binding(namespace, binding)
        token = cluster.core.create_namespaced_service_account_token(
            user, namespace, {"spec": {"expirationSeconds": 3600}}
        ).status.token
        path = tmp_path / f"{namespace}-{user}.kubeconfig.yaml"
        path.write_text(yaml.safe_dump(_token_kubeconfig(cluster.kubeconfig, token)))
        path.chmod(0o600)
        username = f"system:serviceaccount:{namespace}:{user}"
        api = config.new_client_from_config(config_file=str(path))
        # The client holds the token now; the file with it is not left behind.
        path.unlink()
        # The binding is live once the authorizer's cache has it.
        authz = client.AuthorizationV1Api(api)
        attrs = {"verb": "list", "group": GROUP, "resource": "podgroups", "namespace": namespace}
        wait_for(
            lambda: (
                authz.create_self_subject_access_review(
                    {"spec": {"resourceAttributes": attrs}}
                ).status.allowed
            ),
            timeout=30,
            what=f"{username} to be allowed to list PodGroups through {builtin}",
        )
        return api, username

    try:
        yield make
    finally:
        for name in cluster_bindings:
            rbac.delete_cluster_role_binding(name)


def _podgroup(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"minMember": 2, "queue": "default"},
    }


def _forbidden(call: Any) -> str:
    """The API server's message refusing `call` with 403 Forbidden."""
    with pytest.raises(client.ApiException) as caught:
        call()
    assert caught.value.status == 403, caught.value.body
    message: str = json.loads(caught.value.body)["message"]
    return message


QUEUE = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Queue", "metadata": {"name": "mine"}}


def test_an_editor_of_a_namespace_submits_podgroups_and_cannot_write_their_status(
    cluster: Cluster, user_roles: dict[str, Any], namespace: str, as_user: Any
) -> None:
    """`edit` bound in one namespace, as a namespace's users usually get it."""
    api, user = as_user(namespace, "alice", "edit")
    custom = client.CustomObjectsApi(api)
    created = custom.create_namespaced_custom_object(
        GROUP, VERSION, namespace, "podgroups", _podgroup("train", namespace)
    )
    assert created["metadata"]["name"] == "train"
    listed = custom.list_namespaced_custom_object(GROUP, VERSION, namespace, "podgroups")
    assert [g["metadata"]["name"] for g in listed["items"]] == ["train"]
    # The spec is theirs (within the schema's rules): a lower time limit is a patch they may make.
    custom.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, "podgroups", "train", {"spec": {"timeLimitSeconds": 600}}
    )

    # The status is the operator's: a user who could write it could claim a gang is Running.
    for write in (
        custom.patch_namespaced_custom_object_status,
        custom.replace_namespaced_custom_object_status,
    ):
        message = _forbidden(
            lambda write=write: write(
                GROUP, VERSION, namespace, "podgroups", "train",
                {**_podgroup("train", namespace), "status": {"phase": "Running"}},
            )
        )  # fmt: skip
        verb = "patch" if write == custom.patch_namespaced_custom_object_status else "update"
        assert f'User "{user}" cannot {verb} resource "podgroups/status"' in message, message
    # Nor anything in another namespace: `edit` is bound in this one only.
    message = _forbidden(
        lambda: custom.create_namespaced_custom_object(
            GROUP, VERSION, "default", "podgroups", _podgroup("elsewhere", "default")
        )
    )
    assert f'User "{user}" cannot create resource "podgroups"' in message, message
    assert 'in the namespace "default"' in message, message
    # Queues are cluster-scoped: a RoleBinding grants none of them, not even reading (README:
    # bind phalanx-viewer cluster-wide for that), and never writing.
    message = _forbidden(lambda: custom.list_cluster_custom_object(GROUP, VERSION, "queues"))
    assert f'User "{user}" cannot list resource "queues"' in message, message
    message = _forbidden(
        lambda: custom.create_cluster_custom_object(GROUP, VERSION, "queues", QUEUE)
    )
    assert f'User "{user}" cannot create resource "queues"' in message, message

    custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, "podgroups", "train")
    assert not custom.list_namespaced_custom_object(GROUP, VERSION, namespace, "podgroups")["items"]


def test_a_viewer_reads_podgroups_and_queues_and_writes_nothing(
    cluster: Cluster, user_roles: dict[str, Any], namespace: str, as_user: Any
) -> None:
    """`view` bound cluster-wide (Queues are cluster-scoped)."""
    admin = client.CustomObjectsApi(cluster.api_client)
    admin.create_namespaced_custom_object(
        GROUP, VERSION, namespace, "podgroups", _podgroup("seen", namespace)
    )
    api, user = as_user(namespace, "bob", "view", cluster_wide=True)
    custom = client.CustomObjectsApi(api)
    queues = custom.list_cluster_custom_object(GROUP, VERSION, "queues")
    assert "default" in [q["metadata"]["name"] for q in queues["items"]]
    assert custom.get_cluster_custom_object(GROUP, VERSION, "queues", "default")
    listed = custom.list_namespaced_custom_object(GROUP, VERSION, namespace, "podgroups")
    assert [g["metadata"]["name"] for g in listed["items"]] == ["seen"]

    message = _forbidden(
        lambda: custom.create_cluster_custom_object(GROUP, VERSION, "queues", QUEUE)
    )
    assert f'User "{user}" cannot create resource "queues"' in message, message
    message = _forbidden(
        lambda: custom.patch_cluster_custom_object(
            GROUP, VERSION, "queues", "default", {"spec": {"weight": 100}}
        )
    )
    assert f'User "{user}" cannot patch resource "queues"' in message, message
    message = _forbidden(
        lambda: custom.create_namespaced_custom_object(
            GROUP, VERSION, namespace, "podgroups", _podgroup("mine", namespace)
        )
    )
    assert f'User "{user}" cannot create resource "podgroups"' in message, message
    message = _forbidden(
        lambda: custom.delete_namespaced_custom_object(
            GROUP, VERSION, namespace, "podgroups", "seen"
        )
    )
    assert f'User "{user}" cannot delete resource "podgroups"' in message, message
