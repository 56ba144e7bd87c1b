"""A gang of bare pods that is evicted: its mark counts the pods nothing makes again, and its
`WaitingForPods` says so until it starts again. Walked on the demo cluster: the demo's bare
`pair` was reclaimed and stayed `Pending` "0 of 2 pods exist" for good, reading as if its pods
were on their way."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from phalanx.config import build_config
from phalanx.k8s.scheduler import Scheduler
from phalanx.k8s.status import condition
from tests.unit.k8s.test_autogang_adapter import last_waiting_message
from tests.unit.k8s.test_records_and_view import group, pod
from tests.unit.k8s.test_scheduler_loop import FakeApi, ListSource


def _evict(pods: list[dict[str, Any]]) -> FakeApi:
    """Reclaim `ns/g` (its pods bound on n1) through the scheduler's own eviction path."""
    api = FakeApi()
    cfg = build_config(metrics_port=0, health_port=0)
    sched = Scheduler(cfg, api, ListSource(pods, [group("g", 2)]), clock=lambda: 1.0)
    result: Any = SimpleNamespace(
        evictions=[SimpleNamespace(gang="ns/g", reason="Reclaimed", message="test")]
    )

    async def go() -> None:
        view = sched._view(sched.source.records(), 1.0, set())
        sched._evict_decided(result, view, set())
        await sched.settle()

    asyncio.run(asyncio.wait_for(go(), timeout=5))
    return api


def _owned(name: str) -> dict[str, Any]:
    body = pod(name, group="g", gpus=4, node_name="n1", phase="Running")
    body["metadata"]["ownerReferences"] = [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "job-j", "controller": True}
    ]
    return body


def test_the_eviction_mark_counts_the_members_no_controller_makes_again() -> None:
    bare = _evict([pod(n, group="g", gpus=4, node_name="n1", phase="Running") for n in "ab"])
    mark = next(s for s in bare.statuses if s.get("phase") == "Pending")
    assert mark["evictedBarePods"] == 2, mark
    assert sorted(c[1] for c in bare.calls if c[0] == "evict") == ["a", "b"]

    owned = _evict([_owned("a"), _owned("b")])
    mark = next(s for s in owned.statuses if s.get("phase") == "Pending")
    assert mark["evictedBarePods"] is None, "a Job makes its pods again: nothing to say"


def _waiting_message(status: dict[str, Any], pods: list[dict[str, Any]]) -> str:
    api = FakeApi()
    g = {**group("g", 2), "status": status}
    sched = Scheduler(
        build_config(metrics_port=0, health_port=0),
        api,
        ListSource(pods, [g]),
        clock=lambda: 1000.0,
    )

    async def go() -> None:
        await sched.cycle()
        await sched.settle()

    asyncio.run(go())
    return last_waiting_message(api)


def _evicted_status(**extra: Any) -> dict[str, Any]:
    """Reclaimed at t = 820 s, 3 minutes before the cycle at 1000 s."""
    mark = condition({}, "Evicted", "True", "Reclaimed", "reclaimed for queue research", 820.0)
    return {"phase": "Pending", "conditions": [mark], **extra}


def test_a_gang_whose_bare_pods_were_evicted_says_nothing_makes_them_again() -> None:
    message = _waiting_message(_evicted_status(evictedBarePods=2), [])
    assert message == (
        "0 of 2 pods exist; its eviction (Reclaimed) 3m ago deleted 2 pods that no controller "
        "makes again: apply them again to run the gang (pods under a Job, JobSet or other "
        "controller are made again by it)"
    ), message
    one_back = _waiting_message(_evicted_status(evictedBarePods=2), [pod("a", group="g")])
    assert one_back.startswith("1 of 2 pods exist; its eviction (Reclaimed) 3m ago"), one_back


def test_without_bare_pods_or_once_started_again_it_says_only_the_count() -> None:
    assert _waiting_message(_evicted_status(), []) == "0 of 2 pods exist"
    again = _evicted_status(evictedBarePods=2, scheduledAt="1970-01-01T00:15:00Z")
    assert _waiting_message(again, []) == "0 of 2 pods exist"


def test_its_pods_applied_again_start_it_and_the_count_goes() -> None:
    """Both pods applied again: the gang is placed, and its decision record removes the count
    (it described the wait, which is over)."""
    api = FakeApi()
    g = {**group("g", 2), "status": _evicted_status(evictedBarePods=2)}
    pods = [pod(n, group="g", gpus=4) for n in "ab"]
    sched = Scheduler(
        build_config(metrics_port=0, health_port=0), api, ListSource(pods, [g]), clock=lambda: 1e3
    )

    async def go() -> None:
        await sched.cycle()
        await sched.settle()

    asyncio.run(go())
    record = next(s for s in api.statuses if s.get("phase") == "Binding")
    assert "evictedBarePods" in record and record["evictedBarePods"] is None, record
    assert sorted(c[1] for c in api.calls if c[0] == "bind") == ["a", "b"]


def test_a_failed_bare_member_left_by_its_eviction_is_counted() -> None:
    """The member that failed is still there, `Failed`, beside the one the eviction deleted."""
    failed = pod("b", group="g", gpus=4, node_name="n1", phase="Failed")
    message = _waiting_message(_evicted_status(evictedBarePods=1), [failed])
    assert message.startswith(
        "0 of 2 pods exist; its eviction (Reclaimed) 3m ago deleted 1 pod and left 1 failed pod "
        "that no controller makes again: delete the failed pod and apply them again"
    ), message


def test_the_same_eviction_issued_again_keeps_the_count_of_its_first_issue() -> None:
    """Issued again after a restart, one of its two bare members already gone: still 2 deleted.
    A new eviction (after the gang started again) counts afresh."""
    from phalanx.k8s.status import evicted_mark, merge_patch

    first = merge_patch({"phase": "Running"}, evicted_mark({}, "Reclaimed", "r", 100.0, 2))
    assert first["evictedBarePods"] == 2
    again = evicted_mark(first, "Reclaimed", "r", 170.0, bare_pods=1)
    assert again["evictedBarePods"] == 2, again
    started = {**first, "scheduledAt": "1970-01-01T00:05:00Z"}
    assert evicted_mark(started, "Reclaimed", "r", 400.0, bare_pods=1)["evictedBarePods"] == 1
