"""Fluent builders for core snapshots: `node("n1").gpus(8).leaf("l1", "s1").build()`.

Tests read as sentences instead of walls of positional arguments, and every default is the
boring one (8 GPUs, 64 cores, 512 GiB, no taints, queue `default`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Self

from phalanx.core import (
    CPU,
    GPU,
    MEMORY,
    PODS,
    MatchExpression,
    Member,
    Node,
    NodeSelectorTerm,
    PendingGang,
    Policy,
    Queue,
    RunningGang,
    RunningMember,
    Snapshot,
    Taint,
    Toleration,
)

SPINE = "network.topology.nvidia.com/spine"
LEAF = "network.topology.nvidia.com/block"
GiB = 1 << 30


class NodeBuilder:
    def __init__(self, name: str) -> None:
        self._name = name
        self._alloc: dict[str, int] = {GPU: 8, CPU: 64_000, MEMORY: 512 * GiB, PODS: 110}
        self._used: dict[str, int] = {}
        self._labels: dict[str, str] = {}
        self._taints: list[Taint] = []
        self._cordoned = False

    def gpus(self, n: int) -> Self:
        self._alloc[GPU] = n
        return self

    def cpu(self, millis: int) -> Self:
        self._alloc[CPU] = millis
        return self

    def memory(self, amount: int) -> Self:
        self._alloc[MEMORY] = amount
        return self

    def pods(self, n: int) -> Self:
        self._alloc[PODS] = n
        return self

    def resource(self, name: str, amount: int) -> Self:
        self._alloc[name] = amount
        return self

    def without(self, name: str) -> Self:
        self._alloc.pop(name, None)
        return self

    def used(self, **amounts: int) -> Self:
        """Requests of pods outside any running gang; keys gpu/cpu/memory/pods or raw names."""
        for k, v in amounts.items():
            self._used[_name(k)] = v
        return self

    def leaf(self, leaf: str, spine: str | None = None) -> Self:
        self._labels[LEAF] = leaf
        if spine is not None:
            self._labels[SPINE] = spine
        return self

    def label(self, key: str, value: str) -> Self:
        self._labels[key] = value
        return self

    def taint(self, key: str, value: str = "", effect: str = "NoSchedule") -> Self:
        self._taints.append(Taint(key, value, effect))
        return self

    def cordoned(self) -> Self:
        self._cordoned = True
        return self

    def build(self) -> Node:
        return Node(
            name=self._name,
            allocatable=dict(self._alloc),
            used=dict(self._used),
            labels=dict(self._labels),
            taints=tuple(self._taints),
            unschedulable=self._cordoned,
        )


def _name(key: str) -> str:
    return {"gpu": GPU, "cpu": CPU, "memory": MEMORY, "pods": PODS}.get(key, key)


class GangBuilder:
    def __init__(self, gid: str) -> None:
        self._id = gid if "/" in gid else f"ns/{gid}"
        self._queue = "default"
        self._members: list[Member] = []
        self._min: int | None = None
        self._priority = 0
        self._created = 0.0
        self._required: str | None = None
        self._preferred: str | None = None
        self._limit: float | None = None
        self._min_resources: dict[str, int] | None = None
        self._selector: dict[str, str] = {}
        self._affinity: list[NodeSelectorTerm] = []
        self._tolerations: list[Toleration] = []
        self._namespace = ""
        self._not_before: float | None = None
        self._held = ""

    def queue(self, name: str) -> Self:
        self._queue = name
        return self

    def held(self, why: str) -> Self:
        self._held = why
        return self

    def namespace(self, ns: str) -> Self:
        self._namespace = ns
        return self

    def pods(self, count: int, gpu: int = 8, **other: int) -> Self:
        """Add `count` identical pods (requests: `gpu` GPUs plus `other`, e.g. cpu=4000)."""
        requests = {GPU: gpu} if gpu else {}
        for k, v in other.items():
            requests[_name(k)] = v
        start = len(self._members)
        name = self._id.split("/")[1]
        for i in range(start, start + count):
            self._members.append(Member(pod=f"{name}-{i:03d}", requests=dict(requests)))
        return self

    def pod(self, pod: str, requests: dict[str, int]) -> Self:
        self._members.append(Member(pod=pod, requests=dict(requests)))
        return self

    def min(self, n: int) -> Self:
        self._min = n
        return self

    def priority(self, p: int) -> Self:
        self._priority = p
        return self

    def created(self, t: float) -> Self:
        self._created = t
        return self

    def required(self, level: str) -> Self:
        self._required = level
        return self

    def preferred(self, level: str) -> Self:
        self._preferred = level
        return self

    def time_limit(self, seconds: float) -> Self:
        self._limit = seconds
        return self

    def not_before(self, t: float) -> Self:
        self._not_before = t
        return self

    def min_resources(self, **amounts: int) -> Self:
        self._min_resources = {_name(k): v for k, v in amounts.items()}
        return self

    def selector(self, key: str, value: str) -> Self:
        self._selector[key] = value
        return self

    def affinity(self, key: str, operator: str, *values: str) -> Self:
        self._affinity.append(NodeSelectorTerm((MatchExpression(key, operator, values),)))
        return self

    def tolerate(self, key: str, value: str = "", effect: str = "", exists: bool = False) -> Self:
        op = "Exists" if exists else "Equal"
        self._tolerations.append(Toleration(key, op, value, effect))
        return self

    def build(self) -> PendingGang:
        members = tuple(
            Member(
                pod=m.pod,
                requests=m.requests,
                node_selector=dict(self._selector),
                affinity=tuple(self._affinity),
                tolerations=tuple(self._tolerations),
            )
            for m in self._members
        )
        return PendingGang(
            id=self._id,
            min_member=self._min if self._min is not None else len(members),
            members=members,
            queue=self._queue,
            namespace=self._namespace,
            priority=self._priority,
            creation_time=self._created,
            topology_required=self._required,
            topology_preferred=self._preferred,
            time_limit=self._limit,
            min_resources=self._min_resources,
            not_before=self._not_before,
            held=self._held,
        )


class RunningBuilder:
    def __init__(self, gid: str) -> None:
        self._id = gid if "/" in gid else f"ns/{gid}"
        self._queue = "default"
        self._members: list[RunningMember] = []
        self._priority = 0
        self._start = 0.0
        self._limit: float | None = None
        self._protected = False
        self._evicting = False
        self._waiting: list[Member] = []
        self._required: str | None = None
        self._created: float | None = None
        self._yield_by: float | None = None
        self._over = False

    def queue(self, name: str) -> Self:
        self._queue = name
        return self

    def over(self) -> Self:
        """Its gang is over (Succeeded, Failed), these members still bound (lingering)."""
        self._over = True
        return self

    def yields_by(self, t: float) -> Self:
        """Started speculatively: its capacity is held for a reservation from `t`."""
        self._yield_by = t
        return self

    def created(self, t: float) -> Self:
        """When its PodGroup was created (its wait before it started: `started` − this)."""
        self._created = t
        return self

    def waiting(self, count: int, gpu: int = 8) -> Self:
        """`count` members not bound yet (extras or replacements)."""
        name = self._id.split("/")[1]
        for _ in range(count):
            pod = f"{name}-w{len(self._waiting):03d}"
            self._waiting.append(Member(pod, {GPU: gpu} if gpu else {}))
        return self

    def required(self, level: str) -> Self:
        self._required = level
        return self

    def on(self, node: str, gpu: int = 8, pods: int = 1, **other: int) -> Self:
        """`pods` members on `node`, each with `gpu` GPUs (and `other` requests)."""
        requests = {GPU: gpu} if gpu else {}
        for k, v in other.items():
            requests[_name(k)] = v
        name = self._id.split("/")[1]
        for _ in range(pods):
            self._members.append(
                RunningMember(f"{name}-{len(self._members):03d}", node, dict(requests))
            )
        return self

    def priority(self, p: int) -> Self:
        self._priority = p
        return self

    def started(self, t: float) -> Self:
        self._start = t
        return self

    def time_limit(self, seconds: float) -> Self:
        self._limit = seconds
        return self

    def protected(self) -> Self:
        self._protected = True
        return self

    def evicting(self) -> Self:
        self._evicting = True
        return self

    def build(self) -> RunningGang:
        return RunningGang(
            id=self._id,
            queue=self._queue,
            members=tuple(self._members),
            priority=self._priority,
            start_time=self._start,
            time_limit=self._limit,
            protected=self._protected,
            evicting=self._evicting,
            waiting=tuple(self._waiting),
            topology_required=self._required,
            creation_time=self._created,
            yield_by=self._yield_by,
            over=self._over,
        )


class QueueBuilder:
    def __init__(self, name: str) -> None:
        self._name = name
        self._weight = 1
        self._guarantee: dict[str, int] = {}
        self._limit: dict[str, int] | None = None
        self._reclaimable = True
        self._namespaces: tuple[str, ...] = ()
        self._priority = 0
        self._usage = 0.0
        self._default_limit: float | None = None
        self._max_limit: float | None = None

    def weight(self, w: int) -> Self:
        self._weight = w
        return self

    def guarantee(self, **amounts: int) -> Self:
        self._guarantee = {_name(k): v for k, v in amounts.items()}
        return self

    def limit(self, **amounts: int) -> Self:
        self._limit = {_name(k): v for k, v in amounts.items()}
        return self

    def not_reclaimable(self) -> Self:
        self._reclaimable = False
        return self

    def namespaces(self, *names: str) -> Self:
        self._namespaces = names
        return self

    def priority(self, p: int) -> Self:
        self._priority = p
        return self

    def usage(self, u: float) -> Self:
        self._usage = u
        return self

    def max_time_limit(self, s: float) -> Self:
        self._max_limit = s
        return self

    def default_time_limit(self, s: float) -> Self:
        self._default_limit = s
        return self

    def build(self) -> Queue:
        return Queue(
            name=self._name,
            weight=self._weight,
            guarantee=dict(self._guarantee),
            limit=self._limit,
            reclaimable=self._reclaimable,
            namespaces=self._namespaces,
            priority=self._priority,
            usage=self._usage,
            default_time_limit=self._default_limit,
            max_time_limit=self._max_limit,
        )


def node(name: str) -> NodeBuilder:
    return NodeBuilder(name)


def gang(gid: str) -> GangBuilder:
    return GangBuilder(gid)


def running(gid: str) -> RunningBuilder:
    return RunningBuilder(gid)


def queue(name: str) -> QueueBuilder:
    return QueueBuilder(name)


def fabric(spines: int, leaves: int, nodes: int, gpus: int = 8) -> list[NodeBuilder]:
    """Builders for a spine × leaf × node fabric; names s{i}-l{j}-n{k}, leaves named s{i}-l{j}."""
    out = []
    for s in range(spines):
        for lf in range(leaves):
            for n in range(nodes):
                out.append(node(f"s{s}-l{lf}-n{n:02d}").gpus(gpus).leaf(f"s{s}-l{lf}", f"s{s}"))
    return out


def snapshot(
    nodes: Iterable[NodeBuilder | Node],
    queues: Iterable[QueueBuilder | Queue] = (),
    running: Iterable[RunningBuilder | RunningGang] = (),
    pending: Iterable[GangBuilder | PendingGang] = (),
) -> Snapshot:
    """A snapshot from builders (or built objects); queue `default` is added when missing."""
    qs = [q.build() if isinstance(q, QueueBuilder) else q for q in queues]
    if not any(q.name == "default" for q in qs):
        qs.append(Queue("default"))
    return Snapshot(
        nodes=tuple(n.build() if isinstance(n, NodeBuilder) else n for n in nodes),
        queues=tuple(qs),
        running=tuple(r.build() if isinstance(r, RunningBuilder) else r for r in running),
        pending=tuple(p.build() if isinstance(p, GangBuilder) else p for p in pending),
    )


DEFAULT_POLICY = Policy()
