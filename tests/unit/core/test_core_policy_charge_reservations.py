"""`Policy.charge_reservations` (issue 19): a queue below its share is owed its share, not a
binding reservation for every gang that fits within it alone.

Hand-worked: five 8-GPU nodes (40 GPUs) in one leaf. Queue `c` (not reclaimable, so nothing
can be taken back from it) runs c0..c3 on n00..n03 until NOW + 1,000 by their limits; queue
`b` runs `b0` on n04 until NOW + 500. Pending, none past its starvation bound (1 × limit):
`a1`, `a2`, `a3` of queue `a` (8 GPUs, limit 5,000 s each) and `b1` of queue `b` (4 GPUs,
limit 5,000 s). Demands a 24, b 12, c 32; water-filling the 40 GPUs gives a 14, b 12 (its
demand), c 14, so `c` borrows, `a` is owed 14 (one 8-GPU gang) and `b` 4 (b1's 4).
"""

from __future__ import annotations

from dataclasses import replace

from core_builders import fabric, gang, queue, running, snapshot

from phalanx.core import Policy, Reason, schedule

NOW = 10_000.0
OWED = Policy(reserve_after_limits=1.0, reserve_under_share=True)
CHARGED = replace(OWED, charge_reservations=True)


def _cluster() -> object:
    names = [f"s0-l0-n{i:02d}" for i in range(5)]
    run = [
        running(f"c{i}").queue("c").on(names[i]).started(NOW - 50).time_limit(1050)
        for i in range(4)
    ]
    run.append(running("b0").queue("b").on(names[4]).started(NOW - 50).time_limit(550))
    pending = [
        gang("a1").queue("a").pods(1).created(NOW - 30).time_limit(5000),
        gang("a2").queue("a").pods(1).created(NOW - 20).time_limit(5000),
        gang("a3").queue("a").pods(1).created(NOW - 10).time_limit(5000),
        gang("b1").queue("b").pods(1, gpu=4).created(NOW - 5).time_limit(5000),
    ]
    queues = [queue("a"), queue("b"), queue("c").not_reclaimable()]
    return snapshot(fabric(1, 1, 5), queues, run, pending)


def test_the_shares_are_as_worked_out() -> None:
    got = schedule(_cluster(), OWED, NOW)
    deserved = {n: q.deserved["nvidia.com/gpu"] for n, q in got.queues.items() if n != "default"}
    assert deserved == {"a": 14, "b": 12, "c": 14}


def test_uncharged_every_gang_of_a_queue_below_its_share_reserves() -> None:
    """Each of a1, a2, a3 fits within a's 14 alone, so each holds a reservation (24 GPUs for a
    queue owed 14), and b1 reserves after them."""
    got = schedule(_cluster(), OWED, NOW)
    assert set(got.reservations) == {"ns/a1", "ns/a2", "ns/a3", "ns/b1"}


def test_charged_a_queue_reserves_only_what_it_is_owed() -> None:
    """a1 reserves (n04 at NOW + 500, when b0 ends); a's 8 now count toward its 14, so a2 and
    a3 are no longer owed and, not starving, get non-binding ETAs (NOW + 1,000, when c's gangs
    end) that say why; b1 still reserves (b holds 8 of its 12, b1's 4 fit), on n00 at
    NOW + 1,000."""
    got = schedule(_cluster(), CHARGED, NOW)
    assert set(got.reservations) == {"ns/a1", "ns/b1"}
    assert got.reservations["ns/a1"].start == NOW + 500
    assert got.reservations["ns/b1"].start == NOW + 1000
    for gid in ("ns/a2", "ns/a3"):
        d = got.gangs[gid]
        assert d.reason is Reason.INSUFFICIENT_CAPACITY
        assert d.estimated_start == NOW + 1000
        assert (
            "(not binding); queue a is owed 14 of its deserved 14 and its reservations "
            "hold 8 of that already, no room for 8 more" in d.message
        )
