"""Cluster shapes as the core sees them: Kubernetes Node bodies turned into `core.Node`s.

The simulator replays on the same shape files as the local cluster (`deploy/clusters`), so a
replay and `make demo` describe the same machines. The core wants integer quantities (cpu in
millicores, memory in bytes), the shape gives Kubernetes quantities (`96`, `1536Gi`); the
conversion reuses the queue file's quantity parser.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from phalanx.core import CPU, DEFAULT_TOPOLOGY_LEVELS, GPU, Node
from phalanx.sim.queues import parse_quantity

LEAF_LABEL = DEFAULT_TOPOLOGY_LEVELS[-1].label
"""The finest default topology level (a leaf switch): what `leaves spanned` counts."""


def core_quantity(resource: str, value: object) -> int:
    """A Kubernetes quantity as the core's integer: millicores for cpu, base units otherwise."""
    number = parse_quantity(value)
    return round(number * 1000) if resource == CPU else round(number)


def core_node(body: Mapping[str, Any]) -> Node:
    """One Node API body (as `Shape.nodes()` builds them) as a core `Node`."""
    metadata = body.get("metadata") or {}
    status = body.get("status") or {}
    allocatable = status.get("allocatable") or {}
    return Node(
        name=str(metadata["name"]),
        allocatable={name: core_quantity(name, q) for name, q in sorted(allocatable.items())},
        labels=dict(metadata.get("labels") or {}),
    )


@dataclass(frozen=True, slots=True)
class Cluster:
    """The simulated nodes, with the leaf figures the metrics need.

    `min_leaves(pods)` is ceil(pods / nodes per leaf), the fewest leaves a gang of whole-node
    pods can span. It is exact only when every leaf has the same number of nodes (all the
    shipped shapes are uniform); on a non-uniform shape it uses the largest leaf, so it stays a
    lower bound.
    """

    nodes: tuple[Node, ...]
    leaf_of: Mapping[str, str]
    nodes_per_leaf: int

    @property
    def total_gpus(self) -> int:
        """GPUs of all nodes."""
        return sum(n.allocatable.get(GPU, 0) for n in self.nodes)

    def min_leaves(self, pods: int) -> int:
        """Lower bound on the leaves a gang of `pods` pods spans (see the class docstring)."""
        return max(1, math.ceil(pods / self.nodes_per_leaf)) if pods > 0 else 0

    def leaves_spanned(self, nodes: Sequence[str]) -> int:
        """Distinct leaves under the given nodes."""
        return len({self.leaf_of[n] for n in nodes})


def cluster_from_nodes(nodes: Sequence[Node]) -> Cluster:
    """A `Cluster` over core nodes; a node without a leaf label is its own leaf."""
    leaf_of = {n.name: n.labels.get(LEAF_LABEL, f"node:{n.name}") for n in nodes}
    per_leaf: dict[str, int] = {}
    for leaf in leaf_of.values():
        per_leaf[leaf] = per_leaf.get(leaf, 0) + 1
    return Cluster(tuple(nodes), leaf_of, max(per_leaf.values(), default=1))


def load_cluster(shape: str) -> Cluster:
    """The cluster of a shape name (`small`, `medium`, ...) or shape file path."""
    from phalanx.devcluster.shapes import load_shape

    return cluster_from_nodes([core_node(body) for body in load_shape(shape).nodes()])
