"""The operator on a real API server: all-or-nothing gangs, topology, numbers in the status.

The `small` shape: 2 spines × 2 leaves × 4 nodes × 8 GPUs = 128 GPUs. Every test works in its own
namespace; the fixture frees the capacity afterwards.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import watch

from tests.integration.conftest import Cluster
from tests.integration.objects import gang_pod, pod_group
from tests.integration.operator_fixture import OperatorProcess
from tests.integration.waiting import wait_for

pytestmark = pytest.mark.integration
LEAF = "network.topology.nvidia.com/block"
BIND_ROUND_S = 5.0  # the operator's default bind deadline: one bind round at most


def submit_gang(
    cluster: Cluster, custom: Any, ns: str, name: str, pods: int, gpus: int, **group: Any
) -> None:
    custom.create_namespaced_custom_object(
        "phalanx.dev", "v1alpha1", ns, "podgroups", pod_group(name, pods, **group)
    )
    for i in range(pods):
        cluster.core.create_namespaced_pod(ns, gang_pod(f"{name}-{i}", name, gpus))


def group_status(custom: Any, ns: str, name: str) -> dict[str, Any]:
    obj = custom.get_namespaced_custom_object("phalanx.dev", "v1alpha1", ns, "podgroups", name)
    status: dict[str, Any] = obj.get("status") or {}
    return status


def scheduled(status: dict[str, Any]) -> dict[str, Any] | None:
    return next((c for c in status.get("conditions", []) if c["type"] == "Scheduled"), None)


def nodes_of(cluster: Cluster, ns: str, group: str) -> dict[str, str | None]:
    pods = cluster.core.list_namespaced_pod(ns, label_selector=f"phalanx.dev/pod-group={group}")
    return {p.metadata.name: p.spec.node_name for p in pods.items}


def wait_bound_whole(cluster: Cluster, ns: str, group: str, pods: int) -> dict[str, str]:
    def probe() -> dict[str, str] | None:
        nodes = nodes_of(cluster, ns, group)
        if len(nodes) == pods and all(nodes.values()):
            return {k: v for k, v in nodes.items() if v}
        return None

    return wait_for(probe, timeout=60, what=f"gang {group} to be bound whole ({pods} pods)")


class PodWatch:
    """Records every pod change in a namespace, in order: (time, event type, name, uid, phase,
    pod group, node; node None once deleted). What the tests assert never happened is read
    from it, not from one look at the end."""

    def __init__(self, cluster: Cluster, ns: str) -> None:
        self.cluster, self.ns = cluster, ns
        self.events: list[tuple[float, str, str, str, str, str | None, str | None]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        w = watch.Watch()
        while not self._stop.is_set():
            for ev in w.stream(self.cluster.core.list_namespaced_pod, self.ns, timeout_seconds=2):
                pod = ev["object"]
                group = (pod.metadata.labels or {}).get("phalanx.dev/pod-group")
                node = None if ev["type"] == "DELETED" else pod.spec.node_name
                meta = pod.metadata
                self.events.append(
                    (
                        time.monotonic(),
                        ev["type"],
                        meta.name,
                        meta.uid,
                        pod.status.phase,
                        group,
                        node,
                    )
                )
                if self._stop.is_set():
                    break

    def __enter__(self) -> PodWatch:
        self._thread.start()
        time.sleep(0.5)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


class PartialWatch(PodWatch):
    """How long each gang was partly bound."""

    def longest_partial(self, group: str, members: int) -> float:
        """Longest stretch during which 0 < bound < members for `group`."""
        bound: dict[str, str | None] = {}
        since: float | None = None
        longest = 0.0
        for t, _kind, pod, _uid, _phase, g, node in self.events:
            if g != group:
                continue
            bound[pod] = node
            count = sum(1 for n in bound.values() if n)
            partial = 0 < count < members
            if partial and since is None:
                since = t
            elif not partial and since is not None:
                longest = max(longest, t - since)
                since = None
        if since is not None:
            longest = max(longest, time.monotonic() - since)
        return longest


@pytest.fixture
def ns(namespace: str, operator: OperatorProcess) -> Iterator[str]:
    yield namespace


def test_a_gang_that_does_not_fit_binds_nothing_then_binds_whole(
    cluster: Cluster, phalanx_api: Any, ns: str
) -> None:
    custom = phalanx_api
    with PartialWatch(cluster, ns) as watcher:
        submit_gang(cluster, custom, ns, "blocker", 12, 8)  # 96 of 128 GPUs
        wait_bound_whole(cluster, ns, "blocker", 12)
        submit_gang(cluster, custom, ns, "big", 5, 8)  # 40 GPUs; 32 are free
        status = wait_for(
            lambda: (
                (s := group_status(custom, ns, "big"))
                and (c := scheduled(s))
                and c["reason"] == "InsufficientCapacity"
                and s
            ),
            timeout=30,
            what="gang `big` to report InsufficientCapacity",
        )
        detail = status["pendingDetail"]
        assert detail["requestedGPUs"] == 40
        assert detail["freeGPUs"] == 32
        assert status["phase"] == "Pending"
        assert status["bound"] == 0
        assert "40" in scheduled(status)["message"]  # type: ignore[index]
        time.sleep(3)  # several cycles: still nothing of `big` may be bound
        assert not any(nodes_of(cluster, ns, "big").values())

        # One call for the whole gang: deleting member by member races the operator, which
        # rightly evicts the rest of a gang that lost a member (a later delete then 404s).
        cluster.core.delete_collection_namespaced_pod(
            ns, label_selector="phalanx.dev/pod-group=blocker", grace_period_seconds=0
        )
        wait_bound_whole(cluster, ns, "big", 5)
        wait_for(
            lambda: group_status(custom, ns, "big").get("phase") == "Running",
            timeout=30,
            what="gang `big` to be Running",
        )
    for group, members in (("blocker", 12), ("big", 5)):
        longest = watcher.longest_partial(group, members)
        assert longest < BIND_ROUND_S, f"{group} was partly bound for {longest:.1f}s"


def test_two_gangs_that_cannot_both_fit_one_binds_whole_the_other_nothing(
    cluster: Cluster, phalanx_api: Any, ns: str
) -> None:
    custom = phalanx_api
    # 10 × 8 = 80 GPUs each; 128 in the cluster: exactly one can run.
    submit_gang(cluster, custom, ns, "left", 10, 8)
    submit_gang(cluster, custom, ns, "right", 10, 8)

    def one_whole() -> tuple[str, str] | None:
        left, right = nodes_of(cluster, ns, "left"), nodes_of(cluster, ns, "right")
        if len(left) == 10 and all(left.values()):
            return ("left", "right")
        if len(right) == 10 and all(right.values()):
            return ("right", "left")
        return None

    winner, loser = wait_for(one_whole, timeout=60, what="one of the two gangs to bind whole")
    time.sleep(3)
    assert not any(nodes_of(cluster, ns, loser).values()), f"{loser} got partly bound"
    assert all(nodes_of(cluster, ns, winner).values())
    reason = scheduled(group_status(custom, ns, loser))
    assert reason is not None and reason["status"] == "False"


def test_required_leaf_lands_under_one_leaf_and_preferred_spans_the_fewest(
    cluster: Cluster, phalanx_api: Any, ns: str
) -> None:
    custom = phalanx_api
    submit_gang(cluster, custom, ns, "tight", 4, 8, topology={"required": "leaf"})
    placed = wait_bound_whole(cluster, ns, "tight", 4)
    leaves = {cluster.core.read_node(n).metadata.labels[LEAF] for n in placed.values()}
    assert len(leaves) == 1, f"required: leaf spanned {leaves}"
    status = wait_for(
        lambda: (s := group_status(custom, ns, "tight")).get("placement") and s,
        timeout=30,
        what="placement in the status of `tight`",
    )
    assert status["placement"]["domains"]["leaf"] == sorted(leaves)

    # Fill one node in each of the three other leaves, so no leaf has 4 free nodes left.
    occupied = {cluster.core.read_node(n).metadata.labels[LEAF] for n in placed.values()}
    others = sorted({n.metadata.labels[LEAF] for n in cluster.core.list_node().items} - occupied)
    assert len(others) == 3
    for i, leaf in enumerate(others):
        cluster.core.create_namespaced_pod(
            ns, gang_pod(f"single-{i}", None, 8, node_selector={LEAF: leaf})
        )
    wait_for(
        lambda: all(
            cluster.core.read_namespaced_pod(f"single-{i}", ns).spec.node_name for i in range(3)
        ),
        timeout=60,
        what="the three single-pod gangs to be bound",
    )

    submit_gang(cluster, custom, ns, "wide", 4, 8, topology={"preferred": "leaf"})
    placed = wait_bound_whole(cluster, ns, "wide", 4)
    leaves = {cluster.core.read_node(n).metadata.labels[LEAF] for n in placed.values()}
    assert len(leaves) == 2, f"preferred: leaf should span the fewest (2) leaves, got {leaves}"

    submit_gang(cluster, custom, ns, "strict", 4, 8, topology={"required": "leaf"})
    status = wait_for(
        lambda: (
            (s := group_status(custom, ns, "strict"))
            and (c := scheduled(s))
            and c["reason"] == "TopologyUnsatisfiable"
            and s
        ),
        timeout=30,
        what="`strict` to report TopologyUnsatisfiable",
    )
    assert status["pendingDetail"]["bestDomainFreeGPUs"] < 32
    assert not any(nodes_of(cluster, ns, "strict").values())


def test_a_pod_larger_than_any_node_gets_a_reason_and_disturbs_nothing_else(
    cluster: Cluster, phalanx_api: Any, ns: str, operator: OperatorProcess
) -> None:
    custom = phalanx_api
    submit_gang(cluster, custom, ns, "huge", 1, 16)  # nodes have 8 GPUs
    submit_gang(cluster, custom, ns, "fine", 2, 8)
    wait_bound_whole(cluster, ns, "fine", 2)
    status = wait_for(
        lambda: (
            (s := group_status(custom, ns, "huge"))
            and (c := scheduled(s))
            and c["status"] == "False"
            and s
        ),
        timeout=30,
        what="`huge` to report why it cannot be scheduled",
    )
    cond = scheduled(status)
    assert cond is not None and cond["reason"] in ("InsufficientCapacity", "Invalid")
    assert "16" in cond["message"], cond["message"]
    assert not any(nodes_of(cluster, ns, "huge").values())
    events = cluster.core.list_namespaced_event(ns, field_selector="involvedObject.name=huge").items
    assert any(e.reason == cond["reason"] for e in events), [e.reason for e in events]


def test_metrics_are_served_with_the_documented_names(
    cluster: Cluster, phalanx_api: Any, ns: str, operator: OperatorProcess
) -> None:
    submit_gang(cluster, phalanx_api, ns, "m", 2, 8)
    wait_bound_whole(cluster, ns, "m", 2)
    text = wait_for(
        lambda: (t := operator.metrics()) and "phalanx_gang_wait_seconds_count" in t and t,
        timeout=30,
        what="the gang wait histogram to be exported",
    )
    for name in (
        "phalanx_scheduling_cycle_seconds",
        "phalanx_gang_wait_seconds",
        "phalanx_gang_partial_bound_seconds",
        "phalanx_binds_total",
        "phalanx_evictions_total",
        "phalanx_queue_deserved",
        "phalanx_queue_allocated",
        "phalanx_queue_pending_gangs",
        "phalanx_gpus",
        "phalanx_gang_leaves_spanned",
    ):
        assert name in text, f"{name} missing from /metrics"
    assert 'phalanx_binds_total{result="ok"}' in text

    # Beyond §6: PodGroups by phase; `m` runs, so its queue counts at least one Running.
    def running() -> bool:
        found = re.findall(
            r'^phalanx_gangs\{[^}]*phase="Running"[^}]*\} (\S+)$', operator.metrics(), re.M
        )
        return bool(found) and max(float(v) for v in found) >= 1

    wait_for(
        running,
        timeout=30,
        what="phalanx_gangs to count m's PodGroup Running",
        describe=lambda: "\n".join(
            line for line in operator.metrics().splitlines() if "phalanx_gangs" in line
        ),
    )
