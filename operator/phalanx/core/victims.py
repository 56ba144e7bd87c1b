"""Choosing whole gangs to evict so that one waiting gang can start now (reclaim and preemption).

Both follow the same simulate-then-restore search. The caller's order encodes the preference
("lower queue priority, lower gang priority, least run time lost"); candidates its guards refuse
are dropped. Then: if evicting every remaining candidate would not let the gang start, nothing is
evicted; otherwise a binary search finds the shortest prefix of that order that does (placement
only gains from more victims, so the search is sound, and costs a logarithmic number of trial
placements instead of one per candidate); finally every victim the placement can do without is
dropped (latest first), which gives the fewest gangs. Victims are always whole gangs.
"""

from __future__ import annotations

from collections.abc import Callable

from phalanx.core.capacity import ClusterState
from phalanx.core.placement import Outcome, place
from phalanx.core.views import LeafCache, NowView
from phalanx.core.work import GangWork, RunState


def _fits_with(
    state: ClusterState,
    victims: list[RunState],
    work: GangWork,
    now: float,
    cache: LeafCache,
) -> Outcome | None:
    """Would `work` start now if `victims` were gone? (State is restored before returning.)

    The shared leaf cache is safe here: every leaf a victim touches changes version both when
    its capacity is lent and when it is taken back, so nothing computed in the simulation
    survives it, and the other leaves are unaffected by the simulation.
    """
    for v in victims:
        for n, vec in v.nodes:
            state.change(n, vec, +1)
    try:
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
    cache: LeafCache,
    max_prune: int = 64,
) -> tuple[list[RunState], Outcome] | None:
    """Fewest whole gangs from `candidates` (in order) whose eviction lets the gang start now.

    `allowed(candidate, chosen_so_far)` enforces the caller's guards (e.g. never below deserved).
    """
    eligible: list[RunState] = []
    for cand in candidates:
        if allowed(cand, eligible):
            eligible.append(cand)
    if not eligible:
        return None
    need = work.gpus
    freed = 0
    lo = len(eligible)
    for i, cand in enumerate(eligible):
        freed += sum(max(0, vec[0]) for n, vec in cand.nodes if state.usable[n])
        if state.total_gpu + freed >= need:
            lo = i + 1
            break
    else:
        return None
    found = _fits_with(state, eligible, work, now, cache)
    if found is None:
        return None
    hi = len(eligible)
    while lo < hi:
        mid = (lo + hi) // 2
        out = _fits_with(state, eligible[:mid], work, now, cache)
        if out is not None:
            hi, found = mid, out
        else:
            lo = mid + 1
    chosen = eligible[:hi]
    if hi < len(eligible):
        again = _fits_with(state, chosen, work, now, cache)
        assert again is not None
        found = again
    for v in list(reversed(chosen[:-1]))[:max_prune]:
        trial = [c for c in chosen if c is not v]
        out = _fits_with(state, trial, work, now, cache)
        if out is not None:
            chosen, found = trial, out
    return chosen, found
