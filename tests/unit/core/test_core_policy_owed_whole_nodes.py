"""Hand-worked cycles pinning `Policy.owed_whole_nodes` (issue 19, twenty-eighth round).

A queue owed its deserved share walks its gangs after the starving gangs' binding reservations
were planned (it may reclaim in the walk), so a reservation of a queue already beyond its share,
planned first, can take the one whole free node and hold it idle until it starts: the owed
queue's node-sized gang, which cannot end before that, waits. With the setting, while an owed
gang waits undecided, such a reservation is planned without the nodes whole free now.

One leaf of three 8-GPU nodes, `s0-l0-n00`, `s0-l0-n01`, `s0-l0-n02` (24 GPUs), two queues of
equal weight and no usage, `qa` and `qb`. Running, both of `qb`, started at NOW − 50: `b0` holds
all of n00 with a 3,600-s limit (ends at END1 = NOW + 3,550), `b1` holds 6 GPUs of n01 with a
7,200-s limit (ends at END2 = NOW + 7,150). n02 is whole free, n01 has 2 GPUs free. Starvation
bound 3,600 s (`reserve_after_s`), gangs owed their queue's share reserve at once
(`reserve_under_share`). One cycle at `NOW`.
"""

from __future__ import annotations

from dataclasses import replace

from core_builders import GangBuilder, fabric, gang, queue, running, snapshot

from phalanx.core import Policy, Snapshot, schedule

NOW = 10_000.0
END1 = NOW - 50 + 3600
END2 = NOW - 50 + 7200
BASE = Policy(reserve_after_s=3600.0, reserve_under_share=True)
OWED = replace(BASE, owed_whole_nodes=True)
NEEDED = replace(OWED, owed_whole_needed=True)
OVERUSED = replace(OWED, owed_whole_overused=True)


def _cluster(pending: list[object]) -> Snapshot:
    run = [
        running("b0").queue("qb").on("s0-l0-n00").started(NOW - 50).time_limit(3600),
        running("b1").queue("qb").on("s0-l0-n01", gpu=6).started(NOW - 50).time_limit(7200),
    ]
    queues = [queue("qa"), queue("qb")]
    return snapshot(fabric(1, 1, 3), queues, run, pending)  # type: ignore[arg-type]


def _big() -> object:
    """`qb`'s `big`: two 8-GPU pods, 3,600-s limit, created NOW − 7,200 (starving)."""
    return gang("big").queue("qb").pods(2).created(NOW - 7200).time_limit(3600)


def test_the_owed_gang_gets_the_whole_free_node_and_the_reservation_starts_later() -> None:
    """Pending: `big` (`qb`) and `qa`'s `eight` (one 8-GPU pod, created NOW − 20) and `eight2`
    (the same, NOW − 10), 3,600-s limits. Demand: `qa` 16, `qb` 14 + 16 = 30 GPUs, so each
    deserves 12: `qb` (14) borrows beyond its share, `qa` (0) is owed, and `eight` fits within it.
    Reclaim cannot help `eight`: either victim would take `qb` below 12.

    Off: `big` is planned before the walk at its earliest start, END1 = NOW + 3,550, on n00 (`b0`
    ends) and n02 (whole free now, held idle until then). `eight` cannot end before END1 on n02
    and finds no other 8 GPUs, so it reserves for END2 = NOW + 7,150 (n01 after `b1`, or n02
    after `big`). On: `big` is planned without n02 and reserves n00 and n01 for END2; `eight`
    starts at NOW on n02. `eight2` would take `qa` to 16, beyond its 12: not owed, it waits
    without a binding reservation either way."""
    pending = [
        _big(),
        gang("eight").queue("qa").pods(1).created(NOW - 20).time_limit(3600),
        gang("eight2").queue("qa").pods(1).created(NOW - 10).time_limit(3600),
    ]
    snap = _cluster(pending)
    before = schedule(snap, BASE, NOW)
    assert dict(before.bindings) == {}
    # `owed_whole_needed` changes nothing here: `eight`'s pod needs 8 GPUs, n01 has 2 free.
    assert schedule(snap, NEEDED, NOW) == schedule(snap, OWED, NOW)
    # Nor `owed_whole_overused`: `qb` holds 14 GPUs, more than its deserved 12.
    assert schedule(snap, OVERUSED, NOW) == schedule(snap, OWED, NOW)
    assert before.reservations["ns/big"].start == END1
    assert before.reservations["ns/big"].nodes == ("s0-l0-n00", "s0-l0-n02")
    assert before.reservations["ns/eight"].start == END2
    owed = schedule(snap, OWED, NOW)
    assert dict(owed.bindings) == {"ns/eight": {"eight-000": "s0-l0-n02"}}
    assert owed.reservations["ns/big"].start == END2
    assert owed.reservations["ns/big"].nodes == ("s0-l0-n00", "s0-l0-n01")
    assert "ns/eight2" not in owed.reservations


def test_without_an_owed_gang_waiting_the_reservation_takes_the_free_node() -> None:
    """Only `big` pends: `qa` has no demand, so it is owed nothing and `qb` deserves all 24
    GPUs. Nothing is shielded: on or off, `big` reserves n00 and n02 for END1 = NOW + 3,550."""
    snap = _cluster([_big()])
    for policy in (BASE, OWED):
        result = schedule(snap, policy, NOW)
        assert dict(result.bindings) == {}
        assert result.reservations["ns/big"].start == END1
        assert result.reservations["ns/big"].nodes == ("s0-l0-n00", "s0-l0-n02")


def _big2_one_eight3() -> list[GangBuilder]:
    """`qa`'s starving `big2` (2 × 8 GPUs) and owed `one` (1 GPU), `qb`'s borrowing `eight3`
    (8 GPUs), each with a 3,600-s limit: the gangs of the last three cycles."""
    return [
        gang("big2").queue("qa").pods(2).created(NOW - 7200).time_limit(3600),
        gang("one").queue("qa").pods(1, gpu=1).created(NOW - 5).time_limit(3600),
        gang("eight3").queue("qb").pods(1).created(NOW - 1).time_limit(3600),
    ]


def test_any_owed_gang_waiting_shields_the_whole_free_node_even_one_that_fits_a_hole() -> None:
    """The rule asks only whether an owed gang waits, not whether it needs a whole node.
    Pending: `qa`'s `big2` (two 8-GPU pods, created NOW − 7,200, starving) and `one` (1 GPU,
    created NOW − 5), `qb`'s `eight3` (one 8-GPU pod, NOW − 1), 3,600-s limits. Demand `qa`
    17, `qb` 22: 12 deserved each, so `qb` (14) borrows; `one` is owed, `big2` (16 GPUs,
    beyond `qa`'s 12) is not. Off, `big2` reserves n00 and n02 for END1 = NOW + 3,550. On, it
    is planned while `one` is undecided, without n02: n00 at END1 and n01 at END2 give END2 =
    NOW + 7,150. `one` then starts at NOW on n01 (the tighter node, 2 GPUs free), as it would
    have anyway, and the node shielded for it goes to `qb`'s `eight3`, which starts at NOW on
    n02 although `qb` borrows: the cost of the simple rule, pinned here as measured."""
    snap = _cluster(_big2_one_eight3())
    before = schedule(snap, BASE, NOW)
    assert before.reservations["ns/big2"].start == END1
    assert before.reservations["ns/big2"].nodes == ("s0-l0-n00", "s0-l0-n02")
    assert dict(before.bindings)["ns/one"] == {"one-000": "s0-l0-n01"}
    owed = schedule(snap, OWED, NOW)
    assert owed.reservations["ns/big2"].start == END2
    assert owed.reservations["ns/big2"].nodes == ("s0-l0-n00", "s0-l0-n01")
    assert dict(owed.bindings) == {
        "ns/one": {"one-000": "s0-l0-n01"},
        "ns/eight3": {"eight3-000": "s0-l0-n02"},
    }


def test_with_owed_whole_needed_a_gang_that_fits_a_hole_shields_nothing() -> None:
    """The last cycle with `owed_whole_needed`: `one` needs 1 GPU and n01, partly used, has 2
    free, so no owed gang waits that needs a whole node; `big2` reserves n00 and n02 for END1
    = NOW + 3,550 as with the setting off, `one` starts at NOW on n01 and `eight3` waits."""
    snap = _cluster(_big2_one_eight3())
    needed = schedule(snap, NEEDED, NOW)
    assert needed.reservations["ns/big2"].start == END1
    assert needed.reservations["ns/big2"].nodes == ("s0-l0-n00", "s0-l0-n02")
    assert dict(needed.bindings) == {"ns/one": {"one-000": "s0-l0-n01"}}


def test_with_owed_whole_overused_a_queue_below_its_share_is_not_shielded() -> None:
    """The last cycle but one with `owed_whole_overused`: `big2`'s queue `qa` holds 0 of its
    deserved 12, so `big2`, though larger than what `qa` is owed (not owed itself), is planned
    on every node as with the setting off: n00 and n02 for END1 = NOW + 3,550, and `eight3`
    (`qb`, borrowing) waits. Shielded from the nodes as they free, cycle after cycle, a gang
    larger than its queue's share would never gather them while any owed gang waits."""
    snap = _cluster(_big2_one_eight3())
    result = schedule(snap, OVERUSED, NOW)
    assert result.reservations["ns/big2"].start == END1
    assert result.reservations["ns/big2"].nodes == ("s0-l0-n00", "s0-l0-n02")
    assert dict(result.bindings) == {"ns/one": {"one-000": "s0-l0-n01"}}
