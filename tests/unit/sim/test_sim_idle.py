"""`phalanx.sim.idle` on hand-worked traces: why GPUs sat idle while gangs waited, and how long."""

from __future__ import annotations

import pytest
from sim_builders import cluster, job, starving_at_limit

from phalanx.sim.idle import (
    FITS,
    FRAGMENTED,
    GPU,
    HELD,
    NOTHING_PENDING,
    TOO_FEW,
    fits,
    replay,
)
from phalanx.sim.policies import get_policy
from phalanx.sim.queues import QueueSpec
from phalanx.sim.traces import TraceJob


def _drain() -> list[TraceJob]:
    """Two 8-GPU nodes, one queue. b0 (8 GPUs, until 1,950) and b1 (8 GPUs, until 3,000)
    start at 0; b2 (16 GPUs, 100 s, limit 30 min) waits from 0; a1 (8 GPUs) arrives at 4,000,
    the end of the arrival window."""
    return [
        job("b0", 0, 8, 1950),
        job("b1", 0, 8, 3000),
        job("b2", 0, 16, 100),
        job("a1", 4000, 8, 100),
    ]


def test_a_node_drained_for_a_starving_gang_is_held() -> None:
    """`phalanx`, the bound at once the limit (`starving_at_limit`): b2 starves at 1,800 (its
    30 min limit). At 1,950 b0 ends and n00 is free;
    b2 reserves both nodes from 3,600 (b1's 1 h limit), so n00's 8 GPUs are held until b1
    ends at 3,000 and b2 starts: 8 × 1,050 = 8,400 GPU-s. b2 ends at 3,100 and nothing is
    pending until a1 at 4,000: 16 × 900 = 14,400 GPU-s. Busy: 8 × 1,950 + 8 × 3,000 + 16 ×
    100 = 41,200 of 64,000 GPU-s, so the two add up to all the idle time. The reservation is
    due 1,650 s after 1,950, and no other gang is pending: "due in < 1 h, none fits"."""
    _, idle = replay(_drain(), cluster(2), [], starving_at_limit(), cycle_interval_s=0)
    assert idle.window_s == 4000.0
    assert idle.gpu_s == {
        HELD: 8400.0,
        FITS: 0.0,
        FRAGMENTED: 0.0,
        TOO_FEW: 0.0,
        NOTHING_PENDING: 14400.0,
    }
    assert idle.held_s == {"due in < 1 h, none fits": 8400.0}


def test_the_same_idle_node_without_a_reservation_is_too_few() -> None:
    """`volcano` reserves nothing: the 8 free GPUs of 1,950–3,000 are fewer than b2's 16."""
    _, idle = replay(_drain(), cluster(2), [], get_policy("volcano"), cycle_interval_s=0)
    assert idle.gpu_s[HELD] == 0.0
    assert idle.gpu_s[TOO_FEW] == 8400.0
    assert idle.gpu_s[NOTHING_PENDING] == 14400.0


def test_free_gpus_split_over_nodes_are_fragmented() -> None:
    """Two 8-GPU nodes: x0 (4 GPUs) and x1 (6 GPUs) start at 0 until 1,000 on different
    nodes (6 do not fit beside 4), leaving 4 and 2 free; g (5 GPUs, one pod) arrives at 100
    and fits on neither, though 6 ≥ 5 are free: 6 × 900 GPU-s fragmented until 1,000. The
    window ends at 1,000 with y0's arrival."""
    jobs = [
        job("x0", 0, 4, 1000),
        job("x1", 0, 6, 1000),
        job("g", 100, 5, 50),
        job("y0", 1000, 1, 10),
    ]
    _, idle = replay(jobs, cluster(2), [], get_policy("volcano"), cycle_interval_s=0)
    assert idle.gpu_s[FRAGMENTED] == 6 * 900.0
    assert idle.gpu_s[NOTHING_PENDING] == 6 * 100.0


def test_a_gang_that_fits_but_waits_for_its_queue() -> None:
    """`volcano`, queue qa limited to 8 GPUs: a0 (8 GPUs, until 1,000) and a1 (8 GPUs, from
    0) are both qa's, so a1 waits while the other node's 8 GPUs are free and fit it: 8 ×
    1,000 GPU-s that fit a pending gang the policy left waiting. a1 then runs 1,000–1,100;
    the window ends at 1,100 with z0 (qz) arriving."""
    jobs = [job("a0", 0, 8, 1000, "qa"), job("a1", 0, 8, 100, "qa"), job("z0", 1100, 1, 10, "qz")]
    queues = [QueueSpec(name="qa", limit={GPU: 8}), QueueSpec(name="qz")]
    _, idle = replay(jobs, cluster(2), queues, get_policy("volcano"), cycle_interval_s=0)
    assert idle.gpu_s[FITS] == 8 * 1000.0
    assert idle.gpu_s[NOTHING_PENDING] == 8 * 100.0


@pytest.mark.parametrize(
    ("pods", "free", "expected"),
    [
        ((8, 8), (8, 8, 0), True),
        ((8, 1), (8, 0), False),
        ((5,), (4, 2), False),
        ((2, 2, 2), (4, 2), True),
        ((), (0,), True),
    ],
)
def test_fits_packs_pods_largest_first(
    pods: tuple[int, ...], free: tuple[int, ...], expected: bool
) -> None:
    assert fits(pods, free) is expected
