"""A watched workload kind whose CRD is deleted while the operator runs, and applied again: the
operator keeps running and watches the kind again (`k8s/kopf_vanished.py`, `k8s/kopf_rescan.py`).

The kind is `rayjobs.ray.io`, from a minimal CRD of that name (KubeRay is not in the test bed,
and its pods need no controller here: the test makes a RayJob and one pod it owns, as KubeRay
would). Walked on the dev cluster before the fix: `kubectl delete crd mpijobs.kubeflow.org`
while the operator ran ended it 2 s later — kopf's watch of the kind reconnected into a 404
while the API server's discovery still listed the kind, so kopf's own rescans (three within
0.7 s) had not stopped that watch. That race is the API server's to decide and this test cannot
force it (seven runs here without the fix: kopf saw the kind gone from discovery first each
time); the reconnect after a 404 is pinned by `tests/unit/k8s/test_kopf_vanished.py`. What this
test holds is the rest of the kind's life: watched once applied, the operator unharmed by its
deletion, and watched again once applied again.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.integration.conftest import Cluster
from tests.integration.objects import gang_pod
from tests.integration.operator_fixture import OperatorProcess
from tests.integration.test_automatic_gangs import CYCLES, get_group
from tests.integration.test_tenancy import _cycles
from tests.integration.waiting import wait_for
from tests.integration.workload_controllers import create_workload

pytestmark = pytest.mark.integration
CRD_NAME = "rayjobs.ray.io"
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": CRD_NAME},
    "spec": {
        "group": "ray.io",
        "scope": "Namespaced",
        "names": {"plural": "rayjobs", "singular": "rayjob", "kind": "RayJob"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        ],
    },
}


@pytest.fixture
def extensions(cluster: Cluster) -> Iterator[Any]:
    ext = client.ApiextensionsV1Api(cluster.api_client)
    yield ext
    try:
        ext.delete_custom_resource_definition(CRD_NAME)
    except ApiException as exc:
        if exc.status != 404:
            raise


def _apply(ext: Any) -> None:
    ext.create_custom_resource_definition(CRD)
    wait_for(
        lambda: any(
            c.type == "Established" and c.status == "True"
            for c in ext.read_custom_resource_definition(CRD_NAME).status.conditions or []
        ),
        timeout=30,
        what=f"the CRD {CRD_NAME} Established",
    )


def _rayjob_with_a_pod(cluster: Cluster, custom: Any, ns: str, name: str) -> None:
    """A RayJob (of one pod: a head, no worker groups) and its pod, as KubeRay would make it."""
    body = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": name}, "spec": {}}
    made = create_workload(custom, ("ray.io", "v1", "rayjobs"), ns, body)
    pod = gang_pod(f"{name}-head", None, 1)
    pod["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayJob",
            "name": name,
            "uid": made["metadata"]["uid"],
            "controller": True,
        }
    ]
    cluster.core.create_namespaced_pod(ns, pod)


def _applied_and_ganged(cluster: Cluster, custom: Any, ext: Any, ns: str, name: str) -> None:
    """The CRD applied, a RayJob and its pod made: its managed PodGroup is made, which needs the
    operator to read the RayJob (RayJobs watched)."""
    _apply(ext)
    _rayjob_with_a_pod(cluster, custom, ns, name)
    wait_for(
        lambda: get_group(custom, ns, f"rayjob-{name}"),
        timeout=60,
        what=f"the managed PodGroup rayjob-{name} (RayJobs watched once their CRD is applied)",
    )


def test_a_watched_kind_deleted_and_applied_again_neither_stops_the_operator_nor_is_lost(
    cluster: Cluster,
    custom: Any,
    namespace: str,
    operator: OperatorProcess,
    extensions: Any,
) -> None:
    """The kind applied while the operator runs is watched (a RayJob's pod gets its managed
    PodGroup, which needs the RayJob read); its CRD deleted, the operator still runs
    `CYCLES` cycles later; applied again, a new RayJob's pod is ganged again."""
    _applied_and_ganged(cluster, custom, extensions, namespace, "first")
    # No RayJob left when the CRD goes (as after uninstalling KubeRay), as in the walk.
    custom.delete_namespaced_custom_object("ray.io", "v1", namespace, "rayjobs", "first")
    wait_for(
        lambda: (
            not custom.list_namespaced_custom_object("ray.io", "v1", namespace, "rayjobs")["items"]
        ),
        timeout=30,
        what="RayJob first deleted",
    )
    offset = operator.log_size()
    extensions.delete_custom_resource_definition(CRD_NAME)
    wait_for(
        lambda: (
            not any(
                c.metadata.name == CRD_NAME
                for c in extensions.list_custom_resource_definition().items
            )
        ),
        timeout=30,
        what=f"the CRD {CRD_NAME} deleted",
    )
    start = _cycles(operator)
    wait_for(
        lambda: operator.exited() or _cycles(operator) >= start + CYCLES,
        timeout=60,
        what=f"{CYCLES} more operator cycles after the CRD was deleted (or the operator's exit)",
    )
    assert not operator.exited(), f"the operator stopped:\n{operator.log_since(offset)[-3000:]}"
    _applied_and_ganged(cluster, custom, extensions, namespace, "second")
    assert not operator.exited()
