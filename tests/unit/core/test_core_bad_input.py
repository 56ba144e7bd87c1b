"""Bad input gives a typed reason on the gang concerned, and the cycle goes on for the others.

Every row puts one malformed object next to a well-formed gang `ok` and checks both: the bad one
gets the expected reason (and a message that says what is wrong), `ok` is still bound.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pytest
from core_builders import fabric, gang, node, queue, snapshot

from phalanx.core import (
    GPU,
    Member,
    Node,
    PendingGang,
    Policy,
    Queue,
    Reason,
    Snapshot,
    TopologyLevel,
    schedule,
)

NOW = 1_000.0


@dataclass
class Bad:
    name: str
    snap: Snapshot
    gang: str
    reason: Reason
    says: str
    policy: Policy = field(default_factory=Policy)


def _with_ok(
    bad: list[PendingGang], queues: list[Queue] | None = None, nodes: list[Node] | None = None
) -> Snapshot:
    base = snapshot(
        nodes if nodes is not None else fabric(1, 2, 2),
        queues=queues or [],
        pending=[*bad, gang("ok").pods(1).created(99).build()],
    )
    return base


ROWS = [
    Bad(
        "gang larger than the whole cluster",
        _with_ok([gang("huge").pods(100).build()]),
        "ns/huge",
        Reason.INSUFFICIENT_CAPACITY,
        "more than the cluster has (32 schedulable in total)",
    ),
    Bad(
        "pod with no resource requests is scheduled like any pod (it takes a pod slot)",
        _with_ok([PendingGang("ns/empty", 1, (Member("e-0", {}),))]),
        "ns/empty",
        Reason.SCHEDULED,
        "bound 1 pods",
    ),
    Bad(
        "topology level that is not configured",
        _with_ok([gang("rack").pods(1).required("rack").build()]),
        "ns/rack",
        Reason.INVALID,
        "topology required level 'rack' is not configured",
    ),
    Bad(
        "topology level that no node has",
        _with_ok([gang("nvl").pods(1).required("nvlink").build()]),
        "ns/nvl",
        Reason.TOPOLOGY_UNSATISFIABLE,
        "no node has the label example.com/nvlink",
        Policy(
            topology_levels=(
                TopologyLevel("spine", "network.topology.nvidia.com/spine"),
                TopologyLevel("leaf", "network.topology.nvidia.com/block"),
                TopologyLevel("nvlink", "example.com/nvlink"),
            )
        ),
    ),
    Bad(
        "unknown queue",
        _with_ok([gang("lost").queue("nope").pods(1).build()]),
        "ns/lost",
        Reason.QUEUE_NOT_FOUND,
        "queue 'nope' does not exist",
    ),
    Bad(
        "queue with zero weight",
        _with_ok([gang("zw").queue("zero").pods(1).build()], [queue("zero").weight(0).build()]),
        "ns/zw",
        Reason.INVALID,
        "weight 0",
    ),
    Bad(
        "negative request",
        _with_ok([PendingGang("ns/neg", 1, (Member("n-0", {GPU: -1}),))]),
        "ns/neg",
        Reason.INVALID,
        "negative quantity of nvidia.com/gpu",
    ),
    Bad(
        "negative guarantee on the queue",
        _with_ok(
            [gang("ng").queue("negq").pods(1).build()],
            [queue("negq").guarantee(gpu=-8).build()],
        ),
        "ns/ng",
        Reason.INVALID,
        "negative quantities for nvidia.com/gpu",
    ),
    Bad(
        "minMember zero",
        _with_ok([gang("zero").pods(1).min(0).build()]),
        "ns/zero",
        Reason.INVALID,
        "minMember is 0",
    ),
    Bad(
        "namespace not allowed by the queue",
        _with_ok(
            [gang("team-b/x").queue("team-a").pods(1).build()],
            [queue("team-a").namespaces("team-a").build()],
        ),
        "team-b/x",
        Reason.QUEUE_FORBIDDEN,
        "namespace 'team-b' may not submit to queue 'team-a'",
    ),
    Bad(
        "time limit above the queue maximum",
        _with_ok(
            [gang("long").queue("capped").pods(1).time_limit(7200).build()],
            [queue("capped").max_time_limit(3600).build()],
        ),
        "ns/long",
        Reason.INVALID,
        "exceeds the queue's maxTimeLimitSeconds 3600",
    ),
    Bad(
        "non-positive time limit",
        _with_ok([gang("t0").pods(1).time_limit(0).build()]),
        "ns/t0",
        Reason.INVALID,
        "timeLimitSeconds must be positive",
    ),
    Bad(
        "queue limit",
        _with_ok(
            [gang("lim").queue("small").pods(2).build()],
            [queue("small").limit(gpu=8).build()],
        ),
        "ns/lim",
        Reason.QUEUE_OVER_LIMIT,
        "over its limit of 8",
    ),
    Bad(
        "fewer pods than minMember",
        _with_ok([gang("few").pods(2).min(4).build()]),
        "ns/few",
        Reason.WAITING_FOR_PODS,
        "2 of 4 pods exist",
    ),
    Bad(
        "odd label values: a non-integer GPU count label and a Gt on a non-integer label",
        _with_ok(
            [gang("gt").pods(1, gpu=0).affinity("rank", "Gt", "3").build()],
            nodes=[
                *fabric(1, 2, 2),
                node("odd").without(GPU).label("nvidia.com/gpu.count", "eight").label("rank", "x"),
            ],
        ),
        "ns/gt",
        Reason.INSUFFICIENT_CAPACITY,
        "needs 1 pod",
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_bad_input_gives_typed_reason(row: Bad) -> None:
    result = schedule(row.snap, row.policy, NOW)
    got = result.gangs[row.gang]
    assert got.reason == row.reason, got.message
    assert row.says in got.message
    assert "ns/ok" in result.bindings, result.gangs["ns/ok"].message


def test_duplicate_node_and_gang_names_do_not_crash() -> None:
    snap = snapshot(
        [*fabric(1, 1, 2), node("s0-l0-n00").gpus(1)],
        pending=[gang("dup").pods(1), gang("dup").pods(3)],
    )
    result = schedule(snap, Policy(), NOW)
    assert set(result.gangs) == {"ns/dup"}
    assert len(result.bindings["ns/dup"]) == 1


def test_min_resources_gets_an_eta_before_pods_exist() -> None:
    from core_builders import running

    nodes = fabric(1, 1, 2)
    run = [running("r").on("s0-l0-n00").on("s0-l0-n01").started(NOW).time_limit(600)]
    pend = [gang("future").pods(0).min(2).min_resources(gpu=16).time_limit(60)]
    result = schedule(snapshot(nodes, running=run, pending=pend), Policy(), NOW)
    d = result.gangs["ns/future"]
    assert d.reason == Reason.WAITING_FOR_PODS
    assert d.estimated_start == NOW + 600
    # A reservation like any waiting gang's (PRODUCT.md §2, minResources): held until it comes
    # due, and then for --phantom-grace-seconds only (test_core_tenancy.py).
    assert result.reservations["ns/future"].start == NOW + 600
    assert d.detail is not None
    assert d.detail.requested_gpus == 16


def test_guarantees_beyond_cluster_are_scaled_and_flagged() -> None:
    snap = snapshot(
        fabric(1, 1, 2),
        queues=[queue("a").guarantee(gpu=32), queue("b").guarantee(gpu=32)],
        pending=[gang("x").queue("a").pods(2), gang("y").queue("b").pods(2)],
    )
    result = schedule(snap, Policy(), NOW)
    for name in "ab":
        q = result.queues[name]
        assert q.guarantee_scaled
        assert "scaled down to 25%" in q.message
        assert q.deserved[GPU] == 8


def test_a_forbidden_queue_says_what_named_it() -> None:
    """A managed gang takes its queue from labels (walked: a namespace relabelled to a queue
    that does not admit it): the message says which, as QueueNotFound's does."""
    p = replace(
        gang("team-b/x").queue("team-a").pods(1).build(),
        queue_source="label phalanx.dev/queue of namespace team-b",
    )
    snap = snapshot(fabric(1, 1, 1), [queue("team-a").namespaces("team-a")], pending=[p])
    got = schedule(snap, Policy(), NOW).gangs["team-b/x"]
    assert got.reason == Reason.QUEUE_FORBIDDEN
    assert got.message == (
        "namespace 'team-b' may not submit to queue 'team-a' (its spec.namespaces: team-a); "
        "the queue was named by label phalanx.dev/queue of namespace team-b"
    )
