"""`Policy.owed_slip` (issue 19, seventh round): slack-based backfilling for a queue below its
deserved share (Talby & Feitelson, IPPS 1999).

Hand-worked on two 8-GPU nodes, n00 and n01 (one leaf). n00 runs `rb` of queue `b` until
NOW + 100; n01 is free. Queue `b` has `b1` pending: 2 × 8 GPUs, limit 1,000 s, so its starvation
bound (one limit) is 1,000 s. Queue `a` has `a1`: 8 GPUs, fresh, limit `a_limit`. Demands a 8,
b 24, equal weights: deserved 8 each, so `a` holds 0 of its 8 while `b` has demand.

Without the knob `b1`, starving, reserves n00 + n01 from NOW + 100 before the walk, and `a1`
(which would run until NOW + `a_limit`) may not start on n01. With `owed_slip` = k, `a1` starts
on n01 if `b1`'s reservation, pushed to NOW + `a_limit` (when `a1` reaches its limit), still
starts by `b1`'s creation + k × 1,000 s.
"""

from __future__ import annotations

from dataclasses import replace

from core_builders import fabric, gang, queue, running, snapshot

from phalanx.core import Policy, Reason, Snapshot, schedule

NOW = 1_000_000.0
N0, N1 = "s0-l0-n00", "s0-l0-n01"
BASE = Policy(reserve_after_limits=1.0, reserve_under_share=True)
SLIP = replace(BASE, owed_slip=2.0)


def _cluster(b_created: float = NOW - 1_400, a_limit: float = 500, b_weight: int = 1) -> Snapshot:
    run = [running("rb").queue("b").on(N0).started(NOW - 50).time_limit(150)]
    pending = [
        gang("a1").queue("a").pods(1).created(NOW - 10).time_limit(a_limit),
        gang("b1").queue("b").pods(2).created(b_created).time_limit(1_000),
    ]
    queues = [queue("a").weight(1), queue("b").weight(b_weight)]
    return snapshot(fabric(1, 1, 2), queues, run, pending)


def test_a_gang_owed_its_share_starts_on_held_capacity_within_the_slack() -> None:
    """`b1` created NOW − 1,400: starving (1,400 s ≥ 1,000 s); with k = 2 its reservation may
    start as late as NOW − 1,400 + 2,000 = NOW + 600. `a1` (limit 500) starts on n01 now, and
    `b1` reserves n00 + n01 from NOW + 500 (≤ NOW + 600). Without the knob `a1` waits behind
    `b1`'s reservation from NOW + 100."""
    snap = _cluster()
    before = schedule(snap, BASE, NOW)
    assert before.bindings == {}
    assert before.reservations["ns/b1"].start == NOW + 100
    assert before.gangs["ns/a1"].reason == Reason.WAITING_FOR_RESERVATION
    slipped = schedule(snap, SLIP, NOW)
    assert dict(slipped.bindings) == {"ns/a1": {"a1-000": N1}}
    assert slipped.reservations["ns/b1"].start == NOW + 500
    assert set(slipped.reservations["ns/b1"].nodes) == {N0, N1}
    assert slipped.gangs["ns/a1"].reason == Reason.SCHEDULED
    assert "started on capacity reserved for ns/b1" in slipped.gangs["ns/a1"].message


def test_no_slip_past_the_reservations_slack() -> None:
    """`a1` with limit 700 would push `b1` to NOW + 700, past NOW + 600: `a1` waits and `b1`
    keeps NOW + 100. With k = 2.5 (deadline NOW − 1,400 + 2,500 = NOW + 1,100) `a1` starts and
    `b1` reserves from NOW + 700."""
    snap = _cluster(a_limit=700)
    kept = schedule(snap, SLIP, NOW)
    assert kept.bindings == {}
    assert kept.reservations["ns/b1"].start == NOW + 100
    wider = schedule(snap, replace(BASE, owed_slip=2.5), NOW)
    assert dict(wider.bindings) == {"ns/a1": {"a1-000": N1}}
    assert wider.reservations["ns/b1"].start == NOW + 700


def test_a_reservation_already_due_after_its_slack_is_not_pushed() -> None:
    """`b1` created NOW − 5,000: its deadline NOW − 3,000 is past, so its reservation (NOW + 100)
    may not move at all: `a1` (limit 500) waits."""
    r = schedule(_cluster(b_created=NOW - 5_000), SLIP, NOW)
    assert r.bindings == {}
    assert r.reservations["ns/b1"].start == NOW + 100


def test_a_gang_beyond_its_queues_share_does_not_slip() -> None:
    """Weights a 1, b 3: `a`'s share is 4 GPUs, `a1` (8) does not fit within it, so it is not
    owed that capacity: it waits, `b1` keeps NOW + 100."""
    r = schedule(_cluster(b_weight=3), SLIP, NOW)
    assert r.queues["a"].deserved["nvidia.com/gpu"] == 4
    assert r.bindings == {}
    assert r.reservations["ns/b1"].start == NOW + 100


def _lone(a_limit: float = 500) -> Snapshot:
    """`_cluster` with `a1` moved into queue `b`, the only queue."""
    run = [running("rb").queue("b").on(N0).started(NOW - 50).time_limit(150)]
    pending = [
        gang("a1").queue("b").pods(1).created(NOW - 10).time_limit(a_limit),
        gang("b1").queue("b").pods(2).created(NOW - 1_400).time_limit(1_000),
    ]
    return snapshot(fabric(1, 1, 2), [queue("b")], run, pending)


def test_a_lone_queue_is_owed_nothing() -> None:
    """`_lone`: a lone queue is owed nothing, so `a1` may not start beside `b1`'s reservation
    whatever the slack."""
    r = schedule(_lone(), SLIP, NOW)
    assert r.bindings == {}
    assert r.reservations["ns/b1"].start == NOW + 100


def test_with_slip_any_every_gang_may_slip_within_the_slack() -> None:
    """`_lone` with `slip_any`: `a1` (limit 500) starts on n01 and `b1` reserves from NOW + 500,
    by its deadline NOW + 600; with limit 700 (NOW + 700, past it) `a1` waits."""
    anyone = replace(SLIP, slip_any=True)
    r = schedule(_lone(), anyone, NOW)
    assert dict(r.bindings) == {"ns/a1": {"a1-000": N1}}
    assert r.reservations["ns/b1"].start == NOW + 500
    late = schedule(_lone(a_limit=700), anyone, NOW)
    assert late.bindings == {}
    assert late.reservations["ns/b1"].start == NOW + 100


def test_a_slip_never_takes_a_start_from_a_gang_ahead_of_it() -> None:
    """Three nodes, one queue, `slip_any`. `rb` runs on n00 until NOW + 100, `rl` on 4 GPUs of
    n02 for long; `b1` (as above) reserves n00 + n01 from NOW + 100. `x` (4 GPUs, limit 600,
    waited 1,000 s) is ahead of `a1` (4 GPUs, limit 500, fresh) in the order and starts on
    n02's free half (n01 is held). `a1` fits now only on the held n01, so the cycle is walked
    again with `a1` first: it takes the tightest fit, n02's half, and `b1` still reserves
    n00 + n01 from NOW + 100 (no reservation pushed back) — but `x`, which started in the
    first walk, now finds no room. That walk is thrown away: `x` starts, `a1` waits."""
    run = [
        running("rb").queue("b").on(N0).started(NOW - 50).time_limit(150),
        running("rl").queue("b").on("s0-l0-n02", gpu=4).started(NOW - 50).time_limit(100_000),
    ]
    pending = [
        gang("a1").queue("b").pods(1, gpu=4).created(NOW - 10).time_limit(500),
        gang("x").queue("b").pods(1, gpu=4).created(NOW - 1_000).time_limit(600),
        gang("b1").queue("b").pods(2).created(NOW - 1_400).time_limit(1_000),
    ]
    snap = snapshot(fabric(1, 1, 3), [queue("b")], run, pending)
    r = schedule(snap, replace(SLIP, slip_any=True), NOW)
    assert dict(r.bindings) == {"ns/x": {"x-000": "s0-l0-n02"}}
    assert r.reservations["ns/b1"].start == NOW + 100
    assert set(r.reservations["ns/b1"].nodes) == {N0, N1}
