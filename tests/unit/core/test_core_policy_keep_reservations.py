"""`Policy.keep_reservations` (issue 19, twenty-first round): a gang that held a binding
reservation at the last cycle is planned again before any other, the longest held first (Maui's
`RESERVATIONPOLICY HIGHEST`), so the capacity drained for it stays its own.

Hand-worked on two 8-GPU nodes n00–n01. Queue `b` runs `b0` (8 GPUs on n00, time limit ending
at NOW + 1,000) and `b1` (8 GPUs on n01, ending at NOW + 5,000). Both gangs wait for a whole
node (8 GPUs, time limit 1,000 s) and are past their starvation bound (100 s): `big` of `b`,
created NOW − 1,000, and `late` of `a`, created NOW − 500. Reservations are planned queue by
queue in fair-share order, `a` (holding nothing) before `b` (holding 16): afresh, `late` takes
n00 from NOW + 1,000 and `big` follows it there from NOW + 2,000 (n01 frees only at
NOW + 5,000); reclaim and preemption are off. `Snapshot.kept` says since when a gang has held
a binding reservation.
"""

from __future__ import annotations

from dataclasses import replace

from core_builders import fabric, gang, queue, running, snapshot

from phalanx.core import CycleResult, Policy, schedule

NOW = 1_000_000.0
N0 = "s0-l0-n00"


def _cycle(keep: bool, kept: dict[str, float]) -> CycleResult:
    run = [
        running("b0").queue("b").on(N0, gpu=8).started(NOW - 100).time_limit(1_100),
        running("b1").queue("b").on("s0-l0-n01", gpu=8).started(NOW - 100).time_limit(5_100),
    ]
    pending = [
        gang("big").queue("b").pods(1, gpu=8).created(NOW - 1_000).time_limit(1_000),
        gang("late").queue("a").pods(1, gpu=8).created(NOW - 500).time_limit(1_000),
    ]
    snap = replace(snapshot(fabric(1, 1, 2), [queue("a"), queue("b")], run, pending), kept=kept)
    policy = replace(
        Policy(), reclaim=False, preemption=False, reserve_after_s=100.0, keep_reservations=keep
    )
    return schedule(snap, policy, NOW)


def _plans(result: CycleResult) -> dict[str, tuple[float, tuple[str, ...]]]:
    return {g: (r.start - NOW, r.nodes) for g, r in result.reservations.items()}


def test_afresh_the_queue_below_its_share_plans_first() -> None:
    """Off (and on with nothing kept): `late` of `a` takes n00 at +1,000, `big` follows at
    +2,000."""
    expected = {"ns/late": (1_000.0, (N0,)), "ns/big": (2_000.0, (N0,))}
    assert _plans(_cycle(False, {"ns/big": NOW - 300})) == expected
    assert _plans(_cycle(True, {})) == expected


def test_a_kept_reservation_is_planned_first_and_keeps_its_start() -> None:
    """On, `big` has held a reservation (n00 from +1,000) since NOW − 300, before `late` was
    starving: it keeps it, and `late` follows at +2,000."""
    result = _cycle(True, {"ns/big": NOW - 300})
    assert _plans(result) == {"ns/big": (1_000.0, (N0,)), "ns/late": (2_000.0, (N0,))}
    assert result.gangs["ns/big"].estimated_start == NOW + 1_000


def test_kept_reservations_keep_their_order() -> None:
    """On, both kept: the one that has held its reservation longer is planned first, whatever
    the queues' order says."""
    both = {"ns/late": NOW - 400, "ns/big": NOW - 300}
    assert _plans(_cycle(True, both)) == {
        "ns/late": (1_000.0, (N0,)),
        "ns/big": (2_000.0, (N0,)),
    }
    flipped = {"ns/late": NOW - 300, "ns/big": NOW - 400}
    assert _plans(_cycle(True, flipped)) == {
        "ns/big": (1_000.0, (N0,)),
        "ns/late": (2_000.0, (N0,)),
    }
