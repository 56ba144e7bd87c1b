""" "Never fits" is claimed only of gangs no packing can place (hypothesis, against brute force).

A gang told it can never start (`core.never_fits`) is told to change its spec; were the claim
wrong, a user would rewrite a job that only had to wait. Gangs of several shapes are judged by
bounds, not by the packing heuristic, so that the claim holds for any packing: here every gang
the core calls impossible on an empty cluster is checked by trying every assignment of its pods
to nodes (within one leaf when it requires one).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phalanx.core import (
    CPU,
    GPU,
    PODS,
    Member,
    Node,
    PendingGang,
    Policy,
    Queue,
    Snapshot,
    schedule,
)
from phalanx.core.never_fits import NEVER_PHRASES

SPINE = "network.topology.nvidia.com/spine"
LEAF = "network.topology.nvidia.com/block"
NOW = 100_000.0
PROFILE = settings(
    max_examples=int(os.environ.get("CORE_EXAMPLES", "60")) * 5,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@st.composite
def cases(draw: st.DrawFn) -> tuple[list[Node], PendingGang]:
    nodes = []
    for lf in range(draw(st.integers(1, 2))):
        for n in range(draw(st.integers(1, 3))):
            nodes.append(
                Node(
                    name=f"s0-l{lf}-n{n}",
                    allocatable={
                        GPU: draw(st.sampled_from([4, 8])),
                        CPU: draw(st.sampled_from([8000, 32000])),
                        PODS: draw(st.sampled_from([2, 8])),
                    },
                    labels={SPINE: "s0", LEAF: f"s0-l{lf}"},
                )
            )
    members = []
    for s in range(draw(st.integers(2, 3))):
        requests = {GPU: draw(st.sampled_from([1, 2, 3, 4, 5, 8]))}
        cpu = draw(st.sampled_from([0, 1000, 16000, 30000]))
        if cpu:
            requests[CPU] = cpu
        for i in range(draw(st.integers(1, 3))):
            members.append(Member(pod=f"g-{s}-{i}", requests=requests))
    gang = PendingGang(
        id="ns/g",
        min_member=len(members),
        members=tuple(members),
        topology_required=draw(st.sampled_from([None, "leaf"])),
    )
    return nodes, gang


def _packs(nodes: Sequence[Node], asks: list[dict[str, int]]) -> bool:
    """Whether the pods asking `asks` fit the empty `nodes` together (backtracking)."""
    free = [dict(n.allocatable) for n in nodes]

    def place(i: int) -> bool:
        if i == len(asks):
            return True
        for f in free:
            need = {**asks[i], PODS: 1}
            if all(f.get(r, 0) >= a for r, a in need.items()):
                for r, a in need.items():
                    f[r] -= a
                if place(i + 1):
                    return True
                for r, a in need.items():
                    f[r] += a
        return False

    return place(0)


@PROFILE
@given(cases())
def test_a_gang_said_never_to_fit_has_no_packing(case: tuple[list[Node], PendingGang]) -> None:
    nodes, gang = case
    snap = Snapshot(tuple(nodes), (Queue("default"),), (), (gang,))
    decision = schedule(snap, Policy(), NOW).gangs[gang.id]
    if not any(phrase in decision.message for phrase in NEVER_PHRASES):
        return
    asks = [dict(m.requests) for m in gang.members]
    scopes = [nodes]
    if gang.topology_required == "leaf":
        leaves = sorted({n.labels[LEAF] for n in nodes})
        scopes = [[n for n in nodes if n.labels[LEAF] == leaf] for leaf in leaves]
    assert not any(_packs(scope, asks) for scope in scopes), decision.message
