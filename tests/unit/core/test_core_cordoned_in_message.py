"""A gang kept out by its topology says when the best domain has nodes that take no pods.

Walked on the dev cluster: after `kubectl drain` of one node in each of two empty leaves, a
gang of 4 × 8 GPUs under one leaf waited "the best leaf (leaf-00) has 24 free" with nothing
running on leaf-00; the 8 GPUs of its cordoned node are not free, and nothing said so.
"""

from __future__ import annotations

from core_builders import fabric, gang, running, snapshot

from phalanx.core import Policy, Reason, schedule

NOW = 10_000.0


def _message(cordon: set[str]) -> str:
    """Two leaves of 4 × 8 GPUs; s0-l1 has one node busy; `cordon` names cordoned nodes."""
    nodes = [n.cordoned() if n.build().name in cordon else n for n in fabric(1, 2, 4)]
    snap = snapshot(
        nodes,
        running=[running("r").on("s0-l1-n00").started(NOW).time_limit(3600)],
        pending=[gang("req").pods(4).required("leaf")],
    )
    result = schedule(snap, Policy(), NOW)
    decision = result.gangs["ns/req"]
    assert decision.reason == Reason.TOPOLOGY_UNSATISFIABLE, decision
    return decision.message


def test_the_best_leafs_cordoned_node_is_counted_in_its_message() -> None:
    """s0-l0 has 1 of 4 nodes cordoned (24 free), s0-l1 1 busy (24 free): the best leaf by
    name, s0-l0, names its cordoned node; 32 requested, so topology alone keeps it out."""
    assert _message({"s0-l0-n01"}).startswith(
        "needs 32 GPUs under one leaf; the best leaf (s0-l0) has 24 free "
        "(1 of its 4 nodes cordoned or not ready); expected start"
    )


def test_a_best_leaf_with_no_cordoned_node_says_nothing_of_cordons() -> None:
    """s0-l0 has 2 cordoned nodes (16 free): the best leaf is s0-l1 (24 free, one node busy),
    which has none; the cordons elsewhere are not its business."""
    message = _message({"s0-l0-n01", "s0-l0-n02"})
    assert message.startswith("needs 32 GPUs under one leaf; the best leaf (s0-l1) has 24 free;")
    assert "cordoned" not in message
