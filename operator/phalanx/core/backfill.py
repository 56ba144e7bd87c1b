"""Reservations: the earliest time and place a waiting gang can start (conservative backfill).

The sweep walks the release timeline (running gangs reaching their time limit, and gangs bound in
this cycle that have one) in time order, applying each release to a private copy of the affected
nodes and to per-leaf aggregates. Only when the aggregates say the gang could fit — total GPUs, and
for identical pods the number of pods the free GPUs could hold, per leaf when a leaf is required —
is the real placement run against a `PlanView` at that time. So a sweep costs one cheap step per
release plus a few placements, not a placement per release.

Holds already promised to earlier reservations are respected by the view, which is what makes
backfill conservative: a later gang's reservation never moves an earlier one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from phalanx.core.capacity import ClusterState
from phalanx.core.placement import Outcome, place
from phalanx.core.views import PlanView
from phalanx.core.work import GangWork


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
    ends = state.hold_ends
    if not events and not ends:
        return None
    topo = state.topo
    usable = state.usable
    need = sum(s.gpu * len(s.pods) for s in shapes)
    base: dict[int, list[int]] = {}
    applied: dict[int, int] = {}
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
    i, count = 0, len(events)
    h, hcount = 0, len(ends)
    while i < count or h < hcount:
        # Next moment capacity comes back: a release, or the end of a reservation.
        t_event = events[i].time if i < count else math.inf
        t_end = ends[h] if h < hcount else math.inf
        t = max(now, min(t_event, t_end))
        if t > until:
            return None
        while h < hcount and ends[h] <= t:
            h += 1
        while i < count and events[i].time <= t:
            ev = events[i]
            i += 1
            n = ev.node
            ending.add(ev.gang)
            b = base.get(n)
            if b is None:
                b = base[n] = list(state.free[n])
            old = max(0, b[0])
            for j, v in enumerate(ev.vec):
                if v:
                    b[j] += v
            applied[n] = applied.get(n, 0) + 1
            if usable[n]:
                new = max(0, b[0])
                if new != old:
                    leaf = topo.leaf_of[n]
                    leaf_gpu[leaf] += new - old
                    total += new - old
                    if homog:
                        d = new // g - old // g
                        bound[leaf] += d
                        total_bound += d
        if total < need:
            continue
        if homog:
            if total_bound < k or (per_leaf and max(bound) < k):
                continue
        elif per_leaf and max(leaf_gpu) < need:
            continue
        view = PlanView(state, t, t + duration, base=base, applied=applied, leaf_gpu=leaf_gpu)
        out = place(view, shapes, required_level, preferred_level)
        if out.assignment is not None:
            return Plan(t, out, len(ending))
    return None
