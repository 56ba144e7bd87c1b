"""The simulator's edges: shapes as core nodes, and plots without matplotlib."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from sim_builders import cluster, job

from phalanx.core import CPU, GPU, MEMORY
from phalanx.sim.engine import simulate
from phalanx.sim.nodes import load_cluster
from phalanx.sim.plots import PlotsUnavailable, write_plots
from phalanx.sim.policies import get_policy
from phalanx.sim.queues import single_queue


def test_medium_shape_as_core_nodes() -> None:
    """2 spines x 4 leaves x 8 nodes x 8 GPUs; quantities in core units."""
    medium = load_cluster("medium")
    assert len(medium.nodes) == 64 and medium.total_gpus == 512
    assert medium.nodes_per_leaf == 8
    node = medium.nodes[0]
    assert node.allocatable[GPU] == 8
    assert node.allocatable[CPU] == 96_000
    assert node.allocatable[MEMORY] == 1536 * 2**30
    assert (medium.min_leaves(1), medium.min_leaves(8), medium.min_leaves(9)) == (1, 1, 2)


def test_plots_say_how_to_get_matplotlib(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    result = simulate([job("a", 0, 8, 10)], cluster(1), single_queue(), get_policy("phalanx"))
    with pytest.raises(PlotsUnavailable, match=r"phalanx\[sim\]"):
        write_plots(result, tmp_path, "t")
