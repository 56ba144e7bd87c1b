"""Victim search: the galloping probe finds the same shortest prefix as trying every prefix, and
candidates read off once-sorted orders are those filtered and sorted per gang."""

from __future__ import annotations

import gc
import random
from dataclasses import replace

import pytest
from test_core_caches import NOW, _add_holds, _cluster

from phalanx.core import Policy, Snapshot, preemption, reclaim, schedule
from phalanx.core.victims import _gallop, _Search
from phalanx.core.work import RunState


@pytest.mark.parametrize("seed", range(60))
def test_gallop_finds_the_shortest_prefix(seed: int) -> None:
    prep = _cluster(seed)
    rng = random.Random(seed)
    _add_holds(prep, rng)
    state = prep.state
    for w in prep.works:
        if len(w.shapes) != 1:
            continue
        cands = list(prep.running)
        rng.shuffle(cands)
        search = _Search(state, w, cands, NOW, {}, {})
        want = next(
            (p for p in range(len(cands) + 1) if search.fits(list(range(p))) is not None), None
        )
        lo = rng.randint(0, want if want is not None else len(cands))
        got = _gallop(search, lo, len(cands))
        if want is None:
            assert got is None
            continue
        assert got is not None
        hi, out = got
        assert hi == want
        again = search.fits(list(range(hi)))
        assert again is not None and out.assignment == again.assignment


@pytest.mark.parametrize("seed", range(60))
def test_first_passing_prefix_is_the_shortest_passing_the_cheap_test(seed: int) -> None:
    """The one-pass bound equals trying `_may_fit` (with the GPUs held at now taken off) on
    every prefix, never exceeds the shortest prefix that places, and is None only when no
    prefix places."""
    prep = _cluster(seed)
    rng = random.Random(seed)
    _add_holds(prep, rng)
    state = prep.state
    for w in prep.works:
        if len(w.shapes) != 1:
            continue
        cands = list(prep.running)
        rng.shuffle(cands)
        search = _Search(state, w, cands, NOW, {}, {})

        def passes(p: int, cands: list[RunState] = cands, search: _Search = search) -> bool:
            # `_may_fit` on a state whose free GPUs have the holds at now taken off.
            extra: dict[int, list[int]] = {}
            for i in range(p):
                for n, vec in cands[i].nodes:
                    acc = extra.setdefault(n, [0] * len(vec))
                    for j, x in enumerate(vec):
                        acc[j] += x
            held = [sum(h.vec[0] for h in hs if h.start <= NOW < h.end) for hs in state.holds]
            saved = [list(v) for v in state.free]
            for n, h in enumerate(held):
                if h:
                    state.change(n, [h] + [0] * (state.width - 1), -1)
            probe = _Search(state, search.work, search.eligible, NOW, {}, {})
            ok = probe._may_fit(extra, {})
            for n, h in enumerate(held):
                if h:
                    state.change(n, [h] + [0] * (state.width - 1), 1)
            assert [list(v) for v in state.free] == saved
            return ok

        if not cands:
            continue
        lo = rng.randint(1, len(cands))  # the caller's `lo` is at least one candidate
        want = next((p for p in range(lo, len(cands) + 1) if passes(p)), None)
        got = search.first_passing(lo, len(cands))
        assert got == want
        placed = next(
            (p for p in range(lo, len(cands) + 1) if search.fits(list(range(p))) is not None),
            None,
        )
        if placed is not None:
            assert got is not None and got <= placed


@pytest.mark.parametrize("seed", range(40))
def test_candidate_orders_match_filtering_every_time(seed: int) -> None:
    """Candidates read off the once-sorted orders equal those filtered and sorted per gang, as
    gangs get evicted and queues move over or under their share."""
    prep = _cluster(seed)
    rng = random.Random(seed)
    for w in prep.works:
        w.gang = replace(w.gang, priority=rng.choice((0, 5, 10, 20)))
    for q in prep.queues.values():
        q.deserved = rng.randint(0, 8)
    p_order = preemption.preemption_order(prep.running, NOW)
    r_order = reclaim.reclaim_order(prep.running, prep.queues, NOW)
    for _ in range(4):
        for w in prep.works:
            assert preemption.candidates_from(p_order, w) == preemption.preemption_candidates(
                w, prep.running, NOW
            )
            assert reclaim.candidates_from(r_order, w, prep.queues) == reclaim.reclaim_candidates(
                w, prep.running, prep.queues, NOW
            )
        for r in rng.sample(prep.running, k=min(2, len(prep.running))):
            r.evicted = True
        for q in prep.queues.values():
            q.alloc_fair = rng.randint(0, 10)


@pytest.mark.parametrize("enabled", [True, False])
def test_schedule_restores_the_garbage_collector(enabled: bool) -> None:
    """The cycle pauses the cyclic collector and leaves it as it found it."""
    was = gc.isenabled()
    try:
        if enabled:
            gc.enable()
        else:
            gc.disable()
        schedule(Snapshot((), (), (), ()), Policy(), NOW)
        assert gc.isenabled() is enabled
    finally:
        if was:
            gc.enable()
