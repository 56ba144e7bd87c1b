"""The two capacity views placement runs against.

`NowView`: what a gang starting now may use — free capacity, minus whatever holds need before the
gang ends (its time limit, or forever). Per-leaf answers are cached across gangs, keyed by leaf
version and by how many of the leaf's hold starts fall before the gang's end, because most gangs of
a cycle ask the same question of the same unchanged leaves.

`PlanView`: what a gang starting at a future time `t` may use — free capacity plus everything
released by `t`, minus holds over the gang's window. Built by the backfill sweep, used once.
"""

from __future__ import annotations

from phalanx.core.capacity import ClusterState
from phalanx.core.placement import Shape, compute_leaf_counts
from phalanx.core.topology import Topology

LeafCache = dict[tuple[int, int, int], tuple[int, int, list[tuple[int, int]]]]


class NowView:
    """Capacity for a gang that would start now and run until `end`."""

    __slots__ = ("_cache", "end", "ignore", "now", "state", "topo")

    def __init__(
        self,
        state: ClusterState,
        now: float,
        end: float,
        cache: LeafCache,
        ignore: frozenset[str] = frozenset(),
    ) -> None:
        self.state = state
        self.ignore = ignore
        self.topo: Topology = state.topo
        self.now = now
        self.end = end
        self._cache = cache

    def leaf_upper_gpu(self, leaf: int) -> int:
        return self.state.leaf_gpu[leaf]

    def node_capacity(self, n: int) -> list[int]:
        st = self.state
        if st.holds[n]:
            return st.window_capacity(n, self.now, self.end, list(st.free[n]), 0, self.ignore)
        return list(st.free[n])

    def leaf_counts(self, shape: Shape, leaf: int) -> tuple[int, list[tuple[int, int]]]:
        st = self.state
        starts = st.leaf_hold_starts[leaf]
        key = (shape.id, leaf, st.leaf_hold_class(leaf, self.end) if starts else 0)
        version = st.leaf_version[leaf]
        hit = self._cache.get(key)
        if hit is not None and hit[0] == version:
            return hit[1], hit[2]
        cap, counts = compute_leaf_counts(self, shape, leaf)
        self._cache[key] = (version, cap, counts)
        return cap, counts


class PlanView:
    """Capacity at future time `t` for a gang that would run until `end`."""

    __slots__ = ("_memo", "applied", "base", "end", "leaf_gpu", "state", "t", "topo")

    def __init__(
        self,
        state: ClusterState,
        t: float,
        end: float,
        *,
        base: dict[int, list[int]],
        applied: dict[int, int],
        leaf_gpu: list[int],
    ) -> None:
        self.state = state
        self.topo: Topology = state.topo
        self.t = t
        self.end = end
        self.base = base
        self.applied = applied
        self.leaf_gpu = leaf_gpu
        self._memo: dict[tuple[int, int], tuple[int, list[tuple[int, int]]]] = {}

    def leaf_upper_gpu(self, leaf: int) -> int:
        return self.leaf_gpu[leaf]

    def node_capacity(self, n: int) -> list[int]:
        st = self.state
        b = self.base.get(n)
        vec = list(b) if b is not None else list(st.free[n])
        if st.holds[n]:
            return st.window_capacity(n, self.t, self.end, vec, self.applied.get(n, 0))
        return vec

    def leaf_counts(self, shape: Shape, leaf: int) -> tuple[int, list[tuple[int, int]]]:
        key = (shape.id, leaf)
        hit = self._memo.get(key)
        if hit is None:
            hit = self._memo[key] = compute_leaf_counts(self, shape, leaf)
        return hit
