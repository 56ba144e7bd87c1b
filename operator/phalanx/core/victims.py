"""Choosing whole gangs to evict so that one waiting gang can start now (reclaim and preemption).

Both follow the same simulate-then-restore search: add candidates in the caller's order (the order
encodes "lower queue priority, lower gang priority, least run time lost"), and after each one ask
placement whether the waiting gang now fits in the free capacity plus what the chosen victims hold;
once it does, drop every victim the placement can do without (latest first), which gives the
fewest gangs. Placement is only asked once the freed GPUs could possibly suffice. Victims are
always whole gangs; nothing is evicted unless the gang then fits.
"""

from __future__ import annotations

from collections.abc import Callable

from phalanx.core.capacity import ClusterState
from phalanx.core.placement import Outcome, place
from phalanx.core.views import LeafCache, NowView
from phalanx.core.work import GangWork, RunState


def _fits_with(
    state: ClusterState, victims: list[RunState], work: GangWork, now: float
) -> Outcome | None:
    for v in victims:
        for n, vec in v.nodes:
            state.change(n, vec, +1)
    try:
        cache: LeafCache = {}
        ignore = frozenset(v.gang.id for v in victims)
        view = NowView(state, now, now + work.duration, cache, ignore)
        out = place(view, work.shapes, work.required_level, work.preferred_level)
    finally:
        for v in victims:
            for n, vec in v.nodes:
                state.change(n, vec, -1)
    return out if out.assignment is not None else None


def choose_victims(
    state: ClusterState,
    work: GangWork,
    candidates: list[RunState],
    allowed: Callable[[RunState, list[RunState]], bool],
    now: float,
) -> tuple[list[RunState], Outcome] | None:
    """Fewest whole gangs from `candidates` (in order) whose eviction lets the gang start now.

    `allowed(candidate, chosen_so_far)` enforces the caller's guards (e.g. never below deserved).
    """
    need = work.gpus
    chosen: list[RunState] = []
    freed = 0
    found: Outcome | None = None
    for cand in candidates:
        if not allowed(cand, chosen):
            continue
        chosen.append(cand)
        freed += sum(max(0, vec[0]) for n, vec in cand.nodes if state.usable[n])
        if state.total_gpu + freed < need:
            continue
        found = _fits_with(state, chosen, work, now)
        if found is not None:
            break
    if found is None:
        return None
    for v in reversed(chosen[:-1]):
        trial = [c for c in chosen if c is not v]
        out = _fits_with(state, trial, work, now)
        if out is not None:
            chosen, found = trial, out
    return chosen, found
