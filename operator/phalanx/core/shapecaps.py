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
    from collections.abc import Iterable, Sequence

    from phalanx.core.capacity_views import NowView
    from phalanx.core.placement import CapacityView, Shape


class LeafCaps:
    """Leaves with room for one shape (leaf → pods), and the sorted list callers read.

    The two indexes built on it (`ShapeCaps` now, `views.SweepCaps` within a reservation sweep)
    differ only in how they find the leaves that may have changed; re-reading those is shared.
    """

    __slots__ = ("caps", "listed")

    def __init__(self) -> None:
        self.caps: dict[int, int] = {}
        #: `caps` as the sorted list `current` returns, or None after a change.
        self.listed: list[tuple[int, int]] | None = None

    def recount(
        self, todo: Iterable[int], shape: Shape, view: CapacityView, leaf_gpu: Sequence[int]
    ) -> list[tuple[int, int]]:
        """Re-read the leaves in `todo`; (leaf, pods > 0) in leaf order, shared until a change
        (callers must not modify it). A leaf with fewer GPUs than one pod needs is not read."""
        caps, g = self.caps, shape.gpu
        for leaf in todo:
            c = 0
            if not g or leaf_gpu[leaf] >= g:
                c, _ = view.leaf_counts(shape, leaf)
            if c > 0:
                if caps.get(leaf) != c:
                    caps[leaf] = c
                    self.listed = None
            elif caps.pop(leaf, None) is not None:
                self.listed = None
        listed = self.listed
        if listed is None:
            listed = self.listed = sorted(caps.items())
        return listed


class ShapeCaps(LeafCaps):
    """Leaves with room for `shape` now (leaf → pods), current up to `pos` in the leaf log."""

    __slots__ = ("pos",)

    def __init__(self) -> None:
        super().__init__()
        self.pos = -1

    def current(self, view: NowView, shape: Shape) -> list[tuple[int, int]]:
        """(leaf, pods > 0) in leaf order, as `_homogeneous` collects them. The list is shared
        between calls until the index changes: callers must not modify it."""
        st = view.state
        log = st.leaf_log
        leaves = shape.feasible.leaves
        pos = self.pos
        todo: list[int] | set[int]
        if pos < 0:
            todo = leaves
        elif len(log) == pos:
            todo = []
        elif len(log) - pos <= len(leaves):
            todo = {lf for lf in log[pos:] if lf in shape.feasible.leaf_nodes}
        else:
            # Many changes since: scan the leaves' last-change marks instead of the log.
            touched = st.leaf_touched
            todo = [lf for lf in leaves if touched[lf] > pos]
        self.pos = len(log)
        return self.recount(todo, shape, view, st.leaf_gpu)


#: (shape id, window end) → its index.
ShapeCapsCache = dict[tuple[int, float], ShapeCaps]
