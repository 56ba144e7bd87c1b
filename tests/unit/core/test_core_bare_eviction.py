"""`WaitingForPods` of a gang whose last eviction deleted bare pods (`PendingGang.bare_evicted`):
nothing makes them again, so the count alone ("0 of 2 pods exist") read as if they were coming.

Fabric: 1 spine × 1 leaf × 2 nodes × 8 GPUs, `now` = 1000; reclaimed at 820 (3 minutes ago).
"""

from __future__ import annotations

from dataclasses import replace

from core_builders import DEFAULT_POLICY, fabric, gang, queue, running, snapshot

from phalanx.core import BareEviction, Reason, schedule

NOW = 1000.0
LOST = BareEviction(pods=2, reason="Reclaimed", since=820.0)


def _message(pods: int, lost: BareEviction | None) -> str:
    pending = replace(gang("pair").pods(pods).min(2).build(), bare_evicted=lost)
    result = schedule(snapshot(fabric(1, 1, 2), pending=[pending]), DEFAULT_POLICY, NOW)
    decision = result.gangs["ns/pair"]
    assert decision.reason is Reason.WAITING_FOR_PODS, decision
    return decision.message


def test_it_says_its_pods_are_not_made_again_and_what_to_do() -> None:
    assert _message(0, LOST) == (
        "0 of 2 pods exist; its eviction (Reclaimed) 3m ago deleted 2 pods that no controller "
        "makes again: apply them again to run the gang (pods under a Job, JobSet or other "
        "controller are made again by it)"
    )


def test_one_pod_applied_again_still_waits_for_the_other_and_says_why() -> None:
    assert _message(1, BareEviction(1, "Preempted", 940.0)) == (
        "1 of 2 pods exist; its eviction (Preempted) 1m ago deleted 1 pod that no controller "
        "makes again: apply it again to run the gang (pods under a Job, JobSet or other "
        "controller are made again by it)"
    )


def test_without_that_fact_it_says_the_count_alone() -> None:
    assert _message(0, None) == "0 of 2 pods exist"


def test_a_failed_bare_member_is_named_with_what_to_do_about_it() -> None:
    """Evicted for `MemberFailed` 7 s ago: one member deleted, the one that failed still there
    (`Failed` for good), so the manifest applied again would leave it as it is."""
    lost = BareEviction(1, "MemberFailed", 993.0, failed=1)
    assert _message(0, lost) == (
        "0 of 2 pods exist; its eviction (MemberFailed) 7s ago deleted 1 pod and left 1 failed "
        "pod that no controller makes again: delete the failed pod and apply them again to run "
        "the gang (pods under a Job, JobSet or other controller are made again by it)"
    )


def test_it_waits_outside_the_order_and_the_gang_behind_it_moves_up() -> None:
    """`pair` (created at 100) lost both its bare pods to its reclaim; `big` (2 × 8 GPUs,
    created at 900, limit 600 s) waits behind `r`, which runs on both nodes until 1540. Nothing
    makes `pair`'s pods again until its user applies them, so it is not ranked, as a held gang
    is not: `big` is position 1 (walked: `pair` said position 1 in its queue, and every gang
    behind it one more than true), and `pair` has no position or ETA but still counts among
    the queue's pending gangs. Without the lost pods it would be first by age."""
    big = gang("big").pods(2).created(900.0).time_limit(600)
    run = [running("r").on("s0-l0-n00").on("s0-l0-n01").started(940.0).time_limit(600)]
    for lost, pair_pos, big_pos in ((LOST, None, 1), (None, 1, 2)):
        pair = replace(gang("pair").min(2).created(100.0).build(), bare_evicted=lost)
        result = schedule(
            snapshot(fabric(1, 1, 2), [queue("default")], run, [pair, big]), DEFAULT_POLICY, NOW
        )
        assert result.gangs["ns/pair"].queue_position == pair_pos, lost
        assert result.gangs["ns/big"].queue_position == big_pos, lost
        assert result.gangs["ns/big"].estimated_start == 1540.0
        assert result.queues["default"].pending_gangs == 2
        if lost is not None:
            assert result.gangs["ns/pair"].estimated_start is None
