"""The figures a Queue's status shows (`CycleResult.queues`), for a queue with nothing running.

Fabric: 1 spine × 1 leaf × 2 nodes × 8 GPUs, `now` = 1000.
"""

from __future__ import annotations

from core_builders import DEFAULT_POLICY, fabric, queue, running, snapshot

from phalanx.core import schedule

NOW = 1000.0


def test_a_queue_with_nothing_running_shows_0_gpus_allocated_as_it_shows_0_deserved() -> None:
    """`idle` (guarantee 8) has no gang; `busy` runs one 8-GPU gang. Demand caps `idle`'s
    deserved share at 0, and it holds 0: every figure names the GPUs, 0 included, so `kubectl get
    gq` shows 0 in ALLOCATED as in DESERVED (walked: it showed DESERVED 0 and ALLOCATED blank)."""
    snap = snapshot(
        fabric(1, 1, 2),
        queues=[queue("idle").guarantee(gpu=8), queue("busy")],
        running=[running("job").queue("busy").on("s0-l0-n00").started(900)],
    )
    result = schedule(snap, DEFAULT_POLICY, NOW)
    idle, busy = result.queues["idle"], result.queues["busy"]
    assert (dict(idle.deserved), dict(idle.allocated), dict(idle.borrowed)) == (
        {"nvidia.com/gpu": 0},
        {"nvidia.com/gpu": 0},
        {"nvidia.com/gpu": 0},
    )
    assert busy.allocated["nvidia.com/gpu"] == 8
