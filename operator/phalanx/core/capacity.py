"""The mutable view of the cluster during one cycle: free capacity now, and how it changes later.

Three things are kept, each for a reason:

* free vectors per node, with free GPUs aggregated per leaf, per spine and for the cluster, plus a
  per-leaf histogram of node free-GPU values — so a gang whose need exceeds a domain (or the
  cluster) is turned away in O(1), and "how many p-GPU pods could this leaf take" is a short sum;
* releases: when capacity held by a running (or just bound) gang with a time limit comes back —
  the timeline backfill plans with;
* holds: capacity promised to reservations from their start to their end; a gang may use held
  capacity only where it is gone again before the hold starts.

Every change bumps the version of the node's leaf so cached per-leaf answers can be reused until
the leaf changes.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

from phalanx.core.duenow import DueNow, HeldNow
from phalanx.core.topology import Topology

INFINITY = math.inf


@dataclass(slots=True, init=False)
class Hold:
    """Capacity promised on one node to a reservation over [start, end)."""

    start: float
    end: float
    vec: list[int]
    gang: str

    # Written out (init=False): mypyc compiles it, the generated one runs interpreted (CORE.md).
    def __init__(self, start: float, end: float, vec: list[int], gang: str) -> None:
        self.start = start
        self.end = end
        self.vec = vec
        self.gang = gang


@dataclass(slots=True, init=False)
class Release:
    """Capacity a gang gives back on one node at `time` (the end of its time limit)."""

    time: float
    node: int
    vec: list[int]
    gang: str

    # Written out (init=False): mypyc compiles it, the generated one runs interpreted (CORE.md).
    def __init__(self, time: float, node: int, vec: list[int], gang: str) -> None:
        self.time = time
        self.node = node
        self.vec = vec
        self.gang = gang


KEPT = 1
"""`Policy.pack_borrowed`: a node holds work of a queue at or within its deserved share, which
reclaim never takes."""
BORROWED = 2
"""`Policy.pack_borrowed`: a node holds work of a queue above its deserved share (reclaim may
take it for a queue below its own)."""


class ClusterState:
    """Free capacity per node and domain, releases and holds, for one cycle."""

    def __init__(
        self,
        topo: Topology,
        free: list[list[int]],
        usable: list[bool],
    ) -> None:
        self.topo = topo
        self.free = free
        self.usable = usable
        self.width = len(free[0]) if free else 1
        nleaves = len(topo.leaf_nodes)
        self.leaf_gpu = [0] * nleaves
        self.spine_gpu = [0] * len(topo.spine_leaves)
        self.leaf_hist: list[dict[int, int]] = [{} for _ in range(nleaves)]
        self.leaf_version = [0] * nleaves
        #: Per node, a stamp that changes whenever anything about the node changes (free
        #: capacity, releases, holds); stamps are never reused, so they key per-node caches.
        self.node_version = [0] * len(free)
        self._tick = 0
        #: The leaf of every node change, in order (`ShapeCaps` replays it to stay current).
        self.leaf_log: list[int] = []
        #: Per leaf, the length of `leaf_log` just after the leaf's last entry (0: never), so
        #: "which leaves changed since position p" is a scan of the leaves, not of the log.
        self.leaf_touched = [0] * nleaves
        self.total_gpu = 0
        for n, vec in enumerate(free):
            if usable[n]:
                g = max(0, vec[0])
                leaf = topo.leaf_of[n]
                self.leaf_gpu[leaf] += g
                self.spine_gpu[topo.spine_of[leaf]] += g
                self.total_gpu += g
                hist = self.leaf_hist[leaf]
                hist[g] = hist.get(g, 0) + 1
        #: GPUs a gang that never ends could use on the node at the very most: free now, plus
        #: everything ever released, minus holds that never end. The backfill sweep bounds
        #: unlimited gangs with it (a hold taken later still takes its capacity for good).
        self.final_gpu = [v[0] for v in free]
        #: Nodes with a hold that never ends (their final_gpu is below their free GPUs).
        self.forever_held: set[int] = set()
        self.releases: list[list[Release]] = [[] for _ in free]
        self.events: list[Release] = []
        self.event_keys: list[tuple[float, int]] = []
        self.holds: list[list[Hold]] = [[] for _ in free]
        #: Per node, its holds' starts, sorted (`node_hold_class` bisects them).
        self.node_hold_starts: list[list[float]] = [[] for _ in free]
        self.leaf_hold_starts: list[list[float]] = [[] for _ in range(nleaves)]
        #: (time, node, GPU delta) of hold starts (−) and finite ends (+), sorted: what the
        #: backfill sweep subtracts from its aggregates so they stay tight upper bounds.
        self.hold_events: list[tuple[float, int, int]] = []
        self.hold_count = 0
        #: Releases and hold events merged, as (time, node, GPU delta, 1 for a release else 0,
        #: leaf), sorted: the backfill sweep walks this one list (equal tuples are
        #: interchangeable, so a release is removed by value).
        self.timeline: list[tuple[float, int, int, int, int]] = []
        #: Per gang with releases, their times (sorted); and every such gang's earliest release
        #: time (sorted), so "gangs released by t" is one bisection.
        self._gang_times: dict[str, list[float]] = {}
        self._first_release: list[float] = []
        #: Nodes that have (or had) holds: on the others free GPUs only grow with time, so the
        #: least they will ever have from now on is what they have now (see `ForeverBound`).
        self.held_nodes: set[int] = set()
        #: Free GPUs per node (`free[n][0]`), kept as a flat list so a sweep copies it at once.
        self.free_gpu = [v[0] for v in free]
        #: g → `leaf_pods(g)`, kept up to date by `change`.
        self._leaf_pods: dict[int, list[int]] = {}
        #: The same figures for a gang that never ends, whose sweep caps every node at
        #: `final_gpu`: per usable node max(0, min(final_gpu, free GPUs)) (0 if unusable),
        #: summed per leaf and in all, their per-leaf histogram, and g → pods per leaf
        #: (`capped_pods`); kept up to date on every node change.
        self.capped_gpu = [
            max(0, min(c, f)) if u else 0
            for c, f, u in zip(self.final_gpu, self.free_gpu, usable, strict=True)
        ]
        self.capped_leaf_gpu = [0] * nleaves
        self.capped_hist: list[dict[int, int]] = [{} for _ in range(nleaves)]
        for n, v in enumerate(self.capped_gpu):
            if usable[n]:
                leaf = topo.leaf_of[n]
                self.capped_leaf_gpu[leaf] += v
                self.capped_hist[leaf][v] = self.capped_hist[leaf].get(v, 0) + 1
        self.capped_total = sum(self.capped_leaf_gpu)
        self._capped_pods: dict[int, list[int]] = {}
        #: GPUs per node taken by running gangs without a time limit: they never come back, so
        #: the node stays busy for good (`busy_until`).
        self.unlimited_gpu = [0] * len(free)
        #: `Policy.align_ends`: start-now placement breaks its ties by `busy_until`.
        self.align_ends = False
        #: `Policy.pack_borrowed`: per node, `KEPT` | `BORROWED` bits of the work it holds
        #: (None: off). Set by the walk from the running gangs and the gangs it binds.
        self.pack_marks: list[int] | None = None
        #: `Policy.keep_whole_nodes`: per node, the GPUs it holds empty (None: off). A node
        #: whose free GPUs are all of them is whole.
        self.whole_gpu: list[int] | None = None
        #: Free GPUs minus holds at now, kept up to date once `track_held_now` is called.
        self.held_now: HeldNow | None = None
        #: Capacity at now with releases due by then, kept up to date once `track_due` is called.
        self.due: DueNow | None = None

    def leaf_pods(self, g: int) -> list[int]:
        """Per leaf, the pods of `g` GPUs (g > 0) the usable nodes' free GPUs could hold —
        `sum(count × (value // g))` over `leaf_hist` — kept up to date once asked for. The list
        is the state's own: callers copy it before changing it."""
        got = self._leaf_pods.get(g)
        if got is None:
            got = self._leaf_pods[g] = [
                sum(c * (v // g) for v, c in hist.items()) for hist in self.leaf_hist
            ]
        return got

    def capped_pods(self, g: int) -> list[int]:
        """`leaf_pods(g)` over the capped GPUs (`capped_gpu`); the state's own list."""
        got = self._capped_pods.get(g)
        if got is None:
            got = self._capped_pods[g] = [
                sum(c * (v // g) for v, c in hist.items()) for hist in self.capped_hist
            ]
        return got

    def track_held_now(self, now: float) -> HeldNow:
        """Start keeping free GPUs minus holds active at now (see `HeldNow`)."""
        if self.held_now is None or self.held_now.horizon != now:
            self.held_now = HeldNow(self, now)
        return self.held_now

    def track_due(self, now: float) -> DueNow:
        """Start keeping the "capacity being freed now" aggregates (see `DueNow`)."""
        if self.due is None or self.due.horizon != now:
            self.due = DueNow(self, now)
        return self.due

    def _touch(self, n: int) -> None:
        self._tick += 1
        self.node_version[n] = self._tick
        leaf = self.topo.leaf_of[n]
        log = self.leaf_log
        log.append(leaf)
        self.leaf_touched[leaf] = len(log)
        if self.usable[n]:
            f = self.free_gpu[n]
            c = self.final_gpu[n]
            new = c if c < f else f
            new = new if new > 0 else 0
            old = self.capped_gpu[n]
            if new != old:
                self.capped_gpu[n] = new
                self.capped_leaf_gpu[leaf] += new - old
                self.capped_total += new - old
                hist = self.capped_hist[leaf]
                hist[old] -= 1
                if not hist[old]:
                    del hist[old]
                hist[new] = hist.get(new, 0) + 1
                for g, pods in self._capped_pods.items():
                    pods[leaf] += new // g - old // g
        if self.due is not None:
            self.due.refresh(n)
        if self.held_now is not None:
            self.held_now.refresh(n)

    def busy_until(self, n: int) -> float:
        """When the last of node n's running pods ends by its time limit: `inf` if one has no
        limit, `-inf` if nothing runs there (or all of it is being evicted already)."""
        if self.unlimited_gpu[n] > 0:
            return math.inf
        rel = self.releases[n]
        return rel[-1].time if rel else -math.inf

    # -- free capacity now ---------------------------------------------------------------------

    def change(self, n: int, vec: list[int], sign: int) -> None:
        """free[n] += sign × vec, keeping the aggregates and the leaf version right."""
        free = self.free[n]
        old = max(0, free[0])
        self.final_gpu[n] += sign * vec[0]
        for i, v in enumerate(vec):
            if v:
                free[i] += sign * v
        self.free_gpu[n] = free[0]
        leaf = self.topo.leaf_of[n]
        self.leaf_version[leaf] += 1
        self._touch(n)
        if not self.usable[n]:
            return
        new = max(0, free[0])
        if new != old:
            delta = new - old
            self.leaf_gpu[leaf] += delta
            self.spine_gpu[self.topo.spine_of[leaf]] += delta
            self.total_gpu += delta
            hist = self.leaf_hist[leaf]
            hist[old] -= 1
            if not hist[old]:
                del hist[old]
            hist[new] = hist.get(new, 0) + 1
            for g, pods in self._leaf_pods.items():
                pods[leaf] += new // g - old // g

    # -- releases --------------------------------------------------------------------------------

    def add_release(self, time: float, n: int, vec: list[int], gang: str) -> None:
        """Capacity `vec` comes back on node `n` at `time`."""
        rel = Release(time, n, vec, gang)
        times = [r.time for r in self.releases[n]]
        self.releases[n].insert(bisect.bisect_right(times, time), rel)
        key = (time, len(self.event_keys))
        i = bisect.bisect_right(self.event_keys, key)
        self.event_keys.insert(i, key)
        self.events.insert(i, rel)
        bisect.insort(self.timeline, (time, n, vec[0], 1, self.topo.leaf_of[n]))
        times = self._gang_times.setdefault(gang, [])
        first = times[0] if times else None
        bisect.insort(times, time)
        if first is None or time < first:
            self._move_first(first, time)
        self.final_gpu[n] += vec[0]
        self.leaf_version[self.topo.leaf_of[n]] += 1
        self._touch(n)

    def drop_releases(self, gang: str, nodes: list[int]) -> None:
        """Forget `gang`'s planned releases (it is evicted: it gives back earlier, once)."""
        gone: list[Release] = []
        for n in nodes:
            mine = [r for r in self.releases[n] if r.gang == gang]
            if mine:
                gone.extend(mine)
                self.final_gpu[n] -= sum(r.vec[0] for r in mine)
                self.releases[n] = [r for r in self.releases[n] if r.gang != gang]
            self.leaf_version[self.topo.leaf_of[n]] += 1
            self._touch(n)
        # A gang's releases are on the lists of its nodes, and each is in the timeline under its
        # time: find it there by bisection instead of filtering the whole timeline.
        events, keys = self.events, self.event_keys
        timeline, leaf_of = self.timeline, self.topo.leaf_of
        for r in gone:
            i = bisect.bisect_left(keys, (r.time, -1))
            while events[i] is not r:
                i += 1
            del events[i]
            del keys[i]
            entry = (r.time, r.node, r.vec[0], 1, leaf_of[r.node])
            j = bisect.bisect_left(timeline, entry)
            assert timeline[j] == entry
            del timeline[j]
        times = self._gang_times.get(gang)
        if gone and times is not None:
            first = times[0]
            for r in gone:
                del times[bisect.bisect_left(times, r.time)]
            now_first = times[0] if times else None
            if now_first != first:
                self._move_first(first, now_first)
            if not times:
                del self._gang_times[gang]

    def _move_first(self, old: float | None, new: float | None) -> None:
        """A gang's earliest release moved from `old` to `new` (None: it had or has none)."""
        firsts = self._first_release
        if old is not None:
            del firsts[bisect.bisect_left(firsts, old)]
        if new is not None:
            bisect.insort(firsts, new)

    def gangs_released_by(self, t: float) -> int:
        """How many gangs have a release at or before `t` (= distinct gangs among the events
        with time ≤ t): the "after N running gangs end" figure of an ETA."""
        return bisect.bisect_right(self._first_release, t)

    # -- holds -----------------------------------------------------------------------------------

    def add_hold(self, n: int, start: float, end: float, vec: list[int], gang: str) -> None:
        """Promise `vec` on node `n` over [start, end) to `gang`'s reservation."""
        self.holds[n].append(Hold(start, end, vec, gang))
        bisect.insort(self.node_hold_starts[n], start)
        self.held_nodes.add(n)
        leaf = self.topo.leaf_of[n]
        bisect.insort(self.leaf_hold_starts[leaf], start)
        bisect.insort(self.hold_events, (start, n, -vec[0]))
        bisect.insort(self.timeline, (start, n, -vec[0], 0, leaf))
        if end < INFINITY:
            bisect.insort(self.hold_events, (end, n, vec[0]))
            bisect.insort(self.timeline, (end, n, vec[0], 0, leaf))
        else:
            self.final_gpu[n] -= vec[0]
            self.forever_held.add(n)
        self.leaf_version[leaf] += 1
        self._touch(n)
        self.hold_count += 1

    def drop_holds(self, n: int, gang: str) -> None:
        """Take back every hold of `gang` on node `n` (`Policy.owed_whole_nodes` holds the
        whole free nodes for the length of one plan). `held_nodes` keeps `n`: it lists nodes
        that have or had holds, which only costs the sweep a tighter check."""
        mine = [h for h in self.holds[n] if h.gang == gang]
        if not mine:
            return
        self.holds[n] = [h for h in self.holds[n] if h.gang != gang]
        leaf = self.topo.leaf_of[n]
        for h in mine:
            del self.node_hold_starts[n][bisect.bisect_left(self.node_hold_starts[n], h.start)]
            starts = self.leaf_hold_starts[leaf]
            del starts[bisect.bisect_left(starts, h.start)]
            entries = [((h.start, n, -h.vec[0]), (h.start, n, -h.vec[0], 0, leaf))]
            if h.end < INFINITY:
                entries.append(((h.end, n, h.vec[0]), (h.end, n, h.vec[0], 0, leaf)))
            else:
                self.final_gpu[n] += h.vec[0]
            for event, point in entries:
                i = bisect.bisect_left(self.hold_events, event)
                assert self.hold_events[i] == event
                del self.hold_events[i]
                j = bisect.bisect_left(self.timeline, point)
                assert self.timeline[j] == point
                del self.timeline[j]
            self.hold_count -= 1
        if not any(h.end == INFINITY for h in self.holds[n]):
            self.forever_held.discard(n)
        self.leaf_version[leaf] += 1
        self._touch(n)

    def window_capacity(
        self,
        n: int,
        t: float,
        end: float,
        base: list[int],
        applied: int,
        ignore: frozenset[str] = frozenset(),
        skip_holds: frozenset[str] = frozenset(),
    ) -> list[int]:
        """What a gang may use on node `n` from `t` until `end` without breaking any hold.

        `base` is the node's capacity at `t` ignoring holds, which already includes the first
        `applied` releases of the node; releases of gangs in `ignore` (victims whose eviction is
        being simulated, already counted in `base`) are skipped. The answer is the minimum, over
        `t` and every hold start before `end`, of base plus later releases minus what holds take
        at that instant: using less than that never leaves a reservation short when it starts.
        The holds of gangs in `skip_holds` are not counted (`Policy.share_over_holds`).
        """
        holds = self.holds[n]
        if skip_holds:
            holds = [h for h in holds if h.gang not in skip_holds]
        if not holds:
            return base
        checkpoints = [t]
        checkpoints.extend(h.start for h in holds if t < h.start < end)
        releases = self.releases[n]
        count = len(releases)
        out: list[int] | None = None
        for c in checkpoints:
            value = list(base)
            if c > t:
                # (At t itself `base` already holds every release the window may count.)
                j = applied
                while j < count:
                    r = releases[j]
                    if r.time > c:
                        break
                    j += 1
                    if r.gang not in ignore:
                        for i, v in enumerate(r.vec):
                            value[i] += v
            for h in holds:
                if h.start <= c < h.end:
                    for i, v in enumerate(h.vec):
                        value[i] -= v
            out = value if out is None else [min(a, b) for a, b in zip(out, value, strict=True)]
        assert out is not None
        return out

    def node_hold_class(self, n: int, end: float) -> int:
        """How many of the node's own hold starts fall before `end` (the per-node cache key).

        Per-node answers outlive changes elsewhere in the leaf, so they must not be keyed by the
        leaf's count: a hold added on a neighbour shifts that count, and an old answer for a
        different window would be read back under the same number."""
        return bisect.bisect_left(self.node_hold_starts[n], end)

    def leaf_hold_class(self, leaf: int, end: float) -> int:
        """How many hold starts in the leaf fall before `end` (the cache key for capacities)."""
        starts = self.leaf_hold_starts[leaf]
        return bisect.bisect_left(starts, end) if starts else 0

    def held_gangs(self, nodes: list[int], end: float) -> list[str]:
        """Gangs holding capacity on `nodes` from before `end` (for 'reserved for …' messages)."""
        out = {h.gang for n in nodes for h in self.holds[n] if h.start < end}
        return sorted(out)
