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
own pod count. A gang of several shapes is judged shape by shape (each must fit on its own),
which can miss a gang whose shapes only together overflow a domain; it then waits as before.
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
NEVER_PHRASES = (NO_NODE_ACCEPTS, NO_NODE_HOLDS, EVEN_EMPTY)
"""Phrases of the messages below (after "needs N GPUs; "): `phalanx explain` reads them."""


@dataclass(frozen=True, slots=True)
class EmptyFit:
    """What the nodes accepting one shape could hold of it, were they empty."""

    why: str
    """Why no pod of the shape fits any node ("" when one does)."""
    total: int
    """Pods of the shape all those nodes together could hold."""
    best: tuple[str, int] | None
    """The domain of the shape's required level that could hold the most of it, with how many
    (None without a required level)."""


def never_fits(prep: Prepared, shapes: list[Shape], level: int | None) -> tuple[str, bool]:
    """What makes the gang of `shapes` impossible to place ("" when nothing found), and whether
    the topology (its required `level`) is what does."""
    topo = prep.topo
    name = topo.levels[level].name if level is not None else None
    for shape in shapes:
        fit = prep.never_fits.get(shape.id)
        if fit is None:
            fit = prep.never_fits[shape.id] = _empty_fit(prep, shape, level, name)
        if fit.why:
            return fit.why, False
        k = len(shape.pods)
        if fit.total < k:
            return (
                f"the {shape.feasible.node_count} nodes that accept its pods could hold "
                f"{fit.total} of its {k} {EVEN_EMPTY}",
                False,
            )
        if fit.best is not None:
            domain, most = fit.best
            if most < k:
                return (
                    f"no {name} {NEVER_ALL}: the one that could hold the most ({domain}) "
                    f"holds {most} of its {k} {EVEN_EMPTY}",
                    True,
                )
    return "", False


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
        best = (topo.level_domain_names[level][d], by_domain[d])
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
