"""Hand-worked cycles pinning `Policy.pack_borrowed` (issue 19, twenty-sixth round).

Reclaim takes only gangs of queues above their deserved share, so it frees a whole node for a
queue below its share only where every gang is of such a queue. With the setting, a gang
starting now does not mix borrowed with kept work on a node when a node without the other kind
can hold it.

Four 8-GPU nodes under one leaf, `s0-l0-n00` … `n03` (32 GPUs); queues `qa` and `qb`, weight 1,
no guarantee, no usage. Running gangs have no time limit. `qb` also waits with `wide` (2 × 8
GPUs: no two whole nodes are free, and running gangs never end, so it neither starts nor
reserves; it only makes `qb`'s demand larger than half the cluster). One cycle at `NOW`.
"""

from __future__ import annotations

from dataclasses import replace

from core_builders import fabric, gang, queue, running, snapshot

from phalanx.core import Policy, Snapshot, schedule

NOW = 10_000.0
N = [f"s0-l0-n0{i}" for i in range(4)]
BASE = Policy()
PACKED = replace(BASE, pack_borrowed=True)


def _cluster(qb_gpus: int, qa_gpus: int, waiting: str) -> Snapshot:
    """`qb` runs `kb` (`qb_gpus` on n00); `qa` runs `ka` (`qa_gpus` on n01), `a1` (all of n02)
    and `a2` (all of n03). Pending: `wide` (qb, 2 × 8 GPUs, created NOW − 100) and `one` (1
    GPU, of queue `waiting`, created NOW − 10)."""
    run = [
        running("kb").queue("qb").on(N[0], gpu=qb_gpus).started(NOW - 50),
        running("ka").queue("qa").on(N[1], gpu=qa_gpus).started(NOW - 50),
        running("a1").queue("qa").on(N[2]).started(NOW - 50),
        running("a2").queue("qa").on(N[3]).started(NOW - 50),
    ]
    pending = [
        gang("wide").queue("qb").pods(2).created(NOW - 100),
        gang("one").queue(waiting).pods(1, gpu=1).created(NOW - 10),
    ]
    return snapshot(fabric(1, 1, 4), [queue("qa"), queue("qb")], run, pending)


def test_a_borrowing_gang_goes_to_a_node_of_borrowed_work() -> None:
    """`kb` 7 GPUs on n00 (1 free), `ka` 6 on n01 (2 free). Demand qa 22 + 1 = 23, qb 7 + 16
    = 23 of 32: deserved 16 each. `qa` holds 22 > 16, so `one` (qa) borrows. Best fit puts it
    on n00, the tightest (1 free), beside `qb`'s `kb`, which reclaim never takes: n00 could
    then never be freed whole for `qb`. Packed, it goes to n01 (2 free), where only `qa`'s
    borrowed work runs."""
    snap = _cluster(qb_gpus=7, qa_gpus=6, waiting="qa")
    assert dict(schedule(snap, BASE, NOW).bindings) == {"ns/one": {"one-000": N[0]}}
    assert dict(schedule(snap, PACKED, NOW).bindings) == {"ns/one": {"one-000": N[1]}}


def test_a_gang_within_its_share_keeps_off_a_node_of_borrowed_work() -> None:
    """`kb` 6 GPUs on n00 (2 free), `ka` 7 on n01 (1 free). Demand qa 23, qb 6 + 16 + 1 = 23
    of 32: deserved 16 each. `one` (qb) keeps `qb` within its share (6 + 1 ≤ 16). Best fit
    puts it on n01 (1 free), beside `qa`'s borrowed `ka`, where it would stop reclaim from
    freeing n01 whole. Packed, it goes to n00 (2 free), beside `qb`'s own `kb`."""
    snap = _cluster(qb_gpus=6, qa_gpus=7, waiting="qb")
    assert dict(schedule(snap, BASE, NOW).bindings) == {"ns/one": {"one-000": N[1]}}
    assert dict(schedule(snap, PACKED, NOW).bindings) == {"ns/one": {"one-000": N[0]}}


def test_a_mixing_node_is_taken_when_no_other_holds_the_gang() -> None:
    """`kb` 7 GPUs on n00, `ka` 7 on n01: 1 GPU free on each. `two` (qa, borrowing: 2 pods of
    1 GPU) fits only on both nodes, one of them beside `qb`'s `kb`: packed or not it starts
    there (n00 + n01). The preference orders places; it never costs a start."""
    run = [
        running("kb").queue("qb").on(N[0], gpu=7).started(NOW - 50),
        running("ka").queue("qa").on(N[1], gpu=7).started(NOW - 50),
        running("a1").queue("qa").on(N[2]).started(NOW - 50),
        running("a2").queue("qa").on(N[3]).started(NOW - 50),
    ]
    pending = [
        gang("wide").queue("qb").pods(2).created(NOW - 100),
        gang("two").queue("qa").pods(2, gpu=1).created(NOW - 10),
    ]
    snap = snapshot(fabric(1, 1, 4), [queue("qa"), queue("qb")], run, pending)
    for policy in (BASE, PACKED):
        got = dict(schedule(snap, policy, NOW).bindings)
        assert sorted(got["ns/two"].values()) == [N[0], N[1]]


def test_a_borrowing_gang_prefers_a_leaf_where_it_mixes_nothing() -> None:
    """Two leaves of two nodes (32 GPUs): `kb` (qb) 7 GPUs on s0-l0-n00, `a1` (qa) all of
    s0-l0-n01, `ka` (qa) 6 on s0-l1-n00, `a2` (qa) all of s0-l1-n01; the same demands and
    shares as the first cycle (16 each; `one` of qa borrows). Best fit takes the tightest leaf,
    s0-l0 (1 GPU free), and `one` lands beside `kb`. Packed, s0-l0 cannot hold it without
    mixing and s0-l1 can: `one` goes to s0-l1-n00."""
    run = [
        running("kb").queue("qb").on("s0-l0-n00", gpu=7).started(NOW - 50),
        running("a1").queue("qa").on("s0-l0-n01").started(NOW - 50),
        running("ka").queue("qa").on("s0-l1-n00", gpu=6).started(NOW - 50),
        running("a2").queue("qa").on("s0-l1-n01").started(NOW - 50),
    ]
    pending = [
        gang("wide").queue("qb").pods(2).created(NOW - 100),
        gang("one").queue("qa").pods(1, gpu=1).created(NOW - 10),
    ]
    snap = snapshot(fabric(1, 2, 2), [queue("qa"), queue("qb")], run, pending)
    assert dict(schedule(snap, BASE, NOW).bindings) == {"ns/one": {"one-000": "s0-l0-n00"}}
    assert dict(schedule(snap, PACKED, NOW).bindings) == {"ns/one": {"one-000": "s0-l1-n00"}}
