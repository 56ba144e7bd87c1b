"""The Helm chart with the real helm (built from its Go module by `make control-plane`) and the
real API server: lint, template, install, uninstall; the plain manifests in sync; and the
chart's RBAC, as the chart's ServiceAccount, allowing what the operator does and nothing more.

The operator pod itself cannot run on the fake kwok nodes (there is no container runtime): that
the chart's RBAC is enough for the operator is proved by every operator scenario of this tier,
which run `phalanx run` as the chart's ServiceAccount (`operator_fixture.py`), and here by an
operator run with the chart Deployment's own settings (leader election on the chart's Lease).
"""

from __future__ import annotations

import json
import re
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config

from phalanx.devcluster import versions
from phalanx.devcluster.chart import (
    CHART,
    CRDS,
    MANIFESTS,
    REPO,
    helm,
    helm_path,
    render_manifests,
    template,
)
from phalanx.devcluster.errors import DevClusterError
from tests.integration.conftest import Cluster
from tests.integration.operator_fixture import (
    CHART_USER,
    LEASE_NAME,
    LEASE_NAMESPACE,
    USER_ROLES,
    OperatorProcess,
    chart_kubeconfig,
    chart_manifests,
    exists,
)
from tests.integration.test_operator_gangs import submit_gang, wait_bound_whole
from tests.integration.waiting import wait_for

pytestmark = pytest.mark.integration


def docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


def of_kind(objs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in objs if d["kind"] == kind]


def assert_least_privilege(objs: list[dict[str, Any]]) -> None:
    rules = [r for d in objs if d["kind"] in ("ClusterRole", "Role") for r in d["rules"]]
    assert rules, "no ClusterRole or Role rendered"
    for rule in rules:
        assert "nonResourceURLs" not in rule, rule
        for field in ("apiGroups", "resources", "verbs", "resourceNames"):
            assert not any("*" in item for item in rule.get(field) or []), rule
        assert not any(r.split("/")[0] == "secrets" for r in rule["resources"]), rule


def test_helm_lint_passes_strict() -> None:
    out = helm("lint", "--strict", str(CHART), "--kube-version", versions.KUBERNETES)
    assert "1 chart(s) linted, 0 chart(s) failed" in out, out


def test_plain_helm_template_and_lint_work_with_no_flags() -> None:
    """As people and GitOps renderers run it, from the top of a clone: no cluster named, so helm
    assumes Kubernetes v1.20 (a `kubeVersion` in Chart.yaml above that refuses to render), and
    the default release name and namespace."""

    def plain_helm(*args: str) -> str:
        done = subprocess.run(
            [str(helm_path()), *args], cwd=REPO, capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, f"helm {' '.join(args)}: {done.stderr}"
        return done.stdout

    assert "0 chart(s) failed" in plain_helm("lint", "--strict", "charts/phalanx")
    plain = docs(plain_helm("template", "charts/phalanx"))
    assert {d["kind"] for d in plain} >= {
        *("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"),
        *("Service", "Deployment", "Queue"),
    }
    # Nothing in the chart depends on the API server's version: the same objects as rendered
    # for the local cluster's Kubernetes.
    assert plain == docs(template(release="release-name", namespace="default"))


def test_the_plain_manifests_are_what_helm_template_renders_now() -> None:
    assert MANIFESTS.read_text() == render_manifests(), (
        f"{MANIFESTS} is stale: run `make sync-chart`"
    )


def test_helm_template_renders_every_option_and_the_crds() -> None:
    objs = docs(
        template(
            release="phx",
            namespace="sched",
            values=(
                "serviceMonitor.enabled=true",
                "serviceMonitor.labels.release=prom",
                "grafanaDashboard.enabled=true",
                "scheduler.namespaces={team-a,team-b}",
                "scheduler.topologyLevels[0].name=spine",
                "scheduler.topologyLevels[0].label=example.com/spine",
                "scheduler.topologyLevels[1].name=leaf",
                "scheduler.topologyLevels[1].label=example.com/leaf",
                "scheduler.topologyLevels[2].name=nvlink",
                "scheduler.topologyLevels[2].label=network.topology.nvidia.com/accelerator",
                "scheduler.backfill.enabled=false",
                "scheduler.name=gangs",
                "leaderElection.namespace=leases",
                "defaultQueue.spec.weight=3",
                "verbose=true",
            ),
            include_crds=True,
        )
    )
    assert_least_privilege(objs)
    crds = {d["metadata"]["name"]: d for d in of_kind(objs, "CustomResourceDefinition")}
    assert crds == {
        (body := yaml.safe_load(p.read_text()))["metadata"]["name"]: body
        for p in CRDS.glob("*.yaml")
    }
    (monitor,) = of_kind(objs, "ServiceMonitor")
    assert monitor["metadata"]["labels"]["release"] == "prom"
    assert monitor["spec"]["endpoints"][0]["port"] == "metrics"
    (dashboard,) = of_kind(objs, "ConfigMap")
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    shipped = json.loads(dashboard["data"]["phalanx.json"])
    assert shipped == json.loads((CHART / "dashboards" / "phalanx.json").read_text())
    (role,) = of_kind(objs, "Role")
    assert role["metadata"]["namespace"] == "leases"
    (binding,) = of_kind(objs, "RoleBinding")
    assert binding["subjects"][0]["namespace"] == "sched"
    (deploy,) = of_kind(objs, "Deployment")
    container = deploy["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env["PHALANX_NAMESPACES"] == "team-a,team-b"
    assert env["PHALANX_TOPOLOGY_LEVELS"] == (
        "spine=example.com/spine,leaf=example.com/leaf,"
        "nvlink=network.topology.nvidia.com/accelerator"
    )
    assert env["PHALANX_BACKFILL"] == "false"
    assert env["PHALANX_SCHEDULER_NAME"] == "gangs"
    assert env["PHALANX_LEASE_NAMESPACE"] == "leases"
    assert container["args"] == ["--verbose"]  # after the image's `phalanx run` entrypoint
    (queue,) = of_kind(objs, "Queue")
    assert queue["spec"] == {"weight": 3}


def test_helm_refuses_two_replicas_without_leader_election() -> None:
    with pytest.raises(DevClusterError, match=re.escape("replicaCount > 1 needs leaderElection")):
        template(values=("leaderElection.enabled=false",))
    objs = docs(template(values=("leaderElection.enabled=false", "replicaCount=1")))
    assert not of_kind(objs, "Role"), "no Lease Role without leader election"


def test_helm_renders_the_user_roles_unless_switched_off() -> None:
    def cluster_roles(*values: str) -> set[str]:
        return {
            d["metadata"]["name"] for d in of_kind(docs(template(values=values)), "ClusterRole")
        }

    assert cluster_roles() == {"phalanx", *USER_ROLES}
    assert cluster_roles("rbac.userRoles=false") == {"phalanx"}


@pytest.fixture
def release(cluster: Cluster) -> Iterator[tuple[str, str]]:
    cluster.require_disposable()
    name, namespace = "phalanx-it", f"phx-helm-{uuid.uuid4().hex[:6]}"  # name = fullname
    try:
        yield name, namespace
    finally:
        try:
            helm("uninstall", name, "--namespace", namespace, kubeconfig=cluster.kubeconfig)
        except DevClusterError as exc:
            if "not found" not in str(exc):
                raise
        if exists(lambda: cluster.core.read_namespace(namespace)):
            cluster.core.delete_namespace(namespace, propagation_policy="Background")


def test_helm_install_is_accepted_and_uninstall_leaves_only_the_crds(
    cluster: Cluster, release: tuple[str, str]
) -> None:
    name, ns = release
    queue = f"{name}-default"  # the session's own `default` Queue is not the release's
    out = helm(
        "install",
        name,
        str(CHART),
        "--namespace",
        ns,
        "--create-namespace",
        "--set",
        f"defaultQueue.name={queue}",
        kubeconfig=cluster.kubeconfig,
    )
    assert "STATUS: deployed" in out, out
    assert f"Lease {ns}/{LEASE_NAME}" in out, "NOTES.txt was not shown"
    api = cluster.api_client
    apps, rbac = client.AppsV1Api(api), client.RbacAuthorizationV1Api(api)
    custom, ext = client.CustomObjectsApi(api), client.ApiextensionsV1Api(api)
    reads = {
        "Deployment": lambda: apps.read_namespaced_deployment(name, ns),
        "ServiceAccount": lambda: cluster.core.read_namespaced_service_account(name, ns),
        "ClusterRole": lambda: rbac.read_cluster_role(name),
        "ClusterRoleBinding": lambda: rbac.read_cluster_role_binding(name),
        **{
            f"ClusterRole {role}": lambda role=role: rbac.read_cluster_role(role)
            for role in USER_ROLES
        },
        "Role": lambda: rbac.read_namespaced_role(f"{name}-leader-election", ns),
        "RoleBinding": lambda: rbac.read_namespaced_role_binding(f"{name}-leader-election", ns),
        "Service": lambda: cluster.core.read_namespaced_service(f"{name}-metrics", ns),
        "Queue": lambda: custom.get_cluster_custom_object(
            "phalanx.dev", "v1alpha1", "queues", queue
        ),
    }
    for plural in ("mutatingadmissionpolicies", "mutatingadmissionpolicybindings"):
        for policy in (f"{name}-workload-queue", f"{name}-pod-scheduler"):
            reads[f"{plural}/{policy}"] = lambda plural=plural, policy=policy: (
                custom.get_cluster_custom_object(
                    "admissionregistration.k8s.io", "v1", plural, policy
                )
            )
    missing = [kind for kind, read in reads.items() if not exists(read)]
    assert not missing, f"helm install did not create {missing}"
    deploy = apps.read_namespaced_deployment(name, ns)
    assert deploy.spec.replicas == 2
    assert deploy.spec.template.spec.service_account_name == name
    crds = ("podgroups.phalanx.dev", "queues.phalanx.dev")

    helm("uninstall", name, "--namespace", ns, "--wait", kubeconfig=cluster.kubeconfig)
    wait_for(
        lambda: not [kind for kind, read in reads.items() if exists(read)],
        timeout=60,
        what="helm uninstall to remove every object of the release",
    )
    kept = [c for c in crds if exists(lambda c=c: ext.read_custom_resource_definition(c))]
    assert kept == list(crds), "helm uninstall must leave the CRDs"


def test_the_chart_deployment_settings_run_the_operator_on_the_chart_lease(
    cluster: Cluster, phalanx_api: Any, namespace: str, no_shared_operator: None, tmp_path: Path
) -> None:
    """`phalanx run` with the Deployment's environment, as the chart's ServiceAccount: it takes
    the chart's Lease (the Role allows that one) and schedules a gang."""
    (deploy,) = of_kind(chart_manifests(), "Deployment")
    container = deploy["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in container["env"] if e["name"].startswith("PHALANX_")}
    assert env["PHALANX_LEADER_ELECTION"] == "true"
    assert (env["PHALANX_LEASE_NAMESPACE"], env["PHALANX_LEASE_NAME"]) == (
        LEASE_NAMESPACE,
        LEASE_NAME,
    )
    coordination = client.CoordinationV1Api(cluster.api_client)

    def delete_lease() -> None:
        try:
            coordination.delete_namespaced_lease(LEASE_NAME, LEASE_NAMESPACE)
        except client.ApiException as exc:
            if exc.status != 404:
                raise

    def holder() -> str | None:
        try:
            lease = coordination.read_namespaced_lease(LEASE_NAME, LEASE_NAMESPACE)
        except client.ApiException:
            return None
        return str(lease.spec.holder_identity or "") or None

    delete_lease()
    # The test harness picks free metrics and health ports (flags win over the environment).
    op = OperatorProcess(cluster.kubeconfig, tmp_path, name="chart-settings", env=env).start()
    try:
        assert op.proc is not None
        pid = op.proc.pid
        wait_for(
            lambda: (h := holder()) and h.endswith(f"-{pid}"),
            timeout=30,
            what=f"the operator to take the Lease {LEASE_NAMESPACE}/{LEASE_NAME}",
        )
        submit_gang(cluster, phalanx_api, namespace, "chart", 2, 8)
        wait_bound_whole(cluster, namespace, "chart", 2)
    finally:
        op.stop()
        delete_lease()


def test_the_chart_service_account_may_do_what_the_operator_does_and_nothing_more(
    cluster: Cluster,
) -> None:
    """SelfSubjectAccessReviews as the chart's ServiceAccount: every rule of the chart's roles
    is in force, and a list of things the operator must not do is refused."""
    creds = chart_kubeconfig(cluster.kubeconfig)
    api = config.new_client_from_config(config_file=str(creds))
    review = client.AuthenticationV1Api(api).create_self_subject_review(
        {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    )
    assert review.status.user_info.username == CHART_USER
    authz = client.AuthorizationV1Api(api)

    def allowed(verb: str, group: str, resource: str, ns: str | None, name: str = "") -> bool:
        resource, _, sub = resource.partition("/")
        attrs = {"verb": verb, "group": group, "resource": resource, "subresource": sub}
        if ns:
            attrs["namespace"] = ns
        if name:
            attrs["name"] = name
        body = {"spec": {"resourceAttributes": attrs}}
        return bool(authz.create_self_subject_access_review(body).status.allowed)

    granted = []
    # The operator's roles (the users' ClusterRoles are bound to no ServiceAccount of the chart).
    roles = of_kind(chart_manifests(), "ClusterRole") + of_kind(chart_manifests(), "Role")
    for role in [r for r in roles if r["metadata"]["name"] not in USER_ROLES]:
        ns = role["metadata"].get("namespace") or "some-namespace"
        for rule in role["rules"]:
            for name in rule.get("resourceNames") or [""]:
                granted += [
                    (verb, group, resource, ns, name)
                    for group in rule["apiGroups"]
                    for resource in rule["resources"]
                    for verb in rule["verbs"]
                ]
    assert len(granted) >= 20
    refused = [g for g in granted if not allowed(*g)]
    assert not refused, f"the chart's rules are not in force: {refused}"

    must_not = [
        ("get", "", "secrets", "default"),
        ("list", "", "secrets", None),
        ("watch", "", "secrets", LEASE_NAMESPACE),
        ("get", "", "configmaps", "default"),
        ("update", "", "pods", "default"),
        ("patch", "", "pods", "default"),
        ("create", "", "pods/exec", "default"),
        ("create", "", "serviceaccounts/token", LEASE_NAMESPACE),
        ("patch", "", "nodes", None),
        ("delete", "", "nodes", None),
        ("delete", "", "namespaces", None),
        # PodGroups: created and deleted (managed ones), never updated or patched in place.
        ("update", "phalanx.dev", "podgroups", "default"),
        ("patch", "phalanx.dev", "podgroups", "default"),
        ("delete", "phalanx.dev", "queues", None),
        ("patch", "phalanx.dev", "queues", None),
        ("create", "apiextensions.k8s.io", "customresourcedefinitions", None),
        ("create", "coordination.k8s.io", "leases", "kube-system"),
        ("update", "coordination.k8s.io", "leases", LEASE_NAMESPACE, "someone-else"),
        ("delete", "coordination.k8s.io", "leases", LEASE_NAMESPACE, LEASE_NAME),
        ("create", "apps", "deployments", LEASE_NAMESPACE),
        ("bind", "rbac.authorization.k8s.io", "clusterroles", None),
        ("escalate", "rbac.authorization.k8s.io", "clusterroles", None),
        ("impersonate", "", "users", None),
    ]
    wrongly = [m for m in must_not if allowed(*m)]
    assert not wrongly, f"the chart's ServiceAccount may do more than it needs: {wrongly}"
