"""Shape files: a fake GPU cluster described as spines × leaves × nodes × GPUs.

A shape is a list of node groups so that one file can describe a heterogeneous inventory (H100
nodes under some spines, 4-GPU inference nodes under another). Spines and leaves are numbered
across the whole shape, so two groups never share a leaf by accident. The node objects built here
carry exactly what a real GPU node would show the scheduler: the topology labels of PRODUCT.md §4
(NVIDIA topograph keys), `nvidia.com/gpu.count`, `nvidia.com/gpu.product`, and allocatable
`nvidia.com/gpu` with CPU, memory, ephemeral storage and pods. Ephemeral storage matters: a
kubelet reports it and pods ask for it (the Training Operator's MPIJob launcher has an init
container asking 5Gi); a fake node without it could never hold such a pod, as kube-scheduler
would also judge.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from phalanx.devcluster.errors import DevClusterError

SPINE_LABEL = "network.topology.nvidia.com/spine"
LEAF_LABEL = "network.topology.nvidia.com/block"
GPU_RESOURCE = "nvidia.com/gpu"
GPU_COUNT_LABEL = "nvidia.com/gpu.count"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
SHAPE_LABEL = "phalanx.dev/dev-cluster-shape"
"""Marks nodes made from a shape, so `down`/re-creation never touches other nodes."""


class Taint(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    key: str = Field(min_length=1)
    value: str = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class NodeGroup(BaseModel):
    """Identical nodes laid out as spines × leaves per spine × nodes per leaf."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    name: str = Field(pattern=r"^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?$")
    spines: int = Field(ge=1, le=64)
    leaves_per_spine: int = Field(alias="leavesPerSpine", ge=1, le=256)
    nodes_per_leaf: int = Field(alias="nodesPerLeaf", ge=1, le=1024)
    gpus: int = Field(ge=0, le=64)
    gpu_product: str = Field(alias="gpuProduct", default="NVIDIA-H100-80GB-HBM3")
    cpu: str = "96"
    memory: str = "1536Gi"
    ephemeral_storage: str = Field(alias="ephemeralStorage", default="1800Gi")
    """The kubelet's root filesystem (a GPU node's OS disk, about 2 TB)."""
    pods: int = Field(ge=1, default=110)
    labels: dict[str, str] = Field(default_factory=dict)
    taints: list[Taint] = Field(default_factory=list)

    @field_validator("cpu", "memory", "ephemeral_storage")
    @classmethod
    def _quantity(cls, value: str) -> str:
        if not re.fullmatch(r"[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|Ki|Mi|Gi|Ti|Pi)?", value):
            raise ValueError(f"{value!r} is not a Kubernetes quantity (e.g. 96, 500m, 1536Gi)")
        return value

    @property
    def node_count(self) -> int:
        return self.spines * self.leaves_per_spine * self.nodes_per_leaf


class Shape(BaseModel):
    """A whole fake cluster."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    name: str = Field(min_length=1)
    node_groups: list[NodeGroup] = Field(alias="nodeGroups", min_length=1)

    @field_validator("node_groups")
    @classmethod
    def _unique_groups(cls, groups: list[NodeGroup]) -> list[NodeGroup]:
        names = [g.name for g in groups]
        if len(set(names)) != len(names):
            raise ValueError(f"node group names must be unique, got {names}")
        return groups

    @property
    def node_count(self) -> int:
        return sum(g.node_count for g in self.node_groups)

    @property
    def gpu_count(self) -> int:
        return sum(g.node_count * g.gpus for g in self.node_groups)

    def nodes(self) -> list[dict[str, Any]]:
        """Node objects (API bodies) for every node of the shape, in a stable order."""
        out: list[dict[str, Any]] = []
        spine_base = 0
        leaf_base = 0
        for group in self.node_groups:
            for s in range(group.spines):
                spine = f"spine-{spine_base + s:02d}"
                for lp in range(group.leaves_per_spine):
                    leaf_index = leaf_base + s * group.leaves_per_spine + lp
                    leaf = f"leaf-{leaf_index:02d}"
                    for n in range(group.nodes_per_leaf):
                        out.append(_node_body(group, self.name, spine, leaf, f"{leaf}-n{n:02d}"))
            spine_base += group.spines
            leaf_base += group.spines * group.leaves_per_spine
        return out


def _node_body(group: NodeGroup, shape: str, spine: str, leaf: str, suffix: str) -> dict[str, Any]:
    resources = {
        "cpu": group.cpu,
        "memory": group.memory,
        "ephemeral-storage": group.ephemeral_storage,
        "pods": str(group.pods),
        GPU_RESOURCE: str(group.gpus),
    }
    labels = {
        **group.labels,
        "kubernetes.io/hostname": f"{group.name}-{suffix}",
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "type": "kwok",
        SPINE_LABEL: spine,
        LEAF_LABEL: leaf,
        GPU_COUNT_LABEL: str(group.gpus),
        GPU_PRODUCT_LABEL: group.gpu_product,
        SHAPE_LABEL: shape,
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": f"{group.name}-{suffix}",
            "labels": labels,
            "annotations": {"kwok.x-k8s.io/node": "fake"},
        },
        "spec": {"taints": [t.model_dump() for t in group.taints]} if group.taints else {},
        "status": {"capacity": resources, "allocatable": resources},
    }


def shapes_dir() -> Path:
    """`deploy/clusters` of the source tree, or `PHALANX_SHAPES_DIR`."""
    override = os.environ.get("PHALANX_SHAPES_DIR")
    if override:
        return Path(override)
    return Path(__file__).resolve().parents[3] / "deploy" / "clusters"


def known_shapes() -> list[str]:
    return sorted(p.stem for p in shapes_dir().glob("*.yaml"))


def load_shape(name_or_path: str) -> Shape:
    """Load a shape by name (`small`) or by path; every problem is one line that says what to do."""
    path = Path(name_or_path)
    if not (path.suffix in {".yaml", ".yml"} and path.exists()):
        path = shapes_dir() / f"{name_or_path}.yaml"
        if not path.exists():
            raise DevClusterError(
                f"unknown shape {name_or_path!r}: use one of {', '.join(known_shapes())} "
                f"or a path to a shape file"
            )
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise DevClusterError(f"{path}: not valid YAML ({_one_line(str(exc))})") from exc
    if not isinstance(raw, dict):
        raise DevClusterError(f"{path}: a shape file is a mapping with `name` and `nodeGroups`")
    try:
        return Shape.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise DevClusterError(f"{path}: {where}: {first['msg']}{more}") from exc


def _one_line(text: str) -> str:
    return " ".join(text.split())
