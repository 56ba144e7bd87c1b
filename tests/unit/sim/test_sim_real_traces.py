"""Smoke tests on the real trace files: the loaders agree with the figures in their READMEs.

The files live outside the repository (`../shared/data/traces/`, the same copy in CI); the
tests skip where it is absent. Loading all of Philly takes about half a second.
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

pytestmark = pytest.mark.skipif(not TRACES.is_dir(), reason=f"no trace data at {TRACES}")


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


_OPENB = TRACES / "alibaba-openb-2023"
_no_openb = pytest.mark.skipif(
    not _OPENB.is_dir(), reason="openb is not in the repository (no licence): bench/traces"
)


@_no_openb
def test_openb_pods_match_readme() -> None:
    trace = load_openb_pods(TRACES / "alibaba-openb-2023" / "openb_pod_list_default.csv")
    # 8,152 pods in the file; the 897 Pending ones never ran and are skipped.
    assert trace.skipped == {"never_scheduled": 897}
    assert len(trace.jobs) == 8_152 - 897
    assert max(j.observed_wait_s or 0 for j in trace.jobs) == 14_330
    assert sum(j.truncated for j in trace.jobs) == 5_193  # still Running at trace end


@_no_openb
def test_openb_nodes_match_readme() -> None:
    groups = load_openb_nodes(TRACES / "alibaba-openb-2023" / "openb_node_list_gpu_node.csv")
    assert sum(g.count for g in groups) == 1_213
    assert sum(g.total_gpus for g in groups) == 6_212
    by_model_gpus = Counter[tuple[str, int]]()
    for g in groups:
        by_model_gpus[g.model, g.gpus_per_node] += g.count
    assert by_model_gpus["G2", 8] == 549
    assert by_model_gpus["T4", 2] == 387
    assert by_model_gpus["P100", 2] == 131
    assert by_model_gpus["G3", 8] == 39
