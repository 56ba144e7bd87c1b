"""A gang whose pods no node can ever hold says what no node offers (`core.never_fits`), not
"N free" as if capacity freeing up would let it start. Walked on the dev cluster (16 nodes of
8 GPUs): a Job of 16-GPU pods read "needs 32 GPUs; 4 free", one whose nodeSelector matched no
node "needs 2 GPUs; 0 free"."""

from __future__ import annotations

from core_builders import GangBuilder, GiB, fabric, gang, node, running, snapshot

from phalanx.core import Policy, Reason, schedule

NOW = 10_000.0


def _message(pending: GangBuilder, *, busy: bool = False) -> tuple[Reason, str]:
    nodes = fabric(1, 2, 2)
    r = running("r").started(NOW).time_limit(3600)
    for n in nodes:
        r.on(n.build().name)
    snap = snapshot(nodes, running=[r] if busy else [], pending=[pending])
    g = schedule(snap, Policy(), NOW).gangs["ns/g"]
    return g.reason, g.message


def test_pods_larger_than_any_node_say_so() -> None:
    reason, message = _message(gang("g").pods(2, gpu=16))
    assert reason == Reason.INSUFFICIENT_CAPACITY
    assert message == (
        "needs 32 GPUs; no node can ever hold one of its pods: each asks nvidia.com/gpu=16 "
        "(at most 8) of the 4 nodes that accept it, counted by allocatable"
    )


def test_pods_whose_selector_matches_no_node_say_so() -> None:
    reason, message = _message(gang("g").pods(2, gpu=1).selector("gpu.product", "H200"))
    assert reason == Reason.INSUFFICIENT_CAPACITY
    assert message == (
        "needs 2 GPUs; no node accepts its pods: their node selector, affinity and tolerations "
        "match none of the 4 nodes (or only cordoned ones)"
    )


def test_no_node_with_all_it_asks_at_once_is_said_too() -> None:
    """8 GPUs fit every node and so does the memory; both together, none (one node has less
    memory, which alone would fit: 'at most' per resource is not the answer)."""
    nodes = [
        node("s0-l0-n00").gpus(4).leaf("s0-l0", "s0"),
        node("s0-l0-n01").memory(64 * GiB).leaf("s0-l0", "s0"),
    ]
    snap = snapshot(nodes, pending=[gang("g").pods(1, gpu=8, memory=256 * GiB)])
    g = schedule(snap, Policy(), NOW).gangs["ns/g"]
    assert g.message == (
        "needs 8 GPUs; no node can ever hold one of its pods: of the 2 nodes that accept it, "
        "none has all of nvidia.com/gpu=8, memory=274877906944 allocatable at once"
    )


def test_a_gang_that_fits_empty_nodes_waits_with_the_usual_message() -> None:
    reason, message = _message(gang("g").pods(2, gpu=8), busy=True)
    assert reason == Reason.INSUFFICIENT_CAPACITY
    assert message.startswith("needs 16 GPUs; 0 free; expected start in 1h00m"), message


def test_more_pods_under_one_leaf_than_any_leaf_holds_says_so() -> None:
    """5 pods of 8 GPUs under one leaf; leaves of 2 nodes (walked: 5 × 8 GPUs, leaves of 4
    nodes, read "needs 40 GPUs; 6 free")."""
    reason, message = _message(gang("g").pods(3, gpu=8).required("leaf"))
    assert reason == Reason.TOPOLOGY_UNSATISFIABLE
    assert message == (
        "needs 24 GPUs under one leaf; no leaf can ever hold all its pods: the one that could "
        "hold the most (s0-l0) holds 2 of its 3 even empty (counted by allocatable)"
    )


def test_more_pods_than_the_accepting_nodes_hold_says_so() -> None:
    """Pods of 3 GPUs: a node of 8 holds 2 of them; the 4 nodes 8 of the gang's 9 (its 27 GPUs
    are fewer than the 32 there are: the total alone does not tell)."""
    reason, message = _message(gang("g").pods(9, gpu=3))
    assert reason == Reason.INSUFFICIENT_CAPACITY
    assert message == (
        "needs 27 GPUs; the 4 nodes that accept its pods could hold 8 of its 9 even empty "
        "(counted by allocatable)"
    )


def test_shapes_that_each_fit_a_leaf_but_not_together_say_so() -> None:
    """Walked on the dev cluster (leaves of 4 nodes of 8 GPUs): 3 pods of 8 GPUs and 2 of 8 GPUs
    and 64 CPUs under one leaf read "needs 40 GPUs under one leaf; the best leaf (leaf-03) has
    64 free": each shape fits a leaf alone, not both. Here leaves of 2 nodes: 2 + 1 pods; a node
    holds one of them (8 GPUs each), so a leaf at most 2 of the 3."""
    reason, message = _message(gang("g").pods(2, gpu=8).pods(1, gpu=8, cpu=32_000).required("leaf"))
    assert reason == Reason.TOPOLOGY_UNSATISFIABLE
    assert message == (
        "needs 24 GPUs under one leaf; no leaf can ever hold all its pods: the one that could "
        "hold the most (s0-l0) holds at most 2 of its 3 even empty (counted by allocatable)"
    )


def test_shapes_that_together_ask_more_than_a_leaf_has_say_so() -> None:
    """2 pods of 5 GPUs and 2 of 4: a node of 8 could hold two of them (4 + 4), so the pod count
    alone does not tell (4 of 4 per leaf); their 18 GPUs against a leaf's 16 do."""
    reason, message = _message(gang("g").pods(2, gpu=5).pods(2, gpu=4, cpu=1_000).required("leaf"))
    assert reason == Reason.TOPOLOGY_UNSATISFIABLE
    assert message == (
        "needs 18 GPUs under one leaf; no leaf can ever hold all its pods: its pods ask "
        "nvidia.com/gpu=18 in all and the closest leaf (s0-l0) has 16 on the nodes that accept "
        "them even empty (counted by allocatable)"
    )


def test_shapes_that_together_overflow_the_cluster_say_so() -> None:
    """5 pods of 5 GPUs (4 of one shape, 1 of another): 25 of the 32 GPUs, but a node of 8
    holds one."""
    reason, message = _message(gang("g").pods(4, gpu=5).pods(1, gpu=5, cpu=1_000))
    assert reason == Reason.INSUFFICIENT_CAPACITY
    assert message == (
        "needs 25 GPUs; the 4 nodes that accept its pods could hold at most 4 of its 5 even "
        "empty (counted by allocatable)"
    )


def test_shapes_that_fit_together_empty_wait_with_the_usual_message() -> None:
    """A launcher beside its worker on one leaf fits empty nodes: busy ones make it wait with an
    expected start, not a 'never'."""
    reason, message = _message(
        gang("g").pods(1, gpu=8).pods(1, gpu=8, cpu=1_000).required("leaf"), busy=True
    )
    assert reason == Reason.INSUFFICIENT_CAPACITY
    assert message.startswith("needs 16 GPUs; 0 free; expected start in 1h00m"), message


def test_the_best_leaf_of_a_gang_of_two_shapes_counts_its_free_gpus_once() -> None:
    """Two shapes accept the same leaves; summed per shape the best leaf had twice its free GPUs
    (walked: "the best leaf (leaf-03) has 64 free" of 32). One node of each leaf busy: 8 free
    per leaf, 16 in all, so it fits but for the topology."""
    nodes = fabric(1, 2, 2)
    r = running("r").started(NOW).time_limit(3600).on("s0-l0-n00").on("s0-l1-n00")
    pending = gang("g").pods(1, gpu=8).pods(1, gpu=8, cpu=1_000).required("leaf")
    g = schedule(snapshot(nodes, running=[r], pending=[pending]), Policy(), NOW).gangs["ns/g"]
    assert g.reason == Reason.TOPOLOGY_UNSATISFIABLE
    assert g.message.startswith("needs 16 GPUs under one leaf; the best leaf (s0-l0) has 8 free"), (
        g.message
    )
    assert g.detail is not None and g.detail.best_domain_free_gpus == 8


def test_the_numbers_of_a_gang_that_never_fits_name_the_domain_its_message_names() -> None:
    """Walked: the message named leaf-00 (the closest even empty) and `bestDomain` leaf-03 (the
    most free now). Both leaves hold at most 2 of the 3 pods; s0-l0 (first by name) is named,
    and its numbers are its own 8 free GPUs, not s0-l1's 16."""
    nodes = fabric(1, 2, 2)
    r = running("r").started(NOW).time_limit(3600).on("s0-l0-n00")
    pending = gang("g").pods(2, gpu=8).pods(1, gpu=8, cpu=32_000).required("leaf")
    g = schedule(snapshot(nodes, running=[r], pending=[pending]), Policy(), NOW).gangs["ns/g"]
    assert "the one that could hold the most (s0-l0) holds at most 2 of its 3" in g.message
    assert g.detail is not None
    assert (g.detail.best_domain, g.detail.best_domain_free_gpus) == ("s0-l0", 8)


def test_a_gang_that_can_never_fit_is_ranked_nowhere_and_the_gang_behind_it_moves_up() -> None:
    """`huge` (2 pods of 16 GPUs, created 600 s ago, first by age) and `big` (4 × 8 GPUs, 60 s
    ago, limit 600 s) wait while `r` holds all four 8-GPU nodes until NOW + 3600. `huge` can
    never fit and delays nobody, so it has no position (as Kueue ranks no workload it can never
    admit) and `big` is position 1, not 2 (walked: a 16-GPU pod said position 1 in its queue).
    `huge` is still walked and says why it waits."""
    nodes = fabric(1, 2, 2)
    r = running("r").started(NOW).time_limit(3600)
    for n in nodes:
        r.on(n.build().name)
    huge = gang("huge").pods(2, gpu=16).created(NOW - 600)
    big = gang("big").pods(4).created(NOW - 60).time_limit(600)
    result = schedule(snapshot(nodes, running=[r], pending=[huge, big]), Policy(), NOW)
    assert result.gangs["ns/huge"].queue_position is None
    assert "no node can ever hold one of its pods" in result.gangs["ns/huge"].message
    assert result.gangs["ns/big"].queue_position == 1
    assert result.gangs["ns/big"].estimated_start == NOW + 3600
