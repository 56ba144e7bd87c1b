"""Table-driven scenarios: snapshot in → expected bind map, evictions and reasons out.

Each row is one sentence of PRODUCT.md §4 (or of the issue's "Done when" list) made concrete on a
cluster small enough to reason about by hand. The expected values are written out, not computed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from core_builders import GiB, fabric, gang, node, queue, running, snapshot

from phalanx.core import CycleResult, Policy, Reason, Snapshot, schedule

NOW = 10_000.0


@dataclass
class Scenario:
    name: str
    snap: Snapshot
    #: gang → pod → node for every gang that must be bound (and no other gang may be).
    bound: dict[str, dict[str, str]] = field(default_factory=dict)
    #: gang → reason.
    reasons: dict[str, Reason] = field(default_factory=dict)
    #: (victim, reason, for_gang) — exactly these evictions.
    evictions: set[tuple[str, str, str]] = field(default_factory=set)
    policy: Policy = field(default_factory=Policy)
    check: Callable[[CycleResult], None] | None = None


def pods_on(prefix: str, count: int, nodes: list[str], per_node: int = 1) -> dict[str, str]:
    """pod prefix-000.. → nodes, `per_node` consecutive pods on each node in order."""
    return {f"{prefix}-{i:03d}": nodes[i // per_node] for i in range(count)}


def leaf_nodes(leaf: str, count: int, start: int = 0) -> list[str]:
    return [f"{leaf}-n{i:02d}" for i in range(start, start + count)]


# -- scenarios -------------------------------------------------------------------------------

ONE_LEAF = fabric(1, 1, 4)  # s0-l0-n00..n03, 8 GPUs each


def _first_fits_nothing() -> Scenario:
    return Scenario(
        "a gang that does not fit binds nothing",
        snapshot(
            ONE_LEAF,
            running=[running("r").on("s0-l0-n00").on("s0-l0-n01")],
            pending=[gang("a").pods(3)],
        ),
        bound={},
        reasons={"ns/a": Reason.INSUFFICIENT_CAPACITY},
    )


def _then_binds_whole() -> Scenario:
    return Scenario(
        "the same gang binds whole when room appears",
        snapshot(ONE_LEAF, pending=[gang("a").pods(3)]),
        bound={"ns/a": pods_on("a", 3, leaf_nodes("s0-l0", 3))},
        reasons={"ns/a": Reason.SCHEDULED},
    )


def _two_fit_alone() -> Scenario:
    return Scenario(
        "two gangs that each fit alone but not together: the first binds whole, the other nothing",
        snapshot(ONE_LEAF, pending=[gang("a").pods(3).created(1), gang("b").pods(2).created(2)]),
        bound={"ns/a": pods_on("a", 3, leaf_nodes("s0-l0", 3))},
        reasons={"ns/a": Reason.SCHEDULED, "ns/b": Reason.INSUFFICIENT_CAPACITY},
    )


def _one_leaf_over_fragments() -> Scenario:
    # Four leaves of 8 nodes. l0 and l1 (first by name) have 4 free nodes each — together they
    # could hold the gang; l3 has exactly 8 free nodes; l2 has 5.
    nodes = fabric(1, 4, 8)
    busy = []
    for leaf, free in (("s0-l0", 4), ("s0-l1", 4), ("s0-l2", 5), ("s0-l3", 8)):
        for i in range(free, 8):
            busy.append(running(f"busy-{leaf}-{i}").on(f"{leaf}-n{i:02d}"))
    return Scenario(
        "8 x 8-GPU pods land under one leaf when one leaf can hold them",
        snapshot(nodes, running=busy, pending=[gang("big").pods(8)]),
        bound={"ns/big": pods_on("big", 8, leaf_nodes("s0-l3", 8))},
    )


def _required_leaf_never_spans() -> Scenario:
    nodes = fabric(1, 2, 4)
    return Scenario(
        "required: leaf never spans two leaves (6 x 8 GPUs, leaves of 4 nodes)",
        snapshot(nodes, pending=[gang("req").pods(6).required("leaf")]),
        bound={},
        reasons={"ns/req": Reason.TOPOLOGY_UNSATISFIABLE},
        check=lambda r: _assert_never_under_one_leaf(r, "ns/req", best_gpus=32, requested=48),
    )


def _assert_never_under_one_leaf(r: CycleResult, gid: str, best_gpus: int, requested: int) -> None:
    """A leaf too small for the gang even empty: the message says so (`core.never_fits`), and
    the numbers still name the best leaf and its free GPUs."""
    d = r.gangs[gid].detail
    assert d is not None
    assert (d.best_domain, d.best_domain_free_gpus, d.requested_gpus) == (
        "s0-l0",
        best_gpus,
        requested,
    )
    assert r.gangs[gid].message == (
        f"needs {requested} GPUs under one leaf; no leaf can ever hold all its pods: the one "
        "that could hold the most (s0-l0) holds 4 of its 6 even empty (counted by allocatable)"
    )


def _required_leaf_blocked_with_its_own_plan() -> Scenario:
    """4 × 8 GPUs under one leaf; l0 has 3 nodes (one was deleted), all free; l1 has 1 free
    node and 4 GPUs on another: 36 GPUs free and 4 pods fit, 3 in l0 and 1 in l1, so only the
    topology keeps it out. Its own plan (l1, once `a` and `b` end at 3,600 s) holds l1 from
    then on; counted against it, the message said "36 free, but only 4 of its pods fit"
    (walked on the dev cluster after a node under a running gang was deleted)."""
    nodes = [n for n in fabric(1, 2, 4) if n.build().name != "s0-l0-n02"]
    run = [
        running("a").on("s0-l1-n00").on("s0-l1-n01").started(NOW).time_limit(3600),
        running("b").on("s0-l1-n02", gpu=4).started(NOW).time_limit(3600),
    ]
    return Scenario(
        "required: leaf blocked by topology alone says so, its own plan notwithstanding",
        snapshot(nodes, running=run, pending=[gang("req").pods(4).required("leaf")]),
        bound={},
        reasons={"ns/req": Reason.TOPOLOGY_UNSATISFIABLE},
        check=lambda r: _assert_detail(r, "ns/req", best_gpus=24, requested=32),
    )


def _preferred_leaf_spans_when_needed() -> Scenario:
    nodes = fabric(1, 2, 4)
    return Scenario(
        "preferred: leaf spans two leaves when one cannot hold the gang",
        snapshot(nodes, pending=[gang("pref").pods(6).preferred("leaf")]),
        bound={
            "ns/pref": {
                **pods_on("pref", 4, leaf_nodes("s0-l0", 4)),
                **{
                    f"pref-{i:03d}": n
                    for i, n in zip(range(4, 6), leaf_nodes("s0-l1", 2), strict=True)
                },
            }
        },
    )


def _best_fit_keeps_empty_leaf() -> Scenario:
    # l0: 8 free nodes (empty); l1: 4 free nodes. A 4-node gang must take l1 so that the
    # later 8-node gang still finds l0 whole.
    nodes = fabric(1, 2, 8)
    busy = [running(f"busy-{i}").on(f"s0-l1-n{i:02d}") for i in range(4, 8)]
    return Scenario(
        "best fit keeps an empty leaf for a later leaf-sized gang",
        snapshot(
            nodes,
            running=busy,
            pending=[gang("small").pods(4).created(1), gang("large").pods(8).created(2)],
        ),
        bound={
            "ns/small": pods_on("small", 4, leaf_nodes("s0-l1", 4)),
            "ns/large": pods_on("large", 8, leaf_nodes("s0-l0", 8)),
        },
    )


def _equal_queues_split_evenly() -> Scenario:
    nodes = fabric(1, 1, 8)  # 64 GPUs
    pending = [gang(f"a{i}").queue("a").pods(1).created(i) for i in range(8)]
    pending += [gang(f"b{i}").queue("b").pods(1).created(i) for i in range(8)]

    def check(r: CycleResult) -> None:
        per_queue = {q: sum(1 for g in r.bindings if g.startswith(f"ns/{q}")) for q in "ab"}
        assert per_queue == {"a": 4, "b": 4}
        assert r.queues["a"].deserved["nvidia.com/gpu"] == 32
        assert r.queues["b"].deserved["nvidia.com/gpu"] == 32

    return Scenario(
        "equal-weight queues split a contended cluster evenly",
        snapshot(nodes, queues=[queue("a"), queue("b")], pending=pending),
        bound={f"ns/{q}{i}": {} for q in "ab" for i in range(4)},
        check=check,
    )


def _guarantee_holds_against_borrowers() -> Scenario:
    nodes = fabric(1, 1, 8)  # 64 GPUs
    # "owner" was idle; "borrower" took the whole cluster. The owner is back for 32 GPUs.
    borrowers = [
        running(f"bor{i}").queue("borrower").on(f"s0-l0-n{i:02d}").started(NOW - 1000 + i)
        for i in range(8)
    ]

    def check(r: CycleResult) -> None:
        assert r.queues["owner"].deserved["nvidia.com/gpu"] == 32
        res = r.reservations["ns/own"]
        assert res.start == NOW
        assert sorted(res.nodes) == [f"s0-l0-n{i:02d}" for i in range(4, 8)]
        assert r.gangs["ns/own"].estimated_start == NOW

    return Scenario(
        "a guarantee holds against an idle owner's borrowers (the latest-started ones go)",
        snapshot(
            nodes,
            queues=[queue("owner").guarantee(gpu=32), queue("borrower")],
            running=borrowers,
            pending=[gang("own").queue("owner").pods(4)],
        ),
        reasons={"ns/own": Reason.WAITING_FOR_RESERVATION},
        evictions={(f"ns/bor{i}", "Reclaimed", "ns/own") for i in range(4, 8)},
        check=check,
    )


def _reclaim_one_whole_gang() -> Scenario:
    nodes = [node("n1"), node("n2")]
    # b1 has a 4-GPU pod on each node; b2 and b3 have one 4-GPU pod each. Evicting a pod of b1
    # and b2 would be "one pod from each of two gangs"; the answer is the whole of b1.
    run = [
        running("b1").queue("b").on("n1", gpu=4).on("n2", gpu=4).started(NOW - 10),
        running("b2").queue("b").on("n1", gpu=4).started(NOW - 500),
        running("b3").queue("b").on("n2", gpu=4).started(NOW - 500),
    ]
    return Scenario(
        "reclaim evicts exactly one whole gang from the over-share queue",
        snapshot(
            nodes,
            queues=[queue("a"), queue("b")],
            running=run,
            pending=[gang("w").queue("a").pods(2, gpu=4)],
        ),
        reasons={"ns/w": Reason.WAITING_FOR_RESERVATION},
        evictions={("ns/b1", "Reclaimed", "ns/w")},
        check=lambda r: _assert_reserved(r, "ns/w", {"w-000": "n1", "w-001": "n2"}),
    )


def _reclaim_nothing_if_useless() -> Scenario:
    nodes = fabric(1, 2, 2)
    run = [running(f"b{i}").queue("b").on(n.build().name) for i, n in enumerate(nodes)]
    return Scenario(
        "reclaim evicts nothing when eviction would not let the waiting gang start",
        snapshot(
            nodes,
            queues=[queue("a").guarantee(gpu=24), queue("b")],
            running=run,
            pending=[gang("w").queue("a").pods(3).required("leaf")],
        ),
        # 3 nodes under one leaf of 2: no eviction could ever make room, and the reason says
        # the topology is why (`core.never_fits`).
        reasons={"ns/w": Reason.TOPOLOGY_UNSATISFIABLE},
        evictions=set(),
    )


def _reclaim_not_from_non_reclaimable() -> Scenario:
    base = _reclaim_one_whole_gang()
    snap = snapshot(
        [node("n1"), node("n2")],
        queues=[queue("a"), queue("b").not_reclaimable()],
        running=list(base.snap.running),
        pending=list(base.snap.pending),
    )
    return Scenario(
        "reclaim takes nothing from a non-reclaimable queue",
        snap,
        reasons={"ns/w": Reason.INSUFFICIENT_CAPACITY},
        evictions=set(),
    )


def _reclaim_never_below_deserved() -> Scenario:
    nodes = fabric(1, 1, 4)  # 32 GPUs
    # a is owed 16 (guarantee) and b 16; b holds 24 in ONE gang: evicting it would take b to 0.
    return Scenario(
        "reclaim never takes a queue below its deserved share",
        snapshot(
            nodes,
            queues=[queue("a").guarantee(gpu=16), queue("b")],
            running=[running("big").queue("b").on("s0-l0-n00").on("s0-l0-n01").on("s0-l0-n02")],
            pending=[gang("w").queue("a").pods(2)],
        ),
        reasons={"ns/w": Reason.INSUFFICIENT_CAPACITY},
        evictions=set(),
        check=lambda r: _assert_deserved(r, {"a": 16, "b": 16}),
    )


def _over_share_cannot_reclaim() -> Scenario:
    nodes = fabric(1, 1, 4)  # 32 GPUs
    # a (weight 1) holds 24, b (weight 3) holds 8: deserved a 8, b 24. a is over its share and
    # must not reclaim from b; b may reclaim from a.
    run = [
        running(f"a{i}").queue("a").on(f"s0-l0-n{i:02d}").started(NOW - 100 + i) for i in range(3)
    ]
    run.append(running("b0").queue("b").on("s0-l0-n03"))
    pending = [gang("amore").queue("a").pods(1).created(1)]
    pending += [gang(f"bmore{i}").queue("b").pods(1).created(2 + i) for i in range(3)]

    def check(r: CycleResult) -> None:
        assert all(e.for_gang != "ns/amore" for e in r.evictions)
        assert all(not e.gang.startswith("ns/b") for e in r.evictions)
        assert _assert_deserved(r, {"a": 8, "b": 24}) is None

    return Scenario(
        "a queue over its share cannot reclaim from others",
        snapshot(nodes, queues=[queue("a"), queue("b").weight(3)], running=run, pending=pending),
        evictions={
            ("ns/a2", "Reclaimed", "ns/bmore0"),
            ("ns/a1", "Reclaimed", "ns/bmore1"),
        },
        reasons={
            "ns/amore": Reason.INSUFFICIENT_CAPACITY,
            "ns/bmore0": Reason.WAITING_FOR_RESERVATION,
            "ns/bmore1": Reason.WAITING_FOR_RESERVATION,
        },
        check=check,
    )


def _priority_preemption() -> Scenario:
    nodes = [node("n1"), node("n2")]
    run = [
        running("low-old").on("n1").priority(0).started(NOW - 5000),
        running("low-new").on("n2").priority(0).started(NOW - 50),
    ]
    return Scenario(
        "priority preemption within a queue evicts the lower-priority gang losing least run time",
        snapshot(
            nodes,
            running=run,
            pending=[gang("high").pods(1).priority(100), gang("peer").pods(1).priority(0)],
        ),
        evictions={("ns/low-new", "Preempted", "ns/high")},
        reasons={
            "ns/high": Reason.WAITING_FOR_RESERVATION,
            "ns/peer": Reason.INSUFFICIENT_CAPACITY,
        },
        check=lambda r: _assert_reserved(r, "ns/high", {"high-000": "n2"}),
    )


def _no_preemption_across_queues() -> Scenario:
    nodes = [node("n1")]
    return Scenario(
        "priority never preempts another queue's gang",
        snapshot(
            nodes,
            queues=[queue("a"), queue("b").not_reclaimable()],
            running=[running("low").queue("b").on("n1").priority(0)],
            pending=[gang("high").queue("a").pods(1).priority(100)],
        ),
        evictions=set(),
        reasons={"ns/high": Reason.INSUFFICIENT_CAPACITY},
    )


def _decayed_usage_orders_queues() -> Scenario:
    nodes = [node("n1")]
    return Scenario(
        "decayed usage orders two otherwise equal queues (less recent usage first)",
        snapshot(
            nodes,
            queues=[queue("a").usage(1_000_000.0), queue("b").usage(10.0)],
            pending=[gang("ga").queue("a").pods(1), gang("gb").queue("b").pods(1)],
        ),
        bound={"ns/gb": {"gb-000": "n1"}},
        reasons={"ns/ga": Reason.INSUFFICIENT_CAPACITY},
        check=lambda r: _assert_fair_share_order(r, "b", "a"),
    )


def _backfill_first_cycle() -> Scenario:
    nodes = fabric(1, 1, 4)
    run = [
        running("r").on("s0-l0-n00").on("s0-l0-n01").on("s0-l0-n02").started(NOW).time_limit(1000)
    ]
    pending = [
        gang("big").pods(4).created(1).time_limit(3600),
        gang("long").pods(1).created(2).time_limit(2000),
        gang("forever").pods(1).created(3),
        gang("short").pods(1).created(4).time_limit(500),
    ]

    def check(r: CycleResult) -> None:
        res = r.reservations["ns/big"]
        assert res.start == NOW + 1000
        assert r.gangs["ns/big"].estimated_start == NOW + 1000
        assert r.gangs["ns/big"].queue_position == 1
        assert "expected start in 16m40s when 1 running gang ends" in r.gangs["ns/big"].message
        assert r.gangs["ns/long"].queue_position == 2
        assert "reserved for ns/big" in r.gangs["ns/long"].message

    return Scenario(
        "backfill starts a short gang only if it ends before the big gang's reservation",
        snapshot(nodes, running=run, pending=pending),
        bound={"ns/short": {"short-000": "s0-l0-n03"}},
        reasons={
            "ns/big": Reason.INSUFFICIENT_CAPACITY,
            "ns/short": Reason.BACKFILLED,
            "ns/long": Reason.WAITING_FOR_RESERVATION,
            "ns/forever": Reason.WAITING_FOR_RESERVATION,
        },
        policy=Policy(),
    )


def _taints_selectors_resources() -> Scenario:
    nodes = [
        node("a-tainted").taint("dedicated", "infer").label("accel", "h100"),
        node("b-small-cpu").cpu(4_000).label("accel", "h100"),
        node("c-a100").label("accel", "a100"),
        node("d-h100").label("accel", "h100").resource("rdma/hca", 1),
        node("e-full-pods").label("accel", "h100").pods(1).used(pods=1),
    ]
    pending = [
        gang("sel").pods(1, gpu=8, cpu=8_000).selector("accel", "h100").created(1),
        gang("tol").pods(1, gpu=8).tolerate("dedicated", "infer").created(2),
        gang("aff").pods(1, gpu=8).affinity("accel", "NotIn", "h100").created(3),
        gang("mem").pods(1, gpu=1, memory=600 * GiB).created(4),
        gang("ext").pods(1, gpu=1, **{"rdma/hca": 2}).created(5),
    ]
    return Scenario(
        "taints, selectors, affinity and non-GPU resources are respected",
        snapshot(nodes, pending=pending),
        bound={
            "ns/sel": {"sel-000": "d-h100"},
            "ns/tol": {"tol-000": "a-tainted"},
            "ns/aff": {"aff-000": "c-a100"},
        },
        reasons={
            "ns/mem": Reason.INSUFFICIENT_CAPACITY,
            "ns/ext": Reason.INSUFFICIENT_CAPACITY,
        },
    )


def _extras_beyond_min() -> Scenario:
    nodes = fabric(1, 1, 4)
    return Scenario(
        "pods beyond minMember are placed when they fit, after every gang's minimum",
        snapshot(
            nodes,
            pending=[gang("el").pods(5).min(2).created(1), gang("next").pods(1).created(2)],
        ),
        bound={
            "ns/el": {"el-000": "s0-l0-n00", "el-001": "s0-l0-n01", "el-002": "s0-l0-n03"},
            "ns/next": {"next-000": "s0-l0-n02"},
        },
    )


def _extras_do_not_block_later_gang() -> Scenario:
    nodes = fabric(1, 1, 3)
    return Scenario(
        "a later gang's minimum comes before an earlier gang's extras",
        snapshot(
            nodes,
            pending=[gang("el").pods(3).min(1).created(1), gang("next").pods(2).created(2)],
        ),
        bound={
            "ns/el": {"el-000": "s0-l0-n00"},
            "ns/next": {"next-000": "s0-l0-n01", "next-001": "s0-l0-n02"},
        },
    )


SCENARIOS = [
    _first_fits_nothing(),
    _then_binds_whole(),
    _two_fit_alone(),
    _one_leaf_over_fragments(),
    _required_leaf_never_spans(),
    _required_leaf_blocked_with_its_own_plan(),
    _preferred_leaf_spans_when_needed(),
    _best_fit_keeps_empty_leaf(),
    _equal_queues_split_evenly(),
    _guarantee_holds_against_borrowers(),
    _reclaim_one_whole_gang(),
    _reclaim_nothing_if_useless(),
    _reclaim_not_from_non_reclaimable(),
    _reclaim_never_below_deserved(),
    _over_share_cannot_reclaim(),
    _priority_preemption(),
    _no_preemption_across_queues(),
    _decayed_usage_orders_queues(),
    _backfill_first_cycle(),
    _taints_selectors_resources(),
    _extras_beyond_min(),
    _extras_do_not_block_later_gang(),
]


@pytest.mark.parametrize("sc", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_scenario(sc: Scenario) -> None:
    result = schedule(sc.snap, sc.policy, NOW)
    assert set(result.bindings) == set(sc.bound), result.gangs
    for gid, pods in sc.bound.items():
        if pods:
            assert dict(result.bindings[gid]) == pods, gid
    for gid, reason in sc.reasons.items():
        assert result.gangs[gid].reason == reason, (gid, result.gangs[gid].message)
    got = {(e.gang, str(e.reason), e.for_gang) for e in result.evictions}
    assert got == sc.evictions
    if sc.check is not None:
        sc.check(result)
    # Every pending gang gets a decision, and bound gangs are whole.
    assert set(result.gangs) == {p.id for p in sc.snap.pending}
    for p in sc.snap.pending:
        if p.id in result.bindings:
            assert len(result.bindings[p.id]) >= p.min_member


# -- helpers ---------------------------------------------------------------------------------


def _assert_detail(r: CycleResult, gid: str, best_gpus: int, requested: int) -> None:
    d = r.gangs[gid].detail
    assert d is not None
    assert d.best_domain_free_gpus == best_gpus
    assert d.requested_gpus == requested
    assert d.best_domain is not None
    assert f"the best leaf ({d.best_domain}) has {best_gpus} free" in r.gangs[gid].message


def _assert_reserved(r: CycleResult, gid: str, pods: dict[str, str]) -> None:
    res = r.reservations[gid]
    assert res.start == NOW
    assert dict(res.pods) == pods


def _assert_deserved(r: CycleResult, want: dict[str, int]) -> None:
    got = {q: r.queues[q].deserved["nvidia.com/gpu"] for q in want}
    assert got == want


def _assert_fair_share_order(r: CycleResult, first: str, second: str) -> None:
    assert r.queues[first].fair_share > r.queues[second].fair_share


# -- multi-cycle stories -------------------------------------------------------------------------


def test_big_gang_starts_at_its_reservation_time() -> None:
    """After the backfill cycle: at the reservation time the running gang and the short one have
    ended, and the big gang binds whole before the gangs queued behind it."""
    first = schedule(_backfill_first_cycle().snap, Policy(), NOW)
    eta = first.reservations["ns/big"].start
    pending = [p for p in _backfill_first_cycle().snap.pending if p.id != "ns/short"]
    later = schedule(snapshot(fabric(1, 1, 4), pending=pending), Policy(), eta)
    assert set(later.bindings) == {"ns/big"}
    assert later.gangs["ns/big"].reason == Reason.SCHEDULED
    assert set(later.bindings["ns/big"].values()) == set(first.reservations["ns/big"].nodes)


def test_reclaim_does_not_evict_twice_while_victims_terminate() -> None:
    """Next cycle: victims marked `evicting` still hold their nodes; the reclaimer waits on the
    capacity being freed and nothing more is evicted. When they are gone it binds."""
    sc = _guarantee_holds_against_borrowers()
    first = schedule(sc.snap, Policy(), NOW)
    victims = {e.gang for e in first.evictions}
    run = []
    for r in sc.snap.running:
        b = running(r.id).queue(r.queue).started(r.start_time)
        for m in r.members:
            b.on(m.node)
        if r.id in victims:
            b.evicting()
        run.append(b)
    second = schedule(
        snapshot(fabric(1, 1, 8), list(sc.snap.queues), run, list(sc.snap.pending)),
        Policy(),
        NOW + 5,
    )
    assert second.evictions == ()
    assert second.bindings == {}
    assert second.gangs["ns/own"].reason == Reason.WAITING_FOR_RESERVATION
    assert second.gangs["ns/own"].estimated_start == NOW + 5
    gone = [r for r in run if r.build().id not in victims]
    third = schedule(
        snapshot(fabric(1, 1, 8), list(sc.snap.queues), gone, list(sc.snap.pending)),
        Policy(),
        NOW + 30,
    )
    assert third.evictions == ()
    assert set(third.bindings) == {"ns/own"}


def test_reclaim_and_preemption_can_be_switched_off() -> None:
    sc = _guarantee_holds_against_borrowers()
    off = schedule(sc.snap, Policy(reclaim=False), NOW)
    assert off.evictions == ()
    pre = _priority_preemption()
    off = schedule(pre.snap, Policy(preemption=False), NOW)
    assert off.evictions == ()


def test_backfill_off_gives_no_reservations() -> None:
    sc = _backfill_first_cycle()
    r = schedule(sc.snap, Policy(backfill=False), NOW)
    assert r.reservations == {}
    # Without reservations the next gang in order takes the free node, whatever its length.
    assert set(r.bindings) == {"ns/long"}
    assert r.gangs["ns/big"].estimated_start is None


def test_backfill_depth_limits_etas() -> None:
    nodes = fabric(1, 1, 2)
    run = [running("r").on("s0-l0-n00").on("s0-l0-n01").started(NOW).time_limit(100)]
    pending = [gang(f"g{i}").pods(2).created(i).time_limit(50) for i in range(5)]
    r = schedule(snapshot(nodes, running=run, pending=pending), Policy(backfill_depth=2), NOW)
    etas = [r.gangs[f"ns/g{i}"].estimated_start for i in range(5)]
    assert etas == [NOW + 100, NOW + 150, None, None, None]
    assert "beyond the backfill depth" in r.gangs["ns/g2"].message
