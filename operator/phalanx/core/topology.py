"""The domain tree built from node labels: leaves (the finest configured level), their parents
(called spines here: the level above the leaf), and the domains of every level for `required`.

Placement counts leaves first and spines second (PRODUCT.md §4), so the tree is stored as flat
index lists (leaf → nodes, leaf → spine, spine → leaves) that the hot path can walk without
dictionaries. Labels are the operator's view of the fabric and can be missing or odd:

* a node without the finest label becomes a leaf of its own, so it is never lumped with other
  unlabelled nodes as if they shared a switch;
* a node without a coarser label shares an unnamed parent with the other such nodes;
* a gang that *requires* a level never uses nodes lacking that level's label.
"""

from __future__ import annotations

from dataclasses import dataclass

from phalanx.core.model import Node, TopologyLevel

UNLABELLED = "(unlabelled)"


@dataclass(slots=True)
class Topology:
    """Index lists of the domain tree; node indices follow the order of `node_names` (sorted)."""

    levels: tuple[TopologyLevel, ...]
    level_pos: dict[str, int]
    node_names: list[str]
    leaf_of: list[int]
    leaf_nodes: list[list[int]]
    leaf_name: list[str]
    spine_of: list[int]
    spine_name: list[str]
    spine_leaves: list[list[int]]
    #: level → leaf → index of the leaf's domain at that level.
    level_domain_of_leaf: list[list[int]]
    #: level → domain index → display name.
    level_domain_names: list[list[str]]
    #: level → node → whether the node carries that level's label.
    node_labelled: list[list[bool]]
    #: level → whether any node carries the label.
    level_present: list[bool]

    @property
    def finest(self) -> int:
        """Position of the leaf level (-1 when no levels are configured: leaves are nodes)."""
        return len(self.levels) - 1


def build_topology(nodes: list[Node], levels: tuple[TopologyLevel, ...]) -> Topology:
    """Group `nodes` (already sorted by name) into the domain tree of `levels`."""
    depth = len(levels)
    paths: list[tuple[str, ...]] = []
    shown: list[tuple[str, ...]] = []
    labelled: list[list[bool]] = [[False] * len(nodes) for _ in levels]
    for n, node in enumerate(nodes):
        path: list[str] = []
        names: list[str] = []
        for j, level in enumerate(levels):
            value = node.labels.get(level.label)
            if value is None:
                # Unknown finest domain: a leaf of its own. Unknown coarser domain: shared.
                path.append("\x00" + node.name if j == depth - 1 else "\x00")
                names.append(node.name if j == depth - 1 else UNLABELLED)
            else:
                labelled[j][n] = True
                path.append(value)
                names.append(value)
        if depth == 0:
            path, names = [node.name], [node.name]
        paths.append(tuple(path))
        shown.append(tuple(names))

    leaf_keys = sorted(set(paths))
    leaf_index = {k: i for i, k in enumerate(leaf_keys)}
    leaf_of = [leaf_index[p] for p in paths]
    leaf_nodes: list[list[int]] = [[] for _ in leaf_keys]
    leaf_name = [""] * len(leaf_keys)
    leaf_shown: list[tuple[str, ...]] = [()] * len(leaf_keys)
    for n, leaf in enumerate(leaf_of):
        leaf_nodes[leaf].append(n)
        leaf_name[leaf] = shown[n][-1]
        leaf_shown[leaf] = shown[n]

    level_domain_of_leaf: list[list[int]] = []
    level_domain_names: list[list[str]] = []
    for j in range(depth):
        keys = sorted({k[: j + 1] for k in leaf_keys})
        index = {k: i for i, k in enumerate(keys)}
        of_leaf = [index[k[: j + 1]] for k in leaf_keys]
        names = [""] * len(keys)
        for leaf, d in enumerate(of_leaf):
            names[d] = leaf_shown[leaf][j]
        level_domain_of_leaf.append(of_leaf)
        level_domain_names.append(names)

    if depth >= 2:
        spine_of = level_domain_of_leaf[depth - 2]
        spine_name = level_domain_names[depth - 2]
    else:
        spine_of = [0] * len(leaf_keys)
        spine_name = ["(cluster)"]
    spine_leaves: list[list[int]] = [[] for _ in spine_name]
    for leaf, s in enumerate(spine_of):
        spine_leaves[s].append(leaf)

    return Topology(
        levels=levels,
        level_pos={lv.name: j for j, lv in enumerate(levels)},
        node_names=[n.name for n in nodes],
        leaf_of=leaf_of,
        leaf_nodes=leaf_nodes,
        leaf_name=leaf_name,
        spine_of=spine_of,
        spine_name=spine_name,
        spine_leaves=spine_leaves,
        level_domain_of_leaf=level_domain_of_leaf,
        level_domain_names=level_domain_names,
        node_labelled=labelled,
        level_present=[any(col) for col in labelled],
    )
