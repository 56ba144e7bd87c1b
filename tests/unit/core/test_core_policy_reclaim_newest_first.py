"""`Policy.reclaim_newest_first` (issue 19, nineteenth round): reclaim evicts the gangs created
last, not the ones that have run least, so a gang evicted once is not the first victim again.

Hand-worked on three 8-GPU nodes n00–n02 (one leaf, 24 GPUs), the cluster of
`test_core_policy_reclaim_by_gpu_time`: queue `a` (weight 3) has `a1` (1 × 8 GPUs) and `a2`
(2 × 6 GPUs) pending, demand 20; queue `b` (weight 1) runs `big` (8 GPUs on n00, started
NOW − 100), `small` (1 GPU on n01, started NOW − 400) and `old` (8 GPUs on n02, started
NOW − 100,000). Shares `a` 18, `b` 6: `b` borrows 11, and `a1` may reclaim either `big` (it
then fits n00) or `small` (n01). Here `big` is a gang that has waited long and been evicted
before: created NOW − 50,000, restarted 100 s ago; `small` was created NOW − 1,000.
"""

from __future__ import annotations

from dataclasses import replace

from core_builders import fabric, gang, queue, running, snapshot

from phalanx.core import EvictionReason, Policy, Snapshot, schedule

NOW = 1_000_000.0
N0, N1, N2 = "s0-l0-n00", "s0-l0-n01", "s0-l0-n02"
BASE = Policy()
NEWEST_FIRST = replace(BASE, reclaim_newest_first=True)


def _cluster() -> Snapshot:
    run = [
        running("big").queue("b").on(N0, gpu=8).created(NOW - 50_000).started(NOW - 100),
        running("small").queue("b").on(N1, gpu=1).created(NOW - 1_000).started(NOW - 400),
        running("old").queue("b").on(N2, gpu=8).created(NOW - 200_000).started(NOW - 100_000),
    ]
    pending = [
        gang("a1").queue("a").pods(1, gpu=8).created(NOW - 10),
        gang("a2").queue("a").pods(2, gpu=6).created(NOW - 5),
    ]
    return snapshot(fabric(1, 1, 3), [queue("a").weight(3), queue("b").weight(1)], run, pending)


def _evicted(policy: Policy) -> list[tuple[str, EvictionReason, str]]:
    return [(e.gang, e.reason, e.for_gang) for e in schedule(_cluster(), policy, NOW).evictions]


def test_by_time_run_the_restarted_gang_is_the_victim_again() -> None:
    """Off: `big` ran 100 s since its restart, `small` 400 s, so `big` goes once more."""
    assert _evicted(BASE) == [("ns/big", EvictionReason.RECLAIMED, "ns/a1")]


def test_newest_first_the_gang_created_last_goes() -> None:
    """On: `small` (created 1,000 s ago) is newer than `big` (50,000 s), so `small` is evicted
    and `a1` takes n01; `big` keeps running."""
    assert _evicted(NEWEST_FIRST) == [("ns/small", EvictionReason.RECLAIMED, "ns/a1")]
