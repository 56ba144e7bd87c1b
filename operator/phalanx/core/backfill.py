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
from phalanx.core.placement import Outcome, place
from phalanx.core.views import PlanView, SweepMemo
from phalanx.core.work import GangWork

MAX_ATTEMPTS = 24


@dataclass(slots=True)
class Plan:
    """Where and when a gang can start, and how many running gangs must end first."""

    start: float
    outcome: Outcome
    ending: int


def earliest_start(
    state: ClusterState, work: GangWork, now: float, until: float = math.inf
) -> Plan | None:
    """Earliest start at or after now (never before a release), or None if the timeline never
    frees enough (e.g. the capacity is held by gangs without a time limit)."""
    shapes, duration = work.shapes, work.duration
    required_level, preferred_level = work.required_level, work.preferred_level
    events = state.events
    holds = state.hold_events
    if not events and not any(d > 0 for _, _, d in holds):
        return None
    topo = state.topo
    usable = state.usable
    leaf_of = topo.leaf_of
    need = work.gpus
    base: dict[int, list[int]] = {}
    applied: dict[int, int] = {}
    #: GPUs per touched node at the sweep time: base minus holds active then (may be < 0).
    eff: dict[int, int] = {}
    leaf_gpu = list(state.leaf_gpu)
    total = state.total_gpu
    homog = len(shapes) == 1 and shapes[0].gpu > 0
    g = shapes[0].gpu if homog else 1
    k = len(shapes[0].pods) if homog else 0
    bound: list[int] = []
    total_bound = 0
    if homog:
        bound = [sum(c * (v // g) for v, c in hist.items()) for hist in state.leaf_hist]
        total_bound = sum(bound)
    per_leaf = required_level is not None and required_level == topo.finest
    ending: set[str] = set()
    memo = SweepMemo(len(topo.leaf_nodes))
    dirty = memo.leaf_dirty
    final = state.final_gpu if duration == math.inf else None

    def clamp(n: int, value: int) -> int:
        if final is not None and final[n] < value:
            value = final[n]
        return max(0, value)

    def shift(n: int, delta: int) -> None:
        nonlocal total, total_bound
        old = eff.get(n)
        if old is None:
            old = state.free[n][0]
        new = old + delta
        eff[n] = new
        dirty[leaf_of[n]] += 1
        if not usable[n]:
            return
        o, w = clamp(n, old), clamp(n, new)
        if o != w:
            leaf = leaf_of[n]
            leaf_gpu[leaf] += w - o
            total += w - o
            if homog:
                d = w // g - o // g
                bound[leaf] += d
                total_bound += d

    if final is not None:
        # The aggregates above counted free GPUs; cap the nodes held forever.
        for n in sorted(state.forever_held):
            if usable[n]:
                before = max(0, state.free[n][0])
                eff[n] = state.free[n][0]
                after = clamp(n, eff[n])
                if after != before:
                    leaf = leaf_of[n]
                    leaf_gpu[leaf] += after - before
                    total += after - before
                    if homog:
                        d = after // g - before // g
                        bound[leaf] += d
                        total_bound += d

    attempts = 0
    i, count = 0, len(events)
    h, hcount = 0, len(holds)
    while i < count or h < hcount:
        # Next moment the picture changes: a release, or a hold starting or ending.
        t_event = events[i].time if i < count else math.inf
        t_hold = holds[h][0] if h < hcount else math.inf
        t = max(now, min(t_event, t_hold))
        if t > until:
            return None
        grew = False
        while h < hcount and holds[h][0] <= t:
            _, n, delta = holds[h]
            h += 1
            shift(n, delta)
            grew = grew or delta > 0
        while i < count and events[i].time <= t:
            ev = events[i]
            i += 1
            n = ev.node
            ending.add(ev.gang)
            b = base.get(n)
            if b is None:
                b = base[n] = list(state.free[n])
            for j, v in enumerate(ev.vec):
                if v:
                    b[j] += v
            applied[n] = applied.get(n, 0) + 1
            shift(n, ev.vec[0])
            grew = True
        if not grew or total < need:
            continue
        if homog:
            if total_bound < k or (per_leaf and max(bound) < k):
                continue
        elif per_leaf and max(leaf_gpu) < need:
            continue
        view = PlanView(
            state, t, t + duration, base=base, applied=applied, leaf_gpu=leaf_gpu, memo=memo
        )
        out = place(view, shapes, required_level, preferred_level)
        if out.assignment is not None:
            return Plan(t, out, len(ending))
        attempts += 1
        if attempts >= MAX_ATTEMPTS:
            return None
    return None
