"""Per-shape leaf capacities now, kept up to date from a log of changed leaves.

Placing a gang now starts with "how many pods of this shape fit in each leaf" for every feasible
leaf. Each answer is cached per leaf, but reading 128 cached answers (and checking each leaf's
stamp and hold class) for every one of thousands of gangs was most of a start-now placement — while
between two gangs of a shape only the few leaves the gangs in between were bound to have changed.

`ShapeCaps` keeps, for one shape and one window end, the leaves with room (leaf → pods) and the
position in `ClusterState.leaf_log` (every change to a node appends its leaf) up to which it is
current. Bringing it up to date re-reads only the leaves logged since (all of them when more
changed than there are leaves). A leaf's answer depends only on the leaf's nodes and, through the
hold class, on the window end — both fixed per index or logged — so the index is exactly the list
`_homogeneous` would build by visiting every leaf.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from phalanx.core.placement import Shape
    from phalanx.core.views import NowView


class ShapeCaps:
    """Leaves with room for `shape` now (leaf → pods), current up to `pos` in the leaf log."""

    __slots__ = ("caps", "pos")

    def __init__(self) -> None:
        self.caps: dict[int, int] = {}
        self.pos = -1

    def current(self, view: NowView, shape: Shape) -> list[tuple[int, int]]:
        """(leaf, pods > 0) in leaf order, as `_homogeneous` collects them."""
        st = view.state
        log = st.leaf_log
        leaves = shape.feasible.leaves
        if self.pos < 0 or len(log) - self.pos > len(leaves):
            self.caps.clear()
            todo: list[int] | set[int] = leaves
        else:
            todo = {lf for lf in log[self.pos :] if lf in shape.feasible.leaf_nodes}
        self.pos = len(log)
        caps, g, leaf_gpu = self.caps, shape.gpu, st.leaf_gpu
        for leaf in todo:
            c = 0
            if not g or leaf_gpu[leaf] >= g:
                c, _ = view.leaf_counts(shape, leaf)
            if c > 0:
                caps[leaf] = c
            else:
                caps.pop(leaf, None)
        return sorted(caps.items())


#: (shape id, window end) → its index.
ShapeCapsCache = dict[tuple[int, float], ShapeCaps]
