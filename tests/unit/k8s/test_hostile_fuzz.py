"""Hostile and careless tenants, fuzzed: PodGroups, Queues and pods within what the schema
accepts (extreme counts and quantities, odd names, priority classes, missing queues, phantoms
by the dozen, pods naming groups that do not exist), through records → view → core.

For every input: no exception; every pending gang gets one of the contract's reasons; nothing
the cycle places overcommits a node (its new binds fit what the node had free)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phalanx.core import Policy, Reason, schedule
from phalanx.k8s.cluster_view import build_view
from phalanx.k8s.records import group_record, node_record, pod_record, queue_record
from phalanx.quantity import to_units

GPU = "nvidia.com/gpu"
NODES = [f"n{i}" for i in range(4)]
QUEUES = ["default", "team-a", "team-b", "ghost"]  # "ghost" is never created
CLASSES = {"low": 10, "high": 1000, "system-node-critical": 2_000_001_000}

quantities = st.one_of(
    st.integers(0, 100_000).map(str),
    st.sampled_from(["0", "1", "8", "500m", "1e3", "100000", "64Gi", "1Pi", "lots", "-1", ""]),
)
names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=12)


def _node(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"network.topology.nvidia.com/block": "l0"}},
        "spec": {},
        "status": {
            "allocatable": {GPU: "8", "cpu": "96", "memory": "1Ti", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


@st.composite
def groups(draw: st.DrawFn) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "minMember": draw(st.integers(1, 10_000)),
        "queue": draw(st.sampled_from(QUEUES)),
    }
    if draw(st.booleans()):
        spec["minResources"] = {GPU: draw(quantities)}
    if draw(st.booleans()):
        spec["priorityClassName"] = draw(st.sampled_from([*CLASSES, "missing"]))
    if draw(st.booleans()):
        spec["timeLimitSeconds"] = draw(st.integers(1, 10**9))
    if draw(st.booleans()):
        spec["topology"] = {"required": draw(st.sampled_from(["leaf", "spine", "rack"]))}
    name = draw(names)
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"g-{name}"}, "spec": spec}


@st.composite
def pods(draw: st.DrawFn, group_names: list[str]) -> dict[str, Any]:
    name = draw(names)
    labels = {}
    if group_names and draw(st.booleans()):
        labels["phalanx.dev/pod-group"] = draw(st.sampled_from([*group_names, "nowhere"]))
    spec: dict[str, Any] = {
        "schedulerName": draw(st.sampled_from(["phalanx", "phalanx", "default-scheduler"])),
        "containers": [{"name": "c", "resources": {"requests": {GPU: draw(quantities)}}}],
    }
    if draw(st.booleans()):
        spec["priorityClassName"] = draw(st.sampled_from([*CLASSES, "missing"]))
    phase = "Pending"
    if draw(st.integers(0, 3)) == 0:
        spec["nodeName"] = draw(st.sampled_from([*NODES, "gone"]))
        phase = draw(st.sampled_from(["Running", "Pending", "Succeeded", "Failed", "Unknown"]))
    return {
        "metadata": {"name": f"p-{name}", "namespace": "ns", "uid": f"u-{name}", "labels": labels},
        "spec": spec,
        "status": {"phase": phase},
    }


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[Any], list[Any], list[Any], list[Any]]:
    gs = draw(st.lists(groups(), max_size=25, unique_by=lambda g: g["metadata"]["name"]))
    group_names = [g["metadata"]["name"] for g in gs]
    ps = draw(st.lists(pods(group_names), max_size=30, unique_by=lambda p: p["metadata"]["name"]))
    qs = []
    for q in ("default", "team-a", "team-b"):
        spec: dict[str, Any] = {"weight": draw(st.integers(1, 10))}
        if draw(st.booleans()):
            spec["guarantee"] = {GPU: draw(quantities)}
        if draw(st.booleans()):
            spec["limit"] = {GPU: draw(quantities)}
        if draw(st.booleans()):
            spec["priorityClasses"] = draw(st.lists(st.sampled_from(list(CLASSES)), max_size=2))
        if draw(st.integers(0, 4)) == 0:
            spec["namespaces"] = ["elsewhere"]
        qs.append({"metadata": {"name": q}, "spec": spec})
    return [_node(n) for n in NODES], ps, gs, qs


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_hostile_objects_get_typed_reasons_and_never_overcommit(
    world: tuple[list[Any], list[Any], list[Any], list[Any]],
) -> None:
    node_bodies, pod_bodies, group_bodies, queue_bodies = world
    nodes = [node_record(n) for n in node_bodies]
    recs = [pod_record(p) for p in pod_bodies]
    view = build_view(
        nodes=nodes,
        pods=recs,
        groups=[group_record(g) for g in group_bodies],
        queues=[queue_record(q) for q in queue_bodies],
        priority_classes=CLASSES,
        scheduler_name="phalanx",
        assumed={},
        usage={},
        half_life=3600.0,
        now=1000.0,
    )
    result = schedule(view.snapshot, Policy(), 1000.0)
    for gang in view.snapshot.pending:
        assert gang.id in result.gangs
        assert result.gangs[gang.id].reason in set(Reason)
    # New placements fit what each node had free (pods already bound may overcommit: they are
    # the cluster's, not this cycle's doing).
    free = {n.name: 8 for n in nodes}
    for p in recs:
        if p.node_name in free and not p.terminal:
            free[p.node_name] -= p.requests.get(GPU, 0)
    requests = {p.key: p.requests.get(GPU, 0) for p in recs}
    placed: dict[str, int] = {}
    for table in (result.bindings, result.extra_bindings, result.roll_forward):
        for pods_of in table.values():
            for pod, node in pods_of.items():
                placed[node] = placed.get(node, 0) + requests.get(pod, 0)
    for node, gpus in placed.items():
        assert gpus <= max(0, free[node]), (node, gpus, free[node])


def test_the_quantities_the_fuzz_feeds_include_what_cannot_be_read() -> None:
    """(A check of the test itself: malformed strings are among the inputs.)"""
    for bad in ("lots", ""):
        try:
            to_units(GPU, bad)
        except ValueError:
            continue
        raise AssertionError(f"{bad!r} parsed")
