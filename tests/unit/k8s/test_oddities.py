"""Inputs outside the contract (issue 15, "Bad input"): a pod phase nobody defined, a PodGroup
status edited by hand, an owner whose conditions cannot be read. Each is handled by re-deciding
from the cluster, logged once while it lasts, and never stops the loop."""

from __future__ import annotations

import asyncio
import logging

import pytest

from phalanx.config import build_config
from phalanx.k8s.scheduler import Scheduler
from tests.unit.k8s.test_records_and_view import group, pod
from tests.unit.k8s.test_scheduler_loop import FakeApi, ListSource


def test_odd_inputs_are_logged_once_and_the_gangs_still_decided(
    caplog: pytest.LogCaptureFixture,
) -> None:
    odd_pod = pod("a", group="g", gpus=4, node_name="n1", phase="Unknown")
    job_owned = pod("b", group="h", gpus=4)
    job_owned["metadata"]["ownerReferences"] = [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "gone", "uid": "j", "controller": True}
    ]
    hand_edited = {**group("h", 1), "status": {"phase": "Bogus", "placement": {"pods": "x"}}}
    api = FakeApi()
    config = build_config(bind_deadline_s=0.3, metrics_port=0, health_port=0)
    source = ListSource([odd_pod, job_owned], [group("g", 1), hand_edited])
    sched = Scheduler(config, api, source, clock=lambda: 1000.0)

    async def cycles(n: int) -> None:
        for _ in range(n):
            await sched.cycle()
            await sched.settle()

    with caplog.at_level(logging.WARNING, logger="phalanx.scheduler"):
        asyncio.run(cycles(3))
    warnings = [r.getMessage() for r in caplog.records if r.name == "phalanx.scheduler"]
    expected = (
        "phase 'Unknown' is not a pod phase; counted as bound",
        "status.phase 'Bogus' is not one of the contract's",
        "status.placement is malformed",
        "Job gone (owner of b) is not readable",
    )
    for text in expected:
        assert sum(text in w for w in warnings) == 1, (text, warnings)
    assert ("bind", "b") in api.calls, "the hand-edited gang is decided again and placed"
