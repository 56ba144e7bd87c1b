"""Multi-tenant safety on the real API server: one namespace's hostile or careless objects
neither stall the others nor escape accounting, and a budget never vetoes a needed reclaim."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import Cluster, ensure_queue
from tests.integration.objects import gang_pod, pod_group
from tests.integration.operator_fixture import OperatorProcess
from tests.integration.test_operator_gangs import group_status, nodes_of, scheduled
from tests.integration.waiting import wait_for

pytestmark = pytest.mark.integration


def _cycles(op: OperatorProcess) -> float:
    for line in op.metrics().splitlines():
        if line.startswith('phalanx_cycles_total{role="leader"}'):
            return float(line.split()[-1])
    return 0.0


def _submit(cluster: Cluster, custom: Any, ns: str, name: str, pods: int, **group: Any) -> None:
    custom.create_namespaced_custom_object(
        "phalanx.dev", "v1alpha1", ns, "podgroups", pod_group(name, pods, **group)
    )
    for i in range(pods):
        cluster.core.create_namespaced_pod(ns, gang_pod(f"{name}-{i}", name, 8))


@pytest.fixture
def shared(namespace: str, operator: OperatorProcess) -> Iterator[tuple[str, OperatorProcess]]:
    yield namespace, operator


def test_a_huge_podgroup_without_pods_does_not_stall_a_normal_gang(
    cluster: Cluster, phalanx_api: Any, shared: tuple[str, OperatorProcess]
) -> None:
    """minMember 10,000 with minResources (so it is planned before its pods exist): the normal
    gang beside it binds within 3 operator cycles of its last pod's creation."""
    custom, (ns, op) = phalanx_api, shared
    huge = pod_group("huge", 10_000, min_resources={"nvidia.com/gpu": 100_000})
    custom.create_namespaced_custom_object("phalanx.dev", "v1alpha1", ns, "podgroups", huge)
    wait_for(
        lambda: (s := scheduled(group_status(custom, ns, "huge"))) and s["reason"],
        timeout=30,
        what="the huge PodGroup to get a reason",
    )
    _submit(cluster, custom, ns, "normal", 2)
    before = _cycles(op)
    wait_for(
        lambda: all(nodes_of(cluster, ns, "normal").values()),
        timeout=30,
        what="the normal gang to be bound beside the huge one",
    )
    assert _cycles(op) - before <= 3, f"took {_cycles(op) - before:.0f} cycles"


def test_a_system_priority_class_waits_invalid(
    cluster: Cluster, phalanx_api: Any, shared: tuple[str, OperatorProcess]
) -> None:
    custom, (ns, _) = phalanx_api, shared
    _submit(cluster, custom, ns, "vip", 1, priority_class="system-cluster-critical")
    cond = wait_for(
        lambda: (
            (s := scheduled(group_status(custom, ns, "vip"))) and s["reason"] == "Invalid" and s
        ),
        timeout=30,
        what="a gang naming system-cluster-critical to wait Invalid",
    )
    assert "system class" in cond["message"] and "system-cluster-critical" in cond["message"]
    assert not any(nodes_of(cluster, ns, "vip").values())


def test_a_budget_protecting_every_victim_does_not_stop_a_needed_reclaim(
    cluster: Cluster, phalanx_api: Any, shared: tuple[str, OperatorProcess]
) -> None:
    custom, (ns, _) = phalanx_api, shared
    policy = __import__("kubernetes").client.PolicyV1Api(cluster.api_client)
    for name in ("lender", "owner"):
        ensure_queue(custom, f"{name}-{ns}", {"guarantee": {"nvidia.com/gpu": 64}})
    try:
        for i in range(4):  # the lender borrows the whole cluster: 4 gangs × 32 GPUs
            name = f"borrow{i}"
            _submit(cluster, custom, ns, name, 4, queue=f"lender-{ns}")
        wait_for(
            lambda: all(
                all((n := nodes_of(cluster, ns, f"borrow{i}")).values()) and len(n) == 4
                for i in range(4)
            ),
            timeout=60,
            what="the lender's 4 gangs bound",
        )
        policy.create_namespaced_pod_disruption_budget(
            ns,
            {
                "metadata": {"name": "all-of-them"},
                "spec": {
                    "minAvailable": "100%",
                    "selector": {
                        "matchExpressions": [{"key": "phalanx.dev/pod-group", "operator": "Exists"}]
                    },
                },
            },
        )
        wait_for(
            lambda: (
                (b := policy.read_namespaced_pod_disruption_budget("all-of-them", ns).status)
                and b.current_healthy == 16
                and b.disruptions_allowed == 0
            ),
            timeout=60,
            what="the budget to see 16 healthy pods and allow no disruption",
        )
        _submit(cluster, custom, ns, "claim", 4, queue=f"owner-{ns}")
        wait_for(
            lambda: all((n := nodes_of(cluster, ns, "claim")).values()) and len(n) == 4,
            timeout=90,
            what="the owner's gang bound on reclaimed capacity despite the budget",
        )
        events = cluster.core.list_namespaced_event(ns).items
        named = [e for e in events if e.reason == "DisruptionBudget"]
        assert named and "disruption budget" in named[0].message.lower(), [
            (e.reason, e.message) for e in events
        ]
    finally:
        for name in ("lender", "owner"):
            custom.delete_cluster_custom_object("phalanx.dev", "v1alpha1", "queues", f"{name}-{ns}")


def test_namespaced_mode_counts_other_schedulers_pods_in_unwatched_namespaces(
    cluster: Cluster, phalanx_api: Any, namespace: str, no_shared_operator: None, tmp_path: Path
) -> None:
    """The operator watches only `namespace`; kube-scheduler's pod in another namespace fills
    node X; our pod pinned to X waits (5 cycles) and binds once that pod is gone."""
    ns = namespace
    other = f"{ns}-other"
    cluster.core.create_namespace({"metadata": {"name": other}})
    op = OperatorProcess(
        cluster.kubeconfig, tmp_path, name="namespaced", extra_args=("--namespaces", ns)
    ).start()
    try:
        node = sorted(n.metadata.name for n in cluster.core.list_node().items)[0]
        blocker = gang_pod("blocker", None, 8, scheduler="default-scheduler")
        blocker["spec"]["nodeName"] = node
        cluster.core.create_namespaced_pod(other, blocker)
        wait_for(
            lambda: cluster.core.read_namespaced_pod("blocker", other).status.phase == "Running",
            timeout=30,
            what="kube-scheduler's (pinned) pod running in the unwatched namespace",
        )
        pinned = gang_pod("pinned", None, 8, node_selector={"kubernetes.io/hostname": node})
        cluster.core.create_namespaced_pod(ns, pinned)
        start = _cycles(op)
        wait_for(
            lambda: _cycles(op) >= start + 5,
            timeout=30,
            what="5 operator cycles with the pinned pod pending",
        )
        assert cluster.core.read_namespaced_pod("pinned", ns).spec.node_name is None, (
            "overcommitted: bound beside another namespace's pod"
        )
        cluster.core.delete_namespaced_pod("blocker", other, grace_period_seconds=0)
        wait_for(
            lambda: cluster.core.read_namespaced_pod("pinned", ns).spec.node_name == node,
            timeout=30,
            what="the pinned pod bound once the other namespace's pod is gone",
        )
    finally:
        op.stop()
        cluster.core.delete_namespace(other)


def test_a_class_the_queue_does_not_allow_waits_invalid(
    cluster: Cluster, phalanx_api: Any, shared: tuple[str, OperatorProcess]
) -> None:
    custom, (ns, _) = phalanx_api, shared
    scheduling = __import__("kubernetes").client.SchedulingV1Api(cluster.api_client)
    for name, value in ((f"ok-{ns}", 100), (f"vip-{ns}", 1000)):
        scheduling.create_priority_class({"metadata": {"name": name}, "value": value})
    ensure_queue(custom, f"strict-{ns}", {"priorityClasses": [f"ok-{ns}"]})
    try:
        _submit(cluster, custom, ns, "vip", 1, queue=f"strict-{ns}", priority_class=f"vip-{ns}")
        _submit(cluster, custom, ns, "ok", 1, queue=f"strict-{ns}", priority_class=f"ok-{ns}")
        # The operator may decide the gang before its informer has seen the class just created
        # ("does not exist", true of what it had read): wait for the verdict once it has, the
        # one this test is about.
        rule = f"'vip-{ns}' is not allowed in queue strict-{ns}"
        cond = wait_for(
            lambda: (
                (s := scheduled(group_status(custom, ns, "vip")))
                and s["reason"] == "Invalid"
                and rule in s["message"]
                and s
            ),
            timeout=30,
            what=f"a gang naming a class its queue does not allow to wait Invalid ({rule})",
        )
        assert cond["status"] == "False", cond
        wait_for(
            lambda: all(nodes_of(cluster, ns, "ok").values()),
            timeout=30,
            what="the gang with an allowed class to be bound",
        )
        assert not any(nodes_of(cluster, ns, "vip").values())
    finally:
        custom.delete_cluster_custom_object("phalanx.dev", "v1alpha1", "queues", f"strict-{ns}")
        for name in (f"ok-{ns}", f"vip-{ns}"):
            scheduling.delete_priority_class(name)
