"""Hand-worked cycles pinning `Policy.honour_below_share` (issue 19, twenty-second round).

Five 8-GPU nodes under one leaf, `s0-l0-n00` … `s0-l0-n04`; queues `qa` and `qb`, weight 1,
no guarantee. One cycle at `NOW`; the times in the docstrings are the ones asserted.
"""

from __future__ import annotations

from dataclasses import replace

from core_builders import fabric, gang, queue, running, snapshot

from phalanx.core import Policy, Snapshot, schedule

NOW = 10_000.0
N = [f"s0-l0-n0{i}" for i in range(5)]
POLICY = Policy(reserve_after_limits=1.0, start_starving_min_members=2)
"""Starvation bound = 1 × the gang's time limit; a starving gang of 2 pods or more that fits
now is honoured (starts before the walk) while it keeps its queue within its share."""


def _big_of_a_small_queue() -> Snapshot:
    """`qa` runs `ra` (8 GPUs, on n04, limit 10 h) and waits with `big` (4 × 8 GPUs, limit
    1,000 s, created 3,600 s ago: starving); `qb` waits with `b1` (8 GPUs, limit 60 s,
    created 10 s ago). Demand qa 40, qb 8 of 40 GPUs: deserved qa 32, qb 8. `big` alone is
    its queue's whole share, and with `ra` it takes `qa` to 40, beyond it."""
    run = [running("ra").queue("qa").on(N[4]).started(NOW - 600).time_limit(36_000)]
    pending = [
        gang("big").queue("qa").pods(4).created(NOW - 3600).time_limit(1000),
        gang("b1").queue("qb").pods(1).created(NOW - 10).time_limit(60),
    ]
    return snapshot(fabric(1, 1, 5), [queue("qa"), queue("qb")], run, pending)


def test_a_starving_gang_larger_than_what_its_queue_lacks_is_honoured_from_below() -> None:
    """n00–n03 are free and `big` fits there now. `qb` comes first in the order (0 of 8
    against `qa`'s 8 of 32), so without the knob `b1` takes n00 and `big`, which would take
    `qa` beyond its share (8 + 32 > 32), is not honoured: it reserves n00–n03 from NOW + 60,
    when `b1` reaches its limit. With it, `qa` holds 8 < 32 before `big` starts: `big` binds
    on n00–n03 before the walk."""
    snap = _big_of_a_small_queue()
    before = schedule(snap, POLICY, NOW)
    assert set(before.bindings) == {"ns/b1"}
    assert before.reservations["ns/big"].start == NOW + 60
    after = schedule(snap, replace(POLICY, honour_below_share=True), NOW)
    assert "ns/big" in after.bindings
    assert set(after.bindings["ns/big"].values()) == set(N[:4])


def test_a_gang_honoured_from_below_is_not_reclaimed_back() -> None:
    """The next cycle, `big` running on n00–n03 (qa at 40 of its 32) and `b1` still waiting:
    `qb` is below its share and reclaims, but only what `qa` may lose and keep its 32: `ra`
    (40 − 8 = 32), never `big` (40 − 32 = 8). `b1` starts on n04 once `ra` is gone; `big`
    runs on."""
    run = [
        running("ra").queue("qa").on(N[4]).started(NOW - 600).time_limit(36_000),
        running("big")
        .queue("qa")
        .on(N[0])
        .on(N[1])
        .on(N[2])
        .on(N[3])
        .started(NOW)
        .time_limit(1000),
    ]
    pending = [gang("b1").queue("qb").pods(1).created(NOW - 10).time_limit(60)]
    snap = snapshot(fabric(1, 1, 5), [queue("qa"), queue("qb")], run, pending)
    r = schedule(snap, replace(POLICY, honour_below_share=True), NOW + 60)
    assert [e.gang for e in r.evictions] == ["ns/ra"]
    assert all(e.for_gang == "ns/b1" for e in r.evictions)


def test_oversize_only_honours_from_below_just_the_gangs_larger_than_the_share() -> None:
    """With `honour_below_share_oversize`, only a gang larger than its queue's whole deserved
    share is honoured from below. In the cycle above `big` (32 GPUs) is exactly `qa`'s 32, so
    it is not: `b1` starts and `big` reserves from NOW + 60. Make `b1` two pods (16 GPUs):
    demand qa 40, qb 16 of 40 GPUs, deserved 24 and 16 (equal weights); `qb` comes first
    (0 of 16 against 8 of 24) and `b1` would take n00 + n01, but `big` (32 > 24, `qa` at
    8 < 24) is honoured and binds on n00–n03."""
    oversize = replace(POLICY, honour_below_share=True, honour_below_share_oversize=True)
    equal = schedule(_big_of_a_small_queue(), oversize, NOW)
    assert set(equal.bindings) == {"ns/b1"}
    assert equal.reservations["ns/big"].start == NOW + 60
    run = [running("ra").queue("qa").on(N[4]).started(NOW - 600).time_limit(36_000)]
    pending = [
        gang("big").queue("qa").pods(4).created(NOW - 3600).time_limit(1000),
        gang("b1").queue("qb").pods(2).created(NOW - 10).time_limit(60),
    ]
    snap = snapshot(fabric(1, 1, 5), [queue("qa"), queue("qb")], run, pending)
    larger = schedule(snap, oversize, NOW)
    assert "ns/big" in larger.bindings
    assert set(larger.bindings["ns/big"].values()) == set(N[:4])
    assert set(schedule(snap, POLICY, NOW).bindings) == {"ns/b1"}
