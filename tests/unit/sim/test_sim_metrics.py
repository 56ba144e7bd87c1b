"""Metrics on tiny runs whose answers are worked out by hand in the comments."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from phalanx.sim.metrics import (
    CompletedJob,
    Fragmentation,
    NodeGpus,
    QueueShare,
    QueueShareStats,
    QueueSnapshot,
    Sample,
    Stats,
    allocation_from_jobs,
    completion_stats,
    fragmentation,
    gpu_hours,
    gpu_utilization,
    jain_fairness,
    jain_index,
    largest_gang_wait_max,
    leaf_span_excess_mean,
    percentile,
    queue_share_stats,
    size_class,
    step_integral,
    summary,
    wait_stats,
    wait_stats_by_class,
)
from phalanx.sim.report import work_weighted_wait

# A 16-GPU cluster, window [0, 30]:
#   A: 4 GPUs  submitted 0, ran [0, 10)   wait 0   JCT 10
#   B: 16 GPUs submitted 0, ran [10, 20)  wait 10  JCT 20  (2 pods, spanned 2 leaves, 1 possible)
#   C: 1 GPU   submitted 5, ran [5, 10)   wait 0   JCT 5
#   D: 1 GPU   submitted 6, ran [20, 30)  wait 14  JCT 24
# Allocated: 4 on [0,5), 5 on [5,10), 16 on [10,20), 1 on [20,30) -> 20+25+160+10 = 215 GPU-s.
JOBS = [
    CompletedJob("A", "q", 4, 0, 0, 10, leaves_spanned=1, min_leaves=1),
    CompletedJob("B", "q", 16, 0, 10, 20, leaves_spanned=2, min_leaves=1),
    CompletedJob("C", "q", 1, 5, 5, 10),
    CompletedJob("D", "q", 1, 6, 20, 30),
]


def test_allocation_series_and_utilisation() -> None:
    series = allocation_from_jobs(JOBS)
    assert series == [Sample(0, 4), Sample(5, 5), Sample(10, 16), Sample(20, 1), Sample(30, 0)]
    assert gpu_utilization(series, 16, 0, 30) == pytest.approx(215 / 480)
    # A window that cuts steps: [7, 25] -> 3x5 + 10x16 + 5x1 = 180 GPU-s over 18 s.
    assert step_integral(series, 7, 25) == 180
    assert gpu_utilization(series, 16, 7, 25) == pytest.approx(180 / (16 * 18))
    assert gpu_utilization(series, 16, 5, 5) is None


def test_step_function_conventions() -> None:
    # Before the first sample the value is 0; the last sample holds to the window's end.
    assert step_integral([Sample(10, 2)], 0, 20) == 20
    # Several samples at one time: the last wins.
    assert step_integral([Sample(0, 1), Sample(0, 3)], 0, 2) == 6
    with pytest.raises(ValueError, match="out of order"):
        step_integral([Sample(5, 1), Sample(4, 1)], 0, 10)
    # Two GPUs held for an hour, e.g. by a deadlocked partial gang.
    assert gpu_hours([Sample(0, 2), Sample(3600, 0)], 0, 7200) == 2.0


def test_percentile_is_linear_between_closest_ranks() -> None:
    # numpy.percentile([1, 2, 3, 4], q): 50 -> 2.5, 95 -> 3.85, 0 -> 1, 100 -> 4
    assert percentile([4, 1, 3, 2], 50) == 2.5
    assert percentile([4, 1, 3, 2], 95) == pytest.approx(3.85)
    assert (percentile([4, 1, 3, 2], 0), percentile([4, 1, 3, 2], 100)) == (1, 4)
    assert percentile([7], 95) == 7
    assert percentile([], 95) is None
    with pytest.raises(ValueError, match=r"\[0, 100\]"):
        percentile([1], 101)


@given(st.lists(st.floats(0, 1e7), min_size=1), st.floats(0, 100))
def test_percentile_lies_within_the_data(values: list[float], q: float) -> None:
    result = percentile(values, q)
    assert result is not None
    assert min(values) <= result <= max(values)


def test_waits_and_completion_times() -> None:
    # waits sorted [0, 0, 10, 14]: mean 6, p95 at rank 2.85 -> 10 + 0.85 x 4 = 13.4, max 14
    waits = wait_stats(JOBS)
    assert (waits.count, waits.mean_s, waits.p50_s, waits.max_s) == (4, 6.0, 5.0, 14.0)
    assert waits.p95_s == pytest.approx(13.4)
    # JCTs [5, 10, 20, 24]: mean 14.75
    assert completion_stats(JOBS).mean_s == 14.75
    assert wait_stats([]) == Stats(0, None, None, None, None)


def test_waits_by_size_class() -> None:
    assert [size_class(g) for g in (0, 1, 2, 8, 9, 32, 33, 128)] == [
        None, "1", "2-8", "2-8", "9-32", "9-32", "33+", "33+"
    ]  # fmt: skip
    by_class = wait_stats_by_class([*JOBS, CompletedJob("cpu", "q", 0, 0, 99, 100)])
    assert list(by_class) == ["1", "2-8", "9-32", "33+"]
    # class 1: waits [0, 14]: mean 7, p95 at rank 0.95 -> 13.3
    assert by_class["1"].mean_s == 7
    assert by_class["1"].p95_s == pytest.approx(13.3)
    assert (by_class["2-8"].count, by_class["2-8"].max_s) == (1, 0)
    assert (by_class["9-32"].count, by_class["9-32"].max_s) == (1, 10)
    assert by_class["33+"] == Stats(0, None, None, None, None)  # the CPU-only job is in no class


def test_starvation_uses_the_largest_class_present() -> None:
    assert largest_gang_wait_max(JOBS) == ("9-32", 10)
    big = CompletedJob("E", "q", 64, 0, 500, 600)
    assert largest_gang_wait_max([*JOBS, big]) == ("33+", 500)
    assert largest_gang_wait_max([]) == (None, None)


def test_leaf_span_excess_counts_only_multi_node_gangs_with_figures() -> None:
    # Only B counts (A is one pod; C, D have no figures): 2 - 1 = 1.
    assert leaf_span_excess_mean(JOBS) == 1
    wide = CompletedJob("F", "q", 32, 0, 0, 1, leaves_spanned=1, min_leaves=1)
    assert leaf_span_excess_mean([*JOBS, wide]) == 0.5
    assert leaf_span_excess_mean(JOBS[2:]) is None


def test_jain_index() -> None:
    assert jain_index([1, 1, 1]) == 1
    assert jain_index([1, 0]) == 0.5  # one takes all: 1/n
    assert jain_index([0.5, 1]) == pytest.approx(2.25 / 2.5)
    assert jain_index([0, 0]) == 1
    assert jain_index([]) is None


# Queue shares:
#   [0, 10):  a 4/8 with demand 10 (0.5), b 8/8 (1.0), c no demand (left out) -> J = 0.9
#   [10, 20): a 8/8, b 8/8 -> J = 1
#   [20, 30): nobody has demand -> not counted
#   [30, 40): a has demand but deserved 0 -> undefined ratio, not counted
SNAPSHOTS = [
    QueueSnapshot(
        0,
        {
            "a": QueueShare(allocated=4, deserved=8, demand=10),
            "b": QueueShare(allocated=8, deserved=8, demand=8),
            "c": QueueShare(allocated=0, deserved=0, demand=0),
        },
    ),
    QueueSnapshot(10, {"a": QueueShare(8, 8, 8), "b": QueueShare(8, 8, 8)}),
    QueueSnapshot(20, {"a": QueueShare(0, 0, 0), "b": QueueShare(0, 0, 0)}),
    QueueSnapshot(30, {"a": QueueShare(0, 0, 4)}),
]


def test_jain_fairness_is_time_weighted_over_queues_with_demand() -> None:
    assert jain_fairness(SNAPSHOTS, end_s=40) == pytest.approx((0.9 * 10 + 1 * 10) / 20)
    assert jain_fairness(SNAPSHOTS[:1], end_s=5) == pytest.approx(0.9)
    assert jain_fairness(SNAPSHOTS[2:], end_s=40) is None


def test_queue_share_stats() -> None:
    stats = queue_share_stats(SNAPSHOTS, end_s=40)
    # a: demand on [0,20) and [30,40) = 30 s; ratio defined on [0,20): mean 0.75,
    # below 90% of its share for 10 of those 20 s.
    assert stats["a"] == QueueShareStats(demand_time_s=30, mean_ratio=0.75, below_fraction=0.5)
    assert stats["b"] == QueueShareStats(demand_time_s=20, mean_ratio=1.0, below_fraction=0.0)
    assert "c" not in stats


def test_fragmentation() -> None:
    nodes = [
        NodeGpus("L1", 8, 8),
        NodeGpus("L1", 8, 3),  # partly used: its 3 free GPUs are stranded
        NodeGpus("L2", 8, 8),
        NodeGpus("L2", 8, 0),
        NodeGpus("L3", 8, 8),  # an untouched leaf: nothing stranded
    ]
    # free 27; node-stranded 3; leaf-stranded: L1 11 + L2 8 = 19
    assert fragmentation(nodes) == Fragmentation(27, 3, 19)


def test_summary() -> None:
    result = summary(JOBS, total_gpus=16, snapshots=SNAPSHOTS)
    assert result == {
        "jobs": 4,
        "gpu_utilization": pytest.approx(215 / 480),
        "wait_mean_s": 6.0,
        "wait_p95_s": pytest.approx(13.4),
        "wait_max_s": 14.0,
        "jct_mean_s": 14.75,
        "largest_gang_class": "9-32",
        "largest_gang_wait_max_s": 10.0,
        # window [0, 30]: [0,10) J=0.9, [10,20) J=1, rest not counted
        "jain_fairness": pytest.approx(0.95),
        "leaf_span_excess_mean": 1.0,
    }
    assert summary([], total_gpus=16)["gpu_utilization"] is None


def test_work_weighted_wait_weighs_by_gpus_times_run_time() -> None:
    """A (1 GPU, runs 100 s, waited 10 s) and B (8 GPUs, runs 100 s, no wait): 1000 / 900."""
    a = CompletedJob(id="a", queue="q", gpus=1, submit_s=0, start_s=10, end_s=110)
    b = CompletedJob(id="b", queue="q", gpus=8, submit_s=0, start_s=0, end_s=100)
    assert work_weighted_wait([a, b]) == pytest.approx(1000 / 900)
    assert work_weighted_wait([]) is None
