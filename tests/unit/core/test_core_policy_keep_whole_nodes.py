"""Hand-worked cycles pinning `Policy.keep_whole_nodes` (issue 19, twenty-seventh round).

Best fit by leaf sends a small gang to the fullest leaf that holds it, even when all that leaf
has free is one whole node and another leaf has holes that hold the gang: the whole node is
broken, and a gang that needs a whole node waits for another to drain. With the setting, a gang
starting now takes partly used nodes where they hold it.

Two leaves of two 8-GPU nodes, `s0-l0-n00`, `s0-l0-n01`, `s0-l1-n00`, `s0-l1-n01` (32 GPUs),
one queue `qa` (a lone queue: no share is owed, nothing is reclaimed). Running gangs started
at NOW − 50 with a time limit of 3,600 s, so they end at NOW + 3,550. One cycle at `NOW`.
"""

from __future__ import annotations

from dataclasses import replace

from core_builders import fabric, gang, queue, running, snapshot

from phalanx.core import Policy, Snapshot, schedule

NOW = 10_000.0
LIMIT = 3600.0
END = NOW - 50 + LIMIT
BASE = Policy()
KEPT = replace(BASE, keep_whole_nodes=True)


def _cluster(pending: list[object], l1_used: int = 3) -> Snapshot:
    """`a1` holds all of s0-l0-n00; s0-l0-n01 is whole free (leaf s0-l0: 8 GPUs free); `k0` and
    `k1` hold `l1_used` GPUs on each node of s0-l1 (leaf s0-l1: 2 × (8 − l1_used) free)."""
    run = [
        running("a1").queue("qa").on("s0-l0-n00").started(NOW - 50).time_limit(LIMIT),
        running("k0").queue("qa").on("s0-l1-n00", gpu=l1_used).started(NOW - 50).time_limit(LIMIT),
        running("k1").queue("qa").on("s0-l1-n01", gpu=l1_used).started(NOW - 50).time_limit(LIMIT),
    ]
    return snapshot(fabric(1, 2, 2), [queue("qa")], run, pending)  # type: ignore[arg-type]


def test_a_small_gang_leaves_the_whole_node_whole_and_the_node_sized_gang_starts_now() -> None:
    """Pending: `one` (1 GPU, created NOW − 20) and `eight` (one 8-GPU pod, created NOW − 10),
    both with a 3,600-s limit; FIFO walks `one` first. Leaf s0-l0 has 8 GPUs free (8 pods of
    one GPU), s0-l1 10 (5 + 5): best fit by leaf takes s0-l0, and `one` breaks s0-l0-n01, the
    only whole free node; `eight` then fits nowhere (5 GPUs free at most per node) and reserves
    for END = NOW + 3,550, when `a1` ends. Kept, `one` goes to s0-l1-n00 (partly used, the
    lower index of the two equally tight nodes), and `eight` starts at NOW on s0-l0-n01."""
    pending = [
        gang("one").queue("qa").pods(1, gpu=1).created(NOW - 20).time_limit(LIMIT),
        gang("eight").queue("qa").pods(1).created(NOW - 10).time_limit(LIMIT),
    ]
    snap = _cluster(pending)
    before = schedule(snap, BASE, NOW)
    assert dict(before.bindings) == {"ns/one": {"one-000": "s0-l0-n01"}}
    assert before.reservations["ns/eight"].start == END
    assert before.gangs["ns/eight"].estimated_start == END
    kept = schedule(snap, KEPT, NOW)
    assert dict(kept.bindings) == {
        "ns/one": {"one-000": "s0-l1-n00"},
        "ns/eight": {"eight-000": "s0-l0-n01"},
    }
    assert "ns/eight" not in kept.reservations


def test_a_gang_the_holes_cannot_hold_still_takes_the_whole_node() -> None:
    """`k0` and `k1` hold 7 GPUs each: s0-l1 has 1 + 1 free. `four` (one 4-GPU pod) fits only
    on s0-l0-n01, the whole node: kept or not it starts there at NOW. The preference orders
    places; it never costs a start."""
    pending = [gang("four").queue("qa").pods(1, gpu=4).created(NOW - 10).time_limit(LIMIT)]
    snap = _cluster(pending, l1_used=7)
    for policy in (BASE, KEPT):
        assert dict(schedule(snap, policy, NOW).bindings) == {"ns/four": {"four-000": "s0-l0-n01"}}


def test_within_a_leaf_the_partly_used_nodes_hold_a_gang_of_several_pods() -> None:
    """One leaf of three 8-GPU nodes: `k0` holds 6 GPUs on n00 and `k1` 6 on n01 (2 free each),
    n02 is whole free. `two` (2 pods of 2 GPUs): best fit takes the largest node first until
    one node can finish the gang, and the whole n02 holds both pods (4 pods of room), so both
    go there. Kept, the partly used n00 and n01 hold one pod each and n02 stays whole for an
    8-GPU gang."""
    run = [
        running("k0").queue("qa").on("s0-l0-n00", gpu=6).started(NOW - 50).time_limit(LIMIT),
        running("k1").queue("qa").on("s0-l0-n01", gpu=6).started(NOW - 50).time_limit(LIMIT),
    ]
    pending = [gang("two").queue("qa").pods(2, gpu=2).created(NOW - 10).time_limit(LIMIT)]
    snap = snapshot(fabric(1, 1, 3), [queue("qa")], run, pending)
    before = dict(schedule(snap, BASE, NOW).bindings)
    assert sorted(before["ns/two"].values()) == ["s0-l0-n02", "s0-l0-n02"]
    kept = dict(schedule(snap, KEPT, NOW).bindings)
    assert sorted(kept["ns/two"].values()) == ["s0-l0-n00", "s0-l0-n01"]
