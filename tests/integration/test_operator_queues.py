"""Queues on a real API server: borrowing and reclaim of whole gangs; backfill with reservations.

The `small` shape has 128 GPUs.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.conftest import Cluster, ensure_queue
from tests.integration.objects import gang_job, gang_pod, pod_group
from tests.integration.operator_fixture import OperatorProcess
from tests.integration.test_automatic_gangs import CYCLES, wait_cycles, wait_message
from tests.integration.test_operator_gangs import (
    group_status,
    nodes_of,
    scheduled,
    wait_bound_whole,
)
from tests.integration.waiting import wait_for

pytestmark = pytest.mark.integration


@pytest.fixture
def ns(namespace: str, operator: OperatorProcess) -> Iterator[str]:
    yield namespace


@pytest.fixture
def two_queues(phalanx_api: Any) -> Iterator[tuple[str, str]]:
    names = ("team-a", "team-b")
    for name in names:
        ensure_queue(phalanx_api, name, {"weight": 1, "guarantee": {"nvidia.com/gpu": 64}})
    yield names
    for name in names:
        phalanx_api.delete_cluster_custom_object("phalanx.dev", "v1alpha1", "queues", name)


def fill_with_jobs(cluster: Cluster, custom: Any, ns: str, queue: str, jobs: int) -> None:
    """`jobs` Jobs `a0`, `a1`, … of 4 pods × 8 GPUs in `queue`, each with its PodGroup; waits
    until the first 4 (the 128 GPUs of the test cluster) are bound whole, the rest waiting."""
    for i in range(jobs):
        custom.create_namespaced_custom_object(
            "phalanx.dev", "v1alpha1", ns, "podgroups", pod_group(f"a{i}", 4, queue=queue)
        )
        cluster.batch.create_namespaced_job(ns, gang_job(f"a{i}", f"a{i}", 4, 8))
    for i in range(min(jobs, 4)):
        wait_bound_whole(cluster, ns, f"a{i}", 4)


def test_borrowed_capacity_is_reclaimed_by_evicting_whole_gangs(
    cluster: Cluster, phalanx_api: Any, ns: str, two_queues: tuple[str, str]
) -> None:
    custom = phalanx_api
    team_a, team_b = two_queues
    # Team A fills the whole cluster: 4 Jobs × 4 pods × 8 GPUs = 128 GPUs, 64 of them borrowed.
    fill_with_jobs(cluster, custom, ns, team_a, jobs=4)
    # With team B idle, its guarantee is lent: team A is allocated the whole cluster.
    wait_for(
        lambda: (
            custom.get_cluster_custom_object("phalanx.dev", "v1alpha1", "queues", team_a)
            .get("status", {})
            .get("allocated", {})
            .get("nvidia.com/gpu")
            == "128"
        ),
        timeout=30,
        what="team-a to be allocated all 128 GPUs (64 of them team-b's idle guarantee)",
    )

    # Team B asks for 32 GPUs, within its guarantee of 64.
    custom.create_namespaced_custom_object(
        "phalanx.dev", "v1alpha1", ns, "podgroups", pod_group("b0", 4, queue=team_b)
    )
    for i in range(4):
        cluster.core.create_namespaced_pod(ns, gang_pod(f"b0-{i}", "b0", 8))
    wait_bound_whole(cluster, ns, "b0", 4)

    evicted = [
        g
        for g in (f"a{i}" for i in range(4))
        if (c := _condition(group_status(custom, ns, g), "Evicted"))
        and c["status"] == "True"
        and c["reason"] == "Reclaimed"
    ]
    assert len(evicted) == 1, f"expected exactly one whole gang reclaimed, got {evicted}"
    victim = evicted[0]

    # The Job controller recreates the victim's pods; they wait, bound nowhere.
    def recreated_and_waiting() -> bool:
        # One listing for both: a pod recreated between two listings was missing from the first.
        live = [
            p
            for p in cluster.core.list_namespaced_pod(
                ns, label_selector=f"phalanx.dev/pod-group={victim}"
            ).items
            if p.metadata.deletion_timestamp is None
        ]
        return len(live) == 4 and not any(p.spec.node_name for p in live)

    # The victim's Job is suspended to evict it and resumed once its pods are gone
    # (`k8s/job_suspension.py`), so its pods come back without the Job controller's back-off
    # (evicted pod by pod, four of them had it wait 80 s).
    wait_for(recreated_and_waiting, timeout=150, what=f"{victim}'s pods to be recreated, unbound")
    time.sleep(2)
    for i in range(4):
        if f"a{i}" != victim:
            assert all(nodes_of(cluster, ns, f"a{i}").values()), f"a{i} lost members"
    pending = group_status(custom, ns, victim)
    assert pending["phase"] == "Pending"
    assert pending["bound"] == 0


def test_a_lower_priority_queue_does_not_reclaim_from_a_higher_one(
    cluster: Cluster, phalanx_api: Any, ns: str, operator: OperatorProcess
) -> None:
    """`first` (priority 1) fills the cluster with four Jobs of 4 × 8 GPUs and has a fifth
    waiting; `second` (priority 0) then asks for 32 GPUs within its guarantee, so `first`
    borrows beyond its share. `first` is served first: what reclaim freed of it for `second`
    would go to its waiting Job, and reclaim would evict again — walked on the demo cluster
    without this guard, 638 reclaims in 90 s and `second`'s gang never started. So nothing is
    evicted within several operator cycles, `b0` waits, and its message says why."""
    custom = phalanx_api
    first, second = f"first-{ns}", f"second-{ns}"
    ensure_queue(custom, first, {"weight": 1, "priority": 1, "guarantee": {"nvidia.com/gpu": 64}})
    ensure_queue(custom, second, {"weight": 1, "guarantee": {"nvidia.com/gpu": 64}})
    try:
        fill_with_jobs(cluster, custom, ns, first, jobs=5)
        custom.create_namespaced_custom_object(
            "phalanx.dev", "v1alpha1", ns, "podgroups", pod_group("b0", 4, queue=second)
        )
        for i in range(4):
            cluster.core.create_namespaced_pod(ns, gang_pod(f"b0-{i}", "b0", 8))
        said = wait_message(
            custom,
            ns,
            "b0",
            "reclaim leaves what",
            timeout=60,
            what="b0's message to say why reclaim leaves the higher-priority queue alone",
        )
        assert (
            f"reclaim leaves what {first} borrows (32 beyond its share) alone: of higher "
            "priority than this queue's 0, served first, it would take back what it freed"
        ) in said, said
        wait_cycles(operator, CYCLES)
        reclaimed = [
            e.involved_object.name
            for e in cluster.core.list_namespaced_event(ns).items
            if e.reason == "Reclaimed"
        ]
        assert reclaimed == [], f"evicted for reclaim: {reclaimed}"
        for i in range(4):
            assert all(nodes_of(cluster, ns, f"a{i}").values()), f"a{i} lost members"
        assert group_status(custom, ns, "b0")["bound"] == 0
    finally:
        for name in (first, second):
            custom.delete_cluster_custom_object("phalanx.dev", "v1alpha1", "queues", name)


def test_a_reclaimed_gang_of_bare_pods_says_nothing_makes_them_again(
    cluster: Cluster, phalanx_api: Any, ns: str, two_queues: tuple[str, str]
) -> None:
    """As above with bare pods (no controller): the victim's pods are deleted and nothing makes
    them again, which its PodGroup says (walked: the demo's bare `pair`, reclaimed, said only
    "0 of 2 pods exist" for good)."""
    custom = phalanx_api
    team_a, team_b = two_queues

    def gang(name: str, queue: str) -> None:
        custom.create_namespaced_custom_object(
            "phalanx.dev", "v1alpha1", ns, "podgroups", pod_group(name, 4, queue=queue)
        )
        for i in range(4):
            cluster.core.create_namespaced_pod(ns, gang_pod(f"{name}-{i}", name, 8))

    for i in range(4):
        gang(f"a{i}", team_a)
    for i in range(4):
        wait_bound_whole(cluster, ns, f"a{i}", 4)
    gang("b0", team_b)
    wait_bound_whole(cluster, ns, "b0", 4)

    def told() -> str | None:
        for g in (f"a{i}" for i in range(4)):
            status = group_status(custom, ns, g)
            waiting = _condition(status, "Scheduled")
            if (
                status.get("evictedBarePods") == 4
                and waiting
                and "no controller" in waiting["message"]
            ):
                return g
        return None

    victim = wait_for(
        told, timeout=60, what="a reclaimed team-a gang whose WaitingForPods names its bare pods"
    )
    message = (_condition(group_status(custom, ns, victim), "Scheduled") or {})["message"]
    assert message.startswith("0 of 4 pods exist; its eviction (Reclaimed) "), message
    assert message.endswith(
        "deleted 4 pods that no controller makes again: apply them again to run the gang (pods "
        "under a Job, JobSet or other controller are made again by it)"
    ), message
    left = cluster.core.list_namespaced_pod(ns, label_selector=f"phalanx.dev/pod-group={victim}")
    assert not [p for p in left.items if p.metadata.deletion_timestamp is None], "none made again"


def _condition(status: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    return next((c for c in status.get("conditions", []) if c["type"] == ctype), None)


def test_backfill_runs_a_short_gang_first_and_the_big_gang_starts_at_its_reservation(
    cluster: Cluster, phalanx_api: Any, ns: str
) -> None:
    custom = phalanx_api

    def gang(name: str, pods: int, limit: int, run_for: str | None) -> None:
        custom.create_namespaced_custom_object(
            "phalanx.dev", "v1alpha1", ns, "podgroups", pod_group(name, pods, time_limit=limit)
        )
        for i in range(pods):
            cluster.core.create_namespaced_pod(
                ns, gang_pod(f"{name}-{i}", name, 8, run_for=run_for)
            )

    gang("running", 12, limit=30, run_for="20s")  # 96 GPUs until at most 30 s from now
    wait_bound_whole(cluster, ns, "running", 12)
    started = time.time()
    # 112 GPUs: must wait for `running` to end. Its 6 s limit makes it starve (the shipped
    # rule: a gang holds a binding reservation once it has waited twice its time limit) before
    # `running` ends, so the rest of the test sees a binding reservation.
    gang("big", 14, limit=6, run_for=None)
    status = wait_for(
        lambda: (s := group_status(custom, ns, "big")).get("estimatedStartTime") and s,
        timeout=30,
        what="`big` to get an estimated start time",
    )
    eta = _ts(status["estimatedStartTime"])
    assert started - 5 <= eta <= started + 35, f"ETA {status['estimatedStartTime']} off"
    wait_for(
        lambda: (
            (c := scheduled(group_status(custom, ns, "big"))) and "not binding" not in c["message"]
        ),
        timeout=30,
        what="`big` to hold a binding reservation (once it has waited twice its 6 s limit)",
    )

    gang("long", 4, limit=600, run_for=None)  # 32 GPUs fit now, but would delay `big`
    gang("short", 2, limit=10, run_for="5s")  # 16 GPUs, ends before `big`'s reservation
    wait_bound_whole(cluster, ns, "short", 2)
    reason = wait_for(
        lambda: (c := scheduled(group_status(custom, ns, "short"))) and c["status"] == "True" and c,
        timeout=30,
        what="`short` to be Scheduled",
    )
    assert reason["reason"] == "Backfilled"
    assert not any(nodes_of(cluster, ns, "long").values()), "`long` would delay the reservation"
    assert not any(nodes_of(cluster, ns, "big").values())

    wait_bound_whole(cluster, ns, "big", 14)
    bound_at = time.time()
    assert bound_at <= eta + 15, f"`big` started {bound_at - eta:.0f}s after its reservation"
    assert not any(nodes_of(cluster, ns, "long").values())


def _ts(text: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def test_a_victim_protected_by_a_disruption_budget_is_skipped_for_another(
    cluster: Cluster, phalanx_api: Any, ns: str, two_queues: tuple[str, str]
) -> None:
    custom = phalanx_api
    team_a, team_b = two_queues
    policy = __import__("kubernetes").client.PolicyV1Api(cluster.api_client)

    def gang(name: str, queue: str, pods: int, labels: dict[str, str]) -> None:
        custom.create_namespaced_custom_object(
            "phalanx.dev", "v1alpha1", ns, "podgroups", pod_group(name, pods, queue=queue)
        )
        for i in range(pods):
            body = gang_pod(f"{name}-{i}", name, 8)
            body["metadata"]["labels"].update(labels)
            cluster.core.create_namespaced_pod(ns, body)

    # Team A fills the cluster with four 32-GPU gangs; reclaiming 32 GPUs for team B takes one
    # (a 64-GPU gang would take team A below its deserved share). The youngest gang loses the
    # least run time, so it is the natural victim — unless a PodDisruptionBudget that allows no
    # disruption protects it.
    for name in ("older-0", "older-1", "older-2"):
        gang(name, team_a, 4, {"app": name})
        wait_bound_whole(cluster, ns, name, 4)
    time.sleep(2)
    gang("younger", team_a, 4, {"app": "younger"})
    wait_bound_whole(cluster, ns, "younger", 4)
    policy.create_namespaced_pod_disruption_budget(
        ns,
        {
            "metadata": {"name": "keep-younger"},
            "spec": {"minAvailable": 4, "selector": {"matchLabels": {"app": "younger"}}},
        },
    )
    wait_for(
        lambda: (
            (b := policy.read_namespaced_pod_disruption_budget("keep-younger", ns).status)
            and b.current_healthy == 4
            and b.disruptions_allowed == 0
        ),
        timeout=60,
        what="the disruption budget to see 4 healthy pods (0 disruptions allowed)",
    )
    gang("claim", team_b, 4, {})
    wait_bound_whole(cluster, ns, "claim", 4)
    reclaimed = [
        g
        for g in ("older-0", "older-1", "older-2")
        if (c := _condition(group_status(custom, ns, g), "Evicted")) and c["status"] == "True"
    ]
    assert len(reclaimed) == 1, f"expected one unprotected gang reclaimed, got {reclaimed}"
    younger = _condition(group_status(custom, ns, "younger"), "Evicted")
    assert younger is None or younger["status"] == "False", younger
    assert all(nodes_of(cluster, ns, "younger").values())


def _queue_status(custom: Any, name: str) -> dict[str, Any]:
    obj = custom.get_cluster_custom_object("phalanx.dev", "v1alpha1", "queues", name)
    status: dict[str, Any] = obj.get("status") or {}
    return status


def test_a_queues_status_follows_its_gangs_out_and_a_queue_made_again_gets_one(
    cluster: Cluster, phalanx_api: Any, ns: str
) -> None:
    """Its last gang gone, a Queue's `allocated` holds 0 GPUs (a merge patch of `{}` left the
    old figure); deleted and created again, the new object gets its whole status (the operator
    once compared with what it had written to the old one, found nothing changed, and wrote
    nothing)."""
    custom, name = phalanx_api, "comeback"
    ensure_queue(custom, name, {"weight": 1})
    try:
        custom.create_namespaced_custom_object(
            "phalanx.dev", "v1alpha1", ns, "podgroups", pod_group("held", 2, queue=name)
        )
        for i in range(2):
            cluster.core.create_namespaced_pod(ns, gang_pod(f"held-{i}", "held", 8))
        wait_for(
            lambda: _queue_status(custom, name).get("allocated", {}).get("nvidia.com/gpu") == "16",
            timeout=60,
            what=f"queue {name} to be allocated the gang's 16 GPUs",
        )
        custom.delete_namespaced_custom_object("phalanx.dev", "v1alpha1", ns, "podgroups", "held")
        cluster.core.delete_collection_namespaced_pod(ns, grace_period_seconds=0)
        status = wait_for(
            lambda: (s := _queue_status(custom, name)).get("runningGangs") == 0 and s,
            timeout=60,
            what=f"queue {name} to count no running gang once its gang is deleted",
        )
        # 0, not the last figure (nor blank: `kubectl get gq` shows ALLOCATED 0 beside DESERVED 0).
        assert status.get("allocated", {}).get("nvidia.com/gpu") == "0", status

        custom.delete_cluster_custom_object("phalanx.dev", "v1alpha1", "queues", name)
        wait_for(
            lambda: (
                name
                not in {
                    q["metadata"]["name"]
                    for q in custom.list_cluster_custom_object("phalanx.dev", "v1alpha1", "queues")[
                        "items"
                    ]
                }
            ),
            timeout=30,
            what=f"queue {name} to be deleted",
        )
        ensure_queue(custom, name, {"weight": 1})
        again = wait_for(
            lambda: (s := _queue_status(custom, name)).get("conditions") and s,
            timeout=30,
            what=f"queue {name}, created again, to get a status with its conditions",
        )
        assert {"deserved", "allocated", "fairShare", "usage"} <= again.keys(), again
        ready = next(c for c in again["conditions"] if c["type"] == "Ready")
        assert ready["status"] == "True", ready
    finally:
        custom.delete_cluster_custom_object("phalanx.dev", "v1alpha1", "queues", name)


def test_a_drained_jobs_gang_keeps_its_capacity_while_its_job_makes_its_pods_again(
    cluster: Cluster, phalanx_api: Any, ns: str, two_queues: tuple[str, str]
) -> None:
    """Team A's Job gang (4 × 8 GPUs) loses a member to a drain and is evicted whole; for the
    Job controller's back-off (10 s) it has no pods. Team B, borrowing 32 GPUs of team A's
    guarantee, has a gang of 4 × 8 GPUs waiting for exactly that room. Walked before: the
    waiting gang was bound onto the freed nodes and reclaimed seconds later, when A's pods came
    back — its bare pods deleted for good. Now A's gang is planned from its Job's template
    meanwhile and, its queue owed its share, holds its capacity: B's gang is never bound nor
    evicted, and A runs again."""
    custom = phalanx_api
    team_a, team_b = two_queues
    custom.create_namespaced_custom_object(
        "phalanx.dev", "v1alpha1", ns, "podgroups", pod_group("a", 4, queue=team_a)
    )
    cluster.batch.create_namespaced_job(ns, gang_job("a", "a", 4, 8))
    wait_bound_whole(cluster, ns, "a", 4)

    def gang(name: str) -> None:
        custom.create_namespaced_custom_object(
            "phalanx.dev", "v1alpha1", ns, "podgroups", pod_group(name, 4, queue=team_b)
        )
        for i in range(4):
            cluster.core.create_namespaced_pod(ns, gang_pod(f"{name}-{i}", name, 8))

    for name in ("b0", "b1", "b2"):
        gang(name)
        wait_bound_whole(cluster, ns, name, 4)
    gang("bwait")
    wait_for(
        lambda: (
            (_condition(group_status(custom, ns, "bwait"), "Scheduled") or {}).get("reason")
            == "InsufficientCapacity"
        ),
        timeout=30,
        what="bwait to wait for capacity (the cluster is full)",
    )
    first = sorted(nodes_of(cluster, ns, "a"))
    cluster.core.create_namespaced_pod_eviction(
        first[0], ns, {"metadata": {"name": first[0], "namespace": ns}}
    )
    wait_for(
        lambda: (
            (_evicted := _condition(group_status(custom, ns, "a"), "Evicted"))
            and _evicted["status"] == "True"
            and _evicted["reason"] == "MemberFailed"
        ),
        timeout=30,
        what="a evicted whole after its member's drain",
    )
    wait_for(
        lambda: (
            group_status(custom, ns, "a").get("phase") == "Running"
            and not set(first) & set(nodes_of(cluster, ns, "a"))
        ),
        timeout=90,
        what="a Running again on new pods (after the Job's back-off)",
    )

    def evicted(name: str) -> bool:
        mark = _condition(group_status(custom, ns, name), "Evicted")
        return mark is not None and mark["status"] == "True"

    bwait = group_status(custom, ns, "bwait")
    assert bwait.get("bound") == 0 and not evicted("bwait"), bwait
    left = cluster.core.list_namespaced_pod(ns, label_selector="phalanx.dev/pod-group=bwait")
    assert len([p for p in left.items if p.metadata.deletion_timestamp is None]) == 4, "kept"
    assert not [name for name in ("b0", "b1", "b2") if evicted(name)], "team B kept running"
