"""Reservations: the earliest time and place a waiting gang can start (conservative backfill).

The sweep walks the release timeline (running gangs reaching their time limit, and gangs bound in
this cycle that have one) in time order, applying each release to a private copy of the affected
nodes and to per-leaf aggregates. Only when the aggregates say the gang could fit — total GPUs, and
for identical pods the number of pods the free GPUs could hold, per leaf when a leaf is required —
is the real placement run against a `PlanView` at that time. So a sweep costs one cheap step per
release plus a few placements, not a placement per release.

Holds already promised to earlier reservations are respected by the view, which is what makes
backfill conservative: a later gang's reservation never moves an earlier one. The aggregates
subtract holds active at the sweep time, and for a gang without a time limit also cap each node at
what it will ever have free (`ClusterState.final_gpu`), so that attempts doomed by holds are not
made. A sweep still gives up after `MAX_ATTEMPTS` failed placements (the gang then has no ETA this
cycle), which bounds the cost of a pathological timeline.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from phalanx.core.capacity import ClusterState
from phalanx.core.capacity_views import NodeCache, PlanCache, PlanNodeCache, PlanView, SweepMemo
from phalanx.core.futuremin import ForeverBound, FutureMinCache
from phalanx.core.placement import Outcome, place
from phalanx.core.work import GangWork

MAX_ATTEMPTS = 24


@dataclass(slots=True, init=False)
class Plan:
    """Where and when a gang can start, and how many running gangs must end first."""

    start: float
    outcome: Outcome
    ending: int

    # Written out (init=False): mypyc compiles it, the generated one runs interpreted (CORE.md).
    def __init__(self, start: float, outcome: Outcome, ending: int) -> None:
        self.start = start
        self.outcome = outcome
        self.ending = ending


def earliest_start(
    state: ClusterState,
    work: GangWork,
    now: float,
    until: float = math.inf,
    cache: PlanCache | None = None,
    node_cache: NodeCache | None = None,
    plan_nodes: PlanNodeCache | None = None,
    future: FutureMinCache | None = None,
    leaf_index: bool = True,
    least_idle: bool = False,
) -> Plan | None:
    """Earliest start at or after now (never before a release), or None if the timeline never
    frees enough (e.g. the capacity is held by gangs without a time limit). `cache` carries leaf
    capacities from one sweep to the next (see `SweepMemo`), `future` per-node minima for gangs
    that never end (see `ForeverBound`). `leaf_index` (tests switch it off) lets attempts re-read
    only the leaves that changed since the sweep's last attempt (see `SweepCaps`)."""
    shapes, duration = work.shapes, work.duration
    required_level, preferred_level = work.required_level, work.preferred_level
    events = state.events
    holds = state.hold_events
    if not events and not any(d > 0 for _, _, d in holds):
        return None
    if until < math.inf and not _may_free_enough(state, work, until):
        return None
    topo = state.topo
    usable = state.usable
    need = work.gpus
    #: GPUs per node at the sweep time: free plus releases minus holds active then (may be < 0).
    eff = list(state.free_gpu)
    leaf_gpu = list(state.leaf_gpu)
    total = state.total_gpu
    homog = len(shapes) == 1 and shapes[0].gpu > 0
    g = shapes[0].gpu if homog else 1
    k = len(shapes[0].pods) if homog else 0
    bound = [0] * len(leaf_gpu)
    total_bound = 0
    if homog:
        bound = list(state.leaf_pods(g))
        total_bound = sum(bound)
    per_leaf = required_level is not None and required_level == topo.finest
    memo = SweepMemo(len(topo.leaf_nodes), len(eff), cache, node_cache, plan_nodes)
    if leaf_index:
        memo.caps = {}  # attempts re-read only the leaves that changed since the last one
    dirty = memo.leaf_dirty
    node_dirty = memo.node_dirty
    # A gang that never ends can use at most what a node will ever have free (`final_gpu`).
    cap = state.final_gpu if duration == math.inf else None
    if cap is not None:
        # The aggregates above counted free GPUs; each node capped at `final_gpu` instead (only
        # nodes held forever differ), kept up to date by the state.
        leaf_gpu = list(state.capped_leaf_gpu)
        total = state.capped_total
        if homog:
            bound = list(state.capped_pods(g))
            total_bound = sum(bound)

    # Identical GPU pods that never end: a tighter bound, used only to skip doomed attempts.
    forever: ForeverBound | None = None
    held: set[int] = set()
    if homog and cap is not None:
        forever = ForeverBound(state, g, future if future is not None else {})
        held = state.held_nodes
    attempts = 0
    timeline = state.timeline
    j, count = 0, len(timeline)
    while j < count:
        # Next moment the picture changes: a release, or a hold starting or ending.
        t = timeline[j][0]
        t = max(t, now)
        if t > until:
            return None
        grew = False
        track = forever is not None and forever.started
        # Apply every hold change and release at or before t to the per-node GPUs and the
        # aggregates (each node clamped to [0, cap]); this loop is the sweep's main cost.
        while j < count:
            tt, n, delta, kind, leaf = timeline[j]
            if tt > t:
                break
            j += 1
            if kind or delta > 0:
                grew = True
            old = eff[n]
            new = old + delta
            eff[n] = new
            dirty[leaf] += 1
            node_dirty[n] += 1
            if not usable[n]:
                continue
            if cap is not None:
                c = cap[n]
                o = c if old > c else old
                w = c if new > c else new
            else:
                o, w = old, new
            o = o if o > 0 else 0
            w = w if w > 0 else 0
            if track and n in held:
                forever.moved(n, node_dirty[n], leaf, o, w)  # type: ignore[union-attr]
            if o != w:
                leaf_gpu[leaf] += w - o
                total += w - o
                if homog:
                    d = w // g - o // g
                    bound[leaf] += d
                    total_bound += d
        if not grew or total < need:
            continue
        if homog:
            if total_bound < k or (per_leaf and max(bound) < k):
                continue
        elif per_leaf and max(leaf_gpu) < need:
            continue
        if (
            forever is not None
            and cap is not None
            and forever.rules_out(bound, total_bound, k, per_leaf, eff, node_dirty, cap)
        ):
            # The placement would fail: count it as the failed attempt it would have been.
            attempts += 1
            if attempts >= MAX_ATTEMPTS:
                return None
            continue
        view = PlanView(state, t, t + duration, leaf_gpu=leaf_gpu, memo=memo, least_idle=least_idle)
        out = place(view, shapes, required_level, preferred_level)
        if out.assignment is not None:
            return Plan(t, out, state.gangs_released_by(t))
        attempts += 1
        if attempts >= MAX_ATTEMPTS:
            return None
    return None


def _may_free_enough(state: ClusterState, work: GangWork, until: float) -> bool:
    """Necessary test for a start by `until`: the GPUs free by then (free now plus releases;
    holds only take away) cover the gang, and for identical GPU pods so do the whole pods those
    GPUs make per node. Most "capacity being freed now" checks end here, before the sweep's
    per-node setup."""
    added: dict[int, int] = {}
    extra = 0
    for ev in state.events:
        if ev.time > until:
            break
        extra += ev.vec[0]
        added[ev.node] = added.get(ev.node, 0) + ev.vec[0]
    if state.total_gpu + extra < work.gpus:
        return False
    shapes = work.shapes
    if len(shapes) != 1 or shapes[0].gpu <= 0:
        return True
    g, k = shapes[0].gpu, len(shapes[0].pods)
    pods = sum(state.leaf_pods(g))
    free, usable = state.free, state.usable
    for n, r in added.items():
        if usable[n]:
            f = max(0, free[n][0])
            pods += max(0, free[n][0] + r) // g - f // g
    return pods >= k


def start_on_due(
    state: ClusterState,
    work: GangWork,
    now: float,
    cache: PlanCache | None = None,
    node_cache: NodeCache | None = None,
    plan_nodes: PlanNodeCache | None = None,
    least_idle: bool = False,
) -> Plan | None:
    """`earliest_start(state, work, now, until=now)` when a release is due by now, read off the
    aggregates `DueNow` keeps instead of re-running the sweep's setup and event walk.

    The sweep stopped at now applies every release and hold change due by then and makes one
    attempt if its aggregates allow; `DueNow` holds exactly those aggregates and per-node/leaf
    event counts, so the checks, the `PlanView` and the caches it reads are the same."""
    events = state.events
    if not events or events[0].time > now:
        return earliest_start(
            state, work, now, now, cache, node_cache, plan_nodes, least_idle=least_idle
        )
    due = state.track_due(now)
    shapes, duration = work.shapes, work.duration
    agg = due.capped if duration == math.inf else due.plain
    if agg.total < work.gpus:
        return None
    required_level = work.required_level
    per_leaf = required_level is not None and required_level == state.topo.finest
    if len(shapes) == 1 and shapes[0].gpu > 0:
        g, k = shapes[0].gpu, len(shapes[0].pods)
        if agg.pods(g) < k or (per_leaf and agg.max_leaf_pods(g) < k):
            return None
    elif per_leaf and max(agg.leaf_gpu) < work.gpus:
        return None
    memo = SweepMemo(0, 0, cache, node_cache, plan_nodes, epochs=(due.leaf_epoch, due.node_epoch))
    view = PlanView(
        state, now, now + duration, leaf_gpu=agg.leaf_gpu, memo=memo, least_idle=least_idle
    )
    out = place(view, shapes, required_level, work.preferred_level)
    if out.assignment is None:
        return None
    return Plan(now, out, state.gangs_released_by(now))
