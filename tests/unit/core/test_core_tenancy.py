"""What one namespace user can do to everyone else, in the core: budgets that would veto a
needed reclaim, priority classes a queue does not allow, PodGroups whose pods never come,
absurd sizes, and fields the adapter could not read.

Fabric: 1 spine × 1 leaf × 2 nodes × 8 GPUs (s0-l0-n00, s0-l0-n01), `now` = 1000.
"""

from __future__ import annotations

from dataclasses import replace

from core_builders import DEFAULT_POLICY, fabric, gang, queue, running, snapshot

from phalanx.core import Policy, Reason, schedule

NOW = 1000.0


def _lenders() -> list[object]:
    # `team` deserves the whole cluster (guarantee 16); `borrow` runs two 8-GPU gangs on it.
    return [queue("team").guarantee(gpu=16), queue("borrow")]


def test_reclaim_prefers_a_victim_no_budget_protects() -> None:
    snap = snapshot(
        fabric(1, 1, 2),
        queues=_lenders(),
        running=[
            running("safe").queue("borrow").on("s0-l0-n00").protected().started(900),
            running("free").queue("borrow").on("s0-l0-n01").started(100),
        ],
        pending=[gang("need").queue("team").pods(1)],
    )
    result = schedule(snap, DEFAULT_POLICY, NOW)
    assert [e.gang for e in result.evictions] == ["ns/free"]


def test_a_budget_never_vetoes_a_needed_reclaim() -> None:
    """Only the protected gang's node would do: it is evicted anyway."""
    snap = snapshot(
        fabric(1, 1, 2),
        queues=_lenders(),
        running=[
            running("safe").queue("borrow").on("s0-l0-n00").on("s0-l0-n01").protected(),
        ],
        pending=[gang("need").queue("team").pods(2)],
    )
    result = schedule(snap, DEFAULT_POLICY, NOW)
    assert [e.gang for e in result.evictions] == ["ns/safe"]


def test_a_class_the_queue_does_not_allow_waits_invalid() -> None:
    snap = snapshot(
        fabric(1, 1, 2),
        queues=[replace(queue("q").build(), priority_classes=("batch-low",))],
        pending=[replace(gang("g").queue("q").pods(1).priority(100).build(), priority_class="vip")],
    )
    d = schedule(snap, DEFAULT_POLICY, NOW).gangs["ns/g"]
    assert d.reason is Reason.INVALID
    assert "'vip' is not allowed in queue q (allowed: batch-low)" in d.message


def test_a_system_class_is_refused_unless_the_queue_lists_it() -> None:
    crit = replace(
        gang("g").pods(1).priority(2_000_001_000).build(), priority_class="system-node-critical"
    )
    d = schedule(snapshot(fabric(1, 1, 2), pending=[crit]), DEFAULT_POLICY, NOW).gangs["ns/g"]
    assert d.reason is Reason.INVALID and "system class" in d.message
    listed = replace(queue("default").build(), priority_classes=("system-node-critical",))
    ok = schedule(snapshot(fabric(1, 1, 2), queues=[listed], pending=[crit]), DEFAULT_POLICY, NOW)
    assert "ns/g" in ok.bindings


def test_what_the_adapter_could_not_read_is_invalid_with_its_message() -> None:
    bad = replace(gang("g").pods(1).build(), invalid="spec.minResources: 'lots' is no quantity")
    bad_queue = replace(queue("default").build(), invalid="spec.guarantee: '-x' is no quantity")
    d = schedule(snapshot(fabric(1, 1, 2), pending=[bad]), DEFAULT_POLICY, NOW).gangs["ns/g"]
    assert (d.reason, d.message) == (Reason.INVALID, "spec.minResources: 'lots' is no quantity")
    other = gang("h").pods(1).build()
    result = schedule(snapshot(fabric(1, 1, 2), queues=[bad_queue], pending=[other]), Policy(), NOW)
    assert result.gangs["ns/h"].reason is Reason.INVALID
    assert "spec.guarantee" in result.queues["default"].message


def test_a_huge_phantom_costs_no_more_than_a_small_one_and_blocks_nobody() -> None:
    """minMember 10,000 and 8,000 GPUs, no pods: planned from at most 2 stand-ins here (2
    nodes), more than the cluster has; the real gang beside it binds."""
    huge = gang("huge").pods(0).min(10_000).min_resources(gpu=8000).created(0)
    real = gang("real").pods(2).created(1)
    result = schedule(snapshot(fabric(1, 1, 2), pending=[huge, real]), DEFAULT_POLICY, NOW)
    assert "ns/real" in result.bindings
    assert result.gangs["ns/huge"].reason is Reason.WAITING_FOR_PODS


def test_a_phantom_due_keeps_its_reservation_for_the_grace_then_waits_without_it() -> None:
    """`future` (16 GPUs, no pods) is due now: it holds both nodes, so `small` (1 pod, no time
    limit) waits; 601 s after it came due (grace 600) it holds nothing and `small` binds."""
    future = gang("future").pods(0).min(2).min_resources(gpu=16).created(0)
    small = gang("small").pods(1).created(5)
    fresh = schedule(snapshot(fabric(1, 1, 2), pending=[future, small]), DEFAULT_POLICY, NOW)
    d = fresh.gangs["ns/future"]
    assert d.due_without_pods and d.estimated_start == NOW
    assert "ns/small" not in fresh.bindings
    expired = replace(future.build(), due_since=NOW - 601)
    later = schedule(snapshot(fabric(1, 1, 2), pending=[expired, small]), DEFAULT_POLICY, NOW)
    assert "ns/small" in later.bindings
    gone = later.gangs["ns/future"]
    assert gone.estimated_start is None and "holds none" in gone.message
    assert later.queues["default"].deserved["nvidia.com/gpu"] == 8, "its demand is gone too"
