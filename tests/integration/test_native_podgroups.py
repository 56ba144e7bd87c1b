"""Native `scheduling.k8s.io/v1alpha2` PodGroups (Kubernetes 1.36's own gang API) as input, on a
real API server with the gates on (the test cluster's `NATIVE_GANG_*`): a gang declared only as
a native PodGroup is placed all-or-nothing by Phalanx, and its native status shows it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import Cluster, ensure_queue
from tests.integration.objects import gang_pod
from tests.integration.operator_fixture import OperatorProcess
from tests.integration.waiting import wait_for

pytestmark = pytest.mark.integration
NATIVE = ("scheduling.k8s.io", "v1alpha2")
LEAF = "network.topology.nvidia.com/block"


def _cycles(op: OperatorProcess) -> float:
    for line in op.metrics().splitlines():
        if line.startswith('phalanx_cycles_total{role="leader"}'):
            return float(line.split()[-1])
    return 0.0


@pytest.fixture
def native(cluster: Cluster, custom: Any) -> Any:
    try:
        custom.list_cluster_custom_object(*NATIVE, "podgroups", limit=1)
    except Exception as exc:
        pytest.skip(f"this cluster does not serve scheduling.k8s.io/v1alpha2 PodGroups: {exc}")
    return custom


def native_group(
    name: str, min_count: int, topology_key: str | None = None, queue: str | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": min_count}}}
    if topology_key:
        spec["schedulingConstraints"] = {"topology": [{"key": topology_key}]}
    metadata: dict[str, Any] = {"name": name}
    if queue:
        metadata["labels"] = {"phalanx.dev/queue": queue}
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": metadata,
        "spec": spec,
    }


def native_pod(name: str, group: str, gpus: int) -> dict[str, Any]:
    body = gang_pod(name, None, gpus)
    body["metadata"]["labels"] = {"test/native-group": group}
    body["spec"]["schedulingGroup"] = {"podGroupName": group}
    return body


def nodes_of(cluster: Cluster, ns: str, group: str) -> dict[str, str | None]:
    pods = cluster.core.list_namespaced_pod(ns, label_selector=f"test/native-group={group}")
    return {p.metadata.name: p.spec.node_name for p in pods.items}


def scheduled_condition(
    custom: Any, ns: str, name: str, ctype: str = "PodGroupScheduled"
) -> dict[str, Any] | None:
    obj = custom.get_namespaced_custom_object(*NATIVE, ns, "podgroups", name)
    conditions = (obj.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == ctype), None)


def test_a_native_gang_is_placed_all_or_nothing_and_its_status_shows_it(
    cluster: Cluster, native: Any, namespace: str, operator: OperatorProcess
) -> None:
    ns = namespace
    native.create_namespaced_custom_object(*NATIVE, ns, "podgroups", native_group("train", 4, LEAF))
    for i in range(3):
        cluster.core.create_namespaced_pod(ns, native_pod(f"train-{i}", "train", 4))
    cond = wait_for(
        lambda: (c := scheduled_condition(native, ns, "train")) and c["status"] == "False" and c,
        timeout=30,
        what="PodGroupScheduled=False on the native PodGroup short of a member",
    )
    assert cond["reason"] == "Unschedulable" and "WaitingForPods" in cond["message"], cond
    # Negative check over a known number of cycles: three of four members, none bound.
    start = _cycles(operator)
    wait_for(lambda: _cycles(operator) - start >= 3, timeout=30, what="three more operator cycles")
    assert not any(nodes_of(cluster, ns, "train").values()), "a partial gang was bound"

    cluster.core.create_namespaced_pod(ns, native_pod("train-3", "train", 4))
    nodes = wait_for(
        lambda: (n := nodes_of(cluster, ns, "train")) and len(n) == 4 and all(n.values()) and n,
        timeout=60,
        what="the native gang bound whole (4 pods)",
    )
    leaves = {cluster.core.read_node(node).metadata.labels[LEAF] for node in set(nodes.values())}
    assert len(leaves) == 1, f"the topology constraint asks for one leaf, got {leaves}"
    cond = wait_for(
        lambda: (c := scheduled_condition(native, ns, "train")) and c["status"] == "True" and c,
        timeout=30,
        what="PodGroupScheduled=True on the native PodGroup once bound",
    )
    assert cond["reason"] == "Scheduled", cond


def test_a_native_group_above_the_member_limit_waits_with_a_typed_reason(
    cluster: Cluster, native: Any, namespace: str, operator: OperatorProcess
) -> None:
    ns = namespace
    native.create_namespaced_custom_object(*NATIVE, ns, "podgroups", native_group("huge", 20_000))
    cluster.core.create_namespaced_pod(ns, native_pod("huge-0", "huge", 1))
    cond = wait_for(
        lambda: (c := scheduled_condition(native, ns, "huge")) and c["status"] == "False" and c,
        timeout=30,
        what="PodGroupScheduled=False on a native PodGroup asking for 20,000 members",
    )
    assert cond["reason"] == "SchedulerError", cond
    assert "20,000 is above the 10,000" in cond["message"], cond
    assert not any(nodes_of(cluster, ns, "huge").values())


def test_a_native_gangs_time_limit_counts_from_its_bind_across_an_operator_restart(
    cluster: Cluster, native: Any, namespace: str, no_shared_operator: None, tmp_path: Path
) -> None:
    """A native PodGroup has no `scheduledAt` of its own (the operator keeps it in memory), so a
    restarted operator must count the run from the members' bind (`PodScheduled` True), not from
    its own start: otherwise every restart would give a native gang its whole time limit again.

    Queue default limit 20 s; the operator is killed after the bind and started again 12 s after
    it. Counted from the bind, the gang is evicted about 8 s after the restart; counted from the
    restart, not before 20 s after it."""
    ns, limit = namespace, 20
    queue = f"native-limit-{ns}"
    ensure_queue(native, queue, {"weight": 1, "defaultTimeLimitSeconds": limit})
    op = OperatorProcess(cluster.kubeconfig, tmp_path, name="first").start()
    try:
        native.create_namespaced_custom_object(
            *NATIVE, ns, "podgroups", native_group("limited", 2, queue=queue)
        )
        for i in range(2):
            cluster.core.create_namespaced_pod(ns, native_pod(f"limited-{i}", "limited", 8))
        wait_for(
            lambda: (n := nodes_of(cluster, ns, "limited")) and len(n) == 2 and all(n.values()),
            timeout=60,
            what="the native gang bound whole (2 pods)",
        )
        bound = min(
            c.last_transition_time.timestamp()
            for p in cluster.core.list_namespaced_pod(
                ns, label_selector="test/native-group=limited"
            ).items
            for c in p.status.conditions or []
            if c.type == "PodScheduled" and c.status == "True"
        )
        op.kill()
        wait_for(
            lambda: time.time() > bound + 12,
            timeout=20,
            what="12 s since the bind with no operator running",
        )
        assert scheduled_condition(native, ns, "limited", "DisruptionTarget") is None
        restarted = time.time()
        op = OperatorProcess(cluster.kubeconfig, tmp_path, name="second").start()
        cond = wait_for(
            lambda: (
                (c := scheduled_condition(native, ns, "limited", "DisruptionTarget"))
                and c["status"] == "True"
                and c
            ),
            timeout=40,
            what="DisruptionTarget on the native PodGroup once its time limit is up",
        )
        evicted = time.time()
        assert cond["reason"] == "TimeLimitExceeded", cond
        assert evicted < restarted + limit - 4, (
            f"evicted {evicted - bound:.1f} s after the bind and {evicted - restarted:.1f} s "
            f"after the restart: the time limit was counted from the restart"
        )
    finally:
        op.stop()
        native.delete_cluster_custom_object("phalanx.dev", "v1alpha1", "queues", queue)
