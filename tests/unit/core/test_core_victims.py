"""The victim search's galloping probe finds the same shortest prefix as trying every prefix."""

from __future__ import annotations

import random

import pytest
from test_core_caches import NOW, _add_holds, _cluster

from phalanx.core.victims import _gallop, _Search


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
