"""Reclaim between queues of different priority, replayed as the operator carries it out.

A queue of higher priority is served first (PRODUCT.md §4, "Order") and reclaimed last: a queue
of lower priority owed its share still reclaims from it when it borrows. In the operator the
evicted gang's pods come back only after the eviction is done (terminated, then made again by
their controller), so never in the cycle that first sees the freed capacity, where the gang it
was freed for binds. The engine requeued the victim at the same instant, and in its follow-up
cycle the victim, walked first, took back what was freed, and reclaim evicted again, for ever:
a Philly replay with one queue served first (`phalanx.sim.sharefloor`, eviction on) evicted the
same two gangs 25 times in four minutes and never finished.
"""

from __future__ import annotations

from sim_builders import cluster, job

from phalanx.sim.engine import simulate
from phalanx.sim.policies import get_policy
from phalanx.sim.queues import QueueSpec

JOBS = [
    job("h1", 0, 8, 1000, tenant="hi"),
    job("h2", 0, 8, 1000, tenant="hi"),
    job("l1", 100, 8, 100, tenant="lo"),
]


def test_a_lower_priority_queue_reclaims_once_and_its_gang_runs() -> None:
    """Two 8-GPU nodes; `hi` (priority 1) and `lo` (priority 0), equal weights. At 0 `hi`
    submits h1 and h2, 8 GPUs and 1,000 s each: `lo` has no demand, so `hi` borrows both nodes.
    At 100 `lo` submits l1 (8 GPUs, 100 s): both queues asking for the cluster, each deserves 8,
    so `hi` borrows 8 and `lo` is owed 8. At the cycle of 120 (the first on the 60 s grid after
    100) reclaim evicts one of `hi`'s gangs — both have run as long, the lower id goes first:
    h1 — and l1 starts on its node in the follow-up cycle at the same instant, 120..220. h1 is
    pending again from the next cycle, 180, but nothing is free until l1 ends: it restarts at
    the cycle of 240 and runs its 1,000 s again, to 1,240. One eviction. Before, the replay did
    not end: h1 and h2 were evicted in turn every cycle and never ran their 1,000 s."""
    queues = [QueueSpec(name="hi", priority=1), QueueSpec(name="lo", priority=0)]
    result = simulate(JOBS, cluster(2), queues, get_policy("phalanx"), cycle_interval_s=60.0)
    assert result.evictions == {"Reclaimed": 1}
    got = {j.id: (j.start_s, j.end_s) for j in result.completed}
    assert got == {"h1": (240, 1240), "h2": (0, 1000), "l1": (120, 220)}


def test_at_equal_priority_the_same_reclaim() -> None:
    """The same at priority 0 for both: the same single eviction and the same times."""
    queues = [QueueSpec(name="hi"), QueueSpec(name="lo")]
    result = simulate(JOBS, cluster(2), queues, get_policy("phalanx"), cycle_interval_s=60.0)
    assert result.evictions == {"Reclaimed": 1}
    got = {j.id: (j.start_s, j.end_s) for j in result.completed}
    assert got == {"h1": (240, 1240), "h2": (0, 1000), "l1": (120, 220)}
