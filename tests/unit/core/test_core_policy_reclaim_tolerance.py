"""`Policy.reclaim_tolerance` (issue 19, twentieth round): reclaim takes nothing from a queue
within a dead zone above its deserved share (YARN's `max_ignored_over_capacity`).

Hand-worked on two 8-GPU nodes n00–n01 (16 GPUs, one leaf). Queue `b` runs 9 GPUs: `wide`
8 GPUs on n00 and `long` 1 GPU on n01 (started NOW − 700,000, a run of eight days). Queue `a`
runs `a0`, 7 GPUs on n01, and waits with `a1`, 1 GPU. Demands 8 and 9, equal weights: each
deserves 8. So `a` is owed 1 and `a1` may reclaim (7 + 1 ≤ 8); `b` holds 9, one GPU (12.5%)
beyond its share, and only `long` may go (`wide` would take `b` to 1, below its 8).
"""

from __future__ import annotations

from dataclasses import replace

from core_builders import fabric, gang, queue, running, snapshot

from phalanx.core import EvictionReason, Policy, Snapshot, schedule

NOW = 1_000_000.0
N0, N1 = "s0-l0-n00", "s0-l0-n01"


def _cluster() -> Snapshot:
    run = [
        running("wide").queue("b").on(N0, gpu=8).started(NOW - 100),
        running("long").queue("b").on(N1, gpu=1).started(NOW - 700_000),
        running("a0").queue("a").on(N1, gpu=7).started(NOW - 50),
    ]
    pending = [gang("a1").queue("a").pods(1, gpu=1).created(NOW - 10)]
    return snapshot(fabric(1, 1, 2), [queue("a"), queue("b")], run, pending)


def _evicted(tolerance: float) -> list[tuple[str, EvictionReason, str]]:
    policy = replace(Policy(), reclaim_tolerance=tolerance)
    return [(e.gang, e.reason, e.for_gang) for e in schedule(_cluster(), policy, NOW).evictions]


def test_without_a_dead_zone_the_long_run_goes_for_one_gpu() -> None:
    """Off: `b` is over its share, so `long` (eight days of run) is evicted for `a1`."""
    assert _evicted(0.0) == [("ns/long", EvictionReason.RECLAIMED, "ns/a1")]


def test_a_queue_further_over_than_the_dead_zone_still_lends() -> None:
    """10%: `b` holds 9 > 8 × 1.1 = 8.8, beyond the dead zone: `long` goes."""
    assert _evicted(0.1) == [("ns/long", EvictionReason.RECLAIMED, "ns/a1")]


def test_a_queue_within_the_dead_zone_keeps_its_gangs_and_the_message_says_so() -> None:
    """20%: 9 ≤ 8 × 1.2 = 9.6, so nothing is evicted; `a1` waits for capacity, and its message
    says why reclaim did not take the GPU back."""
    policy = replace(Policy(), reclaim_tolerance=0.2)
    result = schedule(_cluster(), policy, NOW)
    assert result.evictions == ()
    assert "ns/a1" not in result.bindings
    message = result.gangs["ns/a1"].message
    assert (
        "reclaim leaves what b borrows (1 beyond its share) alone: within 20% of its deserved "
        "share" in message
    ), message
