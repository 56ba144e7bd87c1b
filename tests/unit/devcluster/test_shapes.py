"""Shape files: the shipped shapes have the sizes PRODUCT.md §7 promises, and bad files are
refused with one line that names the problem."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from phalanx.devcluster.errors import DevClusterError
from phalanx.devcluster.shapes import (
    GPU_COUNT_LABEL,
    GPU_RESOURCE,
    LEAF_LABEL,
    SPINE_LABEL,
    load_shape,
)


@pytest.mark.parametrize(
    ("name", "nodes", "gpus", "spines", "leaves"),
    [
        ("small", 16, 128, 2, 4),
        ("medium", 64, 512, 2, 8),
        ("large", 1024, 8192, 4, 32),
        ("xlarge", 4096, 32768, 8, 128),
    ],
)
def test_shipped_shapes_have_the_promised_sizes(
    name: str, nodes: int, gpus: int, spines: int, leaves: int
) -> None:
    shape = load_shape(name)
    bodies = shape.nodes()
    assert (shape.node_count, shape.gpu_count, len(bodies)) == (nodes, gpus, nodes)
    labels = [b["metadata"]["labels"] for b in bodies]
    assert len({lab[SPINE_LABEL] for lab in labels}) == spines
    assert len({lab[LEAF_LABEL] for lab in labels}) == leaves
    assert len({b["metadata"]["name"] for b in bodies}) == nodes
    assert sum(int(b["status"]["allocatable"][GPU_RESOURCE]) for b in bodies) == gpus
    # What a kubelet reports besides GPUs: an MPIJob launcher's init container asks 5Gi of
    # ephemeral storage, which a node without it could never hold.
    assert {b["status"]["allocatable"]["ephemeral-storage"] for b in bodies} == {"1800Gi"}


def test_every_leaf_sits_under_exactly_one_spine() -> None:
    bodies = load_shape("medium").nodes()
    spines_of_leaf: dict[str, set[str]] = {}
    for b in bodies:
        lab = b["metadata"]["labels"]
        spines_of_leaf.setdefault(lab[LEAF_LABEL], set()).add(lab[SPINE_LABEL])
    assert all(len(s) == 1 for s in spines_of_leaf.values())
    assert Counter(b["metadata"]["labels"][LEAF_LABEL] for b in bodies) == {
        f"leaf-{i:02d}": 8 for i in range(8)
    }


def test_heterogeneous_groups_keep_their_own_kind_and_leaves() -> None:
    shape = load_shape("mixed")
    bodies = shape.nodes()
    by_count = Counter(b["metadata"]["labels"][GPU_COUNT_LABEL] for b in bodies)
    assert by_count == {"8": 8, "4": 4}
    a10 = [b for b in bodies if b["metadata"]["labels"][GPU_COUNT_LABEL] == "4"]
    assert all(b["spec"]["taints"][0]["effect"] == "NoSchedule" for b in a10)
    h100_leaves = {b["metadata"]["labels"][LEAF_LABEL] for b in bodies if b not in a10}
    assert h100_leaves.isdisjoint({b["metadata"]["labels"][LEAF_LABEL] for b in a10})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name: x\nnodeGroups: []\n", "nodeGroups"),
        (
            "name: x\nnodeGroups:\n- name: g\n  spines: 0\n  leavesPerSpine: 1\n"
            "  nodesPerLeaf: 1\n  gpus: 8\n",
            "spines",
        ),
        (
            "name: x\nnodeGroups:\n- name: g\n  spines: 1\n  leavesPerSpine: 1\n"
            "  nodesPerLeaf: 1\n  gpus: 8\n  memory: lots\n",
            "not a Kubernetes quantity",
        ),
        (
            "name: x\nnodeGroups:\n- name: g\n  spines: 1\n  leavesPerSpine: 1\n"
            "  nodesPerLeaf: 1\n  gpus: 8\n  ephemeralStorage: a-lot\n",
            "not a Kubernetes quantity",
        ),
        (
            "name: x\nnodeGroups:\n- name: g\n  spines: 1\n  leavesPerSpine: 1\n"
            "  nodesPerLeaf: 1\n  gpus: 8\n  colour: blue\n",
            "colour",
        ),
        ("name: [unclosed\n", "not valid YAML"),
        ("- just\n- a list\n", "a shape file is a mapping"),
    ],
)
def test_malformed_shape_files_get_one_line_errors(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(DevClusterError) as info:
        load_shape(str(path))
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_unknown_shape_name_lists_the_known_ones() -> None:
    with pytest.raises(DevClusterError, match=r"unknown shape 'huge': use one of .*small"):
        load_shape("huge")
