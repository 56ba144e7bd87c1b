"""Reclaim's victim order and its two measured alternatives (issue 19):
`Policy.reclaim_by_gpu_time` (eighteenth round) evicts the gangs whose run thrown away is the
least GPU-time, not the least time; `Policy.reclaim_newest_first` (nineteenth round) the gangs
created last, so a gang evicted once is not the first victim again.

Hand-worked on three 8-GPU nodes n00–n02 (one leaf, 24 GPUs). Queue `a` (weight 3) has two
pending gangs: `a1`, 1 × 8 GPUs, and `a2`, 2 × 6 GPUs; its demand is 20. Queue `b` (weight 1)
runs 17 GPUs: `big` 8 GPUs on n00, started NOW − 100 (run so far 100 s, 800 GPU-s); `small`
1 GPU on n01, started NOW − 400 (400 s, 400 GPU-s); `old` 8 GPUs on n02, started NOW − 100,000.
Water-filling 24 GPUs by weight 3 : 1 gives `a` 18 and `b` 6, so `b` borrows 11 and either of
`big` or `small` may go (it keeps `b` at 9 or 16, ≥ 6). `a1` may reclaim (0 + 8 ≤ 18) and fits on
n00 with `big` gone or on n01 (7 free) with `small` gone. `a2` may not (8 + 12 > 18).
For `reclaim_newest_first`, `big` is a gang that waited long and was evicted before (created
NOW − 50,000, restarted 100 s ago); `small` was created NOW − 1,000, `old` NOW − 200,000.
"""

from __future__ import annotations

from dataclasses import replace

from core_builders import fabric, gang, queue, running, snapshot

from phalanx.core import EvictionReason, Policy, Snapshot, schedule

NOW = 1_000_000.0
N0, N1, N2 = "s0-l0-n00", "s0-l0-n01", "s0-l0-n02"
BASE = Policy()
BY_GPU_TIME = replace(BASE, reclaim_by_gpu_time=True)
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


def test_by_time_run_the_youngest_gang_goes_though_it_throws_away_more() -> None:
    """Off: `big` ran 100 s, `small` 400 s, so `big` (800 GPU-s) is evicted for `a1`."""
    assert _evicted(BASE) == [("ns/big", EvictionReason.RECLAIMED, "ns/a1")]


def test_by_gpu_time_the_gang_that_throws_away_least_goes() -> None:
    """On: `small` throws away 400 GPU-s, `big` 800, so `small` is evicted and `a1` takes n01;
    `big` keeps running."""
    assert _evicted(BY_GPU_TIME) == [("ns/small", EvictionReason.RECLAIMED, "ns/a1")]


def test_newest_first_the_gang_created_last_goes() -> None:
    """`reclaim_newest_first`: `small` (created 1,000 s ago) is newer than `big` (50,000 s),
    so `small` is evicted and `a1` takes n01, though by time run `big` (100 s since its
    restart) would go once more (the first test)."""
    assert _evicted(NEWEST_FIRST) == [("ns/small", EvictionReason.RECLAIMED, "ns/a1")]
