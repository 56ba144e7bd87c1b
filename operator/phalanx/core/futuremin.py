"""The least a node will have free from a sweep time on: a tight bound for gangs that never end.

The backfill sweep decides whether a placement attempt at time t is worth making from per-node
GPU counts at t. For a gang without a time limit that count is loose: the gang needs the capacity
at every instant from t on, and a reservation starting later takes its share at its start. The
window capacity `PlanView` computes for such a gang is exactly the minimum, over t and every later
instant, of the node's GPUs at that instant — and the node's GPUs only change at its own events
(releases, hold starts and ends). So per node, the suffix minimum over its event groups, indexed
by how many of its events the sweep has applied (`SweepMemo.node_dirty`), is that window's GPU
count, and whole pods of g GPUs per node bound what the placement can find. An attempt the bound
rules out would fail; the sweep counts it as a failed attempt without making it, so its attempt
budget and therefore its answers are unchanged.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from phalanx.core.capacity import ClusterState

#: node → (node stamp, suffix minima by events applied).
FutureMinCache = dict[int, tuple[int, list[int]]]


def future_minima(state: ClusterState, n: int) -> list[int]:
    """`out[j]`: the least GPUs node `n` has at any instant once its first j events (in time
    order) have happened. Only counts at the end of a group of same-time events are instants."""
    evs = [(r.time, r.vec[0]) for r in state.releases[n]]
    for h in state.holds[n]:
        evs.append((h.start, -h.vec[0]))
        if h.end < math.inf:
            evs.append((h.end, h.vec[0]))
    evs.sort(key=lambda e: e[0])
    count = len(evs)
    value = state.free[n][0]
    at: list[int | None] = [None] * (count + 1)
    at[0] = value
    for i, (t, d) in enumerate(evs):
        value += d
        if i + 1 == count or evs[i + 1][0] > t:
            at[i + 1] = value
    out = [0] * (count + 1)
    run = math.inf
    for j in range(count, -1, -1):
        v = at[j]
        if v is not None and v < run:
            run = float(v)
        out[j] = int(run)
    return out


class ForeverBound:
    """Per sweep, for identical pods of `g` GPUs and a gang that never ends: how many more pods
    the sweep's own bound counts than the nodes can hold from the sweep time on.

    The sweep bounds such a gang by each node's GPUs at t capped at `final_gpu`. On a node
    without holds the GPUs only grow from now on, so the least it will ever have from t is its
    GPUs at t — the two bounds agree. Only nodes with holds differ, so only they are tracked, and
    only from the sweep's first attempt on (a sweep that never attempts pays nothing): `extra`
    per leaf is the tighter bound minus the sweep's (≤ 0).
    """

    __slots__ = ("cache", "extra", "extra_total", "g", "minima", "started", "state")

    def __init__(self, state: ClusterState, g: int, cache: FutureMinCache) -> None:
        self.state = state
        self.g = g
        self.cache = cache
        self.minima: dict[int, list[int]] = {}
        self.extra = [0] * len(state.topo.leaf_nodes)
        self.extra_total = 0
        self.started = False

    def _minima(self, n: int) -> list[int]:
        got = self.minima.get(n)
        if got is None:
            stamp = self.state.node_version[n]
            hit = self.cache.get(n)
            if hit is None or hit[0] != stamp:
                hit = self.cache[n] = (stamp, future_minima(self.state, n))
            got = self.minima[n] = hit[1]
        return got

    def rules_out(
        self,
        bound: list[int],
        total: int,
        k: int,
        per_leaf: bool,
        eff: list[int],
        applied: list[int],
        cap: list[int],
    ) -> bool:
        """Whether the tighter bound proves an attempt now would fail. `bound`/`total` are the
        sweep's pods per leaf and in all, `eff` its GPUs per node, `applied` its events applied
        per node, `cap` the nodes' `final_gpu`."""
        if not self.started:
            self.started = True
            state = self.state
            g, usable, leaf_of = self.g, state.usable, state.topo.leaf_of
            minima, cache, version = self.minima, self.cache, state.node_version
            extra, added = self.extra, 0
            # (Any order: the corrections are summed.)
            for n in state.held_nodes:
                if not usable[n]:
                    continue
                got = cache.get(n)
                if got is None or got[0] != version[n]:
                    got = cache[n] = (version[n], future_minima(state, n))
                lows = minima[n] = got[1]
                m = lows[applied[n]]
                e = cap[n] if cap[n] < eff[n] else eff[n]
                d = (m if m > 0 else 0) // g - (e if e > 0 else 0) // g
                if d:
                    extra[leaf_of[n]] += d
                    added += d
            self.extra_total += added
        if total + self.extra_total < k:
            return True
        return per_leaf and max(b + e for b, e in zip(bound, self.extra, strict=True)) < k

    def moved(self, n: int, applied: int, leaf: int, o: int, w: int) -> None:
        """Node `n` (usable, with holds) has had its `applied`-th event applied by the sweep,
        which moved its capped, clamped GPUs from `o` to `w`."""
        m = self.minima.get(n) or self._minima(n)  # (the start read every node with holds)
        g = self.g
        a, b = m[applied - 1], m[applied]
        d = (b if b > 0 else 0) // g - (a if a > 0 else 0) // g - (w // g - o // g)
        if d:
            self.extra[leaf] += d
            self.extra_total += d
