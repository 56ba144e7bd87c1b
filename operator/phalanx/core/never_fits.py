"""Why a gang's pods can never be placed as the cluster is built, whatever ends or is evicted.

"needs 32 GPUs; 4 free" for pods of 16 GPUs on nodes of 8, or "needs 2 GPUs; 0 free" for pods
whose node selector matches no node, reads as a wait that capacity will end; it will not. Walked
on the dev cluster: both sat `InsufficientCapacity` with those messages. The explanation says what
no node offers instead, so a user fixes the pod spec (or an admin adds the nodes).

Per shape (identical members), against the nodes that accept it (`Shape.feasible`: selector,
affinity, taints, cordons) and their *allocatable* resources (not what is free): the answer
changes only with the nodes, so it is cached per prepared cycle (`Prepared.never_fits`).
"""

from __future__ import annotations

from phalanx.core.placement import Shape
from phalanx.core.prepare import Prepared, node_vectors
from phalanx.core.resources import count_fit

NO_NODE_ACCEPTS = "no node accepts its pods"
NO_NODE_HOLDS = "no node can ever hold one of its pods"
"""How the two messages begin (after "needs N GPUs; "): `phalanx explain` reads them."""


def never_fits(prep: Prepared, shapes: list[Shape], level: str | None) -> str:
    """What makes one of `shapes` impossible to place on any node ("" when each fits some
    node when empty). `level`: the gang's required topology level (its nodes must carry it)."""
    for shape in shapes:
        why = prep.never_fits.get(shape.id)
        if why is None:
            why = prep.never_fits[shape.id] = _why(prep, shape, level)
        if why:
            return why
    return ""


def _why(prep: Prepared, shape: Shape, level: str | None) -> str:
    nodes = prep.nodes
    if shape.feasible.node_count == 0:
        unlabelled = f", or ones without a {level} label" if level is not None else ""
        return (
            f"{NO_NODE_ACCEPTS}: their node selector, affinity and tolerations match "
            f"none of the {len(nodes)} nodes (or only cordoned ones{unlabelled})"
        )
    most: dict[int, int] = {}
    for members in shape.feasible.leaf_nodes.values():
        for n in members:
            alloc = node_vectors(nodes[n], prep.index)[0]
            if count_fit(alloc, shape.req) > 0:
                return ""
            for i, _ in shape.req:
                most[i] = max(most.get(i, 0), alloc[i])
    names = prep.index.names
    short = [f"{names[i]}={a} (at most {most[i]})" for i, a in shape.req if most[i] < a]
    asks = ", ".join(f"{names[i]}={a}" for i, a in shape.req if names[i] != "pods")
    if short:
        return (
            f"{NO_NODE_HOLDS}: each asks {', '.join(short)} of the "
            f"{shape.feasible.node_count} nodes that accept it, counted by allocatable"
        )
    return (
        f"{NO_NODE_HOLDS}: of the {shape.feasible.node_count} nodes that "
        f"accept it, none has all of {asks} allocatable at once"
    )
