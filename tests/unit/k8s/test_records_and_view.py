"""From API bodies to the core snapshot: requests, group membership, gang states, capacity."""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.core.lifecycle import Action
from phalanx.k8s.cluster_view import build_view
from phalanx.k8s.records import group_record, node_record, pod_record, queue_record
from phalanx.quantity import QuantityError, format_units, parse, to_units


def node(name: str, gpus: int | None = 8, labels: dict[str, str] | None = None) -> dict[str, Any]:
    alloc = {"cpu": "96", "memory": "1Ti", "pods": "110"}
    if gpus is not None:
        alloc["nvidia.com/gpu"] = str(gpus)
    return {
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {},
        "status": {
            "allocatable": alloc,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(
    name: str,
    *,
    group: str | None = None,
    gpus: int = 8,
    node_name: str | None = None,
    scheduler: str = "phalanx",
    phase: str = "Pending",
    label_key: str = "phalanx.dev/pod-group",
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "uid": f"uid-{name}", "labels": {}}
    if group and label_key == "scheduling.k8s.io/group-name":
        meta["annotations"] = {label_key: group}
    elif group:
        meta["labels"][label_key] = group
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": str(gpus)}}}],
    }
    if node_name:
        spec["nodeName"] = node_name
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


def group(name: str, min_member: int, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": f"g-{name}"},
        "spec": {"minMember": min_member, **spec},
    }


def view(
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    groups: list[dict[str, Any]],
    **more: Any,
) -> Any:
    """`build_view` at t=1000 with queue `default`; `more`: its other inputs (`jobs`, …)."""
    return build_view(
        nodes=[node_record(n) for n in nodes],
        pods=[pod_record(p) for p in pods],
        groups=[group_record(g) for g in groups],
        queues=[queue_record({"metadata": {"name": "default"}, "spec": {}})],
        priority_classes={},
        scheduler_name="phalanx",
        assumed={},
        usage={},
        half_life=3600,
        now=1000.0,
        **more,
    )


def test_quantities_convert_exactly_to_core_units() -> None:
    assert to_units("cpu", "500m") == 500
    assert to_units("cpu", "2") == 2000
    assert to_units("memory", "64Gi") == 64 * 2**30
    assert to_units("memory", "1.5k") == 1500
    assert to_units("nvidia.com/gpu", 8) == 8
    assert format_units("cpu", 1500) == "1500m"
    assert format_units("cpu", 2000) == "2"
    assert parse("1e3") == 1000
    with pytest.raises(QuantityError):
        parse("eight")


def test_effective_requests_follow_the_kube_scheduler() -> None:
    body = pod("p")
    body["spec"]["containers"].append(
        {"name": "side", "resources": {"limits": {"cpu": "1", "nvidia.com/gpu": "1"}}}
    )
    body["spec"]["initContainers"] = [{"name": "init", "resources": {"requests": {"cpu": "4"}}}]
    body["spec"]["overhead"] = {"cpu": "100m"}
    rec = pod_record(body)
    assert rec.requests["nvidia.com/gpu"] == 9  # 8 + limits-only 1
    assert rec.requests["cpu"] == 4100  # max(init 4, containers 1) + overhead
    assert rec.requests["pods"] == 1


@pytest.mark.parametrize(
    "label_key",
    ["phalanx.dev/pod-group", "scheduling.x-k8s.io/pod-group", "scheduling.k8s.io/group-name"],
)
def test_pods_join_groups_by_ours_scheduler_plugins_or_volcano_labels(label_key: str) -> None:
    v = view([node("n1")], [pod("a", group="g", label_key=label_key)], [group("g", 1)])
    assert [p.name for p in v.gangs["ns/g"].pods] == ["a"]


def test_a_pod_without_group_is_a_gang_of_one_and_a_missing_group_is_an_orphan() -> None:
    v = view([node("n1")], [pod("solo"), pod("lost", group="nope")], [])
    assert "ns/solo" in v.pending
    assert [p.name for p in v.orphans] == ["lost"]


def test_gang_states_running_pending_partial() -> None:
    pods = [
        pod("r0", group="run", node_name="n1"),
        pod("r1", group="run", node_name="n1", gpus=0),
        pod("p0", group="wait"),
        pod("h0", group="half", node_name="n2"),
        pod("h1", group="half"),
    ]
    v = view([node("n1"), node("n2")], pods, [group("run", 2), group("wait", 1), group("half", 2)])
    assert v.running == {"ns/run"}
    assert v.pending == {"ns/wait"}
    half = v.gangs["ns/half"].decision
    assert half is not None and half.action is Action.ROLL_BACK, "partly bound, no bind running"
    assert "ns/half" in {g.id for g in v.snapshot.running}, "its bound pod still holds n2"


def test_other_schedulers_pods_count_as_used_and_lost_nodes_free_nothing() -> None:
    pods = [
        pod("other", scheduler="default-scheduler", node_name="n1", gpus=3),
        pod("done", scheduler="default-scheduler", node_name="n1", gpus=5, phase="Succeeded"),
        pod("ghost", group="g", node_name="gone"),
    ]
    v = view([node("n1")], pods, [group("g", 1)])
    (n1,) = v.snapshot.nodes
    assert n1.used == {"nvidia.com/gpu": 3, "pods": 1}
    assert "ns/g" not in v.running  # its only pod sat on a node that no longer exists


def test_gpu_count_label_is_the_fallback_for_gpus() -> None:
    rec = node_record(node("n", gpus=None, labels={"nvidia.com/gpu.count": "4"}))
    assert rec.allocatable["nvidia.com/gpu"] == 4


def test_bad_quantities_become_errors_on_the_record_not_exceptions() -> None:
    g = group_record(group("g", 1, minResources={"nvidia.com/gpu": "lots"}))
    assert g.error is not None and "minResources" in g.error
    q = queue_record({"metadata": {"name": "q"}, "spec": {"guarantee": {"cpu": "x"}}})
    assert q.error is not None


def test_pods_with_scheduling_gates_are_not_members_yet() -> None:
    gated = pod("a", group="g")
    gated["spec"]["schedulingGates"] = [{"name": "example.com/hold"}]
    v = view([node("n1")], [gated, pod("b", group="g")], [group("g", 2)])
    assert [p.name for p in v.gangs["ns/g"].pods] == ["b"]


def test_a_budget_allowing_no_disruption_protects_the_running_gang_it_selects() -> None:
    from phalanx.k8s.records import budget_record

    pods = [pod("a", group="g", node_name="n1"), pod("b", group="h", node_name="n2")]
    pods[0]["metadata"]["labels"]["app"] = "train"
    pods[1]["metadata"]["labels"]["app"] = "other"
    budget = budget_record(
        {
            "metadata": {"name": "pdb", "namespace": "ns"},
            "spec": {"selector": {"matchLabels": {"app": "train"}}},
            "status": {"disruptionsAllowed": 0},
        }
    )
    v = build_view(
        nodes=[node_record(node("n1")), node_record(node("n2"))],
        pods=[pod_record(p) for p in pods],
        groups=[group_record(group("g", 1)), group_record(group("h", 1))],
        queues=[queue_record({"metadata": {"name": "default"}, "spec": {}})],
        priority_classes={},
        scheduler_name="phalanx",
        assumed={},
        usage={},
        half_life=3600,
        now=1000.0,
        budgets=[budget],
    )
    protected = {g.id: g.protected for g in v.snapshot.running}
    assert protected == {"ns/g": True, "ns/h": False}


def test_a_view_built_with_the_cache_equals_one_built_afresh_after_changes() -> None:
    """The cache may only save work: after nodes, pods and other schedulers' pods change, the
    snapshot built through it equals the one built without it (and unchanged records are
    reused, or the cache would save nothing)."""
    from phalanx.k8s.cluster_view import ViewCache

    def build(nodes: list[Any], pods: list[Any], cache: ViewCache | None) -> Any:
        return build_view(
            nodes=nodes,
            pods=pods,
            groups=[group_record(group(name, 1)) for name in ("g", "h", "p", "q")],
            queues=[queue_record({"metadata": {"name": "default"}, "spec": {}})],
            priority_classes={},
            scheduler_name="phalanx",
            assumed={"ns/h-0": "n2"},
            usage={},
            half_life=3600,
            now=1000.0,
            cache=cache,
        ).snapshot

    nodes = [node_record(node(f"n{i}", labels={"leaf": "a"})) for i in range(4)]
    pods = [
        pod_record(pod("g-0", group="g", gpus=2, node_name="n0", phase="Running")),
        pod_record(pod("g-1", group="g", gpus=2, node_name="n1", phase="Running")),
        pod_record(pod("h-0", group="h", gpus=1)),
        pod_record(pod("p-0", group="p", gpus=4)),
        pod_record(pod("other", gpus=3, node_name="n3", scheduler="default-scheduler")),
    ]
    cache = ViewCache()
    first = build(nodes, pods, cache)
    assert first == build(nodes, pods, None)
    assert [g.members[0].pod for g in first.pending if g.members] == ["ns/p-0"]

    changed_nodes = [*nodes[:2], node_record(node("n2", labels={"leaf": "b"})), nodes[3]]
    changed_pods = [
        pods[0],
        pod_record(pod("g-1", group="g", gpus=2, node_name="n2", phase="Running")),
        pod_record(pod("h-0", group="h", gpus=1)),
        pod_record(pod("other", gpus=5, node_name="n3", scheduler="default-scheduler")),
        pod_record(pod("q-0", group="q", gpus=1)),
    ]
    second = build(changed_nodes, changed_pods, cache)
    assert second == build(changed_nodes, changed_pods, None)
    assert second.nodes[0] is first.nodes[0], "an unchanged node is reused"
    assert second.nodes[3] != first.nodes[3], "another scheduler's pod changed what n3 has used"
    assert second.running[0].members[0] is first.running[0].members[0]
    assert set(cache.pending) == {"ns/q-0"}, "gone pods are forgotten"


def _bound(name: str, at: str | None, started: str | None = None) -> dict[str, Any]:
    body = pod(name, group="run", node_name="n1", gpus=1, phase="Running")
    if at is not None:
        body["status"]["conditions"] = [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": at}
        ]
    if started is not None:
        body["status"]["startTime"] = started
    return body


def test_a_gang_found_running_without_scheduled_at_started_at_its_first_bind() -> None:
    """Its PodGroup was applied again while its pods ran: no `scheduledAt`. Members bound at
    850 (`PodScheduled`'s transition) and 870 (only `startTime`); now is 1,000, its limit 100 s:
    it started at 850 and is past its limit, not 0 s into it as when counted from now."""
    pods = [_bound("r0", "1970-01-01T00:14:10Z"), _bound("r1", None, "1970-01-01T00:14:30Z")]
    assert [pod_record(p).bound_at for p in pods] == [850.0, 870.0]
    v = view([node("n1")], pods, [group("run", 2, timeLimitSeconds=100)])
    gang = v.gangs["ns/run"]
    assert gang.started == 850.0
    assert gang.decision is not None and gang.decision.reason == "TimeLimitExceeded"
    (running,) = [r for r in v.snapshot.running if r.id == "ns/run"]
    assert running.start_time == 850.0


def test_an_unbound_pod_has_no_bind_time_whatever_its_conditions_say() -> None:
    body = pod("p0", group="run")
    body["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "False", "lastTransitionTime": "1970-01-01T00:14:10Z"}
    ]
    assert pod_record(body).bound_at is None
