"""The core's internal caches give the same answers as computing from scratch.

The cycle shares capacity answers between placements: per node (keyed by node stamps), per leaf
at sweep times (keyed by leaf stamp, sweep epoch and hold class, across sweeps), and per victim
search (victims overlaid instead of written into the state). Each test here builds seeded random
fragmented clusters with releases and holds, and compares a cached answer with one computed on
fresh caches or on a state where the victims really are gone.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable

import pytest

from phalanx.core import (
    CPU,
    GPU,
    PODS,
    Member,
    Node,
    PendingGang,
    Policy,
    Queue,
    RunningGang,
    RunningMember,
    Snapshot,
    backfill,
)
from phalanx.core.backfill import earliest_start, start_on_due
from phalanx.core.capacity import ClusterState
from phalanx.core.capacity_views import (
    LeafCache,
    NowView,
    PlanCache,
    PlanNodeCache,
    TrialCache,
    TrialView,
)
from phalanx.core.duenow import DueNow, HeldNow
from phalanx.core.futuremin import future_minima
from phalanx.core.placement import place
from phalanx.core.prepare import Prepared, prepare
from phalanx.core.shapecaps import ShapeCapsCache
from phalanx.core.work import GangWork, RunState

SPINE = "network.topology.nvidia.com/spine"
LEAF = "network.topology.nvidia.com/block"
NOW = 1_000_000.0


def _cluster(seed: int) -> Prepared:
    """2 spines × 2 leaves × 4 nodes, partly used, running gangs with and without limits, and
    pending gangs of 1–8 pods of 1, 2, 4 or 8 GPUs."""
    rng = random.Random(seed)
    nodes, free = [], {}
    for s in range(2):
        for lf in range(2):
            for n in range(4):
                name = f"s{s}-l{lf}-n{n}"
                used = rng.choice((0, 0, 1, 2, 4))
                free[name] = 8 - used
                nodes.append(
                    Node(
                        name,
                        {GPU: 8, CPU: 64_000, PODS: 16},
                        {GPU: used},
                        {SPINE: f"s{s}", LEAF: f"s{s}-l{lf}"},
                    )
                )
    running = []
    for i in range(10):
        per = rng.choice((1, 2, 4))
        members = []
        for p in range(rng.randint(1, 3)):
            spots = [n for n in sorted(free) if free[n] >= per]
            if not spots:
                break
            node = rng.choice(spots)
            free[node] -= per
            members.append(RunningMember(f"r{i}-{p}", node, {GPU: per, CPU: 1000}))
        if members:
            limit = rng.choice((None, 600.0, 1800.0, 3600.0))
            running.append(
                RunningGang(
                    f"t/r{i}",
                    rng.choice(("a", "b")),
                    tuple(members),
                    priority=rng.choice((0, 10)),
                    start_time=NOW - rng.uniform(0, 500),
                    time_limit=limit,
                )
            )
    pending = []
    for i in range(8):
        per, count = rng.choice((1, 2, 4, 8)), rng.randint(1, 8)
        pending.append(
            PendingGang(
                f"t/p{i}",
                count,
                tuple(Member(f"p{i}-{k}", {GPU: per, CPU: 2000}) for k in range(count)),
                queue=rng.choice(("a", "b")),
                priority=20,
                topology_preferred=rng.choice((None, "leaf")),
                topology_required=rng.choice((None, None, "leaf", "spine")),
                time_limit=rng.choice((None, 300.0, 1200.0)),
            )
        )
    snap = Snapshot(tuple(nodes), (Queue("a"), Queue("b")), tuple(running), tuple(pending))
    return prepare(snap, Policy(), NOW)


def _add_holds(prep: Prepared, rng: random.Random) -> None:
    state = prep.state
    for i in range(rng.randint(0, 6)):
        n = rng.randrange(len(state.free))
        start = NOW + rng.choice((0.0, 200.0, 900.0, 2000.0))
        end = start + rng.choice((300.0, 1500.0, math.inf))
        state.add_hold(n, start, end, [rng.choice((1, 2, 4))] + [0] * (state.width - 1), f"h{i}")


def _outcome(out: object) -> object:
    return getattr(out, "assignment", None)


@pytest.mark.parametrize("seed", range(40))
def test_trial_view_matches_evicting_for_real(seed: int) -> None:
    prep = _cluster(seed)
    rng = random.Random(seed)
    _add_holds(prep, rng)
    state = prep.state
    node_cache: dict[tuple[int, int, int, int], int] = {}
    shared: dict[tuple[int, int, int], tuple[int, int, list[tuple[int, int]]]] = {}
    index: ShapeCapsCache = {}
    for w in prep.works:
        end = NOW + w.duration
        # Warm the shared caches with the present, as the cycle does before a victim search.
        place(
            NowView(state, NOW, end, shared, node_cache=node_cache, index=index),
            w.shapes,
            None,
            None,
        )
        victims: list[RunState] = rng.sample(prep.running, k=min(len(prep.running), 3))
        extra: dict[int, list[int]] = {}
        who: dict[int, list[int]] = {}
        for i, v in enumerate(victims):
            for n, vec in v.nodes:
                acc = extra.setdefault(n, [0] * state.width)
                for j, x in enumerate(vec):
                    acc[j] += x
                who.setdefault(state.topo.leaf_of[n], []).append(i)
        ignore = frozenset(v.gang.id for v in victims)
        keys = {leaf: tuple(ids) for leaf, ids in who.items()}
        trials: TrialCache = {}  # per search: keys name victims by their index in it
        view = TrialView(state, NOW, end, shared, ignore, extra, keys, trials, node_cache)
        got = place(view, w.shapes, w.required_level, w.preferred_level)
        # The same through the per-shape index of the present (touched leaves overlaid).
        indexed = TrialView(state, NOW, end, shared, ignore, extra, keys, {}, node_cache, index)
        assert _outcome(place(indexed, w.shapes, w.required_level, w.preferred_level)) == (
            _outcome(got)
        )
        for v in victims:
            for n, vec in v.nodes:
                state.change(n, vec, +1)
        want = place(
            NowView(state, NOW, end, {}, ignore), w.shapes, w.required_level, w.preferred_level
        )
        for v in victims:
            for n, vec in v.nodes:
                state.change(n, vec, -1)
        assert _outcome(got) == _outcome(want)


def _plan(prep: Prepared, w: GangWork, caches: tuple[PlanCache, PlanNodeCache] | None) -> object:
    if caches is None:
        plan = earliest_start(prep.state, w, NOW)
    else:
        plan = earliest_start(
            prep.state, w, NOW, cache=caches[0], node_cache={}, plan_nodes=caches[1]
        )
    return None if plan is None else (plan.start, plan.ending, plan.outcome.assignment)


@pytest.mark.parametrize("seed", range(40))
def test_plan_caches_shared_across_sweeps_match_fresh_sweeps(seed: int) -> None:
    prep = _cluster(seed)
    rng = random.Random(seed)
    _add_holds(prep, rng)
    caches: tuple[PlanCache, PlanNodeCache] = ({}, {})
    for w in prep.works:
        assert _plan(prep, w, caches) == _plan(prep, w, None)
        # Change the state between sweeps, as holds and bindings do in a cycle.
        n = rng.randrange(len(prep.state.free))
        if rng.random() < 0.5:
            prep.state.add_hold(
                n, NOW + 100.0, NOW + 700.0, [1] + [0] * (prep.state.width - 1), "x"
            )
        else:
            prep.state.add_release(NOW + 400.0, n, [1] + [0] * (prep.state.width - 1), "y")


@pytest.mark.parametrize("seed", range(120))
def test_sweeps_reading_changed_leaves_only_match_visiting_every_leaf(seed: int) -> None:
    """A sweep's per-shape leaf index (re-reading only leaves whose events the sweep applied, or
    whose hold class moved with the window end) gives the same plans as visiting every leaf at
    every attempt, with caches shared across sweeps or fresh, as the state changes."""
    prep = _cluster(seed)
    rng = random.Random(seed)
    state = prep.state
    # Many holds at scattered times, so that window ends pass hold starts between attempts.
    for i in range(rng.randint(4, 14)):
        start = NOW + rng.uniform(0.0, 3000.0)
        end = start + rng.choice((300.0, 1500.0, math.inf))
        state.add_hold(
            rng.randrange(len(state.free)),
            start,
            end,
            [rng.choice((1, 2, 4))] + [0] * (state.width - 1),
            f"h{i}",
        )
    caches: tuple[PlanCache, PlanNodeCache] = ({}, {})
    for w in prep.works:
        plans = []
        for index, shared in ((True, True), (False, False), (True, False)):
            c = caches if shared else ({}, {})
            plan = earliest_start(
                state, w, NOW, cache=c[0], node_cache={}, plan_nodes=c[1], leaf_index=index
            )
            out = None if plan is None else plan.outcome
            plans.append(
                None
                if plan is None or out is None
                else (plan.start, plan.ending, out.assignment, out.leaves, out.fit_pods)
            )
        assert plans[0] == plans[1] == plans[2]
        n = rng.randrange(len(state.free))
        start = NOW + rng.choice((50.0, 100.0, 700.0))
        if rng.random() < 0.5:
            state.add_hold(
                n, start, start + rng.choice((300.0, math.inf)), [1] + [0] * (state.width - 1), "x"
            )
        else:
            state.add_release(start, n, [1] + [0] * (state.width - 1), "y")


def test_node_stamps_change_with_every_kind_of_change() -> None:
    prep = _cluster(1)
    state = prep.state
    vec = [1] + [0] * (state.width - 1)
    seen = {state.node_version[0]}
    acts: tuple[Callable[[], None], ...] = (
        lambda: state.change(0, vec, -1),
        lambda: state.add_release(NOW + 5, 0, vec, "g"),
        lambda: state.add_hold(0, NOW + 1, NOW + 9, vec, "g"),
        lambda: state.drop_releases("g", [0]),
    )
    for act in acts:
        act()
        assert state.node_version[0] not in seen
        seen.add(state.node_version[0])


def _due_figures(due: DueNow) -> object:
    aggs = [(a.node_gpu, a.leaf_gpu, a.total, a.hist, a.leaf_hist) for a in (due.plain, due.capped)]
    return aggs, due.node_epoch, due.leaf_epoch


@pytest.mark.parametrize("seed", range(40))
def test_due_now_kept_up_to_date_matches_fresh_and_the_sweep(seed: int) -> None:
    """`DueNow`, updated node by node as the state changes, equals one built from scratch, and
    `start_on_due` answers exactly as the sweep stopped at now."""
    prep = _cluster(seed)
    rng = random.Random(seed)
    state = prep.state
    state.track_due(NOW)
    _add_holds(prep, rng)
    vec = [1] + [0] * (state.width - 1)
    caches: tuple[PlanCache, PlanNodeCache] = ({}, {})
    for step in range(12):
        n = rng.randrange(len(state.free))
        act = rng.randrange(5)
        if act == 0:
            state.change(n, vec, rng.choice((-1, 1)))
        elif act == 1:
            state.add_release(NOW + rng.choice((0.0, 0.0, 300.0)), n, vec, f"g{step}")
        elif act == 2:
            state.add_hold(
                n,
                NOW + rng.choice((0.0, 500.0)),
                rng.choice((NOW + 900, math.inf)),
                vec,
                f"h{step}",
            )
        elif act == 3 and prep.running:
            victim = rng.choice(prep.running)
            state.drop_releases(victim.gang.id, [m for m, _ in victim.nodes])
            for m, v in victim.nodes:
                state.add_release(NOW, m, v, victim.gang.id)
        else:
            state.add_release(NOW, n, [2] + [0] * (state.width - 1), f"e{step}")
        assert state.due is not None
        assert _due_figures(state.due) == _due_figures(DueNow(state, NOW))
        for w in prep.works:
            if not state.events or state.events[0].time > NOW:
                continue
            got = start_on_due(state, w, NOW, caches[0], {}, caches[1])
            want = earliest_start(state, w, NOW, until=NOW)
            assert (got is None) == (want is None)
            if got is not None and want is not None:
                assert (got.start, got.ending, got.outcome.assignment) == (
                    want.start,
                    want.ending,
                    want.outcome.assignment,
                )


@pytest.mark.parametrize("seed", range(40))
def test_node_answers_survive_a_neighbours_hold_correctly(seed: int) -> None:
    """Per-node answers are keyed by the node's own hold starts: a hold added on a neighbour in
    the leaf must not make an old answer (for another window end) readable under a new key."""
    prep = _cluster(seed)
    rng = random.Random(seed)
    state = prep.state
    node_cache: dict[tuple[int, int, int, int], int] = {}
    vec = [1] + [0] * (state.width - 1)
    for step in range(10):
        n = rng.randrange(len(state.free))
        start = NOW + rng.choice((50.0, 100.0, 400.0))
        state.add_hold(n, start, start + rng.choice((100.0, math.inf)), vec, f"h{step}")
        for w in prep.works:
            for end in (NOW + 80.0, NOW + 200.0, NOW + 1000.0):
                cached = NowView(state, NOW, end, {}, node_cache=node_cache)
                fresh = NowView(state, NOW, end, {}, node_cache={})
                for s in w.shapes:
                    for m in range(len(state.free)):
                        assert cached.node_count(s, m) == fresh.node_count(s, m)


@pytest.mark.parametrize("seed", range(40))
def test_future_minima_are_the_window_capacity_of_a_gang_that_never_ends(seed: int) -> None:
    """At every sweep time, a node's suffix minimum (indexed by its events applied by then) is
    the GPU count `window_capacity` gives a window that never ends: the bound is exact."""
    prep = _cluster(seed)
    rng = random.Random(seed)
    _add_holds(prep, rng)
    state = prep.state
    for n in range(len(state.free)):
        minima = future_minima(state, n)
        times = sorted(
            {NOW}
            | {r.time for r in state.releases[n]}
            | {h.start for h in state.holds[n]}
            | {h.end for h in state.holds[n] if h.end < math.inf}
        )
        for t in times:
            applied = [r for r in state.releases[n] if r.time <= t]
            base = list(state.free[n])
            for r in applied:
                base = [a + b for a, b in zip(base, r.vec, strict=True)]
            events = len(applied) + sum((h.start <= t) + (h.end <= t) for h in state.holds[n])
            want = state.window_capacity(n, t, math.inf, base, len(applied))[0]
            assert minima[events] == want


@pytest.mark.parametrize("seed", range(40))
def test_forever_bound_only_skips_attempts_that_would_fail(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sweeps of gangs that never end answer the same with the bound as without it."""
    prep = _cluster(seed)
    rng = random.Random(seed)
    _add_holds(prep, rng)
    forever = [w for w in prep.works if w.duration == math.inf]
    with_bound = [_plan(prep, w, None) for w in forever]

    class NoBound(backfill.ForeverBound):
        def rules_out(self, *args: object) -> bool:
            return False

    monkeypatch.setattr(backfill, "ForeverBound", NoBound)
    assert [_plan(prep, w, None) for w in forever] == with_bound


@pytest.mark.parametrize("seed", range(40))
def test_held_now_kept_up_to_date_matches_fresh(seed: int) -> None:
    """Free GPUs minus holds at now, kept up to date through every kind of change, equal a
    tracker built from scratch, and the free GPUs minus the holds active at now."""
    prep = _cluster(seed)
    rng = random.Random(seed)
    _add_holds(prep, rng)
    state = prep.state
    kept = state.track_held_now(NOW)
    kept.pods(2)
    vec = [1] + [0] * (state.width - 1)
    for step in range(30):
        n = rng.randrange(len(state.free))
        act = rng.randrange(4)
        if act == 0:
            state.change(n, vec, rng.choice((-1, 1)))
        elif act == 1:
            state.add_release(NOW + rng.choice((0.0, 300.0)), n, vec, f"g{step}")
        elif act == 2:
            start = NOW + rng.choice((-100.0, 0.0, 100.0))
            state.add_hold(n, start, start + rng.choice((50.0, 300.0, math.inf)), vec, f"h{step}")
        elif prep.running:
            state.drop_releases(rng.choice(prep.running).gang.id, [n])
        fresh = HeldNow(state, NOW)
        assert kept.node_gpu == fresh.node_gpu and kept.held == fresh.held
        assert kept.leaf_gpu == fresh.leaf_gpu and kept.total == fresh.total
        assert kept.pods(2) == fresh.pods(2) and kept.pods(8) == fresh.pods(8)
        for m in range(len(state.free)):
            h = sum(x.vec[0] for x in state.holds[m] if x.start <= NOW < x.end)
            want = max(0, state.free_gpu[m] - h) if state.usable[m] else 0
            assert kept.node_gpu[m] == want


@pytest.mark.parametrize("seed", range(40))
def test_shape_caps_index_matches_visiting_every_leaf(seed: int) -> None:
    """The per-shape index, replaying the leaf log between uses, lists the same leaves and pods
    as visiting every feasible leaf, through binds, releases, holds and evictions."""
    prep = _cluster(seed)
    rng = random.Random(seed)
    state = prep.state
    index: ShapeCapsCache = {}
    shared: dict[tuple[int, int, int], tuple[int, int, list[tuple[int, int]]]] = {}
    vec = [1] + [0] * (state.width - 1)
    for step in range(25):
        n = rng.randrange(len(state.free))
        act = rng.randrange(4)
        if act == 0:
            state.change(n, vec, rng.choice((-1, 1)))
        elif act == 1:
            state.add_release(NOW + rng.choice((0.0, 300.0)), n, vec, f"g{step}")
        elif act == 2:
            state.add_hold(n, NOW + rng.choice((0.0, 500.0)), NOW + 900.0, vec, f"h{step}")
        elif prep.running:
            state.drop_releases(rng.choice(prep.running).gang.id, [n])
        for w in rng.sample(prep.works, k=3):
            end = NOW + w.duration
            view = NowView(state, NOW, end, shared, index=index)
            fresh = NowView(state, NOW, end, {})
            for s in w.shapes:
                want = [
                    (leaf, c)
                    for leaf in s.feasible.leaves
                    if not (s.gpu and state.leaf_gpu[leaf] < s.gpu)
                    and (c := fresh.leaf_counts(s, leaf)[0]) > 0
                ]
                assert view.shape_caps(s) == want


@pytest.mark.parametrize("seed", range(40))
def test_leaf_answers_recounted_from_other_windows_match_fresh(seed: int) -> None:
    """A changed leaf re-counts only its changed nodes (and, from an answer for another window
    end, its nodes with holds): through every kind of change and many window ends, the cached
    leaf answers (pods and per-node counts) equal answers computed on empty caches."""
    prep = _cluster(seed)
    rng = random.Random(seed)
    state = prep.state
    shared: LeafCache = {}
    node_cache: dict[tuple[int, int, int, int], int] = {}
    vec = [1] + [0] * (state.width - 1)
    ends = (NOW + 60.0, NOW + 250.0, NOW + 700.0, NOW + 2000.0, math.inf)
    for step in range(30):
        n = rng.randrange(len(state.free))
        act = rng.randrange(4)
        if act == 0:
            state.change(n, vec, rng.choice((-1, 1)))
        elif act == 1:
            state.add_release(NOW + rng.choice((0.0, 300.0)), n, vec, f"g{step}")
        elif act == 2:
            start = NOW + rng.choice((0.0, 100.0, 500.0, 1500.0))
            state.add_hold(n, start, start + rng.choice((300.0, math.inf)), vec, f"h{step}")
        elif prep.running:
            state.drop_releases(rng.choice(prep.running).gang.id, [n])
        for end in rng.sample(ends, k=3):
            view = NowView(state, NOW, end, shared, node_cache=node_cache)
            fresh = NowView(state, NOW, end, {}, node_cache={})
            for w in rng.sample(prep.works, k=3):
                for s in w.shapes:
                    for leaf in s.feasible.leaves:
                        assert view.leaf_counts(s, leaf) == fresh.leaf_counts(s, leaf)


@pytest.mark.parametrize("seed", range(20))
def test_dropping_releases_removes_exactly_that_gangs_events(seed: int) -> None:
    prep = _cluster(seed)
    rng = random.Random(seed)
    state = prep.state
    for step in range(20):
        n = rng.randrange(len(state.free))
        t = NOW + rng.choice((0.0, 60.0, 600.0))
        state.add_release(t, n, [1] + [0] * (state.width - 1), f"x{step % 4}")
    for victim in [r.gang.id for r in prep.running] + ["x1", "x3"]:
        nodes = sorted({r.node for r in state.events if r.gang == victim})
        want = [r for r in state.events if r.gang != victim]
        state.drop_releases(victim, nodes)
        assert state.events == want
        assert [k[0] for k in state.event_keys] == [r.time for r in want]
        assert state.timeline == _timeline(state)


def _timeline(state: ClusterState) -> list[tuple[float, int, int, int, int]]:
    """The merged timeline the sweep walks, rebuilt from the releases and hold events."""
    leaf_of = state.topo.leaf_of
    out = [(r.time, r.node, r.vec[0], 1, leaf_of[r.node]) for r in state.events]
    out.extend((t, n, d, 0, leaf_of[n]) for t, n, d in state.hold_events)
    return sorted(out)


@pytest.mark.parametrize("seed", range(40))
def test_timeline_merges_releases_and_hold_events(seed: int) -> None:
    """Through binds, releases, holds (ending or not) and evictions, the sweep's merged
    timeline is exactly the sorted union of the releases and the hold events, the count of gangs
    released by a time is that of the timeline, and the pods per leaf kept up to date
    (`leaf_pods`) are those the free-GPU histogram gives."""
    prep = _cluster(seed)
    rng = random.Random(seed)
    _add_holds(prep, rng)
    state = prep.state
    vec = [2] + [0] * (state.width - 1)
    assert state.timeline == _timeline(state)
    for step in range(30):
        n = rng.randrange(len(state.free))
        act = rng.randrange(4)
        if act == 0:
            state.change(n, vec, rng.choice((-1, 1)))
        elif act == 1:
            state.add_release(NOW + rng.choice((0.0, 300.0)), n, vec, f"g{step % 5}")
        elif act == 2:
            start = NOW + rng.choice((0.0, 300.0, 900.0))
            state.add_hold(n, start, start + rng.choice((300.0, math.inf)), vec, f"h{step}")
        else:
            victim = rng.choice([r.gang.id for r in prep.running] + [f"g{i}" for i in range(5)])
            state.drop_releases(victim, sorted({r.node for r in state.events if r.gang == victim}))
        assert state.timeline == _timeline(state)
        for t in (NOW - 1.0, NOW, NOW + 299.0, NOW + 300.0, NOW + 5000.0, math.inf):
            want_gangs = len({r.gang for r in state.events if r.time <= t})
            assert state.gangs_released_by(t) == want_gangs
            for m in range(len(state.free)):
                want_cls = sum(1 for h in state.holds[m] if h.start < t)
                assert state.node_hold_class(m, t) == want_cls
        for g in (1, 2, 3, 8):
            want = [sum(c * (v // g) for v, c in h.items()) for h in state.leaf_hist]
            assert state.leaf_pods(g) == want
        # The capped figures a sweep of a gang that never ends starts from.
        capped = [
            max(0, min(state.final_gpu[m], state.free_gpu[m])) if state.usable[m] else 0
            for m in range(len(state.free))
        ]
        assert state.capped_gpu == capped
        per_leaf = [0] * len(state.topo.leaf_nodes)
        for m, v in enumerate(capped):
            per_leaf[state.topo.leaf_of[m]] += v
        assert state.capped_leaf_gpu == per_leaf
        assert state.capped_total == sum(capped)
        for g in (1, 2, 3, 8):
            want = [0] * len(state.topo.leaf_nodes)
            for m, v in enumerate(capped):
                if state.usable[m]:
                    want[state.topo.leaf_of[m]] += v // g
            assert state.capped_pods(g) == want
