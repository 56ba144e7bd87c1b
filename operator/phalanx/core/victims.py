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
from phalanx.core.capacity_views import LeafCache, NodeCache, TrialCache, TrialView
from phalanx.core.placement import Outcome, place
from phalanx.core.shapecaps import ShapeCapsCache
from phalanx.core.work import GangWork, RunState


class _Search:
    """One victim search: the gang, its candidates in order, and what the trials share."""

    def __init__(
        self,
        state: ClusterState,
        work: GangWork,
        eligible: list[RunState],
        now: float,
        cache: LeafCache,
        node_cache: NodeCache,
        index: ShapeCapsCache | None = None,
    ) -> None:
        self.state = state
        self.index = index
        self.cache = cache
        self.node_cache = node_cache
        self.work = work
        self.eligible = eligible
        self.now = now
        self.trials: TrialCache = {}
        shapes = work.shapes
        #: Identical GPU pods: trials are first checked against a pod-count upper bound.
        self.g = shapes[0].gpu if len(shapes) == 1 else 0
        self.k = len(shapes[0].pods) if self.g else 0
        self.level = work.required_level
        topo = state.topo
        self.of_leaf = topo.level_domain_of_leaf[self.level] if self.level is not None else None
        #: Pods of the shape that the free GPUs of each leaf could hold (before any eviction).
        self.leaf_pods: list[int] = []
        if self.g:
            g = self.g
            self.leaf_pods = list(state.leaf_pods(g))

    def fits(self, chosen: list[int]) -> Outcome | None:
        """Would the gang start now if the candidates at `chosen` (indices) were gone?"""
        state, work = self.state, self.work
        extra: dict[int, list[int]] = {}
        who: dict[int, list[int]] = {}
        #: The victims' nodes per touched leaf, and each touched leaf's usable-GPU change.
        leaf_nodes: dict[int, list[int]] = {}
        leaf_delta: dict[int, int] = {}
        leaf_of = state.topo.leaf_of
        for i in chosen:
            for n, vec in self.eligible[i].nodes:
                leaf = leaf_of[n]
                acc = extra.get(n)
                if acc is None:
                    extra[n] = list(vec)
                    leaf_nodes.setdefault(leaf, []).append(n)
                else:
                    for j, x in enumerate(vec):
                        acc[j] += x
                ids = who.setdefault(leaf, [])
                if not ids or ids[-1] != i:
                    ids.append(i)
        if not self._may_fit(extra, leaf_delta):
            return None
        ignore = frozenset(self.eligible[i].gang.id for i in chosen)
        leaf_key = {leaf: tuple(ids) for leaf, ids in who.items()}
        end = self.now + work.duration
        view = TrialView(
            state,
            self.now,
            end,
            self.cache,
            ignore,
            extra,
            leaf_key,
            self.trials,
            self.node_cache,
            self.index,
            (leaf_delta, leaf_nodes),
        )
        out = place(view, work.shapes, work.required_level, work.preferred_level)
        return out if out.assignment is not None else None

    def _may_fit(self, extra: dict[int, list[int]], leaf_delta: dict[int, int]) -> bool:
        """Cheap necessary test: enough free GPUs, and for identical GPU pods enough whole pods
        by GPU count (in one domain of the required level). Capacity respecting holds is never
        more than free capacity, so a trial failing this would fail placement too. Fills
        `leaf_delta` (usable free GPUs gained per leaf) for the trial view on the way."""
        state = self.state
        free, usable = state.free, state.usable
        gpus = state.total_gpu
        g = self.g
        pods = list(self.leaf_pods) if g else []
        leaf_of = state.topo.leaf_of
        for n, vec in extra.items():
            if not usable[n]:
                continue
            f = free[n][0]
            a, b = max(0, f), max(0, f + vec[0])
            gpus += b - a
            leaf = leaf_of[n]
            leaf_delta[leaf] = leaf_delta.get(leaf, 0) + b - a
            if g:
                pods[leaf] += b // g - a // g
        if gpus < self.work.gpus:
            return False
        if not g:
            return True
        if sum(pods) < self.k:
            return False
        if self.of_leaf is None:
            return True
        per: dict[int, int] = {}
        for leaf, c in enumerate(pods):
            d = self.of_leaf[leaf]
            per[d] = per.get(d, 0) + c
        return max(per.values(), default=0) >= self.k

    def first_passing(self, lo: int, count: int) -> int | None:
        """The shortest prefix (at least `lo` long) that passes `_may_fit` with the GPUs held at
        now subtracted, or None.

        A gang starting now may use on a node at most its free GPUs (plus the victims') minus
        those held at now (the window capacity's first checkpoint), so this is a necessary
        test too, and it only gains from more victims (GPUs and whole pods per node only
        grow): prefixes shorter than this one would fail placement, and the shortest prefix
        that lets the gang start is at least this long. Worked out in one pass over the
        candidates' nodes instead of one overlay per rejected trial."""
        state = self.state
        free, usable, leaf_of = state.free, state.usable, state.topo.leaf_of
        g, k, need = self.g, self.k, self.work.gpus
        held_now = state.track_held_now(self.now)
        held = held_now.held
        gpus = held_now.total
        pods = list(held_now.pods(g)) if g else []
        total_pods = sum(pods)
        added: dict[int, int] = {}
        for i in range(count):
            for n, vec in self.eligible[i].nodes:
                if not usable[n]:
                    continue
                f = free[n][0] - held[n]
                before = added.get(n, 0)
                after = added[n] = before + vec[0]
                a = f + before
                b = f + after
                a = a if a > 0 else 0
                b = b if b > 0 else 0
                gpus += b - a
                if g:
                    d = b // g - a // g
                    pods[leaf_of[n]] += d
                    total_pods += d
            if i + 1 < lo or gpus < need:
                continue
            if not g:
                return i + 1
            if total_pods < k:
                continue
            if self.of_leaf is None:
                return i + 1
            per: dict[int, int] = {}
            for leaf, c in enumerate(pods):
                d = self.of_leaf[leaf]
                per[d] = per.get(d, 0) + c
            if max(per.values(), default=0) >= k:
                return i + 1
        return None


def choose_victims(
    state: ClusterState,
    work: GangWork,
    candidates: list[RunState],
    allowed: Callable[[RunState, list[RunState]], bool],
    now: float,
    cache: LeafCache,
    node_cache: NodeCache | None = None,
    max_prune: int = 64,
    index: ShapeCapsCache | None = None,
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
    search = _Search(
        state, work, eligible, now, cache, node_cache if node_cache is not None else {}, index
    )
    if len(work.shapes) == 1:
        start = search.first_passing(lo, len(eligible))
        if start is None:
            return None
        got = _gallop(search, start, len(eligible))
        if got is None:
            return None
        hi, found = got
    else:
        # Mixed pods are packed first-fit, which more capacity does not always help: keep the
        # search that probes the whole set first, so the prefix found stays the one it finds.
        first = search.fits(list(range(len(eligible))))
        if first is None:
            return None
        found = first
        hi = len(eligible)
        while lo < hi:
            mid = (lo + hi) // 2
            out = search.fits(list(range(mid)))
            if out is not None:
                hi, found = mid, out
            else:
                lo = mid + 1
    chosen = list(range(hi))
    if hi < len(eligible):
        again = search.fits(chosen)
        assert again is not None
        found = again
    # Pruning. For identical pods, placement succeeds exactly when enough pods fit (in one
    # domain of the required level), so a placement that uses none of a victim's nodes proves
    # the gang still fits without that victim: no trial needed. The outcome returned is always
    # the placement for the final set, as if every trial had been run.
    witness = {n for _, n in found.assignment or []} if len(work.shapes) == 1 else None
    fresh = True
    for v in list(reversed(chosen[:-1]))[:max_prune]:
        trial = [c for c in chosen if c != v]
        if witness is not None and not any(n in witness for n, _ in eligible[v].nodes):
            chosen, fresh = trial, False
            continue
        out = search.fits(trial)
        if out is not None:
            chosen, found, fresh = trial, out, True
            if witness is not None:
                witness = {n for _, n in out.assignment or []}
    if not fresh:
        again = search.fits(chosen)
        assert again is not None
        found = again
    return [eligible[i] for i in chosen], found


def _gallop(search: _Search, lo: int, count: int) -> tuple[int, Outcome] | None:
    """Shortest prefix of the candidates (at least `lo` long) that lets the gang start.

    For identical pods a trial succeeds exactly when enough pods fit (in one domain of the
    required level), which more victims never make false: the shortest prefix is unique, and any
    search finds it. Probing lo, lo+1, lo+3, lo+7, … then bisecting the last gap keeps the trials
    small when few victims are needed (the usual case), where probing the whole candidate list
    first made every trial overlay hundreds of gangs. Returns the prefix length and a placement
    with exactly that prefix gone."""
    failed, step, p = lo - 1, 1, lo
    while True:
        p = min(p, count)
        out = search.fits(list(range(p)))
        if out is not None:
            break
        if p >= count:
            return None
        failed, p, step = p, lo + 2 * step - 1, 2 * step
    hi, found = p, out
    low = failed + 1
    while low < hi:
        mid = (low + hi) // 2
        got = search.fits(list(range(mid)))
        if got is not None:
            hi, found = mid, got
        else:
            low = mid + 1
    return hi, found
