"""An exact oracle for small placements, and the seeded generator of fragmented instances.

The oracle answers "what is the fewest leaves this gang can span?" by brute force: for m = 1, 2, …
it tries every set of m leaves and asks an exact backtracking bin-packer whether all pods fit on
those leaves' nodes. It knows nothing of the core's placement code, so agreement is evidence.

`bench/core_bench.py` imports this module (via sys.path) to publish `oracle_min_leaves_pct`; the
unit test in `test_core_oracle.py` asserts the same figure, so there is one oracle, not two.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from itertools import combinations

from phalanx.core import GPU, PODS, Member, Node, PendingGang, Policy, Queue, Snapshot, schedule

SPINE = "network.topology.nvidia.com/spine"
LEAF = "network.topology.nvidia.com/block"


@dataclass(frozen=True)
class Instance:
    """A fragmented cluster (free GPUs per node, by leaf) and one gang (GPUs per pod)."""

    free: dict[str, dict[str, int]]  # leaf → node → free GPUs
    spine_of: dict[str, str]
    pods: tuple[int, ...]


def fragmented_instance(rng: random.Random) -> Instance:
    """2 spines × 2–3 leaves × 2–4 nodes of 8 GPUs, each node partly used; a gang of 2–8 pods."""
    free: dict[str, dict[str, int]] = {}
    spine_of: dict[str, str] = {}
    leaves = rng.randint(2, 3)
    nodes = rng.randint(2, 4)
    for s in range(2):
        for lf in range(leaves):
            leaf = f"s{s}-l{lf}"
            spine_of[leaf] = f"s{s}"
            free[leaf] = {
                f"{leaf}-n{n}": rng.choice([0, 0, 1, 2, 3, 4, 6, 8, 8]) for n in range(nodes)
            }
    if rng.random() < 0.5:
        size = rng.choice([1, 2, 4, 8])
        pods: tuple[int, ...] = (size,) * rng.randint(2, 8)
    else:
        pods = tuple(
            sorted((rng.choice([1, 2, 4, 8]) for _ in range(rng.randint(2, 6))), reverse=True)
        )
    return Instance(free, spine_of, pods)


def _packs(pods: tuple[int, ...], bins: list[int]) -> bool:
    """Exact: can every pod (GPUs) go into some bin (free GPUs)? Pods sorted descending."""
    if not pods:
        return True
    head, rest = pods[0], pods[1:]
    tried: set[int] = set()
    for i, cap in enumerate(bins):
        if cap >= head and cap not in tried:
            tried.add(cap)
            bins[i] -= head
            ok = _packs(rest, bins)
            bins[i] += head
            if ok:
                return True
    return False


def min_leaves(inst: Instance) -> int | None:
    """Fewest leaves the gang can span (None when it fits nowhere)."""
    pods = tuple(sorted(inst.pods, reverse=True))
    leaves = sorted(inst.free)
    for m in range(1, len(leaves) + 1):
        for subset in combinations(leaves, m):
            bins = [g for lf in subset for g in inst.free[lf].values()]
            if sum(bins) >= sum(pods) and _packs(pods, bins):
                return m
    return None


def to_snapshot(inst: Instance) -> Snapshot:
    nodes = []
    for leaf, per_node in sorted(inst.free.items()):
        for name, free in sorted(per_node.items()):
            nodes.append(
                Node(
                    name=name,
                    allocatable={GPU: 8, PODS: 110},
                    used={GPU: 8 - free},
                    labels={SPINE: inst.spine_of[leaf], LEAF: leaf},
                )
            )
    members = tuple(Member(f"p{i}", {GPU: g}) for i, g in enumerate(inst.pods))
    gang = PendingGang("ns/g", min_member=len(members), members=members)
    return Snapshot(nodes=tuple(nodes), queues=(Queue("default"),), pending=(gang,))


def chosen_leaves(inst: Instance) -> int | None:
    """Leaves the core's placement spans for the instance (None when it binds nothing)."""
    result = schedule(to_snapshot(inst), Policy(), 0.0)
    bound = result.bindings.get("ns/g")
    if not bound:
        return None
    return len({node.rsplit("-n", 1)[0] for node in bound.values()})


@dataclass(frozen=True)
class OracleFigure:
    instances: int
    feasible: int
    at_minimum: int
    worst_excess: int

    @property
    def pct(self) -> float:
        return 100.0 * self.at_minimum / self.feasible if self.feasible else 100.0


def oracle_figure(instances: int = 500, seed: int = 20240601) -> OracleFigure:
    """Share of feasible random fragmented instances where the core spans the minimum leaves.

    A gang the oracle can place but the core does not bind counts as a miss with an excess of the
    number of leaves + 1 (worse than any placement).
    """
    rng = random.Random(seed)
    feasible = at_min = worst = 0
    for _ in range(instances):
        inst = fragmented_instance(rng)
        best = min_leaves(inst)
        got = chosen_leaves(inst)
        if best is None:
            assert got is None, "the core bound a gang the oracle says cannot fit"
            continue
        feasible += 1
        excess = (len(inst.free) + 1) if got is None else got - best
        assert excess >= 0, "the core beat the exact oracle: the oracle is wrong"
        at_min += excess == 0
        worst = max(worst, excess)
    return OracleFigure(instances, feasible, at_min, worst)
