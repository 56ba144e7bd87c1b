"""`phalanx.sim.churn` on a hand-worked reclaim (the case of `test_engine`)."""

from __future__ import annotations

from sim_builders import cluster, job

from phalanx.core import GPU
from phalanx.sim.churn import replay, report
from phalanx.sim.policies import get_policy
from phalanx.sim.queues import QueueSpec


def test_one_useful_reclaim() -> None:
    """qb's b1 and b2 (8 GPUs, 1,000 s) borrow qa's node from 0; qa's a1 arrives at 100 and
    reclaims one of them, which had run 100 s; a1 starts at that instant (100)."""
    queues = [QueueSpec(name="qa", guarantee={GPU: 8}), QueueSpec(name="qb", guarantee={GPU: 8})]
    jobs = [job("b1", 0, 8, 1000, "qb"), job("b2", 0, 8, 1000, "qb"), job("a1", 100, 8, 50, "qa")]
    result, churn = replay(jobs, cluster(2), queues, get_policy("phalanx"), cycle_interval_s=0)
    assert churn.reclaimer == ["sim/a1"]
    assert churn.ran_s == [100.0]
    assert churn.at == [100.0]
    lines = report(result, churn)
    assert "reclaims whose gang started at that instant: 1 of 1 (100%)" in lines
    assert "most reclaims for one gang: 1; most evictions of one gang: 1" in lines
