"""Reclaim between queues of different priority.

A queue of higher priority is served first (PRODUCT.md §4, "Order"): what reclaim frees of it
for a queue of lower priority goes to its own waiting gangs first, the evicted one among them,
and reclaim evicts again, for ever. A Philly replay with one queue served first
(`phalanx.sim.sharefloor`, eviction on) evicted the same two gangs 25 times in four minutes and
never finished; on the demo cluster the operator reclaimed 638 times in 90 s from a priority-1
queue with four Jobs waiting, for a priority-0 queue's one Job, which never started. So a queue
never reclaims from one of higher priority (`core.reclaim.lenders`). The engine also keeps a gang
evicted at an instant out of that instant's cycles, as the operator's pods come back only after
their eviction is done.
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


def test_a_lower_priority_queue_waits_instead_of_reclaiming() -> None:
    """Two 8-GPU nodes; `hi` (priority 1) and `lo` (priority 0), equal weights. At 0 `hi`
    submits h1 and h2, 8 GPUs and 1,000 s each: `lo` has no demand, so `hi` borrows both nodes.
    At 100 `lo` submits l1 (8 GPUs, 100 s): both queues asking for the cluster, each deserves 8,
    so `hi` borrows 8 and `lo` is owed 8. `hi` is served first: what reclaim freed of it would
    go to its own waiting gangs first (the evicted one among them), and reclaim would evict
    again. So nothing is evicted: l1 waits until h1 and h2 end at 1,000 and runs at the next
    cycle, 1,020..1,120. Before the reclaim guard, the replay did not end: h1 and h2 were
    evicted in turn every cycle and never ran their 1,000 s."""
    queues = [QueueSpec(name="hi", priority=1), QueueSpec(name="lo", priority=0)]
    result = simulate(JOBS, cluster(2), queues, get_policy("phalanx"), cycle_interval_s=60.0)
    assert result.evictions == {}
    got = {j.id: (j.start_s, j.end_s) for j in result.completed}
    assert got == {"h1": (0, 1000), "h2": (0, 1000), "l1": (1020, 1120)}


def test_at_equal_priority_the_owed_queue_reclaims_once() -> None:
    """The same at priority 0 for both: `lo`, below its share, is walked before `hi`. At the
    cycle of 120 reclaim evicts one of `hi`'s gangs — both have run as long, the lower id goes
    first: h1 — and l1 starts on its node in the follow-up cycle at the same instant, 120..220.
    h1 is pending again from the next cycle, 180 (`Replay._snapshot`), but nothing is free until
    l1 ends: it restarts at the cycle of 240 and runs its 1,000 s again, to 1,240."""
    queues = [QueueSpec(name="hi"), QueueSpec(name="lo")]
    result = simulate(JOBS, cluster(2), queues, get_policy("phalanx"), cycle_interval_s=60.0)
    assert result.evictions == {"Reclaimed": 1}
    got = {j.id: (j.start_s, j.end_s) for j in result.completed}
    assert got == {"h1": (240, 1240), "h2": (0, 1000), "l1": (120, 220)}
