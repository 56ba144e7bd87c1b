"""From the watched records to the core's `Snapshot`: gangs formed, capacity counted.

This is where Kubernetes objects become scheduling facts:
- pods join gangs by PodGroup label (ours, scheduler-plugins' or Volcano's); a pod of ours with no
  group is a gang of one; a pod naming a PodGroup that does not exist waits (and is reported);
- a gang with at least `minMember` pods bound is running; one with none bound is pending; one in
  between is *partial* and is handed to the recovery step, while its pods still count as used so
  nothing else lands on them;
- pods bound by anyone else count against their nodes (`Node.used`), and so do the pods this
  operator bound a moment ago but the watch has not shown yet (`assumed`): scheduling on a stale
  view would overcommit.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from phalanx.core import (
    Member,
    Node,
    PendingGang,
    Queue,
    RunningGang,
    RunningMember,
    Snapshot,
    decay_usage,
)
from phalanx.k8s.records import BudgetRec, GroupRec, NodeRec, PodRec, QueueRec, parse_time


@dataclass
class Gang:
    """A PodGroup (or an implicit gang of one) with its live pods."""

    key: str
    group: GroupRec | None
    pods: list[PodRec] = field(default_factory=list)
    succeeded: int = 0
    failed: int = 0

    @property
    def min_member(self) -> int:
        return self.group.min_member if self.group else 1

    def bound(self, assumed: Mapping[str, str]) -> list[PodRec]:
        return [p for p in self.pods if p.node_name or p.key in assumed]


@dataclass
class View:
    """One cycle's input plus what the adapter needs to act on the result."""

    snapshot: Snapshot
    gangs: dict[str, Gang]
    running: set[str]
    pending: set[str]
    partial: set[str]
    orphans: list[PodRec]
    """Pods naming a PodGroup that does not exist."""


@dataclass
class ViewCache:
    """Core objects of the last view, reused when built from the very same records.

    A cycle rebuilds the whole snapshot, but between two cycles of a bind burst few of the 1,024
    nodes change and most pods are the same records (records are immutable and replaced on every
    watch event, so identity means "unchanged"). Building a core `Node` (copying its labels and
    resources) and a `RunningMember` per bound pod was most of `build_view`'s time.
    """

    nodes: dict[str, tuple[NodeRec, Mapping[str, int], Node]] = field(default_factory=dict)
    members: dict[str, tuple[PodRec, str, RunningMember]] = field(default_factory=dict)
    pending: dict[str, tuple[PodRec, Member]] = field(default_factory=dict)

    def node(self, rec: NodeRec, used: Mapping[str, int]) -> Node:
        hit = self.nodes.get(rec.name)
        if hit is not None and hit[0] is rec and hit[1] == used:
            return hit[2]
        node = _core_node(rec, used)
        self.nodes[rec.name] = (rec, used, node)
        return node

    def member(self, pod: PodRec, node: str) -> RunningMember:
        hit = self.members.get(pod.key)
        if hit is not None and hit[0] is pod and hit[1] == node:
            return hit[2]
        member = RunningMember(pod.key, node, dict(pod.requests))
        self.members[pod.key] = (pod, node, member)
        return member

    def pending_member(self, pod: PodRec) -> Member:
        hit = self.pending.get(pod.key)
        if hit is not None and hit[0] is pod:
            return hit[1]
        member = Member(
            pod.key, dict(pod.requests), dict(pod.node_selector), pod.affinity, pod.tolerations
        )
        self.pending[pod.key] = (pod, member)
        return member

    def forget_except(self, node_names: set[str], pod_keys: set[str]) -> None:
        """Drop entries of nodes and pods that are gone (the cache must not grow forever)."""
        for name in self.nodes.keys() - node_names:
            del self.nodes[name]
        for key in self.members.keys() - pod_keys:
            del self.members[key]
        for key in self.pending.keys() - pod_keys:
            del self.pending[key]


def _core_node(n: NodeRec, used: Mapping[str, int]) -> Node:
    return Node(
        name=n.name,
        allocatable=dict(n.allocatable),
        used=used,
        labels=dict(n.labels),
        taints=n.taints,
        unschedulable=n.unschedulable or not n.ready,
    )


def build_view(
    *,
    nodes: Iterable[NodeRec],
    pods: Iterable[PodRec],
    groups: Iterable[GroupRec],
    queues: Iterable[QueueRec],
    priority_classes: Mapping[str, int],
    scheduler_name: str,
    assumed: Mapping[str, str],
    evicting: set[str],
    usage: Mapping[str, float],
    half_life: float,
    now: float,
    budgets: Iterable[BudgetRec] = (),
    cache: ViewCache | None = None,
) -> View:
    cache = cache if cache is not None else ViewCache()
    nodes = list(nodes)
    node_names = {n.name for n in nodes}
    # A pod bound to a node that no longer exists is lost: it holds nothing, and its gang is
    # short of a member (the kubelet is gone; PodGC would delete the pod later anyway).
    pods = [p for p in pods if p.node_name is None or p.node_name in node_names or p.terminal]
    group_by_key = {g.key: g for g in groups}
    gangs: dict[str, Gang] = {k: Gang(k, g) for k, g in group_by_key.items()}
    orphans: list[PodRec] = []
    other_used: dict[str, dict[str, int]] = {}
    ours: list[PodRec] = []

    finished: list[PodRec] = []
    for pod in pods:
        if pod.scheduler_name != scheduler_name:
            if pod.node_name and not pod.terminal:
                _add(other_used.setdefault(pod.node_name, {}), pod.requests)
            continue
        if pod.gated and not pod.node_name:
            continue  # a gated pod does not exist yet as far as scheduling goes
        (finished if pod.terminal else ours).append(pod)

    for pod in finished:
        finished_gang = gangs.get(f"{pod.namespace}/{pod.group}") if pod.group else None
        if finished_gang is not None:
            if pod.phase == "Succeeded":
                finished_gang.succeeded += 1
            else:
                finished_gang.failed += 1

    for pod in ours:
        if pod.group is None:
            key = f"{pod.namespace}/{pod.name}"
            gangs.setdefault(key, Gang(key, None)).pods.append(pod)
            continue
        key = f"{pod.namespace}/{pod.group}"
        gang = gangs.get(key)
        if gang is None:
            orphans.append(pod)
            if pod.node_name:
                _add(other_used.setdefault(pod.node_name, {}), pod.requests)
            continue
        gang.pods.append(pod)

    blocking = [b for b in budgets if b.disruptions_allowed <= 0]
    running: list[RunningGang] = []
    pending: list[PendingGang] = []
    running_keys, pending_keys, partial_keys = set(), set(), set()
    queue_by_name = {q.name: q for q in queues}

    for key in sorted(gangs):
        gang = gangs[key]
        gang.pods.sort(key=lambda p: p.name)
        live = [p for p in gang.pods if not p.deleting]
        bound = gang.bound(assumed)
        priority = _priority(gang, priority_classes)
        queue_name = gang.group.queue if gang.group else "default"
        if bound:
            members = tuple(cache.member(p, p.node_name or assumed[p.key]) for p in bound)
            queue = queue_by_name.get(queue_name)
            running.append(
                RunningGang(
                    id=key,
                    queue=queue_name,
                    members=members,
                    priority=priority,
                    start_time=_start_time(gang, now),
                    time_limit=_time_limit(gang.group, queue),
                    # A budget that allows no disruption now protects the gang from reclaim
                    # and preemption: the core picks another victim.
                    protected=any(
                        b.namespace == p.namespace and b.selects(p.labels)
                        for b in blocking
                        for p in bound
                    ),
                    evicting=key in evicting,
                )
            )
            if len(bound) >= gang.min_member or key in evicting:
                running_keys.add(key)
            else:
                partial_keys.add(key)
            continue
        if gang.group is None and not live:
            continue
        pending.append(
            PendingGang(
                id=key,
                min_member=gang.min_member,
                members=tuple(cache.pending_member(p) for p in live),
                queue=queue_name,
                namespace=key.partition("/")[0],
                priority=priority,
                creation_time=gang.group.created if gang.group else min(p.created for p in live),
                topology_required=gang.group.topology_required if gang.group else None,
                topology_preferred=gang.group.topology_preferred if gang.group else None,
                time_limit=_time_limit(gang.group, queue_by_name.get(queue_name)),
                min_resources=dict(gang.group.min_resources)
                if gang.group and gang.group.min_resources is not None
                else None,
            )
        )
        pending_keys.add(key)

    core_nodes = tuple(
        cache.node(n, other_used.get(n.name, {})) for n in sorted(nodes, key=lambda n: n.name)
    )
    cache.forget_except(node_names, {p.key for p in pods})
    core_queues = tuple(
        Queue(
            name=q.name,
            weight=q.weight,
            guarantee=dict(q.guarantee),
            limit=dict(q.limit) if q.limit is not None else None,
            reclaimable=q.reclaimable,
            namespaces=q.namespaces,
            priority=q.priority,
            usage=usage.get(q.name, _restored_usage(q, half_life, now)),
            default_time_limit=q.default_time_limit,
            max_time_limit=q.max_time_limit,
        )
        for q in sorted(queues, key=lambda q: q.name)
    )
    snapshot = Snapshot(core_nodes, core_queues, tuple(running), tuple(pending))
    return View(snapshot, gangs, running_keys, pending_keys, partial_keys, orphans)


def _restored_usage(queue: QueueRec, half_life: float, now: float) -> float:
    """Usage persisted in Queue status, decayed from when it was written to now."""
    if queue.usage_updated is None:
        return queue.usage
    return decay_usage(queue.usage, max(0.0, now - queue.usage_updated), half_life)


def _add(target: dict[str, int], requests: Mapping[str, int]) -> None:
    for k, v in requests.items():
        target[k] = target.get(k, 0) + v


def _priority(gang: Gang, classes: Mapping[str, int]) -> int:
    if gang.group and gang.group.priority_class in classes:
        return classes[gang.group.priority_class]  # type: ignore[index]
    return max((p.priority for p in gang.pods), default=0)


def _start_time(gang: Gang, now: float) -> float:
    if gang.group:
        started = parse_time(gang.group.status.get("scheduledAt"))
        if started is not None:
            return started
    return now


def _time_limit(group: GroupRec | None, queue: QueueRec | None) -> float | None:
    if group and group.time_limit is not None:
        return group.time_limit
    if queue and queue.default_time_limit is not None:
        return queue.default_time_limit
    return None
