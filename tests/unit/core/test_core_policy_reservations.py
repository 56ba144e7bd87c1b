"""Hand-worked cycles pinning the reservation and order policy of issue 19.

Every test is one cycle at `NOW` on 8-GPU nodes `s0-l0-n00`, `s0-l0-n01`, ... (one leaf); the
times in the docstrings are the ones asserted.
"""

from __future__ import annotations

import math
from dataclasses import replace

from core_builders import GangBuilder, fabric, gang, queue, running, snapshot

from phalanx.config import OperatorConfig
from phalanx.core import Policy, Reason, Snapshot, schedule
from phalanx.core.model import PendingGang
from phalanx.core.ordering import GangKey, gang_order, starving

NOW = 10_000.0
N0, N1 = "s0-l0-n00", "s0-l0-n01"
BOUNDED = Policy(reserve_after_limits=1.0)
"""Starvation bound = 1 × the gang's time limit; FIFO order otherwise."""


def _two_nodes(big_created: float) -> tuple[Policy, object]:
    """n00 runs `r` (8 GPUs) until NOW + 100 (its limit); n01 is free. Pending, in FIFO order:
    `big` (2 × 8 GPUs, limit 1,000 s, created at `big_created`) and `long` (8 GPUs, limit
    500 s, created at NOW - 1): `long` fits n01 now but would run until NOW + 500."""
    run = [running("r").on(N0).started(NOW - 50).time_limit(150)]
    pending = [
        gang("big").pods(2).created(big_created).time_limit(1000),
        gang("long").pods(1).created(NOW - 1).time_limit(500),
    ]
    return BOUNDED, snapshot(fabric(1, 1, 2), running=run, pending=pending)


def test_a_starving_gang_gets_its_binding_reservation() -> None:
    """`big` has waited 3,600 s >= its bound of 1 × 1,000 s: it holds n00 + n01 from NOW + 100
    (when `r` reaches its limit), and `long` (would end at NOW + 500) may not start on n01."""
    policy, snap = _two_nodes(big_created=NOW - 3600)
    r = schedule(snap, policy, NOW)  # type: ignore[arg-type]
    assert r.reservations["ns/big"].start == NOW + 100
    assert set(r.reservations["ns/big"].nodes) == {N0, N1}
    assert r.gangs["ns/big"].estimated_start == NOW + 100
    assert r.bindings == {}
    assert r.gangs["ns/long"].reason == Reason.WAITING_FOR_RESERVATION
    assert "reserved for ns/big" in r.gangs["ns/long"].message


def test_a_fresh_gang_holds_nothing_and_a_smaller_one_runs_beside_it() -> None:
    """`big` has waited 500 s < its bound of 1,000 s: no binding reservation, so `long` starts
    on n01 now (until NOW + 500); `big` keeps a non-binding ETA from the same sweep, planned
    after the walk (so after `long`): NOW + 500, and its message names the rule that holds it
    back."""
    policy, snap = _two_nodes(big_created=NOW - 500)
    r = schedule(snap, policy, NOW)  # type: ignore[arg-type]
    assert set(r.bindings) == {"ns/long"}
    assert dict(r.bindings["ns/long"]) == {"long-000": N1}
    assert r.gangs["ns/long"].reason == Reason.SCHEDULED
    assert "ns/big" not in r.reservations
    assert r.gangs["ns/big"].estimated_start == NOW + 500
    message = r.gangs["ns/big"].message
    assert "(not binding)" in message
    assert "waited 8m20s of its 16m40s starvation bound" in message


def test_the_conservative_policy_reserves_for_the_fresh_gang_too() -> None:
    """Both bounds 0 (the neutral `Policy()`): `big` reserves at once (NOW + 100), `long`
    waits, as before issue 19."""
    _, snap = _two_nodes(big_created=NOW - 500)
    r = schedule(snap, Policy(), NOW)  # type: ignore[arg-type]
    assert r.reservations["ns/big"].start == NOW + 100
    assert r.bindings == {}


def test_a_short_job_backfills_beside_a_binding_reservation() -> None:
    """`big` is starving and holds n00 + n01 from NOW + 100; `short` (8 GPUs, limit 60 s) ends
    by NOW + 60, before the reservation, so it starts on n01 now, `Backfilled`."""
    run = [running("r").on(N0).started(NOW - 50).time_limit(150)]
    pending = [
        gang("big").pods(2).created(NOW - 3600).time_limit(1000),
        gang("short").pods(1).created(NOW - 1).time_limit(60),
    ]
    r = schedule(snapshot(fabric(1, 1, 2), running=run, pending=pending), BOUNDED, NOW)
    assert r.reservations["ns/big"].start == NOW + 100
    assert dict(r.bindings["ns/short"]) == {"short-000": N1}
    assert r.gangs["ns/short"].reason == Reason.BACKFILLED


def test_a_starving_gang_is_walked_first_across_queues() -> None:
    """Queue `a` is idle (share 0) and would be served first; queue `b`'s `big` has waited
    3,600 s (bound 1,000 s) and is walked before `a`'s fresh gang, so it reserves n00 + n01
    from NOW + 100 and `a/long` (until NOW + 500) may not start on n01."""
    run = [running("r").queue("b").on(N0).started(NOW - 50).time_limit(150)]
    pending = [
        gang("big").queue("b").pods(2).created(NOW - 3600).time_limit(1000),
        gang("long").queue("a").pods(1).created(NOW - 1).time_limit(500),
    ]
    snap = snapshot(fabric(1, 1, 2), [queue("a"), queue("b")], run, pending)
    r = schedule(snap, BOUNDED, NOW)
    assert r.reservations["ns/big"].start == NOW + 100
    assert r.bindings == {}


def test_a_gang_of_a_queue_below_its_share_reserves_before_its_bound() -> None:
    """Three nodes. Queue `b` runs `r` on n00 (until NOW + 100) and `r2` on n02 (no limit),
    neither reclaimable (its queue lends nothing back), and has `long` pending: it deserves 8
    of the 24 GPUs and borrows 8. Queue `a` (weight 2) holds nothing and deserves 16: its
    `big` (16 GPUs) has waited only 500 s (bound 1,000 s), but its queue is owed its share
    while `b` borrows, so `reserve_under_share` lets it reserve n00 + n01 from NOW + 100 and
    `long` may not take n01. Without the exception `long` starts on n01 and `big` holds
    nothing."""
    run = [
        running("r").queue("b").on(N0).started(NOW - 50).time_limit(150),
        running("r2").queue("b").on("s0-l0-n02").started(NOW - 50),
    ]
    pending = [
        gang("big").queue("a").pods(2).created(NOW - 500).time_limit(1000),
        gang("long").queue("b").pods(1).created(NOW - 1).time_limit(500),
    ]
    snap = snapshot(
        fabric(1, 1, 3), [queue("a").weight(2), queue("b").not_reclaimable()], run, pending
    )
    off = schedule(snap, BOUNDED, NOW)
    assert "ns/big" not in off.reservations
    assert set(off.bindings) == {"ns/long"}
    on = schedule(snap, Policy(reserve_after_limits=1.0, reserve_under_share=True), NOW)
    assert on.reservations["ns/big"].start == NOW + 100
    assert on.bindings == {}


def test_an_owed_reservation_says_whether_it_will_be_honoured_when_due() -> None:
    """The cluster of the test above, with reservations honoured from 2 pods
    (`start_starving_min_members`). `big` (2 pods, bound 1,000 s) reserves n00 + n01 from
    NOW + 100 because its queue is owed. Created at NOW - 500 it will have waited 600 s then,
    short of its bound: not honoured, so its message says gangs ahead of it may start there
    first, and, as it is of the honoured size, when that ends: once it has waited 1,000 s
    (16m40s), at NOW + 500 (in 8m20s). Created at NOW - 950 it will have waited 1,050 s:
    starving then, honoured, and the message has no such clause."""
    policy = Policy(
        reserve_after_limits=1.0, reserve_under_share=True, start_starving_min_members=2
    )
    run = [
        running("r").queue("b").on(N0).started(NOW - 50).time_limit(150),
        running("r2").queue("b").on("s0-l0-n02").started(NOW - 50),
    ]
    queues = [queue("a").weight(2), queue("b").not_reclaimable()]

    def message(created: float) -> str:
        pending = [gang("big").queue("a").pods(2).created(created).time_limit(1000)]
        r = schedule(snapshot(fabric(1, 1, 3), queues, run, pending), policy, NOW)
        assert r.reservations["ns/big"].start == NOW + 100
        return r.gangs["ns/big"].message

    assert message(NOW - 500).endswith(
        "binding until then, but gangs ahead of it in the order may start there first "
        "(it starts ahead of the order once it has waited 16m40s, in 8m20s)"
        "; reclaim cannot take back what b borrows (8 beyond its share): not reclaimable"
    )
    assert "binding until then" not in message(NOW - 950)


def test_per_queue_depth_caps_binding_reservations() -> None:
    """Two nodes busy until NOW + 100 and NOW + 200. Queue `a` has two starving 16-GPU gangs
    (limits 1,000 s): uncapped, g1 reserves NOW + 200 and g2 after it, NOW + 1,200. With
    `backfill_depth_per_queue=1` only g1 reserves; g2 gets a non-binding ETA planned after the
    walk, behind g1's reservation: NOW + 1,200, and its message says the queue's cap holds it."""
    run = [
        running("r0").on(N0).started(NOW).time_limit(100),
        running("r1").on(N1).started(NOW).time_limit(200),
    ]
    pending = [
        gang("g1").pods(2).created(NOW - 5000).time_limit(1000),
        gang("g2").pods(2).created(NOW - 4000).time_limit(1000),
    ]
    snap = snapshot(fabric(1, 1, 2), running=run, pending=pending)
    both = schedule(snap, BOUNDED, NOW)
    assert {g: x.start for g, x in both.reservations.items()} == {
        "ns/g1": NOW + 200,
        "ns/g2": NOW + 1200,
    }
    capped = schedule(snap, Policy(reserve_after_limits=1.0, backfill_depth_per_queue=1), NOW)
    assert set(capped.reservations) == {"ns/g1"}
    assert capped.gangs["ns/g2"].estimated_start == NOW + 1200
    assert "queue default already holds 1 reservation" in capped.gangs["ns/g2"].message


def test_the_per_queue_cap_can_leave_gangs_of_one_pod_alone() -> None:
    """The cap's cycle with a third node, busy until NOW + 300, and a starving gang of one pod,
    `one` (8 GPUs, limit 1,000 s, created NOW − 3,000), planned after g1 and g2 (older). With
    the cap of one reservation per queue only g1 reserves. With `cap_min_members=2` the cap
    counts and holds back only gangs of two or more pods: g1 reserves n00 + n01 from NOW + 200,
    g2 is still capped, and `one` reserves n02 from NOW + 300."""
    run = [
        running("r0").on(N0).started(NOW).time_limit(100),
        running("r1").on(N1).started(NOW).time_limit(200),
        running("r2").on("s0-l0-n02").started(NOW).time_limit(300),
    ]
    pending = [
        gang("g1").pods(2).created(NOW - 5000).time_limit(1000),
        gang("g2").pods(2).created(NOW - 4000).time_limit(1000),
        gang("one").pods(1).created(NOW - 3000).time_limit(1000),
    ]
    snap = snapshot(fabric(1, 1, 3), running=run, pending=pending)
    cap = Policy(reserve_after_limits=1.0, backfill_depth_per_queue=1)
    assert set(schedule(snap, cap, NOW).reservations) == {"ns/g1"}
    multi = schedule(snap, replace(cap, cap_min_members=2), NOW)
    assert {g: x.start for g, x in multi.reservations.items()} == {
        "ns/g1": NOW + 200,
        "ns/one": NOW + 300,
    }
    assert multi.reservations["ns/one"].nodes == ("s0-l0-n02",)


def test_eta_switch_changes_no_decision() -> None:
    """`estimate_unreserved=False` (the simulator) drops the non-binding ETA of the fresh
    `big` and nothing else: `long` still starts on n01."""
    policy, snap = _two_nodes(big_created=NOW - 500)
    a = schedule(snap, policy, NOW)  # type: ignore[arg-type]
    b = schedule(snap, Policy(reserve_after_limits=1.0, estimate_unreserved=False), NOW)  # type: ignore[arg-type]
    assert a.bindings == b.bindings and a.reservations == b.reservations
    assert b.gangs["ns/big"].estimated_start is None


def _key(gid: str, created: float, gpus: int, limit: float) -> GangKey:
    return GangKey(PendingGang(id=gid, min_member=1, creation_time=created), gpus, gpus * limit)


def test_order_by_work() -> None:
    """At t = 100: A (8 GPUs × 8 h, created 0), B (1 GPU × 30 min, created 1), C (8 GPUs ×
    30 min, created 2). Ages normalised by 100 s: 1, 0.99, 0.98. Work on a log scale between
    ln 1,800 (B) and ln 230,400 (A): B 0, C ln 8 / ln 128 = 3/7, A 1. Score = age − work:
    A 0, B 0.99, C 0.98 − 0.4286 = 0.5514, so B, C, A; FIFO (work weight 0) is A, B, C."""
    items = [
        _key("A", 0, 8, 8 * 3600),
        _key("B", 1, 1, 1800),
        _key("C", 2, 8, 1800),
    ]
    assert [items[i].gang.id for i in gang_order(items, 100, 1.0, 0.0, 1.0)] == ["B", "C", "A"]
    assert [items[i].gang.id for i in gang_order(items, 100, 1.0, 0.0, 0.0)] == ["A", "B", "C"]


def test_absolute_age_saturates_at_age_max() -> None:
    """`Policy.age_max` (Slurm's `PriorityMaxAge`), work weight 0.5, at t = 7,200 s: I (1 GPU ×
    30 min, created 7,100) and J (1 GPU × 1 h, created 0). Work on a log scale: I 0, J 1.
    Relative age (the longest wait pending, 7,200 s, is 1): I 100/7,200 = 0.0139, J 1; scores
    I 0.0139, J 1 − 0.5 = 0.5: J first. With `age_max` 86,400 s the ages are 100/86,400 =
    0.0012 and 7,200/86,400 = 0.0833; scores I 0.0012, J 0.0833 − 0.5 = −0.4167: I first —
    two hours are little against a day, so the work term decides. With `age_max` 100 s both
    ages saturate at 1: I 1, J 0.5: I first."""
    items = [_key("I", 7100, 1, 1800), _key("J", 0, 1, 3600)]

    def ids(age_max: float) -> list[str]:
        return [items[i].gang.id for i in gang_order(items, 7200, 1.0, 0.0, 0.5, age_max)]

    assert ids(0.0) == ["J", "I"]
    assert ids(86_400.0) == ["I", "J"]
    assert ids(100.0) == ["I", "J"]


def test_absolute_age_in_a_cycle() -> None:
    """The same pair through `schedule`, one free 8-GPU node, work weight 0.5: J (8 GPUs,
    limit 1 h, created NOW - 7,200) and I (8 GPUs, limit 30 min, created NOW - 100). Relative
    age: J 1 − 0.5 = 0.5 beats I 0.0139, J binds; with `age_max` 86,400 s, I 0.0012 beats
    J 0.0833 − 0.5, I binds (the cycle passes `Policy.age_max` to the order)."""
    pending = [
        gang("J").pods(1).created(NOW - 7200).time_limit(3600),
        gang("I").pods(1).created(NOW - 100).time_limit(1800),
    ]
    snap = snapshot(fabric(1, 1, 1), pending=pending)
    assert set(schedule(snap, Policy(work_weight=0.5), NOW).bindings) == {"ns/J"}
    absolute = Policy(work_weight=0.5, age_max=86_400.0)
    assert set(schedule(snap, absolute, NOW).bindings) == {"ns/I"}


def test_work_order_in_a_cycle() -> None:
    """One free 8-GPU node. `A` (8 GPUs, limit 8 h, created NOW - 100) and `C` (8 GPUs, limit
    30 min, created NOW - 99): FIFO binds A; with work weight 1, C's score 0.99 − 0 beats A's
    1 − 1 = 0, so C binds and A waits."""
    pending = [
        gang("A").pods(1).created(NOW - 100).time_limit(8 * 3600),
        gang("C").pods(1).created(NOW - 99).time_limit(1800),
    ]
    snap = snapshot(fabric(1, 1, 1), pending=pending)
    assert set(schedule(snap, Policy(), NOW).bindings) == {"ns/A"}
    assert set(schedule(snap, Policy(work_weight=1.0), NOW).bindings) == {"ns/C"}


def test_starvation_bound() -> None:
    """Bound = min(after_limits × limit, after_s), each part off at 0; both 0: always."""
    assert starving(0, 100, 0, 0)
    assert not starving(99, 100, 1, 0) and starving(100, 100, 1, 0)
    assert starving(50, 100, 1, 50) and not starving(49, 100, 1, 50)
    assert not starving(10**9, math.inf, 1, 0)  # no limit and no cap: never
    assert starving(86400, math.inf, 1, 86400)


def test_only_gangs_of_several_members_hold_reservations() -> None:
    """One node: `r` holds 4 GPUs until NOW + 100. `one` (1 pod × 8 GPUs, limit 1,000 s) has
    waited 3,600 s, past its bound; `small` (1 pod × 4 GPUs, limit 500 s) is fresh. Any gang
    may reserve: `one` holds the node from NOW + 100 and `small` (until NOW + 500) waits. With
    `reserve_min_members=2` a one-pod gang holds nothing: `small` starts now, and `one`'s
    message names the rule."""
    run = [running("r").on(N0, gpu=4).started(NOW - 50).time_limit(150)]
    pending = [
        gang("one").pods(1, gpu=8).created(NOW - 3600).time_limit(1000),
        gang("small").pods(1, gpu=4).created(NOW - 1).time_limit(500),
    ]
    snap = snapshot(fabric(1, 1, 1), running=run, pending=pending)
    anyone = schedule(snap, BOUNDED, NOW)
    assert anyone.reservations["ns/one"].start == NOW + 100
    assert anyone.bindings == {}
    several = schedule(snap, Policy(reserve_after_limits=1.0, reserve_min_members=2), NOW)
    assert set(several.bindings) == {"ns/small"}
    assert "ns/one" not in several.reservations
    assert "only gangs of 2 or more members hold reservations" in several.gangs["ns/one"].message


def _two_owed_queues() -> object:
    """Six 8-GPU nodes (48 GPUs), all running gangs of queue `c` (weight 4): c0 on n00 started
    at NOW - 100, c1 on n01 at NOW - 200, … (c0 has run least). Queue `a` (weight 1) has `a1`
    and `a2` pending (8 GPUs each, created NOW - 20 and NOW - 10), queue `b` (weight 1) has
    `b1` (8 GPUs, created NOW - 5). Demands 16, 8, 48: water-filling gives a 8, b 8, c 32, so
    `c` borrows 16 and each of `a` and `b` is owed one gang."""
    names = [f"s0-l0-n{i:02d}" for i in range(6)]
    run = [
        running(f"c{i}").queue("c").on(n).started(NOW - 100 * (i + 1)) for i, n in enumerate(names)
    ]
    pending = [
        gang("a1").queue("a").pods(1).created(NOW - 20),
        gang("a2").queue("a").pods(1).created(NOW - 10),
        gang("b1").queue("b").pods(1).created(NOW - 5),
    ]
    queues = [queue("a"), queue("b"), queue("c").weight(4)]
    return snapshot(fabric(1, 1, 6), queues, run, pending)


def test_a_queue_reclaims_no_more_than_its_share_in_one_cycle() -> None:
    """`a1` reclaims c0 (the gang that has run least) and holds n00 from NOW; queue `a` is then
    at its share of 8 for the rest of the cycle, so `a2` may not reclaim, and `b1` reclaims c1
    (n01). Before the fix (`charge_promised=False`) `a`'s allocation stayed 0 while its gangs
    reclaimed: `a2` reclaimed c1 as well, `c` reached its share of 32, and `b1` got nothing —
    queue `a` at 16 of its 8, `b` at 0 of its 8, which the next cycle reclaims back."""
    snap = _two_owed_queues()
    for policy in (Policy(), OperatorConfig().to_policy()):
        r = schedule(snap, policy, NOW)  # type: ignore[arg-type]
        assert {(e.gang, e.for_gang) for e in r.evictions} == {
            ("ns/c0", "ns/a1"),
            ("ns/c1", "ns/b1"),
        }
        assert set(r.reservations["ns/a1"].nodes) == {"s0-l0-n00"}
        assert set(r.reservations["ns/b1"].nodes) == {"s0-l0-n01"}
        assert r.gangs["ns/a2"].reason != Reason.WAITING_FOR_RESERVATION
    old = schedule(snap, Policy(charge_promised=False), NOW)  # type: ignore[arg-type]
    assert {(e.gang, e.for_gang) for e in old.evictions} == {
        ("ns/c0", "ns/a1"),
        ("ns/c1", "ns/a2"),
    }


def test_gangs_that_could_reclaim_are_left_to_the_walk() -> None:
    """Six nodes: `c` runs c0…c4 (8 GPUs each) on n01…n05, and c5 (4 GPUs, started at
    NOW - 10,000) on n00, which has 4 GPUs free. Demands a 12 (`a1`: 4 GPUs, `a2`: 8), b 8,
    c 44: shares a 8, b 8, c 32. Both of `a`'s gangs are owed their queue's share, so the
    shipped policy used to plan them before the walk: `a1` fits n00 now and was left for the
    walk (not charged yet), so `a2` reclaimed c0 against `a`'s allocation of 0, and `b1`
    reclaimed c5 — the gang beside `a1`'s free GPUs — so `a1` found n00 reserved for `b1`:
    two evictions and nothing bound. Now gangs that could evict are left to the walk: `a1`
    binds on n00, `a` (4 of 8) comes after `b` (0 of 8), `b1` reclaims c0, and `a2` (4 + 8 >
    8) may not."""
    names = [f"s0-l0-n{i:02d}" for i in range(1, 6)]
    run = [
        running(f"c{i}").queue("c").on(n).started(NOW - 100 * (i + 1)) for i, n in enumerate(names)
    ]
    run.append(running("c5").queue("c").on("s0-l0-n00", gpu=4).started(NOW - 10_000))
    pending = [
        gang("a1").queue("a").pods(1, gpu=4).created(NOW - 20),
        gang("a2").queue("a").pods(1).created(NOW - 10),
        gang("b1").queue("b").pods(1).created(NOW - 5),
    ]
    snap = snapshot(fabric(1, 1, 6), [queue("a"), queue("b"), queue("c").weight(4)], run, pending)
    shipped = OperatorConfig().to_policy()
    r = schedule(snap, shipped, NOW)
    assert dict(r.bindings) == {"ns/a1": {"a1-000": "s0-l0-n00"}}
    assert {(e.gang, e.for_gang) for e in r.evictions} == {("ns/c0", "ns/b1")}
    old = schedule(snap, replace(shipped, evict_before_walk=True), NOW)
    assert dict(old.bindings) == {}
    assert {(e.gang, e.for_gang) for e in old.evictions} == {
        ("ns/c0", "ns/a2"),
        ("ns/c5", "ns/b1"),
    }
    assert "reserved for ns/b1" in old.gangs["ns/a1"].message


def test_a_starving_gang_of_several_members_starts_before_the_order() -> None:
    """Two free nodes. `big` (2 × 8 GPUs, limit 1,000 s) has waited 3,600 s, past its bound;
    `small` (8 GPUs, limit 60 s) was created a second later. By work (weight 1) `small` comes
    first (score 0.9997 against `big`'s 1 − 1 = 0) and takes n00, so `big` reserves from
    NOW + 60, when `small` ends — the capacity its reservation held comes free and goes to the
    first gang of the order, again and again. With `start_starving_min_members=2` a starving
    gang of two or more pods that fits now starts before the walk: `big` binds on both nodes
    and `small` waits. A starving gang of one pod is not promoted: it fits wherever one node
    frees, so the order serves it."""
    pending = [
        gang("big").pods(2).created(NOW - 3600).time_limit(1000),
        gang("small").pods(1).created(NOW - 3599).time_limit(60),
    ]
    snap = snapshot(fabric(1, 1, 2), pending=pending)
    order = Policy(reserve_after_limits=1.0, work_weight=1.0)
    r = schedule(snap, order, NOW)
    assert set(r.bindings) == {"ns/small"}
    assert r.reservations["ns/big"].start == NOW + 60
    first = schedule(snap, replace(order, start_starving_min_members=2), NOW)
    assert set(first.bindings) == {"ns/big"}
    assert set(first.bindings["ns/big"].values()) == {N0, N1}
    one = [
        gang("big").pods(1, gpu=8).created(NOW - 3600).time_limit(1000),
        gang("small").pods(1).created(NOW - 3599).time_limit(60),
    ]
    solo = schedule(
        snapshot(fabric(1, 1, 1), pending=one), replace(order, start_starving_min_members=2), NOW
    )
    assert set(solo.bindings) == {"ns/small"}


def test_a_gang_starving_twice_the_absolute_bound_starts_before_the_order() -> None:
    """One free node. `whole` (one 8-GPU pod, limit 100,000 s) and `small` (8 GPUs, limit
    60 s, created a second later); the bound is min(1 × limit, 2,000 s) = 2,000 s. `whole`
    has waited 3,600 s: starving, but of one pod, so the order serves `small` first (work)
    and `whole` reserves from NOW + 60. With `honour_after=2` it is honoured only past
    2 × 2,000 s = 4,000 s: at 3,600 s still not; created at NOW - 4,000 it starts on the node
    before the walk and `small` waits."""
    order = Policy(reserve_after_limits=1.0, reserve_after_s=2000.0, work_weight=1.0)
    ladder = replace(order, honour_after=2.0)

    def cycle(created: float, policy: Policy) -> set[str]:
        pending = [
            gang("whole").pods(1, gpu=8).created(created).time_limit(100_000),
            gang("small").pods(1).created(created + 1).time_limit(60),
        ]
        return set(schedule(snapshot(fabric(1, 1, 1), pending=pending), policy, NOW).bindings)

    assert cycle(NOW - 3600, order) == {"ns/small"}
    assert cycle(NOW - 3600, ladder) == {"ns/small"}
    assert cycle(NOW - 4000, order) == {"ns/small"}
    assert cycle(NOW - 4000, ladder) == {"ns/whole"}


def test_a_reservation_below_the_honoured_size_says_what_it_does_not_promise() -> None:
    """The shipped policy, one node (a leaf of one: reservations are honoured from 2 pods).
    n00 runs `r` until NOW + 100. `whole` (one 8-GPU pod, limit 48 h) has waited 30 h, past
    its 24 h bound: it holds n00 from NOW + 100, and its message says that gangs ahead of it
    in the order may still start there first. At NOW + 100 they do: the three single-GPU
    jobs of an hour (less work) take n00 and `whole` is expected an hour later, when they
    end. A gang of two pods on two such nodes is honoured, and its message has no such
    clause."""
    shipped = OperatorConfig().to_policy()
    clause = "binding until then, but gangs ahead of it in the order may start there first"
    run = [running("r").on(N0).started(NOW - 50).time_limit(150)]
    pending = [gang("whole").pods(1, gpu=8).created(NOW - 30 * 3600).time_limit(48 * 3600)]
    pending += [gang(f"s{i}").pods(1, gpu=1).created(NOW - 3600).time_limit(3600) for i in range(3)]
    r = schedule(snapshot(fabric(1, 1, 1), running=run, pending=pending), shipped, NOW)
    assert r.gangs["ns/whole"].estimated_start == NOW + 100
    assert r.reservations["ns/whole"].start == NOW + 100
    assert clause + " (a reservation starts ahead of the order from 2 pods)" in (
        r.gangs["ns/whole"].message
    )
    later = schedule(snapshot(fabric(1, 1, 1), pending=pending), shipped, NOW + 100)
    assert set(later.bindings) == {"ns/s0", "ns/s1", "ns/s2"}
    assert later.gangs["ns/whole"].estimated_start == NOW + 100 + 3600
    pair = [gang("pair").pods(2).created(NOW - 30 * 3600).time_limit(48 * 3600)]
    run2 = [*run, running("r2").on("s0-l1-n00").started(NOW - 50).time_limit(150)]
    two = schedule(snapshot(fabric(1, 2, 1), running=run2, pending=pair), shipped, NOW)
    assert two.reservations["ns/pair"].start == NOW + 100
    assert "binding until then" not in two.gangs["ns/pair"].message


def test_a_starving_gang_of_a_whole_leaf_starts_before_the_order() -> None:
    """One leaf of two nodes. `leaf` (2 × 8 GPUs, limit 1,000 s) has waited 3,600 s, past its
    bound, and needs the whole leaf; `small` (8 GPUs, limit 60 s, created a second later)
    comes first by work. With n01 busy until NOW + 100, `small` starts on n00 (it ends by
    NOW + 60) and `leaf` reserves both nodes from NOW + 100. At NOW + 100 both are free: the
    shipped rule (`start_starving_leaves` 1) starts `leaf` before the walk; without it the
    walk hands n00 to `small` first and `leaf` reserves again, from NOW + 160."""
    pending = [
        gang("leaf").pods(2).created(NOW - 3600).time_limit(1000),
        gang("small").pods(1).created(NOW - 3599).time_limit(60),
    ]
    shipped = replace(OperatorConfig().to_policy(), estimate_unreserved=False)
    run = [running("r").on(N1).started(NOW - 50).time_limit(150)]
    t = schedule(snapshot(fabric(1, 1, 2), running=run, pending=pending), shipped, NOW)
    assert dict(t.bindings) == {"ns/small": {"small-000": N0}}
    assert t.reservations["ns/leaf"].start == NOW + 100
    later = snapshot(fabric(1, 1, 2), pending=pending)
    honoured = schedule(later, shipped, NOW + 100)
    assert set(honoured.bindings) == {"ns/leaf"}
    assert set(honoured.bindings["ns/leaf"].values()) == {N0, N1}
    again = schedule(later, replace(shipped, start_starving_leaves=0.0), NOW + 100)
    assert set(again.bindings) == {"ns/small"}
    assert again.reservations["ns/leaf"].start == NOW + 160


def test_a_queue_owed_its_share_reserves_before_the_queues_after_it() -> None:
    """Two nodes, both running gangs of queue `b` (not reclaimable): `rb` on n00 until
    NOW + 100, `rb2` on n01 until NOW + 200. Demands a 8, b 24: shares 8 and 8, so `b` borrows
    8 and `a` is owed its share. `a1` (8 GPUs, limit 1,000 s, fresh) could reclaim, so it is
    left to the walk; `b1` (8 GPUs, limit 1,000 s) has starved. Before the walk `b1` reserves
    n00 from NOW + 100, and `a1`, whose reclaim finds no victim, reserves n01 from NOW + 200:
    the queue owed its share reserves last. With `owed_first` the pass before the walk stops
    at `a1`, the walk serves `a` first (0 of 8) and `a1` reserves n00 from NOW + 100, `b1`
    n01 from NOW + 200."""
    run = [
        running("rb").queue("b").on(N0).started(NOW - 50).time_limit(150),
        running("rb2").queue("b").on(N1).started(NOW - 50).time_limit(250),
    ]
    pending = [
        gang("a1").queue("a").pods(1).created(NOW - 10).time_limit(1000),
        gang("b1").queue("b").pods(1).created(NOW - 5000).time_limit(1000),
    ]
    snap = snapshot(fabric(1, 1, 2), [queue("a"), queue("b").not_reclaimable()], run, pending)
    base = Policy(reserve_after_limits=1.0, reserve_under_share=True)
    before = schedule(snap, base, NOW)
    assert {g: (x.start, x.nodes) for g, x in before.reservations.items()} == {
        "ns/b1": (NOW + 100, (N0,)),
        "ns/a1": (NOW + 200, (N1,)),
    }
    first = schedule(snap, replace(base, owed_first=True), NOW)
    assert {g: (x.start, x.nodes) for g, x in first.reservations.items()} == {
        "ns/a1": (NOW + 100, (N0,)),
        "ns/b1": (NOW + 200, (N1,)),
    }
    assert not first.evictions and not first.bindings


def _b_on_three_nodes(pending: list[GangBuilder]) -> Snapshot:
    """Three nodes running gangs of queue `b` (not reclaimable) until NOW + 100, + 200 and
    + 300; queues `a` (weight 2) and `b`; `pending` as given."""
    nodes = [N0, N1, "s0-l0-n02"]
    run = [
        running(f"rb{i}").queue("b").on(n).started(NOW - 50).time_limit(150 + 100 * i)
        for i, n in enumerate(nodes)
    ]
    queues = [queue("a").weight(2), queue("b").not_reclaimable()]
    return snapshot(fabric(1, 1, 3), queues, run, pending)


def test_gangs_owed_their_share_reserve_beyond_the_per_queue_cap() -> None:
    """Three nodes running gangs of queue `b` (not reclaimable) until NOW + 100, + 200 and
    + 300. Queue `a` (weight 2) has `a1` and `a2` pending (8 GPUs, limit 1,000 s, fresh):
    demands a 16, b 24, shares a 16, b 8, so both are owed `a`'s share. With one binding
    reservation per queue only `a1` reserves (n00 from NOW + 100) and `a2` is held back by the
    cap; with `owed_uncapped` the cap is for starving gangs of queues at their share only, and
    `a2` reserves n01 from NOW + 200."""
    pending = [
        gang("a1").queue("a").pods(1).created(NOW - 20).time_limit(1000),
        gang("a2").queue("a").pods(1).created(NOW - 10).time_limit(1000),
    ]
    snap = _b_on_three_nodes(pending)
    capped = Policy(reserve_after_limits=1.0, reserve_under_share=True, backfill_depth_per_queue=1)
    one = schedule(snap, capped, NOW)
    assert {g: (x.start, x.nodes) for g, x in one.reservations.items()} == {
        "ns/a1": (NOW + 100, (N0,)),
    }
    assert "queue a already holds 1 reservation" in one.gangs["ns/a2"].message
    both = schedule(snap, replace(capped, owed_uncapped=True), NOW)
    assert {g: (x.start, x.nodes) for g, x in both.reservations.items()} == {
        "ns/a1": (NOW + 100, (N0,)),
        "ns/a2": (NOW + 200, (N1,)),
    }


def test_gangs_of_one_pod_reserve_only_when_owed_with_owed_small() -> None:
    """The cluster above (queue `b` on all three nodes until NOW + 100, + 200, + 300; `a`
    owed its share). `a1` (one pod, fresh) reserves n00 from NOW + 100 as an owed gang. With
    `reserve_min_members=2` a gang of one pod never reserves, owed or not; with `owed_small`
    too it reserves again because its queue is owed. `b`'s one-pod gang `b9`, not
    owed (its queue borrows) and past its bound (created NOW − 2,000, limit 1,000 s), holds no
    reservation either way: starvation reservations are still for gangs of two pods or more."""
    pending = [
        gang("a1").queue("a").pods(1).created(NOW - 20).time_limit(1000),
        gang("b9").queue("b").pods(1).created(NOW - 2000).time_limit(1000),
    ]
    snap = _b_on_three_nodes(pending)
    owed = Policy(reserve_after_limits=1.0, reserve_under_share=True)
    assert set(schedule(snap, owed, NOW).reservations) == {"ns/a1", "ns/b9"}
    large_only = replace(owed, reserve_min_members=2)
    none = schedule(snap, large_only, NOW)
    assert set(none.reservations) == set()
    assert "only gangs of 2 or more members" in none.gangs["ns/a1"].message
    small = schedule(snap, replace(large_only, owed_small=True), NOW)
    assert {g: (x.start, x.nodes) for g, x in small.reservations.items()} == {
        "ns/a1": (NOW + 100, (N0,)),
    }
    assert "only gangs of 2 or more members" in small.gangs["ns/b9"].message


def _owed_and_starving() -> object:
    """Two nodes; n00 runs `rb` of queue `b` (8 GPUs) until NOW + 100, n01 is free. Queue `b`
    has `b1` pending (2 × 8 GPUs, limit 1,000 s, waited 5,000 s: starving); queue `a` has `a1`
    (8 GPUs, limit 500 s, fresh). Demands a 8, b 24, equal weights: shares 8 and 8, so `a`
    holds 0 of its 8 and `b` is at its share (not borrowing: nothing to reclaim)."""
    run = [running("rb").queue("b").on(N0).started(NOW - 50).time_limit(150)]
    pending = [
        gang("a1").queue("a").pods(1).created(NOW - 10).time_limit(500),
        gang("b1").queue("b").pods(2).created(NOW - 5000).time_limit(1000),
    ]
    return snapshot(fabric(1, 1, 2), [queue("a"), queue("b")], run, pending)


def test_a_queue_below_its_share_starts_before_the_next_queue_reserves() -> None:
    """`_owed_and_starving`. Without `owed_start_first`, `b1` is planned before the walk and
    holds n00 + n01 from NOW + 100, so `a1` (would run until NOW + 500) may not start on n01:
    `a` stays at 0 of its share behind a reservation of a queue already at its own. With it,
    `a`'s pass comes first (furthest below its share): `a1` starts on n01 now, and `b1`
    reserves both nodes from NOW + 500, when `a1` reaches its limit."""
    snap = _owed_and_starving()
    base = Policy(reserve_after_limits=1.0, reserve_under_share=True)
    before = schedule(snap, base, NOW)  # type: ignore[arg-type]
    assert before.bindings == {}
    assert before.reservations["ns/b1"].start == NOW + 100
    assert before.gangs["ns/a1"].reason == Reason.WAITING_FOR_RESERVATION
    assert "reserved for ns/b1" in before.gangs["ns/a1"].message
    first = schedule(snap, replace(base, owed_start_first=True), NOW)  # type: ignore[arg-type]
    assert dict(first.bindings) == {"ns/a1": {"a1-000": N1}}
    assert first.reservations["ns/b1"].start == NOW + 500
    assert set(first.reservations["ns/b1"].nodes) == {N0, N1}


def test_owed_start_first_leaves_a_gang_beyond_its_queues_share_to_the_walk() -> None:
    """`_owed_and_starving` with weights a 1, b 3: shares a 4, b 12 (of 16). `a1` (8 GPUs)
    fits n01 now but not within `a`'s share of 4, so the pass does not start it: `b1` reserves
    n00 + n01 from NOW + 100 as without the rule, and `a1` may not start beside it."""
    run = [running("rb").queue("b").on(N0).started(NOW - 50).time_limit(150)]
    pending = [
        gang("a1").queue("a").pods(1).created(NOW - 10).time_limit(500),
        gang("b1").queue("b").pods(2).created(NOW - 5000).time_limit(1000),
    ]
    queues = [queue("a").weight(1), queue("b").weight(3)]
    snap = snapshot(fabric(1, 1, 2), queues, run, pending)
    policy = Policy(reserve_after_limits=1.0, reserve_under_share=True, owed_start_first=True)
    r = schedule(snap, policy, NOW)
    assert r.queues["a"].deserved["nvidia.com/gpu"] == 4
    assert r.bindings == {}
    assert r.reservations["ns/b1"].start == NOW + 100


def test_owed_start_first_changes_nothing_for_a_lone_queue() -> None:
    """`_two_nodes` with the starving `big`: one queue is owed nothing, so `long` (until
    NOW + 500) still may not start on n01 beside `big`'s reservation from NOW + 100."""
    policy, snap = _two_nodes(big_created=NOW - 3600)
    r = schedule(snap, replace(policy, owed_start_first=True), NOW)  # type: ignore[arg-type]
    assert r.bindings == {}
    assert r.reservations["ns/big"].start == NOW + 100


def test_a_reservation_of_a_queue_at_its_share_waits_for_the_queues_below_theirs() -> None:
    """`_owed_and_starving`: `b` already holds its share (8 of 8), so with
    `reserve_borrowing_last` `b1` is not planned before the walk while `a` holds 0 of its 8:
    the walk serves `a` first, `a1` starts on n01 now, and `b1` reserves n00 + n01 in its
    turn, from NOW + 500 (`a1`'s limit). Without the rule: `b1` holds both nodes from
    NOW + 100 and `a1` waits (first test above)."""
    snap = _owed_and_starving()
    policy = Policy(reserve_after_limits=1.0, reserve_under_share=True, reserve_borrowing_last=True)
    r = schedule(snap, policy, NOW)  # type: ignore[arg-type]
    assert dict(r.bindings) == {"ns/a1": {"a1-000": N1}}
    assert r.reservations["ns/b1"].start == NOW + 500
    assert r.gangs["ns/b1"].estimated_start == NOW + 500


def test_a_queue_below_its_share_reserves_first_even_for_a_gang_beyond_it() -> None:
    """n00 runs `ra` of queue `a` (weight 3, priority 1: served first in the walk) until
    NOW + 100; `a1` (8 GPUs, limit 500 s) and the starving `b1` (16 GPUs) pending. Demands a 16,
    b 16: shares a 12, b 4. `b1` would take `b` to 16 of its 4, but `b` holds 0: it is not
    borrowing yet, so `b1` is planned before the walk (from NOW + 100, both nodes) and `a1` may
    not start on n01. Deferring every gang beyond its queue's share instead left the queues
    whose share is smaller than their gangs below it for 47% of their time on Philly."""
    run = [running("ra").queue("a").on(N0).started(NOW - 50).time_limit(150)]
    pending = [
        gang("a1").queue("a").pods(1).created(NOW - 10).time_limit(500),
        gang("b1").queue("b").pods(2).created(NOW - 5000).time_limit(1000),
    ]
    queues = [queue("a").weight(3).priority(1), queue("b")]
    snap = snapshot(fabric(1, 1, 2), queues, run, pending)
    policy = Policy(reserve_after_limits=1.0, reserve_under_share=True, reserve_borrowing_last=True)
    r = schedule(snap, policy, NOW)
    assert r.queues["b"].deserved["nvidia.com/gpu"] == 4
    assert r.bindings == {}
    assert r.reservations["ns/b1"].start == NOW + 100


def test_a_reservation_takes_the_nodes_busy_now_with_reserve_least_idle() -> None:
    """Three nodes: n00 free, n01 and n02 run gangs until NOW + 100. `big` (2 × 8 GPUs,
    starving) can start at NOW + 100 on any two of them, equally well (one leaf). By node
    index it holds n00 + n01, so n00 stays idle until then and `small` (8 GPUs, limit 500 s:
    would still run at NOW + 100) may not start there. With `reserve_least_idle` it holds
    n01 + n02, the nodes busy now, and `small` starts on n00 at once."""
    n2 = "s0-l0-n02"
    run = [
        running("r1").on(N1).started(NOW - 50).time_limit(150),
        running("r2").on(n2).started(NOW - 50).time_limit(150),
    ]
    pending = [
        gang("big").pods(2).created(NOW - 3600).time_limit(1000),
        gang("small").pods(1).created(NOW - 1).time_limit(500),
    ]
    snap = snapshot(fabric(1, 1, 3), running=run, pending=pending)
    by_index = schedule(snap, BOUNDED, NOW)
    assert set(by_index.reservations["ns/big"].nodes) == {N0, N1}
    assert by_index.bindings == {}
    idle = schedule(snap, replace(BOUNDED, reserve_least_idle=True), NOW)
    assert idle.reservations["ns/big"].start == NOW + 100
    assert set(idle.reservations["ns/big"].nodes) == {N1, n2}
    assert dict(idle.bindings) == {"ns/small": {"small-000": N0}}


def test_the_second_rung_waits_for_the_peers_uncapped_bound_with_honour_after_peers() -> None:
    """Two nodes; n01 runs `peer` (started NOW − 100 after waiting 10,000 s, limit 10,000 s):
    the peers' median slowdown is (10,000 + 10,000) / 10,000 = 2. n00 is free. `whole` (one
    8-GPU pod, limit 100,000 s) and `small` (8 GPUs, limit 60 s, created a second later) both
    fit only there. `whole` starves after max(min(limit, 2,000), min((2 − 1) × 100,000,
    3,000)) = 3,000 s; `honour_after=2` honours it past 2 × 2,000 = 4,000 s. With
    `honour_after_peers` the rung is at least the peers' bound without its 3,000 s ceiling,
    (2 − 1) × 100,000 = 100,000 s: at 5,000 s and 99,999 s `small` (less work) still goes
    first; at 100,000 s `whole` is honoured."""
    ladder = Policy(
        reserve_after_limits=1.0,
        reserve_after_s=2000.0,
        work_weight=1.0,
        reserve_after_peers=1.0,
        peers_by_slowdown=True,
        peer_window_s=86_400.0,
        peer_max_s=3000.0,
        honour_after=2.0,
    )
    peers = replace(ladder, honour_after_peers=True)

    def cycle(created: float, policy: Policy) -> set[str]:
        run = [
            running("peer").on("s0-l0-n01").created(NOW - 10_100).started(NOW - 100)
            .time_limit(10_000)
        ]  # fmt: skip
        pending = [
            gang("whole").pods(1, gpu=8).created(created).time_limit(100_000),
            gang("small").pods(1).created(created + 1).time_limit(60),
        ]
        snap = snapshot(fabric(1, 1, 2), running=run, pending=pending)
        return set(schedule(snap, policy, NOW).bindings)

    assert cycle(NOW - 5000, ladder) == {"ns/whole"}
    assert cycle(NOW - 5000, peers) == {"ns/small"}
    assert cycle(NOW - 99_999, peers) == {"ns/small"}
    assert cycle(NOW - 100_000, peers) == {"ns/whole"}


def test_aged_first_puts_gangs_of_full_age_before_every_other() -> None:
    """One free node, one queue, no reservations; order by age (at most 7 days) and work.
    `long` (8 GPUs, limit 100,000 s) has the most work: score = age − 1. `short` (8 GPUs,
    limit 60 s, waited an hour) has the least: score = 3,600 / 604,800 − 0 ≈ 0.006. At full
    age (604,800 s) `long` scores 0, still behind `short`, which takes the node; with
    `aged_first` it comes first and takes it. A second short of full age is not enough."""
    order = Policy(age_weight=1.0, work_weight=1.0, age_max=604_800.0)
    aged = replace(order, aged_first=True)

    def cycle(created: float, policy: Policy) -> set[str]:
        pending = [
            gang("long").pods(1, gpu=8).created(created).time_limit(100_000),
            gang("short").pods(1).created(NOW - 3600).time_limit(60),
        ]
        return set(schedule(snapshot(fabric(1, 1, 1), pending=pending), policy, NOW).bindings)

    assert cycle(NOW - 604_800, order) == {"ns/short"}
    assert cycle(NOW - 604_800, aged) == {"ns/long"}
    assert cycle(NOW - 604_799, aged) == {"ns/short"}


def _long_starved_beyond_share(whole_running: bool) -> Snapshot:
    """Two nodes; queues `a` and `b` of equal weight, each deserving 8 of the 16 GPUs. `ra`
    (queue `a`, 8 GPUs) runs on n00 until NOW + 50,000. `whole` (queue `a`, one 8-GPU pod,
    limit 100,000 s) was created at NOW - 4,000; `small` (queue `b`, 8 GPUs, limit 60 s) a
    second later. With `whole_running`, `whole` runs on n01 since NOW - 10 instead."""
    run = [running("ra").queue("a").on(N0).started(NOW - 100).time_limit(50_100)]
    whole = gang("whole").queue("a").pods(1, gpu=8).created(NOW - 4000).time_limit(100_000)
    pending = [gang("small").queue("b").pods(1).created(NOW - 3999).time_limit(60)]
    if whole_running:
        run.append(
            running("whole").queue("a").on(N1).created(NOW - 4000).started(NOW - 10)
            .time_limit(100_000)
        )  # fmt: skip
    else:
        pending.insert(0, whole)
    queues = [queue("a").weight(1), queue("b").weight(1)]
    return snapshot(fabric(1, 1, 2), queues, run, pending)


def test_a_long_starved_gang_is_honoured_beyond_its_queues_share_with_the_knob() -> None:
    """`_long_starved_beyond_share`, bound min(1 × limit, 2,000 s) = 2,000 s, `honour_after=2`:
    `whole` has waited 4,000 s, past the second rung, and fits n01 now, but `a` already holds
    its 8: beyond its share it is not honoured, and the walk serves `b` (0 of its 8) first:
    `small` takes n01. With `honour_after_beyond_share` it starts on n01 before the walk and
    `small` waits."""
    ladder = Policy(
        reserve_after_limits=1.0, reserve_after_s=2000.0, work_weight=1.0, honour_after=2.0
    )
    snap = _long_starved_beyond_share(whole_running=False)
    before = schedule(snap, ladder, NOW)
    assert set(before.bindings) == {"ns/small"}
    after = schedule(snap, replace(ladder, honour_after_beyond_share=True), NOW)
    assert dict(after.bindings) == {"ns/whole": {"whole-000": N1}}
    assert after.gangs["ns/small"].reason != Reason.SCHEDULED


def test_reclaim_spares_a_gang_that_would_be_honoured_again_beyond_its_share() -> None:
    """The next cycle: `whole` runs on n01, so `a` holds 16 of its 8 and `b`'s `small` (0 of
    its 8) reclaims one of `a`'s gangs. Reclaim takes the one that has run least, `whole` (10
    s against `ra`'s 100 s): evicted, it would start first again the cycle after (a livelock).
    With `honour_after_beyond_share` reclaim spares it and takes `ra`."""
    ladder = Policy(
        reserve_after_limits=1.0, reserve_after_s=2000.0, work_weight=1.0, honour_after=2.0
    )
    snap = _long_starved_beyond_share(whole_running=True)
    before = schedule(snap, ladder, NOW)
    assert [e.gang for e in before.evictions] == ["ns/whole"]
    after = schedule(snap, replace(ladder, honour_after_beyond_share=True), NOW)
    assert [e.gang for e in after.evictions] == ["ns/ra"]
