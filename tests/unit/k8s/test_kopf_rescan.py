"""Workload kinds installed after start are watched: kopf's rescan of their group is run again
every interval while it does not serve them (`k8s/kopf_rescan.py`)."""

from __future__ import annotations

import asyncio
import inspect
from dataclasses import dataclass, field
from typing import Any

import pytest

from phalanx.k8s.kopf_rescan import rescan_unserved, unserved_groups
from phalanx.k8s.workload_records import WATCHED


@dataclass(frozen=True)
class Resource:
    group: str
    plural: str


@dataclass
class Insights:
    indexed_resources: set[Resource] = field(default_factory=set)
    ready_resources: asyncio.Event = field(default_factory=asyncio.Event)


def test_the_groups_of_unserved_kinds_are_named_once_each() -> None:
    served = [Resource("jobset.x-k8s.io", "jobsets"), Resource("kubeflow.org", "mpijobs")]
    assert unserved_groups(WATCHED, served) == [
        "kubeflow.org",  # pytorchjobs
        "leaderworkerset.x-k8s.io",
        "ray.io",
        "trainer.kubeflow.org",
    ]
    assert unserved_groups([], served) == []


def test_kopfs_rescan_takes_what_we_pass() -> None:
    """The private kopf function called: a kopf that changed it fails here, not in a cluster."""
    from kopf._core.reactor.observation import process_discovered_resource_event

    params = inspect.signature(process_discovered_resource_event).parameters
    assert {"raw_event", "settings", "registry", "insights"} <= set(params)


def test_unserved_groups_are_rescanned_until_served(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The kind appears after the second rescan (its CRD published in discovery late): rescans
    stop for its group, go on for the group still missing; the kind is said watched once (a
    group with another kind still missing said it again at every rescan, walked)."""
    insights = Insights()
    calls: list[str] = []

    async def rescan(*, raw_event: Any, settings: Any, registry: Any, insights: Any) -> None:
        group = raw_event["object"]["spec"]["group"]
        calls.append(group)
        if group == "kubeflow.org" and calls.count(group) == 2:
            insights.indexed_resources.add(Resource("kubeflow.org", "pytorchjobs"))

    from kopf._core.reactor import observation

    monkeypatch.setattr(observation, "process_discovered_resource_event", rescan)
    wanted = [("kubeflow.org", "pytorchjobs"), ("ray.io", "rayjobs"), ("ray.io", "rayclusters")]
    insights.indexed_resources.add(Resource("ray.io", "rayclusters"))
    caplog.set_level("INFO", logger="phalanx.kopf")

    async def go() -> None:
        insights.ready_resources.set()
        task = asyncio.create_task(rescan_unserved(wanted, None, None, insights, interval_s=0.01))
        while calls.count("ray.io") < 4:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())
    assert calls.count("kubeflow.org") == 2, calls
    said = [
        r.getMessage() for r in caplog.records if "now (installed after start)" in r.getMessage()
    ]
    assert said == ["watching pytorchjobs.kubeflow.org now (installed after start)"], said
