"""A watched workload kind whose CRD is deleted while the operator runs, and applied again: the
operator keeps running and watches the kind again (`k8s/kopf_vanished.py`, `k8s/kopf_rescan.py`).

The kind is `rayjobs.ray.io`, KubeRay's own CRD (the test bed runs KubeRay: the fixture
`workload_controllers`); the test's RayJobs name `kueue.x-k8s.io/multikueue` as their manager,
so KubeRay leaves them alone as a MultiKueue worker cluster's would, and each has one pod the
test makes, as KubeRay would. The CRD is applied again and KubeRay seen reconciling RayJobs
before the test ends, whatever happened in it, for the tests that run RayJobs after it.

Walked on the dev cluster before the fix: `kubectl delete crd mpijobs.kubeflow.org`
while the operator ran ended it 2 s later — kopf's watch of the kind reconnected into a 404
while the API server's discovery still listed the kind, so kopf's own rescans (three within
0.7 s) had not stopped that watch. That race is the API server's to decide and this test cannot
force it (seven runs here without the fix: kopf saw the kind gone from discovery first each
time); the reconnect after a 404 is pinned by `tests/unit/k8s/test_kopf_vanished.py`. What this
test holds is the rest of the kind's life: watched once applied, the operator unharmed by its
deletion, and watched again once applied again.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from phalanx.devcluster.controllers import WorkloadControllers
from tests.integration.conftest import Cluster
from tests.integration.objects import gang_pod
from tests.integration.operator_fixture import OperatorProcess
from tests.integration.test_automatic_gangs import CYCLES, get_group
from tests.integration.test_tenancy import _cycles
from tests.integration.waiting import wait_for
from tests.integration.workload_controllers import create_workload

pytestmark = pytest.mark.integration
CRD_NAME = "rayjobs.ray.io"
OTHER_MANAGER = "kueue.x-k8s.io/multikueue"


def _established(ext: Any) -> bool:
    try:
        crd = ext.read_custom_resource_definition(CRD_NAME)
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return any(c.type == "Established" and c.status == "True" for c in crd.status.conditions or [])


@pytest.fixture
def crd(
    cluster: Cluster, custom: Any, namespace: str, workload_controllers: WorkloadControllers
) -> Iterator[tuple[Any, dict[str, Any]]]:
    """The API and KubeRay's RayJob CRD as applied (what the test deletes and applies again);
    afterwards it is there again, served, and KubeRay reconciles RayJobs again (a RayJob without
    a cluster spec is marked `ValidationFailed` by it: its watch came back after the
    deletion)."""
    ext = client.ApiextensionsV1Api(cluster.api_client)
    raw = json.loads(ext.read_custom_resource_definition(CRD_NAME, _preload_content=False).data)
    body = {
        "apiVersion": raw["apiVersion"],
        "kind": raw["kind"],
        "metadata": {"name": CRD_NAME, "labels": raw["metadata"].get("labels") or {}},
        "spec": raw["spec"],
    }
    yield ext, body
    if not _established(ext):
        with contextlib.suppress(ApiException):
            ext.create_custom_resource_definition(body)
        wait_for(lambda: _established(ext), timeout=30, what=f"the CRD {CRD_NAME} back")
    probe = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "probe"}, "spec": {}}
    create_workload(custom, ("ray.io", "v1", "rayjobs"), namespace, probe)
    wait_for(
        lambda: (
            custom.get_namespaced_custom_object("ray.io", "v1", namespace, "rayjobs", "probe")
            .get("status", {})
            .get("jobDeploymentStatus")
            == "ValidationFailed"
        ),
        timeout=120,
        what="KubeRay reconciling RayJobs again (probe ValidationFailed)",
    )
    custom.delete_namespaced_custom_object("ray.io", "v1", namespace, "rayjobs", "probe")


def _apply(ext: Any, body: dict[str, Any]) -> None:
    """Create the CRD unless it is there (at the start, KubeRay's)."""
    if not _established(ext):
        ext.create_custom_resource_definition(body)
    wait_for(lambda: _established(ext), timeout=30, what=f"the CRD {CRD_NAME} Established")


def _rayjob_with_a_pod(cluster: Cluster, custom: Any, ns: str, name: str) -> None:
    """A RayJob (of one pod: a head, no worker groups) and its pod, as KubeRay would make it;
    another manager named, so KubeRay leaves it alone."""
    body = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name},
        "spec": {"managedBy": OTHER_MANAGER},
    }
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


def _applied_and_ganged(
    cluster: Cluster, custom: Any, crd: tuple[Any, dict[str, Any]], ns: str, name: str
) -> None:
    """The CRD applied, a RayJob and its pod made: its managed PodGroup is made, which needs the
    operator to read the RayJob (RayJobs watched)."""
    _apply(*crd)
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
    crd: tuple[Any, dict[str, Any]],
) -> None:
    """The kind applied while the operator runs is watched (a RayJob's pod gets its managed
    PodGroup, which needs the RayJob read); its CRD deleted, the operator still runs
    `CYCLES` cycles later; applied again, a new RayJob's pod is ganged again."""
    _applied_and_ganged(cluster, custom, crd, namespace, "first")
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
    ext = crd[0]
    ext.delete_custom_resource_definition(CRD_NAME)
    wait_for(
        lambda: (
            not any(
                c.metadata.name == CRD_NAME for c in ext.list_custom_resource_definition().items
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
    _applied_and_ganged(cluster, custom, crd, namespace, "second")
    assert not operator.exited()
