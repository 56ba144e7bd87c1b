"""What the operator writes into Queue status: the fair-share factor beside the usage it comes
from. Usage is persisted every `usage_persist_interval_s` (30 s), not every cycle; a factor
written every cycle would sit beside an older usage (`phalanx share` showed FAIRSHARE 0.5 next
to USAGE 0), so the factor is written with the usage."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from phalanx.config import build_config
from phalanx.k8s.scheduler import Scheduler
from tests.unit.k8s.test_records_and_view import group, pod
from tests.unit.k8s.test_scheduler_loop import FakeApi, ListSource


class QueueStatusApi(FakeApi):
    def __init__(self) -> None:
        super().__init__()
        self.queue_patches: list[dict[str, Any]] = []

    async def create_group(self, namespace: str, body: Mapping[str, Any]) -> None:
        pass

    async def delete_group(self, namespace: str, name: str, uid: str) -> None:
        pass

    async def patch_queue_status(self, name: str, status: Mapping[str, Any]) -> None:
        self.queue_patches.append({"name": name, **status})


def test_the_fair_share_factor_is_written_with_the_usage_it_comes_from() -> None:
    # One 16-GPU gang running in `default` (the only queue, so all usage is its own).
    running = [
        pod(n, group="g", node_name=node, phase="Running") for n, node in (("a", "n1"), ("b", "n2"))
    ]
    api = QueueStatusApi()
    now = [1000.0]
    cfg = build_config(metrics_port=0, health_port=0, usage_persist_interval_s=30.0)
    sched = Scheduler(cfg, api, ListSource(running, [group("g", 2)]), clock=lambda: now[0])

    def cycle_at(t: float) -> None:
        now[0] = t

        async def one() -> None:
            await sched.cycle()
            await sched.settle()

        asyncio.run(one())

    cycle_at(1000.0)  # first cycle: no usage yet, the factor of no usage
    (first,) = api.queue_patches
    assert (first["usage"], first["fairShare"]) == (0.0, 1.0)
    cycle_at(1010.0)  # 160 GPU-seconds used, but usage is not persisted for another 20 s
    assert sched.usage["default"] > 150
    assert all("fairShare" not in p and "usage" not in p for p in api.queue_patches[1:])
    cycle_at(1031.0)  # persisted: usage and its factor together
    last = api.queue_patches[-1]
    assert last["usage"] > 400
    assert last["fairShare"] == 0.5  # all the usage is its own, all the weight too: 2^(-1/1)
