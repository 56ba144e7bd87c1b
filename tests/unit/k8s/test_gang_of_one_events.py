"""A pod with no PodGroup (a gang of one: a bare pod, or a pod of a Deployment's ReplicaSet)
has no status of its own to say why it waits, so its Warning Event goes on the pod. Like a
PodGroup's, it goes when the reason turns, not when the numbers in the message move.

Walked: two waiting pods of a Deployment got a `WaitingForReservation` Event each every cycle
(2 s), because the message counts how long they have waited ("waited 3s of its 1d00h starvation
bound", "waited 5s", …): 30 Events in 30 s for two pods. The live message is the pod's
`PodScheduled` condition, rewritten at a bounded rate.
"""

from __future__ import annotations

import asyncio

from phalanx.config import build_config
from phalanx.k8s.scheduler import Scheduler
from tests.unit.k8s.test_records_and_view import group, pod
from tests.unit.k8s.test_scheduler_loop import FakeApi, ListSource

START = 1_767_225_600.0  # 2026-01-01T00:00:00Z, when `run` was bound


def test_a_waiting_pod_without_a_podgroup_gets_one_event_while_its_eta_moves() -> None:
    """Nodes n1 and n2 (8 GPUs each) run the gang `run` (2 pods of 8 GPUs, time limit 600 s,
    bound at START). The bare pod `solo` (8 GPUs, no group) waits for it to end, "expected start
    in 9m" at START + 60, and less at + 70 and + 80 (three Events before the fix): one Event."""
    run = group("run", 2, timeLimitSeconds=600)
    run["status"] = {"phase": "Running", "scheduledAt": "2026-01-01T00:00:00Z"}
    pods = [
        pod("run-0", group="run", node_name="n1", phase="Running"),
        pod("run-1", group="run", node_name="n2", phase="Running"),
        pod("solo"),
    ]
    api = FakeApi()
    clock = [START + 60]
    config = build_config(bind_deadline_s=0.3, metrics_port=0, health_port=0)
    sched = Scheduler(config, api, ListSource(pods, [run]), clock=lambda: clock[0])

    async def cycles() -> None:
        for _ in range(3):
            await sched.cycle()
            await sched.settle()
            clock[0] += 10

    asyncio.run(cycles())
    said = [(reason, message) for name, reason, message in api.events if name == "solo"]
    assert len(said) == 1, said
    reason, message = said[0]
    assert reason == "InsufficientCapacity", said
    assert "expected start in 9m when" in message, message
    assert ("bind", "solo") not in api.calls
