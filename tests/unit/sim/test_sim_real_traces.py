"""Smoke tests on the real trace files: the loaders agree with the figures in their READMEs.

The permissively licensed traces are in the repository (`bench/traces/`), so these run on every
clone. The Alibaba openb trace has no licence and is not copied: its loaders are checked here on
hand-made files in its format (`data/`, see its README). Loading all of Philly takes about half a
second.
"""

from __future__ import annotations

from collections import Counter
from itertools import pairwise
from pathlib import Path

import pytest

from phalanx.sim.queues import queues_for_trace
from phalanx.sim.traces import (
    load_itp,
    load_openb_nodes,
    load_openb_pods,
    load_philly,
    load_philly_vc_sizes,
)

TRACES = Path(__file__).resolve().parents[3] / "bench" / "traces"
SAMPLES = Path(__file__).resolve().parent / "data"


def test_philly_matches_readme() -> None:
    trace = load_philly(TRACES / "philly-pollux" / "philly.csv")
    jobs = trace.jobs
    assert len(jobs) == 82_247
    assert trace.skipped == {}
    assert Counter(j.gpus for j in jobs) == {
        1: 76_627, 2: 1_818, 4: 1_870, 8: 1_643, 12: 7, 16: 199, 24: 7, 32: 67, 64: 6, 128: 3
    }  # fmt: skip
    durations = [j.duration_s for j in jobs]
    assert (min(durations), max(durations)) == (1.0, 4_628_226.0)
    tenants = Counter(j.tenant for j in jobs)
    assert len(tenants) == 15
    assert (tenants["6214e9"], tenants["11cb48"], tenants["e13805"]) == (41_226, 16_091, 374)
    # 2017-09-04 10:30:41 -> 2017-12-22 08:02:11
    assert jobs[0].submit_s == 0.0
    assert jobs[-1].submit_s == 109 * 86400 + (8 * 3600 + 2 * 60 + 11) - (10 * 3600 + 30 * 60 + 41)
    assert all(a.submit_s <= b.submit_s for a, b in pairwise(jobs))


def test_philly_vc_sizes_and_queues_on_medium() -> None:
    sizes = load_philly_vc_sizes(TRACES / "philly-pollux" / "philly_vc.csv")
    assert len(sizes) == 11
    assert sum(sizes.values()) == 352
    trace = load_philly(TRACES / "philly-pollux" / "philly.csv")
    queues = queues_for_trace(trace, 512)
    assert len(queues) == 15  # 11 sized VCs + 4 tiny ones seen only in the jobs
    assert sum(q.guaranteed_gpus for q in queues) == 512
    unsized = [q for q in queues if q.name not in sizes]
    assert {(q.weight, q.guaranteed_gpus) for q in unsized} == {(1, 0.0)}
    assert {q.name: q.guaranteed_gpus for q in queues}["6214e9"] == 93  # 512 x 64/352 = 93.1


@pytest.mark.parametrize(
    ("cluster", "jobs", "multi_node"),
    [(1, 1_595, 43), (2, 5_778, 86), (3, 3_011, 135), (4, 15_802, 442), (5, 3_629, 0)],
)
def test_itp_clusters_match_readme(cluster: int, jobs: int, multi_node: int) -> None:
    trace = load_itp(TRACES / "msr-itp-2021" / f"cluster{cluster:02d}.csv")
    assert len(trace.jobs) == jobs
    assert trace.skipped == {}
    assert sum(1 for j in trace.jobs if j.gpus > 8) == multi_node
    assert {j.gpus for j in trace.jobs} <= {1, 2, 4, 8, 16, 32, 64}


def test_openb_pods_of_the_hand_made_sample() -> None:
    trace = load_openb_pods(SAMPLES / "openb_pod_list_sample.csv")
    # 12 pods; the 2 Pending ones (05, 09) never ran and are skipped.
    assert trace.skipped == {"never_scheduled": 2}
    assert [j.id for j in trace.jobs] == [
        f"sample-pod-{n:02d}" for n in (0, 1, 2, 3, 4, 6, 7, 8, 10, 11)
    ]  # by creation time; 10 and 11 tie at 150 and keep file order
    assert Counter(j.gpus for j in trace.jobs) == {0: 2, 1: 4, 2: 2, 4: 1, 8: 1}
    assert max(j.observed_wait_s or 0 for j in trace.jobs) == 4_000  # pod 06
    assert [j.id for j in trace.jobs if j.truncated] == [
        "sample-pod-02", "sample-pod-06", "sample-pod-07", "sample-pod-11"
    ]  # fmt: skip
    assert [j.id for j in trace.jobs if (j.gpu_milli or 1000) < 1000] == ["sample-pod-01"]
    assert Counter(j.qos for j in trace.jobs) == {"LS": 5, "BE": 2, "Burstable": 2, "Guaranteed": 1}
    big = next(j for j in trace.jobs if j.id == "sample-pod-06")
    assert (big.submit_s, big.duration_s, big.cpu_milli, big.memory_mib) == (
        75.0, 85_925.0, 64_000, 262_144
    )  # fmt: skip
    without_cpu_only = load_openb_pods(
        SAMPLES / "openb_pod_list_sample.csv", include_cpu_only=False
    )
    assert without_cpu_only.skipped == {"never_scheduled": 2, "zero_gpus": 2}
    assert len(without_cpu_only.jobs) == 8


def test_openb_nodes_of_the_hand_made_sample() -> None:
    groups = load_openb_nodes(SAMPLES / "openb_node_list_sample.csv")
    assert sum(g.count for g in groups) == 7
    assert sum(g.total_gpus for g in groups) == 32
    assert [(g.model, g.gpus_per_node, g.cpu_milli, g.count) for g in groups] == [
        ("P100", 2, 64_000, 3),
        ("G2", 8, 96_000, 2),
        ("T4", 2, 96_000, 1),
        ("G2", 8, 128_000, 1),  # same model and GPUs, other CPU: a shape of its own
    ]
    assert groups[0].nodes == ("sample-node-p100-0", "sample-node-p100-1", "sample-node-p100-2")
