"""Why reclaim did not start a gang whose queue is owed its share, in its message.

A user who reads "within its share, the GPUs borrowed by default (8) can be reclaimed" and sees
the gang still waiting asks why nothing was evicted. Each test is one cycle at `NOW` on 8-GPU
nodes `s0-l0-n00`, ... (one leaf), queues `a` and `b` of equal weight and no guarantee, so
with both asking for more than the cluster each deserves half of it; the message asserted is
worked out in the docstring.
"""

from __future__ import annotations

from typing import Any

from core_builders import fabric, gang, queue, running, snapshot

from phalanx.core import Policy, Reason, schedule

NOW = 10_000.0
N0, N1, N2 = "s0-l0-n00", "s0-l0-n01", "s0-l0-n02"
QUEUES = [queue("a"), queue("b")]


def _message(nodes: int, run: list[Any], pending: list[Any], queues: list[Any] = QUEUES) -> str:
    r = schedule(snapshot(fabric(1, 1, nodes), queues, run, pending), Policy(), NOW)
    assert r.evictions == (), "nothing may be evicted in these cycles"
    assert r.bindings == {}, "the owed gang must still wait"
    return r.gangs["ns/train"].message


def test_a_lender_whose_every_gang_is_larger_than_what_it_borrows_is_named_with_the_sizes() -> None:
    """32 GPUs. `b` runs `hog`, one gang of 3 × 8 GPUs (24); n03 is free. `a` waits with
    `train`, 2 × 8 GPUs (16). Demand 16 + 24 > 32: each deserves 16, so `b` borrows 8 and `a`
    is owed 16, enough for `train` (reclaim is allowed). But evicting `hog` takes `b` from 24 to
    0, below its 16: whole gangs or nothing, so nothing, and the message says so with the
    numbers."""
    hog = running("hog").queue("b").on(N0).on(N1).on(N2).started(NOW - 60)
    msg = _message(4, [hog], [gang("train").queue("a").pods(2).created(NOW - 10)])
    assert msg.endswith(
        "; reclaim cannot make room: b borrows 8 beyond its deserved 16 and its smallest "
        "running gang holds 24 (it evicts whole gangs and never takes a queue below its "
        "deserved share)"
    ), msg


def test_a_lender_that_is_not_reclaimable_is_named() -> None:
    """The cluster above with `b` not reclaimable: what it borrows (8) stays with it."""
    hog = running("hog").queue("b").on(N0).on(N1).on(N2).started(NOW - 60)
    msg = _message(
        4,
        [hog],
        [gang("train").queue("a").pods(2).created(NOW - 10)],
        [queue("a"), queue("b").not_reclaimable()],
    )
    assert msg.endswith(
        "; reclaim cannot take back what b borrows (8 beyond its share): not reclaimable"
    ), msg


def test_nothing_borrowed_means_nothing_to_take_back() -> None:
    """16 GPUs on n00 and n01. `b` runs `s0` and `s1`, 4 GPUs each, one on each node (8 of its
    share). `a` waits with `train`, one pod of 8 GPUs: 8 GPUs are free, 4 on each node, so it
    does not fit. Demand 8 + 8 = 16: each deserves its demand, `a` is owed 8 (reclaim allowed)
    but `b` borrows nothing."""
    run = [
        running("s0").queue("b").on(N0, gpu=4).started(NOW - 60),
        running("s1").queue("b").on(N1, gpu=4).started(NOW - 60),
    ]
    r = schedule(
        snapshot(fabric(1, 1, 2), QUEUES, run, [gang("train").queue("a").pods(1).created(NOW)]),
        Policy(),
        NOW,
    )
    assert r.gangs["ns/train"].reason == Reason.INSUFFICIENT_CAPACITY
    assert r.gangs["ns/train"].message.endswith(
        "; reclaim has nothing to take back: no other queue borrows beyond its share"
    ), r.gangs["ns/train"].message


def test_victims_the_guards_allow_that_free_no_place_for_it_are_said_so() -> None:
    """16 GPUs on n00 and n01. `b` runs `wide` (4 GPUs on each node, 8) and `small` (4 GPUs on
    n01): 12, of a deserved 8 (demand 8 + 12 > 16), so it borrows 4. `a` waits with `train`,
    one pod of 8 GPUs; 4 are free, on n00. The guard allows `small` (b keeps 8), whose
    eviction leaves 4 + 4 free on two nodes: no node with 8. `wide` would take `b` to 4."""
    run = [
        running("wide").queue("b").on(N0, gpu=4).on(N1, gpu=4).started(NOW - 60),
        running("small").queue("b").on(N1, gpu=4).started(NOW - 60),
    ]
    msg = _message(2, run, [gang("train").queue("a").pods(1).created(NOW)])
    assert msg.endswith(
        "; reclaim cannot make room: evicting the gangs it may take of what b borrows "
        "(4 beyond its share) frees no place where it fits"
    ), msg


def test_no_clause_when_reclaim_is_off_or_the_gang_is_larger_than_what_it_is_owed() -> None:
    """The first cluster: with reclaim off the message makes no claim about it; and a gang of
    3 × 8 GPUs (24) is larger than the 16 `a` is owed, so reclaim is not its to ask for."""
    hog = running("hog").queue("b").on(N0).on(N1).on(N2).started(NOW - 60)
    snap = snapshot(fabric(1, 1, 4), QUEUES, [hog], [gang("train").queue("a").pods(2)])
    assert "reclaim" not in schedule(snap, Policy(reclaim=False), NOW).gangs["ns/train"].message
    big = snapshot(fabric(1, 1, 4), QUEUES, [hog], [gang("train").queue("a").pods(3)])
    assert "reclaim" not in schedule(big, Policy(), NOW).gangs["ns/train"].message


def test_two_lenders_are_named_with_what_each_borrows() -> None:
    """48 GPUs on n00–n05, three queues of equal weight. `b` runs `hb` (3 × 8 GPUs on n00–n02),
    `c` runs `hc` (3 × 8 on n03–n05); `a` waits with `train`, 2 × 8. Demand 16 + 24 + 24 > 48:
    each deserves 16, so `b` and `c` borrow 8 each, and neither is reclaimable."""
    run = [
        running("hb").queue("b").on(N0).on(N1).on(N2).started(NOW - 60),
        running("hc").queue("c").on("s0-l0-n03").on("s0-l0-n04").on("s0-l0-n05").started(NOW),
    ]
    queues = [queue("a"), queue("b").not_reclaimable(), queue("c").not_reclaimable()]
    msg = _message(6, run, [gang("train").queue("a").pods(2).created(NOW - 10)], queues)
    assert msg.endswith(
        "; reclaim cannot take back what b (8) and c (8) borrow beyond their shares: "
        "not reclaimable"
    ), msg


def test_a_lender_of_higher_priority_is_left_alone_and_named() -> None:
    """24 GPUs, n00..n02, all held by `b` (priority 1): `h0`, `h1`, `h2`, 8 GPUs each. `a`
    (priority 0) waits with `train`, one 8-GPU pod. Demand 8 + 24 > 24: `a` deserves its 8, `b`
    16, so `b` borrows 8 and evicting one of its gangs would leave it at its 16 — reclaim is
    allowed by every share guard. But `b` is served first, and its evicted gang, pending again,
    would take the node back the next cycle, and reclaim would evict again. So nothing is
    evicted, and the message says why, with the priority. At equal priority the same cycle
    reclaims one of `b`'s gangs for `train`."""
    hs = [running(f"h{i}").queue("b").on(n).started(NOW - 60) for i, n in enumerate((N0, N1, N2))]
    train = gang("train").queue("a").pods(1).created(NOW - 10)
    msg = _message(3, hs, [train], [queue("a"), queue("b").priority(1)])
    assert msg.endswith(
        "; reclaim leaves what b borrows (8 beyond its share) alone: of higher priority than "
        "this queue's 0, served first, it would take back what it freed"
    ), msg
    r = schedule(snapshot(fabric(1, 1, 3), QUEUES, hs, [train]), Policy(), NOW)
    assert [e.for_gang for e in r.evictions] == ["ns/train"], r.evictions
