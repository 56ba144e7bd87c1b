"""Tiny clusters and traces for the engine tests, written so each expected time is obvious."""

from __future__ import annotations

from phalanx.core import CPU, GPU, MEMORY, PODS, Node
from phalanx.sim.nodes import LEAF_LABEL, Cluster, cluster_from_nodes
from phalanx.sim.policies import SimPolicy, get_policy, with_settings
from phalanx.sim.traces import TraceJob

SPINE_LABEL = "network.topology.nvidia.com/spine"


def cluster(nodes: int, *, per_leaf: int = 4, gpus: int = 8) -> Cluster:
    """`nodes` nodes of `gpus` GPUs, `per_leaf` to a leaf, all under one spine."""
    return cluster_from_nodes(
        [
            Node(
                name=f"n{i:02d}",
                allocatable={GPU: gpus, CPU: 96_000, MEMORY: 1 << 40, PODS: 110},
                labels={LEAF_LABEL: f"leaf-{i // per_leaf}", SPINE_LABEL: "spine-0"},
            )
            for i in range(nodes)
        ]
    )


def job(
    name: str, submit: float, gpus: int, duration: float, tenant: str | None = None
) -> TraceJob:
    """A trace job; `tenant` is its queue (like a Philly VC)."""
    return TraceJob(id=name, submit_s=submit, gpus=gpus, duration_s=duration, tenant=tenant)


def starving_at_limit() -> SimPolicy:
    """The shipped `phalanx` with the starvation bound at once the time limit (the default
    until 2026-12-03; twice since): the diagnoses' hand-worked traces have a gang starve
    within their time span at its limit, which is what they test the diagnosis on."""
    return with_settings(get_policy("phalanx"), {"reserve_after_limits": "1"})
