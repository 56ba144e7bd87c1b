"""Multi-tenant safety in the adapter, against a fake API: a budget that refuses a needed
reclaim, time limits that delete, fields that cannot be read, a class that does not exist."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from phalanx.k8s.api import ApiError
from phalanx.k8s.records import queue_record
from phalanx.k8s.scheduler import Records
from tests.unit.k8s.test_lifecycle_adapter import cycle, running, scheduler, with_status
from tests.unit.k8s.test_records_and_view import group, pod
from tests.unit.k8s.test_scheduler_loop import FakeApi, ListSource


class BudgetApi(FakeApi):
    """Every eviction refused, as a PodDisruptionBudget with minAvailable 100% does."""

    async def evict(self, namespace: str, pod: str, grace_s: int) -> None:
        self.calls.append(("evict", pod))
        raise ApiError(429, "Cannot evict pod as it would violate the pod's disruption budget.")

    async def event(
        self, involved: Mapping[str, str], reason: str, message: str, kind: str = "Normal"
    ) -> None:
        self.calls.append(("event", reason))
        self.messages = [*getattr(self, "messages", []), message]


def test_a_budget_does_not_stop_a_needed_preemption_and_is_named_once() -> None:
    """`low` (priority 0) fills both nodes; `high` (priority 10, same queue) needs them: the
    budget refuses the evictions, the pods are deleted anyway, one Warning names the budget."""
    api = BudgetApi()
    low = [running(n, "low", node, gpus=8) for n, node in (("a", "n1"), ("b", "n2"))]
    high = [pod("c", group="high", gpus=8), pod("d", group="high", gpus=8)]
    groups = [
        with_status(group("low", 2), phase="Running", scheduledAt="1970-01-01T00:16:00Z"),
        group("high", 2, priorityClassName="urgent"),
    ]
    sched = scheduler(api, [*low, *high], groups)
    sched.source = ClassSource(sched.source, {"urgent": 10})
    cycle(sched)
    assert ("evicted", "Preempted") in api.calls
    assert ("delete", "a") in api.calls and ("delete", "b") in api.calls
    assert api.calls.count(("event", "DisruptionBudget")) == 1
    assert any("disruption budget" in m for m in api.messages)


class ClassSource:
    def __init__(self, inner: ListSource, classes: dict[str, int]) -> None:
        self.inner, self.classes = inner, classes

    def records(self) -> Records:
        r = self.inner.records()
        return Records(r.nodes, r.pods, r.groups, r.queues, self.classes, r.budgets, r.jobs)


def test_a_time_limit_deletes_the_pods_instead_of_evicting_them() -> None:
    api = FakeApi()
    pods = [running("a", "g", "n1"), running("b", "g", "n1")]
    g = with_status(
        group("g", 2, timeLimitSeconds=60), phase="Running", scheduledAt="1970-01-01T00:10:00Z"
    )
    cycle(scheduler(api, pods, [g]))
    assert ("evicted", "TimeLimitExceeded") in api.calls
    assert ("delete", "a") in api.calls and ("evict", "a") not in api.calls


def test_a_podgroup_naming_a_class_that_does_not_exist_waits_invalid() -> None:
    api = FakeApi()
    cycle(scheduler(api, [pod("a", group="g")], [group("g", 1, priorityClassName="nope")]))
    status = api.statuses[-1]
    cond = next(c for c in status["conditions"] if c["type"] == "Scheduled")
    assert cond["reason"] == "Invalid" and "'nope' does not exist" in cond["message"]
    assert ("bind", "a") not in api.calls


def test_a_malformed_quantity_is_invalid_with_the_field_and_value() -> None:
    api = FakeApi()
    body = group("g", 1, minResources={"nvidia.com/gpu": "lots"})
    cycle(scheduler(api, [], [body]))
    cond = next(c for c in api.statuses[-1]["conditions"] if c["type"] == "Scheduled")
    assert cond["reason"] == "Invalid"
    assert "spec.minResources.nvidia.com/gpu" in cond["message"] and "lots" in cond["message"]


class QueueApi(FakeApi):
    async def create_group(self, namespace: str, body: Mapping[str, Any]) -> None:
        self.calls.append(("create-group", body["metadata"]["name"]))

    async def delete_group(self, namespace: str, name: str, uid: str) -> None:
        self.calls.append(("delete-group", name))

    async def patch_queue_status(self, name: str, status: Mapping[str, Any]) -> None:
        self.calls.append(("queue-status", name))
        self.queue_statuses = [*getattr(self, "queue_statuses", []), dict(status)]


def test_a_queue_whose_spec_cannot_be_read_is_not_ready_and_its_gangs_wait_invalid() -> None:
    api = QueueApi()
    sched = scheduler(api, [pod("a", group="g")], [group("g", 1)])
    bad = queue_record(
        {"metadata": {"name": "default"}, "spec": {"guarantee": {"nvidia.com/gpu": "x"}}}
    )
    inner = sched.source.records()
    sched.source = ListSourceOf(
        Records(inner.nodes, inner.pods, inner.groups, [bad], inner.priority_classes)
    )
    cycle(sched)
    ready = next(c for c in api.queue_statuses[-1]["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "False" and "spec.guarantee.nvidia.com/gpu" in ready["message"]
    assert ("bind", "a") not in api.calls
    text = sched.metrics.invalid_objects.labels(kind="Queue")._value.get()
    assert text == 1


class ListSourceOf:
    def __init__(self, records: Records) -> None:
        self._records = records

    def records(self) -> Records:
        return self._records
