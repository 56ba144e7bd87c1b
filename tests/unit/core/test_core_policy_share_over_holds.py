"""`Policy.share_over_holds` (issue 19, sixteenth round): reservations bind across queues in
fair-share order.

Hand-worked on two 8-GPU nodes, n00 and n01 (one leaf), equal weights, so each queue deserves 8
of the 16 GPUs while both have demand. Queue `b` has `b1` pending: 2 × 8 GPUs, limit 1,000 s,
created NOW − 1,400, so it starves (bound: one limit) and reserves n00 + n01 from NOW + 100,
when the gang running on n00 reaches its limit. Queue `a` has `a1` pending, fresh, limit 500 s:
it would run until NOW + 500, past the reservation's start, so without the knob it waits.
"""

from __future__ import annotations

from dataclasses import replace

from core_builders import fabric, gang, queue, running, snapshot

from phalanx.core import Policy, Reason, Snapshot, schedule

NOW = 1_000_000.0
N0, N1 = "s0-l0-n00", "s0-l0-n01"
BASE = Policy(reserve_after_limits=1.0, reserve_under_share=True)
OVER = replace(BASE, share_over_holds=True)


def _cluster(runner_queue: str = "b", runner_gpus: int = 8, a_gpus: int = 8) -> Snapshot:
    run = [
        running("r0").queue(runner_queue).on(N0, gpu=runner_gpus).started(NOW - 50).time_limit(150)
    ]
    pending = [
        gang("a1").queue("a").pods(1, gpu=a_gpus).created(NOW - 10).time_limit(500),
        gang("b1").queue("b").pods(2).created(NOW - 1_400).time_limit(1_000),
    ]
    return snapshot(fabric(1, 1, 2), [queue("a"), queue("b")], run, pending)


def test_a_queue_further_below_its_share_starts_over_the_hold_of_one_less_so() -> None:
    """`r0` (queue `b`, 8 GPUs on n00): `b` holds 8 of its 8 (100%), `a` 0 of its 8 (0%), and
    `a1` (8) fits within what `a` is owed. Without the knob `a1` waits behind `b1`'s
    reservation from NOW + 100; with it `a1` starts on n01 now (until NOW + 500), and the
    message names the hold it overran and why."""
    snap = _cluster()
    before = schedule(snap, BASE, NOW)
    assert before.bindings == {}
    assert before.reservations["ns/b1"].start == NOW + 100
    assert before.gangs["ns/a1"].reason == Reason.WAITING_FOR_RESERVATION
    after = schedule(snap, OVER, NOW)
    assert dict(after.bindings) == {"ns/a1": {"a1-000": N1}}
    assert after.gangs["ns/a1"].reason == Reason.BACKFILLED
    message = after.gangs["ns/a1"].message
    assert "started on capacity held for ns/b1: queue a holds 0% of its deserved share" in message


def test_the_overrun_reservation_is_planned_after_the_gang_next_cycle() -> None:
    """The cycle after: `a1` runs on n01 until NOW + 500 (started at NOW), `r0` still until
    NOW + 100, so `b1` reserves both nodes from NOW + 500."""
    snap = _cluster()
    later = snapshot(
        fabric(1, 1, 2),
        [queue("a"), queue("b")],
        [
            running("r0").queue("b").on(N0).started(NOW - 50).time_limit(150),
            running("a1").queue("a").on(N1).started(NOW).time_limit(500),
        ],
        [gang("b1").queue("b").pods(2).created(NOW - 1_400).time_limit(1_000)],
    )
    assert schedule(snap, OVER, NOW).bindings
    r = schedule(later, OVER, NOW + 1)
    assert r.reservations["ns/b1"].start == NOW + 500


def test_a_hold_of_a_queue_further_below_its_share_stays_binding() -> None:
    """`r0` is of queue `a`, 4 GPUs on n00: `a` holds 4 of its 8 (50%), `b` 0 of its 8 (0%).
    `a1` (4 GPUs) fits within what `a` is owed, but `b` is further below its share: `b1`'s
    reservation (n00 + n01 from NOW + 100) binds and `a1` waits."""
    r = schedule(_cluster(runner_queue="a", runner_gpus=4, a_gpus=4), OVER, NOW)
    assert r.queues["a"].deserved["nvidia.com/gpu"] == 8
    assert r.bindings == {}
    assert r.reservations["ns/b1"].start == NOW + 100
    assert r.gangs["ns/a1"].reason == Reason.WAITING_FOR_RESERVATION


def test_a_gang_beyond_what_its_queue_is_owed_does_not_overrun() -> None:
    """`a1` of 16 GPUs… does not fit on one node; 2 pods × 8 would be 16 > `a`'s 8: with the
    runner of `b` as in the first test, a 2 × 8 `a1` is beyond `a`'s share and waits."""
    run = [running("r0").queue("b").on(N0).started(NOW - 50).time_limit(150)]
    pending = [
        gang("a1").queue("a").pods(2).created(NOW - 10).time_limit(500),
        gang("b1").queue("b").pods(2).created(NOW - 1_400).time_limit(1_000),
    ]
    r = schedule(snapshot(fabric(1, 1, 2), [queue("a"), queue("b")], run, pending), OVER, NOW)
    assert r.bindings == {}
    assert r.reservations["ns/b1"].start == NOW + 100


def test_within_one_queue_a_reservation_stays_binding() -> None:
    """`a1` moved into queue `b`, the only queue: a queue never overruns its own reservations,
    so `a1` waits behind `b1`'s from NOW + 100."""
    run = [running("r0").queue("b").on(N0).started(NOW - 50).time_limit(150)]
    pending = [
        gang("a1").queue("b").pods(1).created(NOW - 10).time_limit(500),
        gang("b1").queue("b").pods(2).created(NOW - 1_400).time_limit(1_000),
    ]
    r = schedule(snapshot(fabric(1, 1, 2), [queue("b")], run, pending), OVER, NOW)
    assert r.bindings == {}
    assert r.reservations["ns/b1"].start == NOW + 100


def test_after_compares_the_queues_share_once_the_gang_runs() -> None:
    """`share_over_holds_after`: `r0` of `b` holds 4 GPUs on n00 (`b` at 4 of 8, 50%); `a1` of
    8 GPUs would take `a` from 0% to 100%, past `b`'s 50%: it waits behind `b1`'s reservation
    (n00 + n01 from NOW + 100). Comparing before it starts (0% < 50%), it overruns it."""
    snap = _cluster(runner_gpus=4)
    before = schedule(snap, OVER, NOW)
    assert dict(before.bindings) == {"ns/a1": {"a1-000": N1}}
    after = schedule(snap, replace(OVER, share_over_holds_after=True), NOW)
    assert after.bindings == {}
    assert after.reservations["ns/b1"].start == NOW + 100
