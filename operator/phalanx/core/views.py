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


class SweepMemo:
    """Leaf capacities shared by the placement attempts of one backfill sweep.

    A node's capacity at sweep time t over [t, t + duration) only changes when the sweep applies
    a release or a hold start/end on that node (which bumps `leaf_dirty` of its leaf), or when the
    window's end moves past another hold start in the leaf (the hold class). Between two attempts
    the sweep typically applies one gang's releases, so an attempt recomputes a few leaves instead
    of the whole cluster.
    """

    __slots__ = ("entries", "leaf_dirty")

    def __init__(self, leaves: int) -> None:
        self.leaf_dirty = [0] * leaves
        self.entries: dict[tuple[int, int], tuple[int, int, int, list[tuple[int, int]]]] = {}


class PlanView:
    """Capacity at future time `t` for a gang that would run until `end`."""

    __slots__ = ("applied", "base", "end", "leaf_gpu", "memo", "state", "t", "topo")

    def __init__(
        self,
        state: ClusterState,
        t: float,
        end: float,
        *,
        base: dict[int, list[int]],
        applied: dict[int, int],
        leaf_gpu: list[int],
        memo: SweepMemo | None = None,
    ) -> None:
        self.state = state
        self.topo: Topology = state.topo
        self.t = t
        self.end = end
        self.base = base
        self.applied = applied
        self.leaf_gpu = leaf_gpu
        self.memo = memo if memo is not None else SweepMemo(len(state.topo.leaf_nodes))

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
        st, memo = self.state, self.memo
        key = (shape.id, leaf)
        dirty = memo.leaf_dirty[leaf]
        cls = st.leaf_hold_class(leaf, self.end)
        hit = memo.entries.get(key)
        if hit is not None and hit[0] == dirty and hit[1] == cls:
            return hit[2], hit[3]
        cap, counts = compute_leaf_counts(self, shape, leaf)
        memo.entries[key] = (dirty, cls, cap, counts)
        return cap, counts


class TrialView(NowView):
    """`NowView` as if some running gangs (eviction candidates) were already gone.

    Their capacity is overlaid (`extra`, per node) instead of being written into the cluster
    state, so the shared cache of unchanged leaves stays valid across the many trial placements of
    a victim search. Leaves the victims touch are cached in `trials`, keyed by which victims free
    capacity there: the binary search over a preference order asks about the same prefixes of the
    same leaves again and again.
    """

    __slots__ = ("extra", "leaf_extra", "leaf_key", "trials")

    def __init__(
        self,
        state: ClusterState,
        now: float,
        end: float,
        cache: LeafCache,
        ignore: frozenset[str],
        extra: dict[int, list[int]],
        leaf_key: dict[int, tuple[int, ...]],
        trials: TrialCache,
    ) -> None:
        super().__init__(state, now, end, cache, ignore)
        self.extra = extra
        self.leaf_key = leaf_key
        self.trials = trials
        #: The change of each touched leaf's usable-GPU aggregate (as `ClusterState.change`).
        self.leaf_extra: dict[int, int] = {}
        leaf_of, usable, free = state.topo.leaf_of, state.usable, state.free
        for n, vec in extra.items():
            if usable[n]:
                f = free[n][0]
                delta = max(0, f + vec[0]) - max(0, f)
                leaf = leaf_of[n]
                self.leaf_extra[leaf] = self.leaf_extra.get(leaf, 0) + delta

    def leaf_upper_gpu(self, leaf: int) -> int:
        return self.state.leaf_gpu[leaf] + self.leaf_extra.get(leaf, 0)

    def node_capacity(self, n: int) -> list[int]:
        st = self.state
        add = self.extra.get(n)
        vec = list(st.free[n])
        if add is not None:
            for i, v in enumerate(add):
                vec[i] += v
        if st.holds[n]:
            return st.window_capacity(n, self.now, self.end, vec, 0, self.ignore)
        return vec

    def leaf_counts(self, shape: Shape, leaf: int) -> tuple[int, list[tuple[int, int]]]:
        who = self.leaf_key.get(leaf)
        if who is None:
            return super().leaf_counts(shape, leaf)
        st = self.state
        key = (shape.id, leaf, st.leaf_hold_class(leaf, self.end), who)
        hit = self.trials.get(key)
        if hit is None:
            hit = self.trials[key] = compute_leaf_counts(self, shape, leaf)
        return hit


TrialCache = dict[tuple[int, int, int, tuple[int, ...]], tuple[int, list[tuple[int, int]]]]
