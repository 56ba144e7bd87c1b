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


def test_a_gang_short_of_free_gpus_counts_the_nodes_that_take_no_pods() -> None:
    """8 × 8 GPUs on 8 nodes, 2 of them cordoned, one busy: 40 free. A gang of 6 × 8 GPUs (no
    topology) needs 48, and the message says where the rest went; one of 7 × 8 needs more than
    the 48 schedulable GPUs, and says why there are only 48."""
    cordoned = {"s0-l0-n01", "s0-l1-n02"}
    nodes = [n.cordoned() if n.build().name in cordoned else n for n in fabric(1, 2, 4)]
    messages = []
    for pods in (6, 7):
        snap = snapshot(
            nodes,
            running=[running("r").on("s0-l1-n00").started(NOW).time_limit(3600)],
            pending=[gang("big").pods(pods)],
        )
        decision = schedule(snap, Policy(), NOW).gangs["ns/big"]
        assert decision.reason == Reason.INSUFFICIENT_CAPACITY, decision
        messages.append(decision.message)
    assert messages[0].startswith(
        "needs 48 GPUs; 40 free (2 nodes cordoned or not ready); expected start"
    ), messages[0]
    assert messages[1] == (
        "needs 56 GPUs, more than the cluster has (48 schedulable in total; 2 nodes cordoned "
        "or not ready)"
    ), messages[1]
