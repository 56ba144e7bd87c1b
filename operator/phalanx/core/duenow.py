"""Capacity at `now` counting what is already due back: the "capacity being freed now" check.

A gang that cannot start on free capacity may still start at once on capacity being given back
right now (gangs being evicted, gangs past their time limit). That is the backfill sweep stopped at
`now`: free capacity plus every release due by now, minus holds active then. Run as a sweep it
re-reads every per-node array and every due release for every gang that asks — and on a busy
cycle every eviction adds releases due now, so thousands of gangs each re-walked thousands of
events.

`DueNow` keeps that picture up to date instead: `ClusterState` tells it which node changed, and it
recomputes that node alone (its GPUs at now, clamped as the sweep clamps them, with and without
the "never more than it will ever have free" cap the sweep applies to gangs without a time limit)
and moves the per-leaf and cluster totals and the histogram of per-node GPUs by the difference.
The answers are exactly the sweep's aggregates at `now` (the sweep's per-node clamping telescopes
to a function of the node's final value), and `node_epoch`/`leaf_epoch` count the events the
sweep would have applied per node and leaf, so a `PlanView` built on them shares the sweep's
caches key for key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from phalanx.core.capacity import ClusterState


class DueAggregate:
    """Usable GPUs per leaf and in total, and how many nodes have each GPU count, at `now`."""

    __slots__ = ("hist", "leaf_gpu", "leaf_hist", "node_gpu", "total")

    def __init__(self, nodes: int, leaves: int) -> None:
        self.node_gpu = [0] * nodes
        self.leaf_gpu = [0] * leaves
        self.total = 0
        self.hist: dict[int, int] = {}
        self.leaf_hist: list[dict[int, int]] = [{} for _ in range(leaves)]

    def set(self, n: int, leaf: int, value: int) -> None:
        old = self.node_gpu[n]
        if old == value:
            return
        self.node_gpu[n] = value
        self.leaf_gpu[leaf] += value - old
        self.total += value - old
        for hist in (self.hist, self.leaf_hist[leaf]):
            left = hist[old] - 1
            if left:
                hist[old] = left
            else:
                del hist[old]
            hist[value] = hist.get(value, 0) + 1

    def pods(self, g: int) -> int:
        """Pods of `g` GPUs the nodes could hold by GPU count (g > 0)."""
        return sum(c * (v // g) for v, c in self.hist.items())

    def max_leaf_pods(self, g: int) -> int:
        return max((sum(c * (v // g) for v, c in h.items()) for h in self.leaf_hist), default=0)


class DueNow:
    """The sweep's aggregates at `horizon` (the cycle's now), kept per node as the state changes.

    `plain` is for gangs with a time limit, `capped` for gangs without one (each node capped at
    `ClusterState.final_gpu`). Unusable nodes count 0 GPUs but their events still count in the
    epochs, as in the sweep.
    """

    __slots__ = ("capped", "horizon", "leaf_epoch", "node_epoch", "plain", "state")

    def __init__(self, state: ClusterState, horizon: float) -> None:
        self.state = state
        self.horizon = horizon
        nodes, leaves = len(state.free), len(state.topo.leaf_nodes)
        self.plain = DueAggregate(nodes, leaves)
        self.capped = DueAggregate(nodes, leaves)
        for agg in (self.plain, self.capped):
            agg.hist[0] = nodes
            for leaf, members in enumerate(state.topo.leaf_nodes):
                agg.leaf_hist[leaf][0] = len(members)
        self.node_epoch = [0] * nodes
        self.leaf_epoch = [0] * leaves
        for n in range(nodes):
            self.refresh(n)

    def refresh(self, n: int) -> None:
        """Recompute node `n` from the state (called by `ClusterState` on every change to it)."""
        st, h = self.state, self.horizon
        gpu = st.free[n][0]
        events = 0
        for r in st.releases[n]:
            if r.time > h:
                break
            gpu += r.vec[0]
            events += 1
        for hold in st.holds[n]:
            if hold.start <= h:
                gpu -= hold.vec[0]
                events += 1
                if hold.end <= h:
                    gpu += hold.vec[0]
                    events += 1
        leaf = st.topo.leaf_of[n]
        self.leaf_epoch[leaf] += events - self.node_epoch[n]
        self.node_epoch[n] = events
        plain = capped = 0
        if st.usable[n]:
            plain = gpu if gpu > 0 else 0
            cap = st.final_gpu[n]
            capped = min(plain, cap) if cap > 0 else 0
        self.plain.set(n, leaf, plain)
        self.capped.set(n, leaf, capped)

    def events_due(self) -> int:
        """How many releases are due by the horizon (the sweep's event index after `now`)."""
        events, h = self.state.events, self.horizon
        lo, hi = 0, len(events)
        while lo < hi:
            mid = (lo + hi) // 2
            if events[mid].time <= h:
                lo = mid + 1
            else:
                hi = mid
        return lo


class HeldNow:
    """Free GPUs minus those held at `horizon` (the cycle's now), per node, leaf and cluster,
    kept up to date like `DueNow`: an upper bound of what a gang starting now may use there
    (the window capacity's first checkpoint is exactly free minus the holds active then), so a
    victim search can skip prefixes of candidates that could not make enough room even with
    every hold at now subtracted. Unusable nodes count 0."""

    __slots__ = ("held", "horizon", "leaf_gpu", "node_gpu", "pods_by_g", "state", "total")

    def __init__(self, state: ClusterState, horizon: float) -> None:
        self.state = state
        self.horizon = horizon
        nodes = len(state.free)
        self.held = [0] * nodes
        self.node_gpu = [0] * nodes
        self.leaf_gpu = [0] * len(state.topo.leaf_nodes)
        self.total = 0
        #: g → per leaf, pods of g GPUs the nodes' `node_gpu` could hold.
        self.pods_by_g: dict[int, list[int]] = {}
        for n in range(nodes):
            self.refresh(n)

    def refresh(self, n: int) -> None:
        st, h = self.state, self.horizon
        held = 0
        for hold in st.holds[n]:
            if hold.start <= h < hold.end:
                held += hold.vec[0]
        self.held[n] = held
        value = 0
        if st.usable[n]:
            value = st.free_gpu[n] - held
            value = value if value > 0 else 0
        old = self.node_gpu[n]
        if value != old:
            self.node_gpu[n] = value
            leaf = st.topo.leaf_of[n]
            self.leaf_gpu[leaf] += value - old
            self.total += value - old
            for g, pods in self.pods_by_g.items():
                pods[leaf] += value // g - old // g

    def pods(self, g: int) -> list[int]:
        """Per leaf, pods of `g` GPUs (g > 0) by `node_gpu`; the tracker's own list."""
        got = self.pods_by_g.get(g)
        if got is None:
            got = [0] * len(self.leaf_gpu)
            leaf_of = self.state.topo.leaf_of
            for n, v in enumerate(self.node_gpu):
                got[leaf_of[n]] += v // g
            self.pods_by_g[g] = got
        return got
