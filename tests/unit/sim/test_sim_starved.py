"""`phalanx.sim.starved` on hand-worked cycles: what holds a queue below its share, and how long."""

from __future__ import annotations

from sim_builders import cluster, job, starving_at_limit

from phalanx.sim.policies import get_policy
from phalanx.sim.queues import QueueSpec
from phalanx.sim.starved import replay
from phalanx.sim.traces import TraceJob


def _queues() -> list[QueueSpec]:
    return [QueueSpec(name="qa"), QueueSpec(name="qb", reclaimable=False)]


def _held_by_reservation() -> list[TraceJob]:
    """qb's b0 and b1 on both nodes (until 1,950 and 3,000), its starving b2 (16 GPUs; under
    `starving_at_limit`, the bound at once its 30 min limit) and
    qa's a1 (8 GPUs) arriving at 1,900: the trace of the two tests below."""
    return [
        job("b0", 0, 8, 1950, "qb"),
        job("b1", 0, 8, 3000, "qb"),
        job("b2", 0, 16, 100, "qb"),
        job("a1", 1900, 8, 100, "qa"),
    ]


def test_a_gang_larger_than_what_its_queue_is_owed() -> None:
    """Two 8-GPU nodes. qb's b1 (8 GPUs, 1,000 s) runs from 0; qa's a1 (16 GPUs) arrives at
    100. Demands qa 16, qb 8: shares 8 and 8, so qa (0 of 8) is below 90% of its share from
    100 until b1 ends at 1,000 and a1 starts, 900 s, and its only gang (16 GPUs) is larger
    than the 8 it is owed."""
    jobs = [job("b1", 0, 8, 1000, "qb"), job("a1", 100, 16, 50, "qa")]
    _, starved = replay(jobs, cluster(2), _queues(), get_policy("phalanx"), cycle_interval_s=0)
    assert dict(starved.below_s) == {"qa": 900.0}
    assert dict(starved.why_s["qa"]) == {"no pending gang fits what it is owed": 900.0}


def test_a_gang_held_back_by_another_queues_reservation() -> None:
    """Two 8-GPU nodes (one leaf), both running qb's gangs from 0: b0 until 1,950 and b1
    until 3,000 (time limits 1 h). qb's b2 (16 GPUs, 100 s, limit 30 min) waits from 0 and
    has starved by 1,800; qa's a1 (8 GPUs, 100 s, limit 30 min) arrives at 1,900. Demands qa
    8, qb 32: shares 8 and 8, so qa is below its share from 1,900 until a1 starts.

    - 1,900–1,950: no GPU free: `InsufficientCapacity`;
    - 1,950–3,000: n01 is free, but b2 holds both nodes from 3,600 (b1's limit) and a1 would
      run until 3,750: `WaitingForReservation`, held by qb, which holds 8 of its 8;
    - 3,000: b1 ends; b2 is not honoured first (16 GPUs, beyond qb's share of 8), so the walk
      serves qa first and a1 starts. Now qb holds 0 of its 8 until 3,100, when a1 ends and b2
      starts, and its only gang (16 GPUs) is larger than the 8 it is owed."""
    _, starved = replay(
        _held_by_reservation(), cluster(2), _queues(), starving_at_limit(), cycle_interval_s=0
    )
    assert dict(starved.below_s) == {"qa": 1100.0, "qb": 100.0}
    assert dict(starved.why_s["qa"]) == {
        "InsufficientCapacity (2-8 GPUs)": 50.0,
        "WaitingForReservation (2-8 GPUs) held by in share": 1050.0,
    }
    assert dict(starved.why_s["qb"]) == {"no pending gang fits what it is owed": 100.0}


def test_whole_nodes_free_while_a_queue_is_short_and_who_holds_them() -> None:
    """The second test's trace, split by the whole nodes free after each cycle's starts:

    - qa, 1,900–1,950: both nodes busy (b0 until 1,950, b1 until 3,000): no whole node free;
    - qa, 1,950–3,000: n01 free since b0 ended, held by b2's reservation from 3,600 (b1's
      1 h limit), due 1,650 s … 600 s ahead: "< 1 h";
    - qb, 3,000–3,100: a1 started on one node at 3,000, the other is free and held by b2 from
      4,800 (a1's 30 min limit), 1,800 s ahead: "< 1 h"."""
    _, starved = replay(
        _held_by_reservation(), cluster(2), _queues(), starving_at_limit(), cycle_interval_s=0
    )
    assert dict(starved.idle_s["qa"]) == {
        "no whole node free": 50.0,
        "whole nodes free, all reserved, soonest due in < 1 h": 1050.0,
    }
    assert dict(starved.idle_s["qb"]) == {
        "whole nodes free, all reserved, soonest due in < 1 h": 100.0
    }


def test_a_whole_node_free_that_no_reservation_holds() -> None:
    """The first test's trace: qb's b1 runs on one of two nodes from 0 to 1,000; qa's a1
    (16 GPUs) has waited since 100, not yet starving (its bound is its 50 s limit rounded up
    to 30 min: it starves at 1,900), so it holds no reservation and the other node stays free,
    held by nobody, for qa's 900 s below its share."""
    jobs = [job("b1", 0, 8, 1000, "qb"), job("a1", 100, 16, 50, "qa")]
    _, starved = replay(jobs, cluster(2), _queues(), get_policy("phalanx"), cycle_interval_s=0)
    assert dict(starved.idle_s["qa"]) == {"a whole node free that no reservation holds": 900.0}
