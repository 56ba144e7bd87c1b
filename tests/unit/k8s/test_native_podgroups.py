"""Native `scheduling.k8s.io/v1alpha2` PodGroups as input: the records, the view, the loop
against a fake API (its native conditions written as kube-scheduler writes them)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from phalanx.config import build_config
from phalanx.k8s.api import ApiError
from phalanx.k8s.cluster_view import build_view
from phalanx.k8s.operator import native_groups_served
from phalanx.k8s.records import (
    native_group_record,
    node_record,
    pod_record,
    queue_record,
)
from phalanx.k8s.reporter import native_conditions
from phalanx.k8s.scheduler import Records, Scheduler
from tests.unit.k8s.test_records_and_view import node, pod
from tests.unit.k8s.test_scheduler_loop import FakeApi

LEAF = "network.topology.nvidia.com/block"
LEVELS = {"network.topology.nvidia.com/spine": "spine", LEAF: "leaf"}


def native_group(name: str, min_count: int | None, **spec: Any) -> dict[str, Any]:
    policy: dict[str, Any] = {"gang": {"minCount": min_count}} if min_count else {"basic": {}}
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "ns", "uid": f"n-{name}", "generation": 1},
        "spec": {"schedulingPolicy": policy, **spec},
    }


def native_pod(name: str, group: str, **kw: Any) -> dict[str, Any]:
    body = pod(name, **kw)
    body["spec"]["schedulingGroup"] = {"podGroupName": group}
    return body


def test_a_pod_naming_a_native_group_joins_it() -> None:
    rec = pod_record(native_pod("a", "train"))
    assert rec.group == "train" and rec.native_group
    plain = pod_record(pod("b", group="train"))
    assert plain.group == "train" and not plain.native_group


def test_min_count_is_min_member_and_the_topology_key_is_required() -> None:
    rec = native_group_record(
        native_group(
            "train",
            4,
            schedulingConstraints={"topology": [{"key": LEAF}]},
            priorityClassName="high",
        ),
        LEVELS,
    )
    assert (rec.min_member, rec.topology_required, rec.native, rec.error) == (4, "leaf", True, None)
    assert rec.priority_class == "high" and rec.queue == "default"


def test_the_queue_is_the_native_groups_label() -> None:
    body = native_group("train", 2)
    body["metadata"]["labels"] = {"phalanx.dev/queue": "research"}
    assert native_group_record(body, LEVELS).queue == "research"


def test_a_basic_policy_is_a_gang_of_one_pod_at_a_time() -> None:
    rec = native_group_record(native_group("svc", None), LEVELS)
    assert rec.min_member == 1 and rec.error is None


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"schedulingPolicy": {"gang": {"minCount": 20_000}}}, "20,000 is above the 10,000"),
        ({"schedulingPolicy": {"gang": {"minCount": 0}}}, "minCount must be >= 1"),
        ({"schedulingPolicy": {}}, "names neither gang nor basic"),
        (
            {
                "schedulingPolicy": {"gang": {"minCount": 2}},
                "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/rack"}]},
            },
            "'topology.kubernetes.io/rack' is not a topology level",
        ),
    ],
)
def test_bad_native_groups_carry_a_typed_reason(spec: dict[str, Any], message: str) -> None:
    body = native_group("bad", 1)
    body["spec"] = spec
    rec = native_group_record(body, LEVELS)
    assert rec.error is not None and message in rec.error, rec.error


def _view(pods: list[dict[str, Any]], groups: list[dict[str, Any]], gpus: int = 8) -> Any:
    return build_view(
        nodes=[node_record(node(f"n{i}", gpus, {LEAF: "l0"})) for i in range(2)],
        pods=[pod_record(p) for p in pods],
        groups=[native_group_record(g, LEVELS) for g in groups],
        queues=[queue_record({"metadata": {"name": "default"}, "spec": {}})],
        priority_classes={},
        scheduler_name="phalanx",
        assumed={},
        usage={},
        half_life=3600,
        now=1000.0,
    )


def test_the_view_gangs_native_pods_by_their_group() -> None:
    v = _view([native_pod("a", "train"), native_pod("b", "train")], [native_group("train", 2)])
    gang = v.gangs["ns/train"]
    assert gang.group is not None and gang.group.native
    assert sorted(p.name for p in gang.pods) == ["a", "b"]
    assert gang.min_member == 2 and "ns/train" in v.pending


def test_a_native_group_above_the_limit_waits_invalid() -> None:
    v = _view([native_pod("a", "huge")], [native_group("huge", 20_000)])
    assert v.gangs["ns/huge"].group.error  # type: ignore[union-attr]
    assert not v.orphans


def test_native_pods_whose_group_is_missing_are_orphans() -> None:
    v = _view([native_pod("a", "nowhere")], [])
    assert [p.name for p in v.orphans] == ["a"]


# -- the loop against a fake API -------------------------------------------------------------


class NativeApi(FakeApi):
    def __init__(self) -> None:
        super().__init__()
        self.native: list[tuple[str, list[dict[str, Any]]]] = []

    async def patch_native_group_status(
        self, namespace: str, name: str, conditions: list[Mapping[str, Any]]
    ) -> None:
        self.calls.append(("native-status", name))
        self.native.append((name, [dict(c) for c in conditions]))


class Source:
    def __init__(self, pods: list[dict[str, Any]], groups: list[dict[str, Any]]) -> None:
        self.set(pods, groups)

    def set(self, pods: list[dict[str, Any]], groups: list[dict[str, Any]]) -> None:
        self._records = Records(
            nodes=[node_record(node("n1")), node_record(node("n2"))],
            pods=[pod_record(p) for p in pods],
            groups=[native_group_record(g, LEVELS) for g in groups],
            queues=[queue_record({"metadata": {"name": "default"}, "spec": {}})],
            priority_classes={},
        )

    def records(self) -> Records:
        return self._records


def _cycle(sched: Scheduler) -> None:
    async def one() -> None:
        await sched.cycle()
        await sched.settle()
        sched.reporter.flush_deferred(force=True)
        await sched.settle()

    asyncio.run(one())


def _scheduler(api: NativeApi, source: Source) -> Scheduler:
    cfg = build_config(bind_deadline_s=0.3, metrics_port=0, health_port=0)
    return Scheduler(cfg, api, source, clock=lambda: 1000.0)


def test_a_native_gang_binds_whole_and_its_status_says_scheduled() -> None:
    api = NativeApi()
    source = Source(
        [native_pod("a", "train"), native_pod("b", "train")], [native_group("train", 2)]
    )
    sched = _scheduler(api, source)
    _cycle(sched)
    assert sorted(c[1] for c in api.calls if c[0] == "bind") == ["a", "b"]
    assert not [c for c in api.calls if c[0] == "status"], "no phalanx.dev status is written"
    name, conditions = api.native[-1]
    cond = {c["type"]: c for c in conditions}["PodGroupScheduled"]
    assert (name, cond["status"], cond["reason"]) == ("train", "True", "Scheduled")
    assert cond["observedGeneration"] == 1
    # What the binder recorded is kept in memory: the next cycle runs the gang, binds nothing.
    assert sched.reporter.written["n-train"]["phase"] == "Running"
    before = len(api.calls)
    bound = [native_pod("a", "train", node_name="n1"), native_pod("b", "train", node_name="n2")]
    source.set(bound, [native_group("train", 2)])
    _cycle(sched)
    later = [c for c in api.calls[before:] if c[0] in ("bind", "native-status", "evict", "delete")]
    assert not later, later


def test_a_native_gang_short_of_pods_binds_nothing_and_says_unschedulable() -> None:
    api = NativeApi()
    source = Source([native_pod("a", "train")], [native_group("train", 3)])
    sched = _scheduler(api, source)
    _cycle(sched)
    assert not [c for c in api.calls if c[0] == "bind"]
    _, conditions = api.native[-1]
    cond = {c["type"]: c for c in conditions}["PodGroupScheduled"]
    assert (cond["status"], cond["reason"]) == ("False", "Unschedulable")
    assert cond["message"].startswith("WaitingForPods"), cond["message"]


def test_an_invalid_native_group_says_scheduler_error() -> None:
    api = NativeApi()
    source = Source([native_pod("a", "huge")], [native_group("huge", 20_000)])
    sched = _scheduler(api, source)
    _cycle(sched)
    assert not [c for c in api.calls if c[0] == "bind"]
    _, conditions = api.native[-1]
    cond = {c["type"]: c for c in conditions}["PodGroupScheduled"]
    assert (cond["status"], cond["reason"]) == ("False", "SchedulerError")
    assert "20,000 is above the 10,000" in cond["message"]


def test_native_conditions_keep_others_and_their_transition_times() -> None:
    previous = {
        "conditions": [
            {
                "type": "PodGroupScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "WaitingForPods: x",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            },
            {
                "type": "Other",
                "status": "True",
                "reason": "R",
                "message": "",
                "lastTransitionTime": "t",
            },
        ]
    }
    same = native_conditions(
        previous,
        {
            "phase": "Pending",
            "conditions": [
                {"type": "Scheduled", "status": "False", "reason": "WaitingForPods", "message": "x"}
            ],
        },
        2000.0,
    )
    assert same == previous["conditions"], "nothing changed: nothing to write"
    running = native_conditions(previous, {"phase": "Running"}, 2000.0)
    by_type = {c["type"]: c for c in running}
    assert by_type["Other"] == previous["conditions"][1]
    assert by_type["PodGroupScheduled"]["status"] == "True"
    assert by_type["PodGroupScheduled"]["lastTransitionTime"] != "2026-01-01T00:00:00Z"
    binding = native_conditions(previous, {"phase": "Binding"}, 2000.0)
    assert binding == previous["conditions"], "a decision record is no native write"


@pytest.mark.parametrize(
    ("why", "reason"),
    [("Reclaimed", "PreemptionByScheduler"), ("TimeLimitExceeded", "TimeLimitExceeded")],
)
def test_an_evicted_native_gang_is_a_disruption_target(why: str, reason: str) -> None:
    evicted = {
        "phase": "Pending",
        "conditions": [{"type": "Evicted", "status": "True", "reason": why, "message": "m"}],
    }
    by_type = {c["type"]: c for c in native_conditions({}, evicted, 2000.0)}
    assert (by_type["DisruptionTarget"]["status"], by_type["DisruptionTarget"]["reason"]) == (
        "True",
        reason,
    )
    again = native_conditions({"conditions": list(by_type.values())}, {"phase": "Running"}, 2100.0)
    assert {c["type"]: c["status"] for c in again}["DisruptionTarget"] == "False"


class _Custom:
    def __init__(self, status: int | None) -> None:
        self.status = status

    async def _answer(self) -> Any:
        if self.status is not None:
            raise ApiError(self.status, "no")

        class Resp:
            status = 200

            async def read(self) -> bytes:
                return b"{}"

        return Resp()

    def list_cluster_custom_object(self, *args: Any, **kw: Any) -> Any:
        return self._answer()


class _Api:
    def __init__(self, status: int | None) -> None:
        self.custom = _Custom(status)


@pytest.mark.parametrize(("status", "served"), [(None, True), (404, False), (403, False)])
def test_native_groups_are_watched_only_where_served_and_listable(
    status: int | None, served: bool
) -> None:
    cfg = build_config(metrics_port=0, health_port=0)
    assert asyncio.run(native_groups_served(_Api(status), cfg)) is served  # type: ignore[arg-type]
