"""The scheduling loop against a fake API: the bind protocol's order, retries and rollback.

The real API server tests cover the same promises end to end; these pin down the protocol's
steps exactly, which a real cluster can only show through timing.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

from phalanx.config import build_config
from phalanx.k8s.api import ApiError
from phalanx.k8s.records import group_record, node_record, pod_record, queue_record
from phalanx.k8s.scheduler import Records, Scheduler
from tests.unit.k8s.test_records_and_view import group, node, pod


class FakeApi:
    def __init__(self, failing: set[str] | None = None) -> None:
        self.calls: list[tuple[str, str]] = []
        self.failing = failing or set()
        self.pods: dict[str, dict[str, Any]] = {}
        self.statuses: list[dict[str, Any]] = []
        self.pod_conditions: dict[str, Mapping[str, Any]] = {}
        self.events: list[tuple[str, str, str]] = []

    async def bind(self, namespace: str, pod: str, uid: str, node: str) -> None:
        self.calls.append(("bind", pod))
        if pod in self.failing:
            raise ApiError(500, "injected")

    async def evict(self, namespace: str, pod: str, grace_s: int) -> None:
        self.calls.append(("evict", pod))

    async def read_pod(self, namespace: str, pod: str) -> dict[str, Any]:
        self.calls.append(("read", pod))
        if pod in self.pods:
            raise ApiError(404, "gone")  # deleted: the rollback's wait ends at once
        self.pods[pod] = {
            "metadata": {"name": pod, "uid": "u", "resourceVersion": "1"},
            "spec": {"nodeName": "n1", "containers": []},
        }
        return self.pods[pod]

    async def delete_pod(
        self, namespace: str, pod: str, uid: str | None = None, grace_s: int = 0
    ) -> None:
        self.calls.append(("delete", pod))

    async def create_pod(self, namespace: str, body: Mapping[str, Any]) -> None:
        assert "nodeName" not in body["spec"] and "uid" not in body["metadata"]
        self.calls.append(("create", body["metadata"]["name"]))

    async def patch_group_status(
        self, namespace: str, name: str, status: Mapping[str, Any]
    ) -> None:
        self.calls.append(("status", str(status.get("phase"))))
        self.statuses.append(dict(status))
        if "conditions" in status:
            for c in status["conditions"]:
                if c["type"] == "Evicted" and c["status"] == "True":
                    self.calls.append(("evicted", c["reason"]))

    async def create_group(self, namespace: str, body: Mapping[str, Any]) -> None:
        self.calls.append(("create-group", body["metadata"]["name"]))
        self.made = [*getattr(self, "made", []), dict(body)]

    async def delete_group(self, namespace: str, name: str, uid: str) -> None:
        self.calls.append(("delete-group", name))

    async def patch_workload(
        self, api_version: str, plural: str, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> None:
        spec = patch.get("spec") or {}
        kind = {
            "jobs": "job",
            "jobsets": "jobset",
            "trainjobs": "trainjob",
            "pytorchjobs": "pytorchjob",
            "mpijobs": "mpijob",
            "rayjobs": "rayjob",
            "rayclusters": "raycluster",
        }[plural]
        fields = spec.get("runPolicy") or spec  # a Kubeflow v1 job's sit in its run policy
        if "activeDeadlineSeconds" in fields:
            self.calls.append((f"deadline-{kind}", name))
        else:
            self.calls.append(
                (f"suspend-{kind}" if fields.get("suspend") else f"resume-{kind}", name)
            )
        self.job_patches = [*getattr(self, "job_patches", []), dict(patch)]
        self.patched_paths = [*getattr(self, "patched_paths", []), f"{api_version}/{plural}"]
        if f"patch-{kind}" in self.failing:
            raise ApiError(403, f"forbidden: {plural} patch")

    async def patch_queue_status(self, name: str, status: Mapping[str, Any]) -> None:
        pass

    async def patch_pod_condition(
        self, namespace: str, pod: str, condition: Mapping[str, Any]
    ) -> None:
        self.calls.append(("pod-condition", pod))
        self.pod_conditions[pod] = condition

    async def event(
        self, involved: Mapping[str, str], reason: str, message: str, kind_of_event: str = "Normal"
    ) -> None:
        self.calls.append(("event", reason))
        self.events.append((involved.get("name", ""), reason, message))


class ListSource:
    def __init__(self, pods: list[dict[str, Any]], groups: list[dict[str, Any]]) -> None:
        self._records = Records(
            nodes=[node_record(node("n1")), node_record(node("n2"))],
            pods=[pod_record(p) for p in pods],
            groups=[group_record(g) for g in groups],
            queues=[queue_record({"metadata": {"name": "default"}, "spec": {}})],
            priority_classes={},
        )

    def records(self) -> Records:
        return self._records


class NotLeader:
    def may_act(self) -> bool:
        return False


def run(api: FakeApi, leader: Any = None, deadline: float = 0.3) -> Scheduler:
    source = ListSource([pod("a", group="g"), pod("b", group="g")], [group("g", 2)])
    cfg = build_config(bind_deadline_s=deadline, metrics_port=0, health_port=0)
    sched = Scheduler(cfg, api, source, leader=leader, clock=lambda: 1000.0)

    async def one_cycle() -> None:
        await sched.cycle()
        await sched.settle()

    asyncio.run(one_cycle())
    return sched


def test_the_decision_is_recorded_before_any_bind_and_the_gang_binds_whole() -> None:
    api = FakeApi()
    sched = run(api)
    kinds = [c for c in api.calls if c[0] in ("status", "bind")]
    assert kinds[0] == ("status", "Binding")
    assert sorted(c[1] for c in kinds if c[0] == "bind") == ["a", "b"]
    assert ("status", "Running") in api.calls
    running = next(st for st in api.statuses if st.get("phase") == "Running")
    # Every count is written with the phase, so no refresh of the counts follows at once.
    assert (running["members"], running["bound"], running["running"]) == (2, 2, 0)
    assert "g-g" in sched.refreshed, "the bind's writes restart the drift refresh's clock"
    # Held until the watch shows the pods bound: two 8-GPU pods on the two 8-GPU nodes.
    assert set(sched.assumed) == {"ns/a", "ns/b"}
    assert set(sched.assumed.values()) == {"n1", "n2"}


def test_the_decision_record_drops_what_only_a_waiting_gang_has() -> None:
    """Its queue position and why it waited are stale once it binds; fields it never had are
    not named (a null for an absent field would be a no-op the API server still works through)."""
    waited = {
        **group("g", 2),
        "status": {"phase": "Pending", "queuePosition": 3, "pendingDetail": {"freeGPUs": 0}},
    }
    api = FakeApi()
    source = ListSource([pod("a", group="g"), pod("b", group="g")], [waited])
    cfg = build_config(bind_deadline_s=0.3, metrics_port=0, health_port=0)
    sched = Scheduler(cfg, api, source, clock=lambda: 1000.0)

    async def one_cycle() -> None:
        await sched.cycle()
        await sched.settle()

    asyncio.run(one_cycle())
    record = api.statuses[0]
    assert record["phase"] == "Binding" and record["placement"]["pods"], record
    assert record["queuePosition"] is None and record["pendingDetail"] is None, record
    assert "estimatedStartTime" not in record, record


def test_a_member_that_cannot_bind_by_the_deadline_rolls_the_whole_gang_back() -> None:
    api = FakeApi(failing={"b"})
    sched = run(api)
    binds_of_b = [c for c in api.calls if c == ("bind", "b")]
    assert len(binds_of_b) >= 2, "a failed bind is retried against the held reservation"
    # `a` was bound: it is deleted and, being a bare pod, recreated from its spec.
    assert ("delete", "a") in api.calls and ("create", "a") in api.calls
    assert ("evicted", "BindFailed") in api.calls
    assert ("status", "Running") not in api.calls
    assert sched.assumed == {}


def test_a_replica_that_is_not_leader_never_binds() -> None:
    api = FakeApi()
    run(api, leader=NotLeader())
    assert not [c for c in api.calls if c[0] in ("bind", "status", "evict")]


class GatedApi(FakeApi):
    """Binds of the named pods wait until the test opens the gate."""

    def __init__(self, held: set[str]) -> None:
        super().__init__()
        self.held = held
        self.gate = asyncio.Event()

    async def bind(self, namespace: str, pod: str, uid: str, node: str) -> None:
        if pod in self.held:
            await self.gate.wait()
        await super().bind(namespace, pod, uid, node)


def test_binds_are_pipelined_a_later_cycle_places_new_gangs_and_leaves_the_one_in_flight() -> None:
    api = GatedApi(held={"a", "b"})
    first = [pod("a", group="g", gpus=4), pod("b", group="g", gpus=4)]
    second = [*first, pod("c", group="h", gpus=4), pod("d", group="h", gpus=4)]
    cfg = build_config(bind_deadline_s=5, metrics_port=0, health_port=0)
    sched = Scheduler(cfg, api, ListSource(first, [group("g", 2)]), clock=lambda: 1000.0)

    async def scenario() -> None:
        await asyncio.wait_for(sched.cycle(), timeout=5)  # returns with g's binds held
        await asyncio.sleep(0.05)
        assert set(sched.inflight) == {"g-g"}, "g's binds are held: its task is still running"
        calls_before = len(api.calls)
        # h arrives while g is still binding: the next cycle places h on what g left free.
        sched.source = ListSource(second, [group("g", 2), group("h", 2)])
        await sched.cycle()
        await asyncio.sleep(0.05)
        later = api.calls[calls_before:]
        assert sorted(c[1] for c in later if c[0] == "bind") == ["c", "d"]
        assert not [c for c in later if c[0] in ("delete", "evict", "create")], (
            "the gang in flight looks partly placed to the second cycle, but is not repaired"
        )
        used: dict[str, int] = {}
        for node_name in sched.assumed.values():
            used[node_name] = used.get(node_name, 0) + 4
        assert all(v <= 8 for v in used.values()), f"overcommitted: {used}"
        api.gate.set()
        await sched.settle()

    asyncio.run(scenario())
    assert sorted(c[1] for c in api.calls if c[0] == "bind") == ["a", "b", "c", "d"]
    assert [c for c in api.calls if c[0] == "status"].count(("status", "Running")) == 2
    assert not sched.inflight


class SlowStatusApi(FakeApi):
    """Pending-status patches wait until the test opens the gate (the bind protocol's don't)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()

    async def patch_group_status(
        self, namespace: str, name: str, status: Mapping[str, Any]
    ) -> None:
        if status.get("phase") == "Pending":
            await self.gate.wait()
        await super().patch_group_status(namespace, name, status)


def test_status_writes_do_not_hold_up_the_next_cycle_and_land_before_the_gangs_bind() -> None:
    api = SlowStatusApi()
    gang = [pod("a", group="g"), pod("b", group="g")]
    blocker = pod("x", gpus=8, node_name="n1", phase="Running")
    cfg = build_config(bind_deadline_s=5, metrics_port=0, health_port=0)
    sched = Scheduler(cfg, api, ListSource([*gang, blocker], [group("g", 2)]), clock=lambda: 1.0)

    async def scenario() -> None:
        # g does not fit: its pending status is written in the background (held by the gate).
        await asyncio.wait_for(sched.cycle(), timeout=5)
        assert set(sched.status_writes) == {"g-g"}
        # The blocker ends: the next cycle runs at once and decides to bind g.
        sched.source = ListSource(gang, [group("g", 2)])
        await asyncio.wait_for(sched.cycle(), timeout=5)
        await asyncio.sleep(0.05)
        assert set(sched.inflight) == {"g-g"}
        assert not [c for c in api.calls if c[0] == "bind"], "bound before its status landed"
        api.gate.set()
        await sched.settle()

    asyncio.run(scenario())
    statuses = [c for c in api.calls if c[0] in ("status", "bind")]
    assert statuses[0] == ("status", "Pending"), "the earlier pending status lands first"
    assert statuses[1] == ("status", "Binding")
    assert sorted(c[1] for c in statuses if c[0] == "bind") == ["a", "b"]
    assert statuses[-1] == ("status", "Running")


def test_drifting_figures_wait_longer_while_gangs_are_binding() -> None:
    """A refresh of figures that only drift is an API write competing with binds: while a gang
    is in flight it waits `status_refresh_busy_s`, not `status_refresh_s`; a reason that turns
    is written at once either way."""

    from phalanx.k8s.cluster_view import Gang

    cfg = build_config(
        metrics_port=0, health_port=0, status_refresh_s=0.0, status_refresh_busy_s=100.0
    )
    source = ListSource([], [])
    sched = Scheduler(cfg, FakeApi(), source, clock=lambda: 1000.0)
    body = group("g", 2)
    body["status"] = {"queuePosition": 3}
    rec = group_record(body)
    gang = Gang("ns/g", rec, status=rec.status)

    async def check() -> None:
        sched.refreshed["g-g"] = time.monotonic()
        idle = sched.reporter._status_change(gang, {"queuePosition": 4})
        assert idle is not None, "idle: drifting figures are refreshed after status_refresh_s"
        idle.close()
        sched.refreshed["g-g"] = time.monotonic()
        sched.inflight["ns/other"] = asyncio.create_task(asyncio.sleep(0))
        assert sched.reporter._status_change(gang, {"queuePosition": 5}) is None, (
            "busy: the refresh waits status_refresh_busy_s"
        )
        turned = {
            "queuePosition": 5,
            "conditions": [
                {"type": "Scheduled", "status": "False", "reason": "Unschedulable", "message": ""}
            ],
        }
        write = sched.reporter._status_change(gang, turned)
        assert write is not None, "a reason that turns is written at once, busy or not"
        write.close()
        await sched.inflight.pop("ns/other")

    asyncio.run(check())


def _two_gangs_one_held(busy_s: float, quiet_s: float = 0.0) -> tuple[GatedApi, Scheduler]:
    """g binds at once; h's binds wait for the test's gate (h stays in flight)."""
    api = GatedApi(held={"c", "d"})
    pods = [
        pod("a", group="g", gpus=4),
        pod("b", group="g", gpus=4),
        pod("c", group="h", gpus=4),
        pod("d", group="h", gpus=4),
    ]
    cfg = build_config(
        bind_deadline_s=5,
        metrics_port=0,
        health_port=0,
        status_refresh_busy_s=busy_s,
        status_quiet_s=quiet_s,
    )
    source = ListSource(pods, [group("g", 2), group("h", 2)])
    return api, Scheduler(cfg, api, source, clock=lambda: 1000.0)


def test_running_status_and_event_wait_while_other_gangs_bind_then_are_written() -> None:
    """Binds come before bookkeeping: g, bound whole while h still binds, gets its `Running`
    status and its `Scheduled` Event only once no gang has been in flight for `status_quiet_s`
    (the next gang of a trickle may be about to start), with no cycle needed."""
    api, sched = _two_gangs_one_held(busy_s=100.0, quiet_s=0.3)

    async def scenario() -> None:
        await asyncio.wait_for(sched.cycle(), timeout=5)
        await asyncio.sleep(0.05)
        assert set(sched.inflight) == {"g-h"} and set(sched.deferred) == {"g-g"}
        await asyncio.wait_for(sched.cycle(), timeout=5)  # h is still binding: nothing yet
        await asyncio.sleep(0.05)
        assert ("status", "Running") not in api.calls
        assert ("event", "Scheduled") not in api.calls
        api.gate.set()
        await asyncio.sleep(0.05)  # h ends, the last in flight
        assert not sched.inflight
        assert sched._busy(), "within status_quiet_s of the last bind: busy"
        assert ("status", "Running") not in api.calls, "the reports wait for the quiet period"
        await asyncio.sleep(0.4)  # both reports go once it has passed
        assert not sched._busy()

    asyncio.run(scenario())
    assert [c for c in api.calls if c[0] == "status"].count(("status", "Running")) == 2
    assert [c for c in api.calls if c[0] == "event"].count(("event", "Scheduled")) == 2
    assert not sched.deferred
    running = api.calls.index(("status", "Running"))
    assert api.calls.index(("event", "Scheduled")) > running, "the Event follows the status"


def test_deferred_reports_go_after_status_refresh_busy_s_even_in_a_burst() -> None:
    api, sched = _two_gangs_one_held(busy_s=0.0)

    async def scenario() -> None:
        await asyncio.wait_for(sched.cycle(), timeout=5)
        await asyncio.sleep(0.05)
        assert set(sched.inflight) == {"g-h"}
        await asyncio.wait_for(sched.cycle(), timeout=5)
        await asyncio.sleep(0.05)
        assert ("status", "Running") in api.calls, "waited its limit (0 s): written mid-burst"
        api.gate.set()
        await sched.settle()

    asyncio.run(scenario())


def test_a_deferred_report_lands_before_any_later_write_of_its_gang() -> None:
    """g is evicted while its `Running` write is still deferred: that write goes first, so the
    gang's status ends `Pending`, not `Running`."""
    api, sched = _two_gangs_one_held(busy_s=100.0)

    async def scenario() -> None:
        await asyncio.wait_for(sched.cycle(), timeout=5)
        await asyncio.sleep(0.05)
        gang = sched.deferred["g-g"].gang
        await sched.evictor.evict(gang, "Preempted", "test", sched.assumed)
        api.gate.set()
        await sched.settle()

    asyncio.run(scenario())
    g_statuses = [c for c in api.calls if c[0] == "status"]
    assert g_statuses.index(("status", "Running")) < g_statuses.index(("status", "Pending"))
    assert [c for c in api.calls if c[0] == "status"].count(("status", "Running")) == 2


def test_a_gang_whose_running_report_is_deferred_counts_as_running_to_partial_repair() -> None:
    """Bound whole, its `Running` not yet written, then a member lost: evicted whole as
    `MemberFailed` (what a running gang gets), not rolled back as a failed bind."""
    api, sched = _two_gangs_one_held(busy_s=100.0)

    async def scenario() -> None:
        await asyncio.wait_for(sched.cycle(), timeout=5)
        await asyncio.sleep(0.05)
        assert "g-g" in sched.deferred
        # The watch now shows g's `a` bound and `b` gone: g is partly bound.
        bound_a = pod("a", group="g", gpus=4, node_name=sched.assumed["ns/a"])
        held = [pod("c", group="h", gpus=4), pod("d", group="h", gpus=4)]
        sched.source = ListSource([bound_a, *held], [group("g", 2), group("h", 2)])
        await asyncio.wait_for(sched.cycle(), timeout=5)
        api.gate.set()
        await sched.settle()

    asyncio.run(scenario())
    assert ("evicted", "MemberFailed") in api.calls
    assert ("evicted", "BindFailed") not in api.calls
    assert ("delete", "a") not in api.calls, "not rolled back (deleted and recreated)"


def test_a_gang_bound_whole_does_not_poke_the_loop_a_rolled_back_one_does() -> None:
    """A whole bind changes no capacity the loop did not already count (its members were
    reserved before any write), so it wakes no cycle; a rollback frees capacity, so it does."""
    for failing, pokes in ((set[str](), False), ({"b"}, True)):
        api = FakeApi(failing=failing)
        source = ListSource([pod("a", group="g"), pod("b", group="g")], [group("g", 2)])
        cfg = build_config(bind_deadline_s=0.3, metrics_port=0, health_port=0)
        sched = Scheduler(cfg, api, source, clock=lambda: 1000.0)

        async def scenario(s: Scheduler = sched) -> bool:
            await s.cycle()
            s.wake.clear()
            await s.settle()
            return s.wake.is_set()

        assert asyncio.run(scenario()) is pokes, f"binds failing: {failing or 'none'}"


class BarrierEvictApi(FakeApi):
    """Each eviction waits until `parties` evictions have started: one after another, they
    never would, and the test's deadline fails them."""

    def __init__(self, parties: int) -> None:
        super().__init__()
        self.parties, self.started = parties, 0
        self.all_started = asyncio.Event()

    async def evict(self, namespace: str, pod: str, grace_s: int) -> None:
        self.started += 1
        if self.started >= self.parties:
            self.all_started.set()
        await asyncio.wait_for(self.all_started.wait(), timeout=2)
        await super().evict(namespace, pod, grace_s)


def test_evictions_of_several_gangs_run_concurrently() -> None:
    """A reclaim can pick hundreds of gangs; evicted one pod at a time it held the loop for
    minutes on the `large` shape. The members of every victim gang are evicted at once (bounded
    by `bind_concurrency`)."""
    from types import SimpleNamespace

    api = BarrierEvictApi(parties=4)
    bound = [
        pod("a", group="g", gpus=4, node_name="n1", phase="Running"),
        pod("b", group="g", gpus=4, node_name="n1", phase="Running"),
        pod("c", group="h", gpus=4, node_name="n2", phase="Running"),
        pod("d", group="h", gpus=4, node_name="n2", phase="Running"),
    ]
    cfg = build_config(metrics_port=0, health_port=0)
    sched = Scheduler(
        cfg, api, ListSource(bound, [group("g", 2), group("h", 2)]), clock=lambda: 1.0
    )
    view = sched._view(sched.source.records(), 1.0, set())
    result: Any = SimpleNamespace(
        evictions=[
            SimpleNamespace(gang=key, reason="Reclaimed", message="test")
            for key in ("ns/g", "ns/h")
        ]
    )

    async def evict() -> None:
        sched._evict_decided(result, view, set())
        await sched.settle()

    asyncio.run(asyncio.wait_for(evict(), timeout=5))
    assert sorted(c[1] for c in api.calls if c[0] == "evict") == ["a", "b", "c", "d"]
    assert [c for c in api.calls if c[0] == "evicted"] == [("evicted", "Reclaimed")] * 2


class HeldEvictApi(FakeApi):
    """Evictions wait for the test's gate: the eviction stays in flight."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()

    async def evict(self, namespace: str, pod: str, grace_s: int) -> None:
        await asyncio.wait_for(self.gate.wait(), timeout=2)
        await super().evict(namespace, pod, grace_s)


def test_a_gang_being_evicted_counts_as_leaving_before_its_mark_is_seen() -> None:
    """The next cycle, with the eviction still in flight and the watch not showing the
    `Evicted` mark, sees the gang's capacity on its way back (charged to no queue, no victim
    again: a reclaim was decided a second time in the next cycle on `large`), and forgets
    that once the eviction has ended."""
    from types import SimpleNamespace

    api = HeldEvictApi()
    bound = [
        pod("a", group="g", gpus=4, node_name="n1", phase="Running"),
        pod("b", group="g", gpus=4, node_name="n1", phase="Running"),
    ]
    cfg = build_config(metrics_port=0, health_port=0)
    sched = Scheduler(cfg, api, ListSource(bound, [group("g", 2)]), clock=lambda: 1.0)
    result: Any = SimpleNamespace(
        evictions=[SimpleNamespace(gang="ns/g", reason="Reclaimed", message="test")]
    )

    async def scenario() -> None:
        view = sched._view(sched.source.records(), 1.0, set())
        decision = view.gangs["ns/g"].decision
        assert decision is not None and not decision.evicting
        sched._evict_decided(result, view, set())
        await asyncio.sleep(0.05)
        busy = sched.busy_gangs()
        during = sched._view(sched.source.records(), 1.0, busy).gangs["ns/g"].decision
        assert during is not None and during.evicting, "in flight: on its way out"
        api.gate.set()
        await sched.settle()
        assert not sched.leaving, "forgotten once the eviction has ended"

    asyncio.run(asyncio.wait_for(scenario(), timeout=5))
    assert sorted(c[1] for c in api.calls if c[0] == "evict") == ["a", "b"]


def _debounced(quiet: float, cap: float) -> Scheduler:
    cfg = build_config(debounce_s=cap, debounce_quiet_s=quiet, metrics_port=0, health_port=0)
    return Scheduler(cfg, FakeApi(), ListSource([], []), clock=lambda: 1000.0)


def test_a_lone_poke_waits_only_the_quiet_period_not_the_whole_debounce() -> None:
    """A Queue's limit lifted is one event: nothing more will come to gather, so its cycle
    must not wait out the burst cap (5 s here)."""
    sched = _debounced(quiet=0.05, cap=5.0)

    async def scenario() -> float:
        loop = asyncio.get_running_loop()
        sched.poke()
        started = loop.time()
        await asyncio.wait_for(sched._settle_pokes(), timeout=10)
        return loop.time() - started

    waited = asyncio.run(scenario())
    assert waited >= 0.05, f"the cycle started {waited:.3f} s after a poke, before it was quiet"
    assert waited < 2.5, f"a lone poke waited {waited:.2f} s, towards the 5 s burst cap"
    assert not sched.wake.is_set(), "the settled poke is still pending"


def test_a_burst_of_pokes_is_gathered_but_never_past_the_cap() -> None:
    """Pokes every 10 ms never leave a 0.3 s quiet period; the 0.6 s cap still ends the wait,
    and a poke arriving after the cycle has started is kept for the next one."""
    sched = _debounced(quiet=0.3, cap=0.6)

    async def scenario() -> tuple[float, bool]:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()

        async def burst() -> None:
            while not stop.is_set():
                sched.poke()
                await asyncio.sleep(0.01)

        poker = asyncio.create_task(burst())
        await asyncio.sleep(0.02)
        started = loop.time()
        await asyncio.wait_for(sched._settle_pokes(), timeout=5)
        waited = loop.time() - started
        await asyncio.sleep(0.05)  # the burst goes on after the cycle began
        stop.set()
        await poker
        return waited, sched.wake.is_set()

    waited, pending = asyncio.run(scenario())
    assert waited >= 0.55, f"the burst was cut after {waited:.3f} s, before the 0.6 s cap"
    assert pending, "a poke that came after the wait ended was lost"


def test_a_timer_cycle_without_pokes_starts_at_once() -> None:
    sched = _debounced(quiet=5.0, cap=5.0)

    async def scenario() -> float:
        loop = asyncio.get_running_loop()
        started = loop.time()
        await asyncio.wait_for(sched._settle_pokes(), timeout=10)
        return loop.time() - started

    waited = asyncio.run(scenario())
    assert waited < 2.5, f"with no poke the cycle waited {waited:.2f} s (quiet period is 5 s)"
