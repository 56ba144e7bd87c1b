"""Why a gang can never be placed as the cluster is built, whatever ends or is evicted.

"needs 32 GPUs; 4 free" for pods of 16 GPUs on nodes of 8, "needs 2 GPUs; 0 free" for pods
whose node selector matches no node, or "needs 40 GPUs; 6 free" for 5 pods of 8 GPUs under one
leaf of 4 nodes, reads as a wait that capacity will end; it will not. Walked on the dev cluster:
all three sat `InsufficientCapacity` with those messages. The explanation says what no node (or
no topology domain) offers instead, so a user fixes the spec (or an admin adds the nodes).

Per shape (identical members), against the nodes that accept it (`Shape.feasible`: selector,
affinity, taints, cordons, the required level's label) and their *allocatable* resources (not
what is free): how many of its pods each node could hold empty. That changes only with the
nodes, so it is cached per prepared cycle (`Prepared.never_fits`); each gang then compares its
own pod count.

A gang of several shapes (a launcher and its workers; a JobSet's driver and trainers) is judged
shape by shape first, then together (`_together`): shapes that each fit a leaf can overflow it
together. Walked on the dev cluster (leaves of 4 nodes of 8 GPUs): 3 pods of 8 GPUs and 2 of
8 GPUs and 64 CPUs under one leaf read "needs 40 GPUs under one leaf; the best leaf (leaf-03)
has 64 free" (each shape's 32 counted once per shape). Exactly whether mixed pods fit is the
packing problem itself, and a heuristic that fails is no proof, so "never" is claimed only from
two bounds that hold for any packing: the pods a node can hold (no more than the fewest of any
resource its pods ask allows, and no more than each shape could have alone), and the total of
each resource its pods ask against what the nodes that accept them have. A gang that passes
both but still cannot be packed waits as before.
"""

from __future__ import annotations

from dataclasses import dataclass

from phalanx.core.placement import Shape
from phalanx.core.prepare import Prepared
from phalanx.core.resources import count_fit

NO_NODE_ACCEPTS = "no node accepts its pods"
NO_NODE_HOLDS = "no node can ever hold one of its pods"
NEVER_ALL = "can ever hold all its pods"
EVEN_EMPTY = "even empty (counted by allocatable)"
MORE_THAN_THE_CLUSTER = "more than the cluster has"
"""A gang asking more GPUs than every schedulable node has (`cycle`, before placement)."""
NEVER_PHRASES = (NO_NODE_ACCEPTS, NO_NODE_HOLDS, EVEN_EMPTY, MORE_THAN_THE_CLUSTER)
"""Phrases of the messages below (after "needs N GPUs; "): `phalanx explain` reads them."""


@dataclass(frozen=True, slots=True)
class EmptyFit:
    """What the nodes accepting one shape could hold of it, were they empty."""

    why: str
    """Why no pod of the shape fits any node ("" when one does)."""
    total: int
    """Pods of the shape all those nodes together could hold."""
    best: tuple[int, int] | None
    """The domain (index) of the shape's required level that could hold the most of it, with how
    many (None without a required level)."""


def never_fits(prep: Prepared, shapes: list[Shape], level: int | None) -> tuple[str, int | None]:
    """What makes the gang of `shapes` impossible to place ("" when nothing found), and when the
    topology (its required `level`) is what does, the domain of that level the message names
    (the one that came closest), else None."""
    topo = prep.topo
    name = topo.levels[level].name if level is not None else None
    for shape in shapes:
        fit = prep.never_fits.get(shape.id)
        if fit is None:
            fit = prep.never_fits[shape.id] = _empty_fit(prep, shape, level, name)
        if fit.why:
            return fit.why, None
        k = len(shape.pods)
        if fit.total < k:
            return (
                f"the {shape.feasible.node_count} nodes that accept its pods could hold "
                f"{fit.total} of its {k} {EVEN_EMPTY}",
                None,
            )
        if fit.best is not None and level is not None:
            d, most = fit.best
            if most < k:
                return (
                    f"no {name} {NEVER_ALL}: the one that could hold the most "
                    f"({topo.level_domain_names[level][d]}) holds {most} of its {k} {EVEN_EMPTY}",
                    d,
                )
    if len(shapes) > 1:
        key = (level, tuple((s.id, len(s.pods)) for s in shapes))
        hit = prep.never_fits_together.get(key)
        if hit is None:
            hit = prep.never_fits_together[key] = _together(prep, shapes, level, name)
        return hit
    return "", None


@dataclass(frozen=True, slots=True)
class _Bound:
    """What one domain (or the whole cluster) could hold of a gang of several shapes, empty."""

    pods: int
    """At most this many of its pods (`_pods_on`, summed over the domain's nodes)."""
    short: tuple[str, int, int] | None
    """A resource its pods ask more of in all than the nodes accepting them have:
    (name, asked, allocatable), or None."""


def _together(
    prep: Prepared, shapes: list[Shape], level: int | None, name: str | None
) -> tuple[str, int | None]:
    """Whether the shapes can never fit together: in the whole cluster, then (with a required
    `level`) in any one domain of it; the message names the domain that came closest."""
    accepted: dict[int, list[Shape]] = {}
    for shape in shapes:
        for members in shape.feasible.leaf_nodes.values():
            for n in members:
                accepted.setdefault(n, []).append(shape)
    per_node = {n: _pods_on(prep.allocatable[n], on) for n, on in accepted.items()}
    # Per node, the resources some shape accepting it asks (only those count towards a total).
    wanted = {n: {i for s in on for i, a in s.req if a > 0} for n, on in accepted.items()}
    asked: dict[int, int] = {}
    for s in shapes:
        for i, a in s.req:
            asked[i] = asked.get(i, 0) + a * len(s.pods)
    total = sum(len(s.pods) for s in shapes)

    def bound(nodes: list[int]) -> _Bound:
        return _bound(prep, asked, wanted, per_node, nodes)

    everywhere = bound(list(accepted))
    if everywhere.pods < total:
        return (
            f"the {len(accepted)} nodes that accept its pods could hold at most "
            f"{everywhere.pods} of its {total} {EVEN_EMPTY}",
            None,
        )
    if everywhere.short is not None:
        what, amount, has = everywhere.short
        return (
            f"its pods ask {what}={amount} in all and the {len(accepted)} nodes that accept them "
            f"have {has} {EVEN_EMPTY}",
            None,
        )
    if level is None:
        return "", None
    topo = prep.topo
    of_leaf = topo.level_domain_of_leaf[level]
    domains: dict[int, list[int]] = {}
    for n in accepted:
        domains.setdefault(of_leaf[topo.leaf_of[n]], []).append(n)
    bounds = {d: bound(ns) for d, ns in domains.items()}
    if any(b.pods >= total and b.short is None for b in bounds.values()):
        return "", None
    # The closest: the fewest pods short, then the least short of a resource.
    d = min(
        bounds,
        key=lambda d: (
            max(0, total - bounds[d].pods),
            _shortfall(bounds[d]),
            topo.level_domain_names[level][d],
        ),
    )
    b, domain = bounds[d], topo.level_domain_names[level][d]
    if b.pods < total:
        return (
            f"no {name} {NEVER_ALL}: the one that could hold the most ({domain}) holds at most "
            f"{b.pods} of its {total} {EVEN_EMPTY}",
            d,
        )
    assert b.short is not None
    what, amount, has = b.short
    return (
        f"no {name} {NEVER_ALL}: its pods ask {what}={amount} in all and the closest {name} "
        f"({domain}) has {has} on the nodes that accept them {EVEN_EMPTY}",
        d,
    )


def _shortfall(b: _Bound) -> float:
    if b.short is None:
        return 0.0
    _, asked, has = b.short
    return (asked - has) / asked


def _pods_on(alloc: list[int], shapes: list[Shape]) -> int:
    """At most how many pods of `shapes` (those that accept the node) the empty node holds:
    no more than each shape alone, summed, and no more than any resource allows at the
    smallest request for it among the shapes (a resource some shape does not ask bounds
    nothing)."""
    most = sum(min(count_fit(alloc, s.req), len(s.pods)) for s in shapes)
    least: dict[int, int] = {}
    for i, _ in shapes[0].req:
        amounts = [dict(s.req).get(i, 0) for s in shapes]
        if min(amounts) > 0:
            least[i] = min(amounts)
    for i, a in least.items():
        most = min(most, alloc[i] // a)
    return most


def _bound(
    prep: Prepared,
    asked: dict[int, int],
    wanted: dict[int, set[int]],
    per_node: dict[int, int],
    nodes: list[int],
) -> _Bound:
    """What `nodes` hold at most: pods (`per_node` summed), and the first resource (by name) the
    gang asks more of in all (`asked`) than those nodes have of it where a shape asking it
    accepts them (`wanted`)."""
    has: dict[int, int] = dict.fromkeys(asked, 0)
    for n in nodes:
        alloc = prep.allocatable[n]
        for i in wanted[n]:
            has[i] += alloc[i]
    short = None
    names = prep.index.names
    for i in sorted(asked, key=lambda i: names[i]):
        if asked[i] > has[i] and names[i] != "pods":
            short = (names[i], asked[i], has[i])
            break
    return _Bound(sum(per_node[n] for n in nodes), short)


def _empty_fit(prep: Prepared, shape: Shape, level: int | None, name: str | None) -> EmptyFit:
    nodes, topo = prep.nodes, prep.topo
    if shape.feasible.node_count == 0:
        unlabelled = f", or ones without a {name} label" if name is not None else ""
        return EmptyFit(
            f"{NO_NODE_ACCEPTS}: their node selector, affinity and tolerations match none of "
            f"the {len(nodes)} nodes (or only cordoned ones{unlabelled})",
            0,
            None,
        )
    most: dict[int, int] = {}
    total = 0
    by_domain: dict[int, int] = {}
    of_leaf = topo.level_domain_of_leaf[level] if level is not None else None
    for leaf, members in shape.feasible.leaf_nodes.items():
        for n in members:
            alloc = prep.allocatable[n]
            count = count_fit(alloc, shape.req)
            total += count
            if of_leaf is not None:
                d = of_leaf[leaf]
                by_domain[d] = by_domain.get(d, 0) + count
            for i, _ in shape.req:
                most[i] = max(most.get(i, 0), alloc[i])
    best = None
    if level is not None and by_domain:
        d = min(by_domain, key=lambda d: (-by_domain[d], d))
        best = (d, by_domain[d])
    if total:
        return EmptyFit("", total, best)
    names = prep.index.names
    short = [f"{names[i]}={a} (at most {most[i]})" for i, a in shape.req if most[i] < a]
    asks = ", ".join(f"{names[i]}={a}" for i, a in shape.req if names[i] != "pods")
    if short:
        why = (
            f"{NO_NODE_HOLDS}: each asks {', '.join(short)} of the "
            f"{shape.feasible.node_count} nodes that accept it, counted by allocatable"
        )
    else:
        why = (
            f"{NO_NODE_HOLDS}: of the {shape.feasible.node_count} nodes that accept it, none "
            f"has all of {asks} allocatable at once"
        )
    return EmptyFit(why, 0, best)
