"""`Policy.speculate` (issue 19, eighth round): speculative backfilling on held capacity
(Perkovic & Keleher, SC 2000).

Hand-worked on two 8-GPU nodes, n00 and n01 (one leaf), one queue. n00 runs `rb` until NOW +
100 (started NOW − 50, limit 150). `b1` (2 × 8 GPUs, limit 1,000 s, created NOW − 1,400) is
past its starvation bound (one limit), so it reserves n00 + n01 from NOW + 100. `a1` (8 GPUs,
fresh, limit `a_limit`) would fit on n01 now but runs past NOW + 100: without the knob it
waits. With `speculate` = 0.5 it starts there when the hold on n01 begins at least half its
limit from now (100 ≥ 0.5 × `a_limit`), and yields n01 at NOW + 100.
"""

from __future__ import annotations

from dataclasses import replace

from core_builders import fabric, gang, queue, running, snapshot

from phalanx.core import EvictionReason, Policy, Reason, Snapshot, schedule

NOW = 1_000_000.0
N0, N1 = "s0-l0-n00", "s0-l0-n01"
BASE = Policy(reserve_after_limits=1.0)
SPEC = replace(BASE, speculate=0.5)


def _cluster(a_limit: float = 150, a_created: float = NOW - 10) -> Snapshot:
    run = [running("rb").on(N0).started(NOW - 50).time_limit(150)]
    pending = [
        gang("a1").pods(1).created(a_created).time_limit(a_limit),
        gang("b1").pods(2).created(NOW - 1_400).time_limit(1_000),
    ]
    return snapshot(fabric(1, 1, 2), [queue("default")], run, pending)


def test_a_gang_starts_on_held_capacity_far_enough_from_the_hold() -> None:
    """`a1`, limit 150: the hold on n01 begins 100 s from now ≥ 0.5 × 150 = 75 s, so `a1`
    starts on n01 and yields it at NOW + 100; `b1`'s reservation does not move (n00 + n01 from
    NOW + 100). Without the knob `a1` waits for that reservation."""
    snap = _cluster()
    before = schedule(snap, BASE, NOW)
    assert before.bindings == {}
    assert before.gangs["ns/a1"].reason == Reason.WAITING_FOR_RESERVATION
    r = schedule(snap, SPEC, NOW)
    assert dict(r.bindings) == {"ns/a1": {"a1-000": N1}}
    assert dict(r.speculative) == {"ns/a1": NOW + 100}
    assert r.reservations["ns/b1"].start == NOW + 100
    assert set(r.reservations["ns/b1"].nodes) == {N0, N1}
    assert r.gangs["ns/a1"].reason == Reason.BACKFILLED
    assert "started speculatively on capacity held for ns/b1 from 1m40s on" in (
        r.gangs["ns/a1"].message
    )


def test_no_speculation_on_a_hold_too_close_for_the_gangs_limit() -> None:
    """`a1`, limit 300: the hold begins 100 s from now, less than 0.5 × 300 = 150 s: `a1`
    waits; with f = 0.25 (75 s) it starts."""
    snap = _cluster(a_limit=300)
    r = schedule(snap, SPEC, NOW)
    assert r.bindings == {}
    assert r.reservations["ns/b1"].start == NOW + 100
    looser = schedule(snap, replace(BASE, speculate=0.25), NOW)
    assert dict(looser.speculative) == {"ns/a1": NOW + 100}


def test_a_gang_that_holds_a_binding_reservation_does_not_speculate() -> None:
    """`a1` created NOW − 1,000 with limit 150 is past its bound too: after `b1` (older,
    planned first, n00 + n01 from NOW + 100) it reserves n01 from `b1`'s end, NOW + 1,100. That
    reservation is its promise: it does not start speculatively."""
    r = schedule(_cluster(a_created=NOW - 1_000), SPEC, NOW)
    assert r.bindings == {}
    assert r.speculative == {}
    assert r.reservations["ns/a1"].start == NOW + 1_100


def _later(at: float, rb_running: bool) -> Snapshot:
    """The cycle at `at` after the first test's: `a1` runs on n01 (started NOW, limit 150,
    yields at NOW + 100); `rb` runs on n00 until NOW + 100 if `rb_running`."""
    run = [running("a1").on(N1).started(NOW).time_limit(150).yields_by(NOW + 100)]
    if rb_running:
        run.append(running("rb").on(N0).started(NOW - 50).time_limit(150))
    pending = [gang("b1").pods(2).created(NOW - 1_400).time_limit(1_000)]
    return snapshot(fabric(1, 1, 2), [queue("default")], run, pending)


def test_plans_count_a_speculative_gangs_capacity_free_when_it_yields() -> None:
    """At NOW + 50, `a1` (limit until NOW + 150) yields n01 at NOW + 100, so `b1`'s
    reservation stays at NOW + 100, and nothing is evicted yet. The same gang without
    `yield_by` pushes it to NOW + 150, the end of its limit."""
    r = schedule(_later(NOW + 50, rb_running=True), SPEC, NOW + 50)
    assert r.evictions == ()
    assert r.reservations["ns/b1"].start == NOW + 100
    plain = _later(NOW + 50, rb_running=True)
    plain = replace(plain, running=tuple(replace(g, yield_by=None) for g in plain.running))
    assert schedule(plain, SPEC, NOW + 50).reservations["ns/b1"].start == NOW + 150


def test_a_speculative_gang_still_running_when_the_start_is_due_is_evicted() -> None:
    """At NOW + 100 `rb` has ended and `a1` still runs on n01: `b1`'s start is due on n01, so
    `a1` is evicted whole (`ReservationDue`, for `b1`), and `b1` waits for the capacity being
    freed now."""
    r = schedule(_later(NOW + 100, rb_running=False), SPEC, NOW + 100)
    assert [(e.gang, e.reason, e.for_gang) for e in r.evictions] == [
        ("ns/a1", EvictionReason.RESERVATION_DUE, "ns/b1")
    ]
    assert r.gangs["ns/b1"].reason == Reason.WAITING_FOR_RESERVATION
    assert "capacity being freed now is reserved for it" in r.gangs["ns/b1"].message
