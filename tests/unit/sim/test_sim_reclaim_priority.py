"""Reclaim and queue priority: a queue never reclaims from a queue of higher priority.

A higher-priority queue is served first (PRODUCT.md §4, "Order"), so what reclaim frees of it
for a lower-priority queue goes back to it the next cycle: the evicted gang is pending again in
the queue walked first, and it fits exactly where it ran. Found replaying Philly with one queue
served first (`phalanx.sim.sharefloor` with eviction on): `6c71a0` reclaimed the same two 4-GPU
gangs of `ee9e8c` 25 times in four minutes, each eviction throwing the run away, and its own gang
never started; the replay spent hours in that loop.
"""

from __future__ import annotations

from sim_builders import cluster, job

from phalanx.sim.engine import simulate
from phalanx.sim.policies import get_policy
from phalanx.sim.queues import QueueSpec


def test_a_lower_priority_queue_waits_instead_of_reclaiming_in_a_loop() -> None:
    """Two 8-GPU nodes; `hi` (priority 1) and `lo` (priority 0), equal weights. At 0 `hi`
    submits h1 and h2, 8 GPUs and 1,000 s each: `lo` has no demand, so `hi` borrows both nodes.
    At 100 `lo` submits l1 (8 GPUs, 100 s): with both queues asking for the cluster each
    deserves 8, so `hi` borrows 8 and `lo` is owed 8. Reclaiming h1 or h2 would free a node
    that `hi`, walked first, takes back for its evicted gang the next cycle. So nothing is
    evicted: l1 waits until h1 and h2 end at 1,000 and runs 1,000..1,100; h1 and h2 run once,
    0..1,000. Before the guard, the replay evicted `hi`'s gangs cycle after cycle (the engine
    re-runs a cycle up to three times at an instant after evictions) and l1 still started only
    at 1,000."""
    queues = [QueueSpec(name="hi", priority=1), QueueSpec(name="lo", priority=0)]
    jobs = [
        job("h1", 0, 8, 1000, tenant="hi"),
        job("h2", 0, 8, 1000, tenant="hi"),
        job("l1", 100, 8, 100, tenant="lo"),
    ]
    result = simulate(jobs, cluster(2), queues, get_policy("phalanx"), cycle_interval_s=60.0)
    assert result.evictions == {}
    got = {j.id: (j.start_s, j.end_s) for j in result.completed}
    assert got == {"h1": (0, 1000), "h2": (0, 1000), "l1": (1020, 1120)}


def test_an_equal_priority_queue_still_reclaims_what_it_is_owed() -> None:
    """The same with both queues at priority 0: `lo`, below its share, is walked before `hi`
    (above it), so the node reclaim frees is l1's. At the cycle of 120 (the first on the 60 s
    grid after its submission at 100) one of `hi`'s gangs is reclaimed, the only eviction, and
    l1 starts on its node in the engine's follow-up cycle at the same instant: 120..220."""
    queues = [QueueSpec(name="hi"), QueueSpec(name="lo")]
    jobs = [
        job("h1", 0, 8, 1000, tenant="hi"),
        job("h2", 0, 8, 1000, tenant="hi"),
        job("l1", 100, 8, 100, tenant="lo"),
    ]
    result = simulate(jobs, cluster(2), queues, get_policy("phalanx"), cycle_interval_s=60.0)
    assert result.evictions == {"Reclaimed": 1}
    got = {j.id: (j.start_s, j.end_s) for j in result.completed}
    assert got["l1"] == (120, 220)
