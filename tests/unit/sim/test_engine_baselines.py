"""The pod baseline's deadlock, and determinism of whole replays for a seed."""

from __future__ import annotations

import random

import pytest
from sim_builders import cluster, job

from phalanx.sim.engine import simulate
from phalanx.sim.podsched import RENDEZVOUS_TIMEOUT_S
from phalanx.sim.policies import POLICIES, get_policy
from phalanx.sim.queues import QueueSpec, single_queue
from phalanx.sim.report import TIMING_KEYS, summarize

GPU = "nvidia.com/gpu"


def _two_gangs_two_nodes() -> list:
    """Two 16-GPU jobs (two 8-GPU pods each) submitted together on two 8-GPU nodes."""
    return [job("a", 0, 16, 100), job("b", 0, 16, 100)]


def test_pod_baseline_deadlocks_and_reports_deadlocked_gpu_hours() -> None:
    """Their pods interleave (a-0, b-0, a-1, b-1): each job gets one node and waits for the
    other forever, until the rendezvous timeout deletes both. 16 GPUs are held idle for at
    least the timeout; both jobs still finish in the end (after retries)."""
    result = simulate(_two_gangs_two_nodes(), cluster(2), single_queue(), get_policy("pod"))
    summary = summarize(result)
    assert summary["deadlocked_gpu_hours"] >= 16 * RENDEZVOUS_TIMEOUT_S / 3600
    assert result.rendezvous_timeouts >= 2
    assert summary["job_count"] == 2 and result.unfinished == 0
    assert min(j.start_s for j in result.completed) > RENDEZVOUS_TIMEOUT_S


@pytest.mark.parametrize("policy", ["fifo-gang", "volcano", "phalanx"])
def test_gang_policies_never_deadlock(policy: str) -> None:
    """All-or-nothing: a runs 0..100 on both nodes, b 100..200; nothing is ever held idle."""
    result = simulate(_two_gangs_two_nodes(), cluster(2), single_queue(), get_policy(policy))
    summary = summarize(result)
    assert summary["deadlocked_gpu_hours"] == 0
    assert sorted((j.start_s, j.end_s) for j in result.completed) == [(0, 100), (100, 200)]


def _random_trace(seed: int, count: int = 80) -> list:
    """A busy synthetic trace on 4 queues: mostly small jobs, some multi-node gangs."""
    rng = random.Random(seed)
    jobs = []
    t = 0.0
    for i in range(count):
        t += rng.expovariate(1 / 300)
        gpus = rng.choice([1, 1, 1, 2, 4, 8, 8, 16, 32])
        jobs.append(job(f"j{i}", round(t), gpus, rng.uniform(60, 4 * 3600), f"q{i % 4}"))
    return jobs


def _queues() -> list[QueueSpec]:
    return [QueueSpec(name=f"q{k}", weight=k + 1, guarantee={GPU: 8 * k}) for k in range(4)]


def _figures(policy: str, seed: int) -> dict:
    result = simulate(_random_trace(3), cluster(8), _queues(), get_policy(policy), seed=seed)
    summary = summarize(result, trace="synthetic")
    for key in TIMING_KEYS:
        summary.pop(key)
    return summary


@pytest.mark.parametrize("policy", list(POLICIES))
def test_same_seed_gives_identical_figures(policy: str) -> None:
    first = _figures(policy, seed=11)
    assert first["job_count"] == 80
    assert _figures(policy, seed=11) == first


def test_leaf_span_is_recorded_against_the_minimum() -> None:
    """Eight 4-node leaves... here two leaves of four nodes: a 64-GPU gang (8 pods) needs both
    leaves (minimum 2), a 32-GPU gang fits one leaf (minimum 1); the core places both
    minimally, so the excess is 0."""
    jobs = [job("wide", 0, 64, 10), job("leafy", 20, 32, 10)]
    result = simulate(jobs, cluster(8), single_queue(), get_policy("phalanx"))
    spans = {j.id: (j.leaves_spanned, j.min_leaves) for j in result.completed}
    assert spans == {"wide": (2, 2), "leafy": (1, 1)}
    assert summarize(result)["leaf_span_excess_mean"] == 0
