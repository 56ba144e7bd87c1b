"""Gang placement: where the `min_member` pods of one gang go, all or nothing.

The objective is PRODUCT.md §4 in this order: fewest leaves, then fewest spines, then best fit
(the tightest domain that holds the gang, so large empty domains stay whole for large gangs), then
fewest nodes (pack members). A `required` level restricts the gang to one domain of that level; a
`preferred` level is tried that way first and dropped if nothing fits.

Why this is fast enough in Python: identical members are grouped into a `Shape` and counted rather
than placed one by one; a leaf's capacity for a shape ("how many such pods fit") is cached until
the leaf changes; leaves whose free GPUs cannot hold one pod are skipped from the aggregates; and
the minimum number of leaves is read off the capacities sorted in descending order (exact for
identical pods: the k largest leaves hold the most pods of any k leaves).

Capacities come from a `CapacityView`: "free now, respecting holds until this gang's end" for a
start now, or "free at time t" when backfill plans a reservation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import combinations

from phalanx.core.resources import SparseRequest, count_fit
from phalanx.core.topology import Topology


@dataclass(slots=True)
class Feasible:
    """Nodes a constraint signature may use, per leaf (static for the cycle)."""

    leaf_nodes: dict[int, list[int]]
    leaves: list[int]
    node_count: int


@dataclass(slots=True, init=False)
class Shape:
    """Identical members of a gang: same request, same constraints. `pods` in placement order."""

    id: int
    req: SparseRequest
    vec: list[int]
    gpu: int
    feasible: Feasible
    pods: list[str]

    # Written out (init=False): mypyc compiles it, the generated one runs interpreted (CORE.md).
    def __init__(
        self,
        id: int,
        req: SparseRequest,
        vec: list[int],
        gpu: int,
        feasible: Feasible,
        pods: list[str] | None = None,
    ) -> None:
        self.id = id
        self.req = req
        self.vec = vec
        self.gpu = gpu
        self.feasible = feasible
        self.pods = [] if pods is None else pods


@dataclass(slots=True, init=False)
class Outcome:
    """A placement (pod → node index) or the numbers explaining why there is none.

    `best_leaf`/`best_domain` name the domain that came closest when a topology constraint was
    what failed; `fit_pods` is how many of the gang's pods fit in the whole scope.
    """

    assignment: list[tuple[str, int]] | None
    leaves: list[int]
    fit_pods: int
    best_domain: str | None
    best_domain_gpus: int | None

    # Written out (init=False): mypyc compiles it, the generated one runs interpreted (CORE.md).
    def __init__(
        self,
        assignment: list[tuple[str, int]] | None,
        leaves: list[int] | None = None,
        fit_pods: int = 0,
        best_domain: str | None = None,
        best_domain_gpus: int | None = None,
    ) -> None:
        self.assignment = assignment
        self.leaves = [] if leaves is None else leaves
        self.fit_pods = fit_pods
        self.best_domain = best_domain
        self.best_domain_gpus = best_domain_gpus


class CapacityView:
    """Capacity the placement may use: start now (`views.NowView`, and `TrialView` with victims
    gone) and plan at time t (`views.PlanView`).

    A base class rather than a Protocol: compiled by mypyc, calls through it then dispatch
    natively instead of through Python attribute lookups (bench/CORE.md, round 5).
    """

    __slots__ = ("topo",)
    topo: Topology

    def leaf_upper_gpu(self, leaf: int) -> int:
        """Upper bound of the GPUs usable in the leaf (cheap, from aggregates)."""
        raise NotImplementedError

    def node_capacity(self, n: int) -> list[int]:
        """Capacity vector of node n (a fresh list the caller may change)."""
        raise NotImplementedError

    def leaf_counts(self, shape: Shape, leaf: int) -> tuple[int, list[tuple[int, int]]]:
        """How many `shape` pods fit in the leaf, and per node (node, count>0) in node order."""
        raise NotImplementedError

    def node_count(self, shape: Shape, n: int) -> int:
        """How many `shape` pods fit on node n (implementations cache it per node state)."""
        raise NotImplementedError

    def shape_caps(self, shape: Shape) -> list[tuple[int, int]] | None:
        """(leaf, pods > 0) over the shape's feasible leaves in leaf order, skipping leaves with
        fewer free GPUs than one pod — from an index, or None to visit every leaf."""
        raise NotImplementedError

    def leaf_idle(self, leaf: int) -> int:
        """Tie-break between leaves that hold a gang equally well (lower first): 0 for a start
        now; for a reservation, the GPUs of the leaf free *now* when `Policy.reserve_least_idle`
        (capacity held idle until the reservation starts, unless short gangs backfill it)."""
        return 0

    def node_idle(self, n: int) -> int:
        """`leaf_idle` for one node."""
        return 0

    def packs(self) -> bool:
        """Whether `node_mixes` can answer 1 (`Policy.pack_borrowed`, for a start now)."""
        return False

    def node_mixes(self, n: int) -> int:
        """`Policy.pack_borrowed`: 1 when the gang placed would mix borrowed with kept work on
        node n (see `capacity.BORROWED`), else 0."""
        return 0

    def keeps_whole(self) -> bool:
        """Whether `node_whole` can answer 1 (`Policy.keep_whole_nodes`, for a start now)."""
        return False

    def node_whole(self, n: int) -> int:
        """`Policy.keep_whole_nodes`: 1 when node n is whole free now (all its GPUs free), else
        0."""
        return 0


def compute_leaf_counts(
    view: CapacityView, shape: Shape, leaf: int
) -> tuple[int, list[tuple[int, int]]]:
    """Uncached leaf capacity for a shape: the sum of per-node counts."""
    nodes = shape.feasible.leaf_nodes.get(leaf)
    if not nodes:
        return 0, []
    node_count = view.node_count
    counts: list[tuple[int, int]] = []
    total = 0
    for n in nodes:
        c = node_count(shape, n)
        if c > 0:
            counts.append((n, c))
            total += c
    return total, counts


def _spread(view: CapacityView, counts: list[tuple[int, int]], k: int) -> list[tuple[int, int]]:
    """Choose how many pods go on which node: fewest nodes, then the tightest fitting node.

    Takes the largest node until one node alone can finish the job, then the *smallest* node that
    can: the count of nodes is minimal and large empty nodes are left for larger pods later.
    Between nodes of equal count, the one the view calls least idle (`node_idle`) first. With
    `Policy.pack_borrowed` (`view.packs()`), nodes the gang mixes nothing on come first among
    those of equal count, and among the nodes that can finish it.
    """
    idle = view.node_idle
    packs = view.packs()
    mix = view.node_mixes
    if view.keeps_whole():
        # `Policy.keep_whole_nodes`: the partly used nodes alone, when they hold the gang.
        partial = [nc for nc in counts if not view.node_whole(nc[0])]
        if len(partial) < len(counts) and sum(c for _, c in partial) >= k:
            counts = partial
    if packs:
        order = sorted(counts, key=lambda nc: (-nc[1], mix(nc[0]), idle(nc[0]), nc[0]))
    else:
        order = sorted(counts, key=lambda nc: (-nc[1], idle(nc[0]), nc[0]))
    out: list[tuple[int, int]] = []
    remaining = k
    i = 0
    while remaining > 0 and i < len(order):
        if order[i][1] >= remaining and packs:
            # `Policy.pack_borrowed`: of the nodes that finish it, one it mixes nothing on
            # first, then the tightest (the prefix of `order` from i that holds `remaining`).
            best = min((mix(n), c, idle(n), n) for n, c in order[i:] if c >= remaining)
            out.append((best[3], remaining))
            return out
        if order[i][1] >= remaining:
            j = i
            while j + 1 < len(order) and order[j + 1][1] >= remaining:
                j += 1
            while j > i and order[j - 1][1] == order[j][1]:
                j -= 1
            out.append((order[j][0], remaining))
            return out
        out.append(order[i])
        remaining -= order[i][1]
        i += 1
    return out if remaining <= 0 else []


def _choose_leaves(
    view: CapacityView, caps: list[tuple[int, int]], k: int
) -> list[tuple[int, int]] | None:
    """Pick (leaf, pods) to hold `k` identical pods: fewest leaves, fewest spines, best fit.

    `caps` is (leaf, capacity>0). Returns None when the leaves cannot hold k pods together.
    """
    total = sum(c for _, c in caps)
    if total < k:
        return None
    topo = view.topo
    # The tightest leaf that holds the gang alone: fewest pods, then fewest GPUs, then index
    # (the GPU figure is only read for the leaves with the fewest pods).
    idle = view.leaf_idle
    least = min((c for _, c in caps if c >= k), default=0)
    if least:
        upper = view.leaf_upper_gpu
        _, _, leaf = min((upper(leaf), idle(leaf), leaf) for leaf, c in caps if c == least)
        return [(leaf, k)]
    desc = sorted(caps, key=lambda lc: (-lc[1], idle(lc[0]), lc[0]))
    m, acc = 0, 0
    for _, c in desc:
        m += 1
        acc += c
        if acc >= k:
            break
    by_spine: dict[int, list[tuple[int, int]]] = {}
    for leaf, c in desc:
        by_spine.setdefault(topo.spine_of[leaf], []).append((leaf, c))
    candidates = desc
    if len(by_spine) > 1:
        # Among selections with m leaves, prefer one spine (the tightest), else two.
        single = [
            (sum(c for _, c in ls), s)
            for s, ls in by_spine.items()
            if sum(c for _, c in ls[:m]) >= k
        ]
        if single:
            _, s = min(single)
            candidates = by_spine[s]
        else:
            pairs: list[tuple[int, int, int]] = []
            spines = sorted(by_spine)
            if len(spines) <= 16:
                for a, b in combinations(spines, 2):
                    merged = sorted(by_spine[a][:m] + by_spine[b][:m], key=lambda lc: -lc[1])
                    if sum(c for _, c in merged[:m]) >= k:
                        tot = sum(c for _, c in by_spine[a]) + sum(c for _, c in by_spine[b])
                        pairs.append((tot, a, b))
            if pairs:
                _, a, b = min(pairs)
                candidates = sorted(by_spine[a] + by_spine[b], key=lambda lc: (-lc[1], lc[0]))
    out: list[tuple[int, int]] = []
    remaining = k
    for i, (leaf, c) in enumerate(candidates):
        if c >= remaining:
            # Tightest leaf that finishes the gang (ties: the least idle, the lower index).
            best = min((c2, idle(lf2), lf2) for lf2, c2 in candidates[i:] if c2 >= remaining)
            out.append((best[2], remaining))
            return out
        out.append((leaf, c))
        remaining -= c
    return None


def _homogeneous(
    view: CapacityView, shape: Shape, k: int, scope_level: int | None
) -> tuple[list[tuple[int, int]] | None, Outcome]:
    """Place k pods of one shape; returns [(leaf, pods)] and the explanatory numbers."""
    topo = view.topo
    g = shape.gpu
    indexed = view.shape_caps(shape)
    caps: list[tuple[int, int]] = []
    if indexed is not None:
        caps = indexed
    else:
        for leaf in shape.feasible.leaves:
            if g and view.leaf_upper_gpu(leaf) < g:
                continue
            c, _ = view.leaf_counts(shape, leaf)
            if c > 0:
                caps.append((leaf, c))
    fit = sum(c for _, c in caps)
    info = Outcome(None, fit_pods=fit)
    if fit < k:
        return None, info
    packs = view.packs()
    keeps = view.keeps_whole()
    if scope_level is None:
        scope = _leaves_avoiding(view, shape, caps, k, view.node_mixes)[0] if packs else caps
        if keeps:
            scope = _leaves_avoiding(view, shape, scope, k, view.node_whole)[0]
        return _choose_leaves(view, scope, k), info
    of_leaf = topo.level_domain_of_leaf[scope_level]
    groups: dict[int, list[tuple[int, int]]] = {}
    for leaf, c in caps:
        groups.setdefault(of_leaf[leaf], []).append((leaf, c))
    best: tuple[tuple[int, int, int, int, int, int], list[tuple[int, int]]] | None = None
    best_fail: tuple[int, int] | None = None
    for d, members in groups.items():
        tot = sum(c for _, c in members)
        if tot < k:
            if best_fail is None or (tot, -d) > (best_fail[0], -best_fail[1]):
                best_fail = (tot, d)
            continue
        mixes = 0
        breaks = 0
        scope = members
        if packs:
            scope, clean = _leaves_avoiding(view, shape, members, k, view.node_mixes)
            mixes = 0 if clean else 1
        if keeps:
            scope, kept = _leaves_avoiding(view, shape, scope, k, view.node_whole)
            breaks = 0 if kept else 1
        chosen = _choose_leaves(view, scope, k)
        if chosen is None:
            continue
        spines = len({topo.spine_of[leaf] for leaf, _ in chosen})
        key = (len(chosen), spines, mixes, breaks, tot, d)
        if best is None or key < best[0]:
            best = (key, chosen)
    if best is not None:
        return best[1], info
    if best_fail is not None:
        d = best_fail[1]
        info.best_domain = topo.level_domain_names[scope_level][d]
        info.best_domain_gpus = sum(
            view.leaf_upper_gpu(leaf) for leaf, _ in caps if of_leaf[leaf] == d
        )
    return None, info


def _leaves_avoiding(
    view: CapacityView,
    shape: Shape,
    caps: list[tuple[int, int]],
    k: int,
    avoid: Callable[[int], int],
) -> tuple[list[tuple[int, int]], bool]:
    """The leaves of `caps` that hold the k pods alone on nodes `avoid` answers 0 for, and True;
    `caps` and False when no leaf does. `Policy.pack_borrowed` avoids the nodes the gang would
    mix work on (`node_mixes`), `Policy.keep_whole_nodes` the whole free ones (`node_whole`)."""
    kept: list[tuple[int, int]] = []
    for leaf, c in caps:
        if c < k:
            continue
        _, counts = view.leaf_counts(shape, leaf)
        if sum(cn for n, cn in counts if not avoid(n)) >= k:
            kept.append((leaf, c))
    return (kept, True) if kept else (caps, False)


def place(
    view: CapacityView,
    shapes: list[Shape],
    required_level: int | None,
    preferred_level: int | None,
) -> Outcome:
    """Place every pod of `shapes` together, or explain why not."""
    if len(shapes) == 1:
        shape = shapes[0]
        k = len(shape.pods)
        levels: list[int | None] = [required_level]
        if required_level is None and preferred_level is not None:
            levels = [preferred_level, None]
        info = Outcome(None)
        for level in levels:
            chosen, info = _homogeneous(view, shape, k, level)
            if chosen is not None:
                return _materialise(view, shape, chosen)
        return info
    return _heterogeneous(view, shapes, required_level, preferred_level)


def _materialise(view: CapacityView, shape: Shape, chosen: list[tuple[int, int]]) -> Outcome:
    assignment: list[tuple[str, int]] = []
    pods = iter(shape.pods)
    for leaf, count in chosen:
        _, counts = view.leaf_counts(shape, leaf)
        for n, c in _spread(view, counts, count):
            assignment.extend((next(pods), n) for _ in range(c))
    return Outcome(assignment, leaves=[leaf for leaf, _ in chosen], fit_pods=len(assignment))


def _fill(
    view: CapacityView, shapes: list[Shape], leaves: list[int]
) -> list[tuple[str, int]] | None:
    """First-fit-decreasing of mixed pods into the nodes of `leaves`, preferring used nodes."""
    leafset = set(leaves)
    caps: dict[int, list[int]] = {}
    used: set[int] = set()
    out: list[tuple[str, int]] = []
    for shape in sorted(shapes, key=lambda s: (-s.gpu, [-v for v in s.vec], s.pods[0])):
        nodes = [
            n for leaf in leaves if leaf in leafset for n in shape.feasible.leaf_nodes.get(leaf, [])
        ]
        for pod in shape.pods:
            best: tuple[int, int, int] | None = None
            for n in nodes:
                cap = caps.get(n)
                if cap is None:
                    cap = caps[n] = view.node_capacity(n)
                if count_fit(cap, shape.req) <= 0:
                    continue
                key = (0 if n in used else 1, cap[0], n)
                if best is None or key < best:
                    best = key
            if best is None:
                return None
            n = best[2]
            cap = caps[n]
            for i, a in shape.req:
                cap[i] -= a
            used.add(n)
            out.append((pod, n))
    return out


def _heterogeneous(
    view: CapacityView,
    shapes: list[Shape],
    required_level: int | None,
    preferred_level: int | None,
) -> Outcome:
    """Mixed members (e.g. a launcher and workers): fewest leaves by trial fills."""
    topo = view.topo
    need = sum(s.gpu * len(s.pods) for s in shapes)
    leaves = sorted({leaf for s in shapes for leaf in s.feasible.leaves})
    gpu_of: Callable[[int], int] = view.leaf_upper_gpu

    def within(scope: list[int]) -> list[tuple[str, int]] | None:
        for leaf in sorted(scope, key=lambda lf: (gpu_of(lf), lf)):
            if gpu_of(leaf) >= need:
                got = _fill(view, shapes, [leaf])
                if got is not None:
                    return got
        ordered = sorted(scope, key=lambda lf: (-gpu_of(lf), topo.spine_of[lf], lf))
        acc = 0
        for m in range(1, len(ordered) + 1):
            acc += gpu_of(ordered[m - 1])
            if acc >= need and m > 1:
                got = _fill(view, shapes, ordered[:m])
                if got is not None:
                    return got
        return None

    def by_level(level: int) -> list[tuple[str, int]] | None:
        of_leaf = topo.level_domain_of_leaf[level]
        groups: dict[int, list[int]] = {}
        for leaf in leaves:
            groups.setdefault(of_leaf[leaf], []).append(leaf)
        for _, scope in sorted(groups.items(), key=lambda kv: (sum(map(gpu_of, kv[1])), kv[0])):
            if sum(map(gpu_of, scope)) >= need:
                got = within(scope)
                if got is not None:
                    return got
        return None

    got: list[tuple[str, int]] | None
    if required_level is not None:
        got = by_level(required_level)
    else:
        got = by_level(preferred_level) if preferred_level is not None else None
        if got is None:
            got = within(leaves)
    if got is None:
        return Outcome(None)
    used_leaves = sorted({topo.leaf_of[n] for _, n in got})
    return Outcome(got, leaves=used_leaves, fit_pods=len(got))
