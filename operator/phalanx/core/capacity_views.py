"""The two capacity views placement runs against.

`NowView`: what a gang starting now may use — free capacity, minus whatever holds need before the
gang ends (its time limit, or forever). Per-leaf answers are cached across gangs, keyed by leaf
version and by how many of the leaf's hold starts fall before the gang's end, because most gangs of
a cycle ask the same question of the same unchanged leaves.

`PlanView`: what a gang starting at a future time `t` may use — free capacity plus everything
released by `t` (read off the node's release list when asked, so the sweep itself only moves
GPU counts), minus holds over the gang's window. Built by the backfill sweep for each attempt;
leaf answers are shared between the attempts of a sweep through a `SweepMemo`.
"""

from __future__ import annotations

import math
from bisect import bisect_left

from phalanx.core.capacity import BORROWED, KEPT, ClusterState, Hold
from phalanx.core.placement import CapacityView, Shape
from phalanx.core.resources import count_fit
from phalanx.core.shapecaps import LeafCaps, ShapeCaps, ShapeCapsCache

#: (shape id, leaf, hold class) → (leaf version, pods, [(node, pods > 0)], node stamps, pods
#: per node); the same under (shape id, leaf, -1, window end) for the last answer of that end,
#: and under (shape id, leaf, -1) for the last answer of any end.
#: The last two fields let a changed leaf re-count only its changed nodes (`recount`).
LeafCache = dict[tuple[float, ...], tuple[int, int, list[tuple[int, int]], list[int], list[int]]]
#: (shape id, node, node version, hold class) → pods of the shape that fit on the node now.
NodeCache = dict[tuple[int, int, int, int], int]


_FOREVER = 1 << 62
"""`NowView.node_idle` of a gang without a time limit on a node that would otherwise free."""


def recount(
    view: CapacityView,
    shape: Shape,
    nodes: list[int],
    stamps: list[int],
    old_stamps: list[int] | None,
    old_per: list[int] | None,
    held: list[list[Hold]] | None = None,
) -> list[int]:
    """Pods of `shape` per node of `nodes` (`view.node_count`): re-counted where the node's stamp
    differs from `old_stamps` — or, with `held` (the nodes' holds: the old answer was for another
    window end), where the node has holds —, copied from `old_per` elsewhere; all counted
    without an old answer. Returns `old_per` itself when every count came out the same (callers
    then reuse the rest of the old answer)."""
    if old_stamps is None or old_per is None:
        return [view.node_count(shape, n) for n in nodes]
    if held is None:
        if stamps == old_stamps:
            return old_per
        todo = [j for j, stamp in enumerate(stamps) if stamp != old_stamps[j]]
    else:
        todo = [j for j, n in enumerate(nodes) if held[n] or stamps[j] != old_stamps[j]]
        if not todo:
            return old_per
    per = list(old_per)
    for j in todo:
        per[j] = view.node_count(shape, nodes[j])
    return old_per if per == old_per else per


class NowView(CapacityView):
    """Capacity for a gang that would start now and run until `end`."""

    __slots__ = (
        "_cache",
        "end",
        "ignore",
        "index",
        "node_cache",
        "now",
        "side",
        "state",
        "whole",
    )

    def __init__(
        self,
        state: ClusterState,
        now: float,
        end: float,
        cache: LeafCache,
        ignore: frozenset[str] = frozenset(),
        node_cache: NodeCache | None = None,
        index: ShapeCapsCache | None = None,
        side: int = 0,
        whole: bool = False,
    ) -> None:
        self.state = state
        #: `Policy.keep_whole_nodes`: the gang keeps whole free nodes whole where it can.
        self.whole = whole and state.whole_gpu is not None
        #: `Policy.pack_borrowed`: the gang's own work, `KEPT` or `BORROWED` (0: no preference).
        self.side = side
        #: Per-shape leaf capacities kept current (see `ShapeCaps`); only plain views use it.
        self.index = index
        #: Per-node answers survive a change elsewhere in the leaf, which invalidates the
        #: leaf's cached answer: recomputing the leaf then re-evaluates only the changed node.
        self.node_cache: NodeCache = node_cache if node_cache is not None else {}
        self.ignore = ignore
        self.topo = state.topo
        self.now = now
        self.end = end
        self._cache = cache

    def leaf_upper_gpu(self, leaf: int) -> int:
        return self.state.leaf_gpu[leaf]

    def node_idle(self, n: int) -> int:
        """`Policy.align_ends`: how long the gang would keep node n busy beyond the pods
        already running there (by their time limits), in seconds; 0 when it ends before they
        do. A node whose pods end together comes back whole, for a gang of a node's size."""
        st = self.state
        if not st.align_ends:
            return 0
        until = st.busy_until(n)
        end = self.end
        if end <= until:
            return 0
        if end == math.inf:
            return _FOREVER
        return int(min(end - max(until, self.now), _FOREVER - 1))

    def packs(self) -> bool:
        return self.side != 0 and self.state.pack_marks is not None

    def node_mixes(self, n: int) -> int:
        marks = self.state.pack_marks
        if not self.side or marks is None:
            return 0
        return 1 if marks[n] & (KEPT | BORROWED) & ~self.side else 0

    def keeps_whole(self) -> bool:
        return self.whole

    def node_whole(self, n: int) -> int:
        whole = self.state.whole_gpu
        if not self.whole or whole is None:
            return 0
        g = whole[n]
        return 1 if g > 0 and self.state.free_gpu[n] >= g else 0

    def node_capacity(self, n: int) -> list[int]:
        st = self.state
        if st.holds[n]:
            return st.window_capacity(n, self.now, self.end, list(st.free[n]), 0, self.ignore)
        return list(st.free[n])

    def node_count(self, shape: Shape, n: int) -> int:
        st = self.state
        starts = st.node_hold_starts[n]
        cls = bisect_left(starts, self.end) if starts else 0
        key = (shape.id, n, st.node_version[n], cls)
        hit = self.node_cache.get(key)
        if hit is None:
            hit = self.node_cache[key] = count_fit(self.node_capacity(n), shape.req)
        return hit

    def shape_caps(self, shape: Shape) -> list[tuple[int, int]] | None:
        if self.index is None or self.ignore:
            return None
        key = (shape.id, self.end)
        idx = self.index.get(key)
        if idx is None:
            idx = self.index[key] = ShapeCaps()
        return idx.current(self, shape)

    def leaf_counts(self, shape: Shape, leaf: int) -> tuple[int, list[tuple[int, int]]]:
        st = self.state
        starts = st.leaf_hold_starts[leaf]
        key = (shape.id, leaf, bisect_left(starts, self.end) if starts else 0)
        version = st.leaf_version[leaf]
        hit = self._cache.get(key)
        if hit is not None and hit[0] == version:
            return hit[1], hit[2]
        nodes = shape.feasible.leaf_nodes.get(leaf)
        if not nodes:
            self._cache[key] = (version, 0, [], [], [])
            return 0, []
        ver = st.node_version
        stamps = [ver[n] for n in nodes]
        # A node's answer is a function of its stamp and, if it has holds, of the window end
        # (`node_count`'s key): re-count only the nodes whose stamp moved since the last answer
        # for this end, or else since the last answer for any end plus the nodes with holds.
        cache = self._cache
        last = (shape.id, leaf, -1, self.end)
        anyend = (shape.id, leaf, -1)
        old = cache.get(last)
        if old is not None:
            per = recount(self, shape, nodes, stamps, old[3], old[4])
        else:
            old = cache.get(anyend)
            per = recount(
                self,
                shape,
                nodes,
                stamps,
                old[3] if old else None,
                old[4] if old else None,
                st.holds,
            )
        if old is not None and per is old[4]:
            cap, counts = old[1], old[2]
        else:
            counts = [(n, c) for n, c in zip(nodes, per, strict=True) if c > 0]
            cap = sum(per)
        cache[key] = cache[last] = cache[anyend] = (version, cap, counts, stamps, per)
        return cap, counts


#: (shape id, leaf, leaf stamp, leaf epoch, hold class) → (pods, [(node, pods > 0)], node
#: stamps-and-epochs, pods per node, leaf stamp, hold class); the same under (shape id, leaf)
#: for the leaf's last answer.
PlanCache = dict[tuple[int, ...], tuple[int, list[tuple[int, int]], list[int], list[int], int, int]]
#: (shape id, node, node version, node epoch, hold class) → pods that fit at the sweep time.
PlanNodeCache = dict[tuple[int, int, int, int, int], int]


class SweepMemo:
    """Per-sweep counters that make leaf capacities at future times cacheable for the cycle.

    A leaf's capacity at sweep time t over [t, t + duration) is fixed by (a) the leaf's own
    releases and holds (`ClusterState.leaf_version` changes with them), (b) how many of those
    the sweep has applied by t (`leaf_dirty`: every sweep applies the same events in the same
    order, so the count names the epoch), and (c) which hold starts fall before the window's end
    (the hold class). Keyed by those, an answer serves every later attempt and every later sweep
    until the leaf changes; between two attempts a sweep typically applies one gang's releases,
    so an attempt recomputes a leaf or two, and a new sweep mostly reads answers of earlier ones.
    """

    __slots__ = ("caps", "entries", "leaf_dirty", "node_cache", "node_dirty", "plan_nodes")

    def __init__(
        self,
        leaves: int,
        nodes: int,
        entries: PlanCache | None = None,
        node_cache: NodeCache | None = None,
        plan_nodes: PlanNodeCache | None = None,
        epochs: tuple[list[int], list[int]] | None = None,
    ) -> None:
        #: `epochs` (leaf, node) are counts already made (by `DueNow`); they are only read then.
        self.leaf_dirty = epochs[0] if epochs is not None else [0] * leaves
        #: The same per node (node epochs), for per-node answers.
        self.node_dirty = epochs[1] if epochs is not None else [0] * nodes
        self.entries: PlanCache = entries if entries is not None else {}
        #: `NowView`'s per-node answers: a node without holds that no release has reached yet
        #: by the sweep time has exactly its capacity now.
        self.node_cache: NodeCache = node_cache if node_cache is not None else {}
        self.plan_nodes: PlanNodeCache = plan_nodes if plan_nodes is not None else {}
        #: Per shape id, the sweep's leaves with room (`SweepCaps`); None: visit every leaf.
        self.caps: dict[int, SweepCaps] | None = None


class SweepCaps(LeafCaps):
    """Within one sweep, the leaves with room for a shape at the latest attempt, kept current.

    Between two attempts of a sweep the state does not change; a leaf's answer (and whether its
    GPUs can hold one pod at all) can change only if the sweep applied one of the leaf's events
    (`leaf_dirty` moved) or a hold start of the leaf fell between the two window ends (the hold
    class moved; the end only grows within a sweep). Re-reading just those leaves gives exactly
    the list visiting every leaf gives (`_homogeneous`)."""

    __slots__ = ("dirty", "end")

    def __init__(self) -> None:
        super().__init__()
        self.dirty: list[int] | None = None
        self.end = -math.inf

    def current(self, view: PlanView, shape: Shape) -> list[tuple[int, int]]:
        memo, st = view.memo, view.state
        feasible = shape.feasible.leaf_nodes
        dirty = memo.leaf_dirty
        last = self.dirty
        todo: list[int] | set[int]
        if last is None or view.end < self.end:
            todo = shape.feasible.leaves
            self.caps.clear()
        else:
            todo = {lf for lf in shape.feasible.leaves if dirty[lf] != last[lf]}
            if view.end > self.end:
                timeline = st.timeline
                lo = bisect_left(timeline, (self.end,))
                hi = bisect_left(timeline, (view.end,))
                for j in range(lo, hi):
                    ev = timeline[j]
                    if not ev[3] and ev[4] in feasible:
                        todo.add(ev[4])
        self.dirty = list(dirty)
        self.end = view.end
        return self.recount(todo, shape, view, view.leaf_gpu)


class PlanView(CapacityView):
    """Capacity at future time `t` for a gang that would run until `end`."""

    __slots__ = ("end", "leaf_gpu", "least_idle", "memo", "state", "t")

    def __init__(
        self,
        state: ClusterState,
        t: float,
        end: float,
        *,
        leaf_gpu: list[int],
        memo: SweepMemo | None = None,
        least_idle: bool = False,
    ) -> None:
        self.state = state
        self.least_idle = least_idle
        self.topo = state.topo
        self.t = t
        self.end = end
        self.leaf_gpu = leaf_gpu
        self.memo = (
            memo if memo is not None else SweepMemo(len(state.topo.leaf_nodes), len(state.free))
        )

    def leaf_upper_gpu(self, leaf: int) -> int:
        return self.leaf_gpu[leaf]

    def leaf_idle(self, leaf: int) -> int:
        return self.state.leaf_gpu[leaf] if self.least_idle else 0

    def node_idle(self, n: int) -> int:
        return self.state.free_gpu[n] if self.least_idle else 0

    def shape_caps(self, shape: Shape) -> list[tuple[int, int]] | None:
        by_shape = self.memo.caps
        if by_shape is None:
            return None
        idx = by_shape.get(shape.id)
        if idx is None:
            idx = by_shape[shape.id] = SweepCaps()
        return idx.current(self, shape)

    def node_capacity(self, n: int) -> list[int]:
        st, t = self.state, self.t
        vec = list(st.free[n])
        applied = 0
        for r in st.releases[n]:
            if r.time > t:
                break
            applied += 1
            for i, v in enumerate(r.vec):
                vec[i] += v
        if st.holds[n]:
            return st.window_capacity(n, t, self.end, vec, applied)
        return vec

    def node_count(self, shape: Shape, n: int) -> int:
        st, memo = self.state, self.memo
        epoch = memo.node_dirty[n]
        if not st.holds[n]:
            if not epoch:
                key = (shape.id, n, st.node_version[n], 0)
                hit = memo.node_cache.get(key)
                if hit is None:
                    hit = memo.node_cache[key] = count_fit(st.free[n], shape.req)
                return hit
            cls = 0
        else:
            cls = bisect_left(st.node_hold_starts[n], self.end)
        pkey = (shape.id, n, st.node_version[n], epoch, cls)
        got = memo.plan_nodes.get(pkey)
        if got is None:
            got = memo.plan_nodes[pkey] = count_fit(self.node_capacity(n), shape.req)
        return got

    def leaf_counts(self, shape: Shape, leaf: int) -> tuple[int, list[tuple[int, int]]]:
        st, memo = self.state, self.memo
        starts = st.leaf_hold_starts[leaf]
        key = (
            shape.id,
            leaf,
            st.leaf_version[leaf],
            memo.leaf_dirty[leaf],
            bisect_left(starts, self.end) if starts else 0,
        )
        entries = memo.entries
        hit = entries.get(key)
        if hit is None:
            version, cls = key[2], key[4]
            nodes = shape.feasible.leaf_nodes.get(leaf)
            if not nodes:
                entries[key] = (0, [], [], [], version, cls)
                return 0, []
            # A node's answer here is a function of its stamp, its sweep epoch and, if it has
            # holds, its own hold class for the window end (`node_count`'s key): re-count the
            # nodes whose stamp or epoch moved since the leaf's last answer (any sweep, any
            # time) — and those with holds, unless that answer was for the same leaf stamp and
            # hold class (then every unchanged node's hold starts before the end are the same).
            ver, epoch = st.node_version, memo.node_dirty
            stamps = [(ver[n] << 32) + epoch[n] for n in nodes]
            last = (shape.id, leaf)
            old = entries.get(last)
            same_class = old is not None and old[4] == version and old[5] == cls
            per = recount(
                self,
                shape,
                nodes,
                stamps,
                old[2] if old else None,
                old[3] if old else None,
                None if same_class else st.holds,
            )
            if old is not None and per is old[3]:
                hit = (old[0], old[1], stamps, per, version, cls)
            else:
                counts = [(n, c) for n, c in zip(nodes, per, strict=True) if c > 0]
                hit = (sum(per), counts, stamps, per, version, cls)
            entries[key] = entries[last] = hit
        return hit[0], hit[1]


class TrialView(NowView):
    """`NowView` as if some running gangs (eviction candidates) were already gone.

    Their capacity is overlaid (`extra`, per node) instead of being written into the cluster
    state, so the shared cache of unchanged leaves stays valid across the many trial placements of
    a victim search. Leaves the victims touch are cached in `trials`, keyed by which victims free
    capacity there: the binary search over a preference order asks about the same prefixes of the
    same leaves again and again.
    """

    __slots__ = ("_plain", "extra", "leaf_extra", "leaf_extra_nodes", "leaf_key", "trials")

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
        node_cache: NodeCache,
        index: ShapeCapsCache | None = None,
        per_leaf: tuple[dict[int, int], dict[int, list[int]]] | None = None,
    ) -> None:
        super().__init__(state, now, end, cache, ignore, node_cache, index)
        self.extra = extra
        self.leaf_key = leaf_key
        self.trials = trials
        self._plain: NowView | None = None
        if per_leaf is not None:
            # Already worked out by the caller (the victim search does it in one pass).
            self.leaf_extra, self.leaf_extra_nodes = per_leaf
            return
        #: The change of each touched leaf's usable-GPU aggregate (as `ClusterState.change`).
        self.leaf_extra = {}
        #: The victims' nodes per touched leaf.
        self.leaf_extra_nodes = {}
        leaf_of, usable, free = state.topo.leaf_of, state.usable, state.free
        for n in extra:
            self.leaf_extra_nodes.setdefault(leaf_of[n], []).append(n)
        for n, vec in extra.items():
            if usable[n]:
                f = free[n][0]
                delta = max(0, f + vec[0]) - max(0, f)
                leaf = leaf_of[n]
                self.leaf_extra[leaf] = self.leaf_extra.get(leaf, 0) + delta

    def leaf_upper_gpu(self, leaf: int) -> int:
        return self.state.leaf_gpu[leaf] + self.leaf_extra.get(leaf, 0)

    def shape_caps(self, shape: Shape) -> list[tuple[int, int]] | None:
        """The present's index with the touched leaves replaced by their trial answers:
        untouched leaves answer exactly as now (same aggregate, same cached counts)."""
        if self.index is None:
            return None
        caps = dict(self._plain_view().shape_caps(shape) or ())
        g, nodes = shape.gpu, shape.feasible.leaf_nodes
        for leaf in self.leaf_extra_nodes:
            if leaf not in nodes:
                continue
            c = 0
            if not g or self.leaf_upper_gpu(leaf) >= g:
                c, _ = self.leaf_counts(shape, leaf)
            if c > 0:
                caps[leaf] = c
            else:
                caps.pop(leaf, None)
        return sorted(caps.items())

    def _plain_view(self) -> NowView:
        """The present without the victims gone (shares the cycle's caches and index)."""
        plain = self._plain
        if plain is None:
            plain = self._plain = NowView(
                self.state,
                self.now,
                self.end,
                self._cache,
                node_cache=self.node_cache,
                index=self.index,
            )
        return plain

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

    def node_count(self, shape: Shape, n: int) -> int:
        if n in self.extra:
            return count_fit(self.node_capacity(n), shape.req)
        return super().node_count(shape, n)

    def leaf_counts(self, shape: Shape, leaf: int) -> tuple[int, list[tuple[int, int]]]:
        who = self.leaf_key.get(leaf)
        if who is None:
            return super().leaf_counts(shape, leaf)
        st = self.state
        key = (shape.id, leaf, st.leaf_hold_class(leaf, self.end), who)
        hit = self.trials.get(key)
        if hit is None:
            hit = self.trials[key] = self._overlaid_counts(shape, leaf)
        return hit

    def _overlaid_counts(self, shape: Shape, leaf: int) -> tuple[int, list[tuple[int, int]]]:
        """The leaf's answer now (shared cache) with only the victims' nodes recomputed.

        Same as `compute_leaf_counts(self, ...)`: nodes no victim touches count as they do now
        (no victim release is on them, so ignoring victims changes nothing there), and the
        leaf's node lists are in node order."""
        nodes = shape.feasible.leaf_nodes.get(leaf)
        if not nodes:
            return 0, []
        _, base = self._plain_view().leaf_counts(shape, leaf)
        extra = self.extra
        counts = [nc for nc in base if nc[0] not in extra]
        for n in self.leaf_extra_nodes[leaf]:
            if n in nodes:
                c = count_fit(self.node_capacity(n), shape.req)
                if c > 0:
                    counts.append((n, c))
        counts.sort()
        return sum(c for _, c in counts), counts


TrialCache = dict[tuple[int, int, int, tuple[int, ...]], tuple[int, list[tuple[int, int]]]]
