"""From the watched records to the core's `Snapshot`: gangs formed, capacity counted.

This is where Kubernetes objects become scheduling facts:
- pods join gangs by PodGroup label (ours, scheduler-plugins' or Volcano's); a pod of ours with no
  group joins the managed PodGroup of its workload (`core.autogang`: Job, JobSet, LWS group…),
  waiting while that is being made, or is a gang of one (a bare pod, an unknown owner kind);
  a pod naming a PodGroup that does not exist waits (and is reported);
- each gang's phase and what to do about it (run, place, evict, roll back, fail, done) is the
  core lifecycle's verdict (`core.lifecycle.decide`) on facts read here: its members' states,
  its PodGroup's durable status, its Job's conditions; its pods count as used while any is bound;
- pods bound by anyone else count against their nodes (`Node.used`), and so do the pods this
  operator bound a moment ago but the watch has not shown yet (`assumed`): scheduling on a stale
  view would overcommit.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from phalanx.core import (
    BareEviction,
    Member,
    Node,
    PendingGang,
    Queue,
    RunningGang,
    RunningMember,
    Snapshot,
    WorkloadCap,
    decay_usage,
)
from phalanx.core.autogang import (
    LWS_GROUP_LABEL,
    LWS_NAME_LABEL,
    SUSPENDED_FOR_ANNOTATION,
    AutoGang,
    ManagedSpec,
    OwnerRef,
    PodOwnership,
    Workload,
    needs_remake,
    resolve,
)
from phalanx.core.lifecycle import (
    Action,
    Disrupted,
    EvictedMark,
    GangFacts,
    LifecycleDecision,
    LifecyclePolicy,
    MemberFailure,
    MemberState,
    OwnerState,
    Phase,
    Record,
    check_record,
    decide,
    member_lost,
    run_start,
)
from phalanx.core.reasons import EvictionReason, format_duration
from phalanx.core.starting import BoundMember, not_running, timing_out
from phalanx.k8s.records import (
    BudgetRec,
    GroupRec,
    JobRec,
    NodeRec,
    PodRec,
    QueueRec,
    owning_job,
)
from phalanx.k8s.workload_records import parse_time


@dataclass
class Gang:
    """A PodGroup (or an implicit gang of one) with its pods and its lifecycle verdict.

    `pods` are the pods not finished (deleting ones included: they still hold their nodes);
    `finished` the ones that succeeded or failed. `status` is the PodGroup's status as this
    operator knows it: the object's, with what it wrote since (the watch may lag behind) laid
    over it. `decision` is the core lifecycle's verdict for this cycle.
    """

    key: str
    group: GroupRec | None
    pods: list[PodRec] = field(default_factory=list)
    finished: list[PodRec] = field(default_factory=list)
    status: Mapping[str, Any] = field(default_factory=dict)
    decision: LifecycleDecision | None = None
    started: float | None = None
    """`core.lifecycle.run_start`: when its run started, for `scheduledAt` when it has none."""
    auto: AutoGang | None = None
    """For a gang of pods that name no PodGroup: what `core.autogang` decided for them."""
    ignored: str = ""
    """Spec annotations some of its pods carry and its workload does not (`AutoGang.ignored`)."""
    gone: list[tuple[str, float]] = field(default_factory=list)
    """Its bound pods that left the API evicted from outside: why, and when (`build_view`)."""

    @property
    def uid(self) -> str:
        """What per-gang memory is keyed by: a PodGroup deleted and re-created under the same
        name is another gang (its pods too: an implicit gang is its pod)."""
        if self.group is not None:
            return self.group.uid or self.key
        return self.pods[0].uid if self.pods else self.key

    @property
    def min_member(self) -> int:
        """The PodGroup's; for a managed one whose workload was scaled down since, the
        workload's (the pods its owner removed are not member failures)."""
        if self.group is None:
            return 1
        if self.group.managed and self.auto is not None and not self.auto.problem:
            return max(1, min(self.group.min_member, self.auto.min_member))
        return self.group.min_member

    @property
    def succeeded(self) -> int:
        return sum(1 for p in self.finished if p.phase == "Succeeded")

    @property
    def failed(self) -> int:
        return sum(1 for p in self.finished if p.phase != "Succeeded")

    def bound(self, assumed: Mapping[str, str]) -> list[PodRec]:
        return [p for p in self.pods if p.node_name or p.key in assumed]

    def waiting(self, assumed: Mapping[str, str]) -> list[PodRec]:
        """Pods to place: not bound, not being deleted."""
        return [p for p in self.pods if not p.node_name and p.key not in assumed and not p.deleting]


@dataclass(frozen=True)
class Workloads:
    """What automatic ganging reads: workloads of the known kinds by uid, LeaderWorkerSets by
    (namespace, name), and each namespace's `phalanx.dev/queue` label."""

    by_uid: Mapping[str, Workload] = field(default_factory=dict)
    leader_worker_sets: Mapping[tuple[str, str], Workload] = field(default_factory=dict)
    namespace_queues: Mapping[str, str] = field(default_factory=dict)


@dataclass
class View:
    """One cycle's input plus what the adapter needs to act on the result.

    `running`: gangs that hold capacity and run (lifecycle `RUN`); `pending`: gangs the cycle
    may place (`SCHEDULE`). Every gang's verdict is `gangs[key].decision`.
    """

    snapshot: Snapshot
    gangs: dict[str, Gang]
    running: set[str]
    pending: set[str]
    orphans: list[PodRec]
    """Pods naming a PodGroup that does not exist."""
    to_make: dict[str, tuple[AutoGang, PodRec]] = field(default_factory=dict)
    """Managed PodGroups to create, by gang key, each with one of its pods (its template's
    priority class goes into the spec)."""
    remake: list[tuple[GroupRec, AutoGang]] = field(default_factory=list)
    """Managed PodGroups whose workload changed size (or annotations) while the gang waits
    with nothing bound: deleted, to be made again with the spec `core.autogang` says now."""
    unganged: list[tuple[PodRec, AutoGang]] = field(default_factory=list)
    """Pods whose gang cannot be made: owner not found, workload suspended (they wait)."""
    hints: list[tuple[PodRec, str]] = field(default_factory=list)
    """Gangs of one that could be gangs, with how (one pod per owner)."""
    queues: dict[str, QueueRec] = field(default_factory=dict)
    """The Queue objects by name (their uid and status, for the status writes)."""
    oddities: dict[str, str] = field(default_factory=dict)
    """Inputs the contract does not expect, handled by re-deciding from the cluster, each with
    what was done: a pod phase nobody defined, a status edited by hand, an owner not readable.
    Keyed so the loop logs each once while it lasts."""


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
    usage: Mapping[str, float],
    half_life: float,
    now: float,
    budgets: Iterable[BudgetRec] = (),
    cache: ViewCache | None = None,
    jobs: Mapping[str, JobRec] | None = None,
    written: Mapping[str, Mapping[str, Any]] | None = None,
    busy: Collection[str] = (),
    lifecycle: LifecyclePolicy | None = None,
    workloads: Workloads | None = None,
    evicting: Collection[str] = (),
    gone: Iterable[tuple[PodRec, float]] = (),
) -> View:
    """The snapshot for one cycle, and each gang's lifecycle verdict (`core.lifecycle`).

    `jobs` are the batch/v1 Jobs by uid (a Job-owned gang ends when its Job says so);
    `written` what this operator wrote to each PodGroup's status since the watch last showed
    it, by PodGroup uid; `busy` the uids of gangs this operator is binding right now, and
    `evicting` those of them it is evicting or rolling back. `gone`: bound pods of ours that
    left the API evicted from outside, with when (`Disrupted.gone`).
    """
    cache = cache if cache is not None else ViewCache()
    jobs = jobs or {}
    written = written or {}
    lifecycle = lifecycle or LifecyclePolicy()
    nodes = list(nodes)
    node_by_name = {n.name: n for n in nodes}
    pods = list(pods)
    group_by_key = {g.key: g for g in groups}
    gangs: dict[str, Gang] = {k: Gang(k, g) for k, g in group_by_key.items()}
    orphans: list[PodRec] = []
    other_used: dict[str, dict[str, int]] = {}
    workloads = workloads or Workloads()
    to_make: dict[str, tuple[AutoGang, PodRec]] = {}
    unganged: list[tuple[PodRec, AutoGang]] = []
    hints: dict[str, tuple[PodRec, str]] = {}
    autos: dict[tuple[str, str, str | None, str | None], AutoGang] = {}
    remake: list[tuple[GroupRec, AutoGang]] = []
    oddities: dict[str, str] = {}

    for pod in pods:
        if pod.scheduler_name != scheduler_name:
            if pod.node_name and not pod.terminal and pod.node_name in node_by_name:
                _add(other_used.setdefault(pod.node_name, {}), pod.requests)
            continue
        if pod.gated and not pod.node_name:
            continue  # a gated pod does not exist yet as far as scheduling goes
        auto: AutoGang | None = None
        if pod.group is None:
            auto = _auto_gang(pod, workloads, autos)
            if not auto.name:
                if pod.terminal:
                    continue  # a finished gang of one is over
                if auto.waits:
                    unganged.append((pod, auto))
                    if pod.node_name and pod.node_name in node_by_name:
                        _add(other_used.setdefault(pod.node_name, {}), pod.requests)
                    continue
                if auto.hint and pod.owner is not None:
                    first = hints.get(pod.owner[2])
                    if first is None or pod.name < first[0].name:
                        hints[pod.owner[2]] = (pod, auto.hint)  # one pod per owner says it
                key = f"{pod.namespace}/{pod.name}"
                gangs.setdefault(key, Gang(key, None)).pods.append(pod)
                continue
        key = f"{pod.namespace}/{auto.name if auto is not None else pod.group}"
        gang = gangs.get(key)
        if gang is None and auto is not None:
            # Its managed PodGroup is not made yet (or not seen yet): the pods wait for it.
            if not pod.terminal and not pod.deleting:  # a pod going away needs no gang
                to_make.setdefault(key, (auto, pod))
                if pod.node_name and pod.node_name in node_by_name:
                    _add(other_used.setdefault(pod.node_name, {}), pod.requests)
            continue
        if gang is not None and auto is not None:
            gang.auto = auto
            gang.ignored = gang.ignored or auto.ignored
        if gang is None:
            if not pod.terminal:
                orphans.append(pod)
                if pod.node_name and pod.node_name in node_by_name:
                    _add(other_used.setdefault(pod.node_name, {}), pod.requests)
            continue
        (gang.finished if pod.terminal else gang.pods).append(pod)

    gone = list(gone)
    present = {p.uid for p in pods} if gone else set()  # most cycles have none to look up
    for pod, at in gone:
        if pod.uid in present:
            continue
        name = pod.group if pod.group is not None else _auto_gang(pod, workloads, autos).name
        gang = gangs.get(f"{pod.namespace}/{name}") if name else None
        if gang is not None:
            gang.gone.append((pod.disruption or "DisruptionTarget", at))

    blocking = [b for b in budgets if b.disruptions_allowed <= 0]
    running: list[RunningGang] = []
    pending: list[PendingGang] = []
    running_keys, pending_keys = set(), set()
    queue_by_name = {q.name: q for q in queues}

    for key in sorted(gangs):
        gang = gangs[key]
        gang.pods.sort(key=lambda p: p.name)
        queue_name = gang.group.queue if gang.group else "default"
        queue = queue_by_name.get(queue_name)
        if gang.group is not None:
            gang.status = written.get(gang.group.uid, gang.group.status)
        limit = _time_limit(gang, queue)
        states = [_member_state(p, assumed, node_by_name, now, lifecycle) for p in gang.pods]
        states += [
            MemberState.SUCCEEDED if p.phase == "Succeeded" else MemberState.FAILED
            for p in gang.finished
        ]
        _note_oddities(gang, jobs, oddities)
        record, problem = Record.NONE, ""
        bound_now = {
            p.uid: (p.node_name or assumed[p.key]) for p in gang.bound(assumed) if not p.deleting
        }
        recorded = recorded_pods(gang.status) if gang.group is not None else None
        if bound_now:
            need_now = max(
                0, gang.min_member - sum(1 for p in gang.finished if p.phase == "Succeeded")
            )
            record, problem = check_record(
                recorded, bound_now, [p.uid for p in gang.waiting(assumed)], need_now
            )
        scheduled_at = parse_time(gang.status.get("scheduledAt"))
        job = _gang_job(gang, jobs)
        owner, owner_failure = _owner_state(gang, job, workloads)
        facts = GangFacts(
            id=key,
            min_member=gang.min_member,
            members=tuple(s for s in states if s is not None),
            created=gang.group.created if gang.group else min(p.created for p in gang.pods),
            recorded_phase=_str(gang.status.get("phase")),
            scheduled_at=scheduled_at,
            bound_since=_bound_since(gang) if scheduled_at is None else None,
            evicted=_evicted(gang.status),
            owner=owner,
            owner_failure=owner_failure,
            binding=gang.uid in busy,
            evicting_now=gang.uid in evicting,
            member_failure=_member_failure(gang.group),
            member_failures=_int(gang.status.get("memberFailures")),
            disrupted=_disrupted(gang, states, scheduled_at),
            not_started=(
                timing_out(not_running(bound_members(gang), now))
                if lifecycle.start_timeout > 0
                else None
            ),
            time_limit=limit,
            schedule_timeout=gang.group.schedule_timeout if gang.group else None,
            record=record,
            record_problem=problem,
        )
        decision = gang.decision = decide(facts, lifecycle, now)
        gang.started = run_start(facts)
        if (
            gang.group is not None
            and gang.auto is not None
            and needs_remake(
                _managed_spec(gang.group),
                gang.auto.spec,
                managed=gang.group.managed,
                placed=decision.phase != Phase.PENDING or bool(bound_now),
                busy=gang.uid in busy,
            )
        ):
            remake.append((gang.group, gang.auto))
            continue  # its PodGroup is made again with the new spec; nothing placed meanwhile
        priority = _priority(gang, priority_classes)
        problem_in_spec = _invalid(gang, priority_classes)
        held = [
            p for p in gang.bound(assumed) if (p.node_name or assumed.get(p.key)) in node_by_name
        ]
        if decision.holds_capacity:
            if not held and decision.action is not Action.RUN:
                continue  # nothing of it left on any node (members on lost nodes only)
            members = tuple(cache.member(p, p.node_name or assumed[p.key]) for p in held)
            waiting: tuple[Member, ...] = ()
            intended: tuple[tuple[Member, str], ...] = ()
            if decision.action is Action.RUN:
                waiting = tuple(cache.pending_member(p) for p in gang.waiting(assumed))
                running_keys.add(key)
            elif decision.action is Action.REPAIR and recorded is not None:
                missing = decision.need - len(bound_now)
                named = [p for p in gang.waiting(assumed) if p.uid in recorded]
                intended = tuple(
                    (cache.pending_member(p), recorded[p.uid]) for p in named[: max(0, missing)]
                )
            running.append(
                RunningGang(
                    id=key,
                    queue=queue_name,
                    members=members,
                    priority=priority,
                    start_time=gang.started if gang.started is not None else now,
                    time_limit=limit,
                    # A budget that allows no disruption now protects the gang from reclaim
                    # and preemption: the core picks another victim.
                    protected=any(
                        b.namespace == p.namespace and b.selects(p.labels)
                        for b in blocking
                        for p in held
                    ),
                    evicting=decision.evicting,
                    waiting=waiting,
                    topology_required=gang.group.topology_required if gang.group else None,
                    intended=intended,
                    creation_time=facts.created,
                    over=decision.lingering,
                )
            )
            continue
        # Not holding capacity for the gang: what is still bound is the workload's own.
        for p in held:
            _add(other_used.setdefault(p.node_name or assumed[p.key], {}), p.requests)
        if decision.action is not Action.SCHEDULE:
            continue
        live = gang.waiting(assumed)
        if gang.group is None and not live:
            continue
        pending.append(
            PendingGang(
                id=key,
                min_member=max(1, decision.need),
                members=tuple(cache.pending_member(p) for p in live),
                queue=queue_name,
                namespace=key.partition("/")[0],
                priority=priority,
                creation_time=facts.created,
                topology_required=gang.group.topology_required if gang.group else None,
                topology_preferred=gang.group.topology_preferred if gang.group else None,
                time_limit=limit,
                min_resources=dict(gang.group.min_resources)
                if gang.group and gang.group.min_resources is not None
                else _restart_resources(job, facts.evicted, decision.need, len(live)),
                not_before=decision.not_before,
                priority_class=_priority_class(gang),
                invalid=problem_in_spec,
                due_since=parse_time(gang.status.get("phantomDueAt")),
                queue_source=gang.auto.queue_source
                if gang.auto is not None and gang.group is not None and gang.group.managed
                else "",
                pods_note=_job_backoff(job, facts.evicted) if len(live) < decision.need else "",
                held=_suspended(gang, job, workloads),
                bare_evicted=_bare_evicted(gang, facts.evicted),
                workload=_workload_cap(gang, job),
            )
        )
        pending_keys.add(key)

    core_nodes = tuple(
        cache.node(n, other_used.get(n.name, {})) for n in sorted(nodes, key=lambda n: n.name)
    )
    cache.forget_except(set(node_by_name), {p.key for p in pods})
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
            priority_classes=q.priority_classes,
            invalid=f"queue {q.name}: {q.error}" if q.error else "",
        )
        for q in sorted(queues, key=lambda q: q.name)
    )
    snapshot = Snapshot(core_nodes, core_queues, tuple(running), tuple(pending))
    return View(
        snapshot,
        gangs,
        running_keys,
        pending_keys,
        orphans,
        to_make=to_make,
        remake=remake,
        unganged=unganged,
        hints=list(hints.values()),
        queues=queue_by_name,
        oddities=oddities,
    )


POD_PHASES = frozenset({"Pending", "Running", "Succeeded", "Failed"})


def _note_oddities(gang: Gang, jobs: Mapping[str, JobRec], out: dict[str, str]) -> None:
    """What of `gang`'s inputs is outside the contract, and how it is handled (`View.oddities`)."""
    for p in [*gang.pods, *gang.finished]:
        if p.phase not in POD_PHASES:
            out[f"{p.uid}/phase/{p.phase}"] = (
                f"pod {p.key}: phase {p.phase!r} is not a pod phase; counted as "
                + ("bound" if p.node_name else "pending")
            )
    if gang.group is None:
        return
    status = gang.status
    phase = status.get("phase")
    if phase is not None and phase not in {str(v) for v in Phase}:
        out[f"{gang.uid}/status.phase"] = (
            f"PodGroup {gang.key}: status.phase {phase!r} is not one of the contract's; the phase "
            "is decided again from its pods"
        )
    if "placement" in status and recorded_pods(status) is None:
        out[f"{gang.uid}/status.placement"] = (
            f"PodGroup {gang.key}: status.placement is malformed (edited by hand?); read as no "
            "decision record"
        )
    for p in gang.pods:
        if p.owner is not None and p.owner[0] == "Job" and p.owner[2] not in jobs:
            out[f"{gang.uid}/owner/{p.owner[2]}"] = (
                f"PodGroup {gang.key}: Job {p.owner[1]} (owner of {p.name}) is not readable; its "
                "completion is decided from the pods' phases"
            )
            break


def _auto_gang(
    pod: PodRec,
    workloads: Workloads,
    memo: dict[tuple[str, str, str | None, str | None], AutoGang],
) -> AutoGang:
    """`core.autogang.resolve` for one pod; pods of one owner (and LWS group) share the answer
    within a cycle, unless their own annotations decide (pods of an unknown owner kind)."""
    owner_uid = pod.owner[2] if pod.owner is not None else ""
    memo_key = (
        pod.namespace,
        owner_uid,
        pod.labels.get(LWS_NAME_LABEL),
        pod.labels.get(LWS_GROUP_LABEL),
    )
    hit = memo.get(memo_key) if owner_uid and not pod.annotations else None
    if hit is not None:
        return hit
    owner = (
        OwnerRef(pod.owner_api, pod.owner[0], pod.owner[1], pod.owner[2])
        if pod.owner is not None
        else None
    )
    auto = resolve(
        PodOwnership(pod.namespace, pod.name, owner, pod.labels, pod.annotations),
        workloads.by_uid,
        workloads.leader_worker_sets,
        workloads.namespace_queues.get(pod.namespace),
    )
    if owner_uid and not pod.annotations:
        memo[memo_key] = auto
    return auto


def _managed_spec(group: GroupRec) -> ManagedSpec:
    return ManagedSpec(
        group.min_member,
        group.queue,
        group.topology_required,
        group.topology_preferred,
        int(group.time_limit) if group.time_limit is not None else None,
        group.member_failure,
    )


def recorded_pods(status: Mapping[str, Any]) -> dict[str, str] | None:
    """`status.placement.pods` as pod UID → node, or None when absent or malformed (a status
    edited by hand is then simply no record)."""
    placement = status.get("placement")
    pods = placement.get("pods") if isinstance(placement, Mapping) else None
    if not isinstance(pods, Mapping) or not pods:
        return None
    out = {k: v for k, v in pods.items() if isinstance(k, str) and isinstance(v, str)}
    return out if len(out) == len(pods) else None


def _bound_since(gang: Gang) -> float | None:
    """When the first of the gang's live members was bound (`GangFacts.bound_since`); only
    asked for a gang with no `scheduledAt`, the rare case, so not a scan of every gang's pods
    every cycle."""
    return min(
        (p.bound_at for p in gang.pods if p.holds_capacity and p.bound_at is not None),
        default=None,
    )


def _disrupted(
    gang: Gang, states: Sequence[MemberState | None], since: float | None
) -> Disrupted | None:
    """Its failed, terminating and vanished members that something outside the workload
    stopped (their `DisruptionTarget` condition), None when there are none. `states` are
    `gang.pods`' states followed by `gang.finished`'s, as the lifecycle counts them; vanished
    ones count only when they went after `since` (its `scheduledAt`), in its current run."""
    gone = [why for why, at in gang.gone if since is None or at >= since]
    if not gone and MemberState.FAILED not in states and MemberState.TERMINATING not in states:
        return None  # the common case, every cycle: nothing to look at
    terminating = [
        p
        for p, s in zip(gang.pods, states, strict=False)
        if s is MemberState.TERMINATING and p.disruption
    ]
    failed = [p for p in gang.finished if p.phase == "Failed" and p.disruption]
    if not (terminating or failed or gone):
        return None
    reason = next((p.disruption for p in terminating + failed if p.disruption), None)
    return Disrupted(len(failed), len(terminating), reason or gone[0], gone=len(gone))


def bound_members(gang: Gang) -> list[BoundMember]:
    """Its bound, not terminating members as `core.starting` reads them."""
    return [
        BoundMember(p.name, p.phase, p.waiting, p.bound_at)
        for p in gang.pods
        if p.node_name and not p.deleting
    ]


def _member_state(
    pod: PodRec,
    assumed: Mapping[str, str],
    nodes: Mapping[str, NodeRec],
    now: float,
    policy: LifecyclePolicy,
) -> MemberState | None:
    """How the lifecycle counts one unfinished pod (None: not a member, e.g. an unbound pod
    being deleted). A phase the contract does not know counts as bound or pending.

    Lost before terminating: a pod on a node that is gone (or NotReady past
    `node_lost_seconds`) is lost whether or not its delete has begun. With no kubelet to
    confirm the delete, it stays terminating until the pod garbage collector removes it (about
    a minute, walked); counted as terminating it read as a member its workload deleted (a
    failure of its own, backed off) and its gang's wait said "1 terminating" for that minute."""
    node = pod.node_name or assumed.get(pod.key)
    if node is None:
        return None if pod.deleting else MemberState.PENDING
    rec = nodes.get(node)
    if pod.node_name is not None and member_lost(
        rec is not None,
        rec.not_ready_since if rec is not None and not rec.ready else None,
        now,
        policy.node_lost_seconds,
    ):
        return MemberState.LOST
    if pod.deleting:
        return MemberState.TERMINATING
    return MemberState.RUNNING if pod.phase == "Running" else MemberState.BOUND


JOB_BACKOFF_S = 10.0
"""The Job controller's first pod-failure back-off (Kubernetes `DefaultJobPodFailureBackOff`)."""
JOB_BACKOFF_MAX_S = 600.0
"""Its cap (`MaxJobPodFailureBackOff`): the back-off doubles for each failure since the last
success, at most this, counted from the last failure."""


def _restart_resources(
    job: JobRec | None, evicted: EvictedMark | None, need: int, have: int
) -> dict[str, int] | None:
    """What a Job's gang, evicted whole for a member failure (a drain among them), holds while
    its Job makes its pods again: `need` pods of its template (its `minResources`, as if written
    by hand, so it is planned and may hold a reservation where the rules let it, PRODUCT.md §4).
    Walked: a drained node's Job gang of 4 × 8 GPUs was away 10 s (the Job's back-off); another
    queue's bare gang of 56 GPUs was backfilled onto its nodes meanwhile, and reclaimed 9 s
    later by the gang's queue, owed its share: 8 pods deleted, that nothing makes again."""
    if (
        job is None
        or job.pod_requests is None
        or job.state != "Active"
        or evicted is None
        or evicted.reason != EvictionReason.MEMBER_FAILED
        or have >= need
    ):
        return None
    return {name: amount * need for name, amount in job.pod_requests.items()}


def _suspended(gang: Gang, job: JobRec | None, workloads: Workloads) -> str:
    """Why a gang's workload makes no pods, when its user suspended it (`spec.suspend`, as
    Kueue does to a workload it has not admitted): walked, a suspended Job's gang said only
    "0 of 2 pods exist", and `phalanx explain` asked for pods labelled with its PodGroup. The
    Job a hand-written PodGroup's pods come from, or a managed PodGroup's owner of any kind
    ganging knows. A workload this operator suspended to evict its gang says nothing here:
    its `Evicted` condition tells, and it is resumed once its pods are gone."""
    if job is not None:
        if job.state != "Active" or not job.suspended or job.suspended_for:
            return ""
        return f"its Job {job.name} is suspended (spec.suspend): it makes no pods until resumed"
    group = gang.group
    if group is None or not group.managed or not group.owner_uid:
        return ""
    workload = workloads.by_uid.get(group.owner_uid)
    if (
        workload is None
        or workload.state not in ("Active", "Unknown")
        or not workload.suspended
        or SUSPENDED_FOR_ANNOTATION in workload.annotations
    ):
        return ""
    where = "spec.runPolicy.suspend" if workload.ref.group == "kubeflow.org" else "spec.suspend"
    return (
        f"its {workload.ref.kind} {workload.ref.name} is suspended ({where}): it makes no pods "
        "until resumed"
    )


def _job_backoff(job: JobRec | None, evicted: EvictedMark | None = None) -> str:
    """Why a gang's Job has not made all its pods, when its failed pods say: after a member
    failure the gang is evicted whole and the Job controller makes the pods again only after
    its back-off, which `WaitingForPods` alone ("0 of 3 pods exist") does not say. (The pods
    of an eviction do not count there: the Job is suspended to evict them, `job_suspension`.)

    A member its `podFailurePolicy` ignores (evicted from outside: `kubectl drain`) is not in
    `status.failed`, but the Job controller's back-off counts it all the same, in memory: walked,
    a Job drained three times waited 40 s after it was resumed, saying only "0 of 4 pods
    exist". With no failure on record, an `Evicted` `MemberFailed` gang says that without the
    number, which nothing in the API holds."""
    if job is None or job.state != "Active" or job.suspended:
        return ""
    if job.failed <= 0:
        if evicted is None or evicted.reason != EvictionReason.MEMBER_FAILED:
            return ""
        return (
            f"its Job {job.name} makes pods again only after its back-off, which counts the pods "
            "its podFailurePolicy ignores though its status shows none: "
            f"{format_duration(JOB_BACKOFF_S)} doubled per pod failed or evicted since its last "
            f"success, at most {format_duration(JOB_BACKOFF_MAX_S)}, after the last"
        )
    backoff = min(JOB_BACKOFF_MAX_S, JOB_BACKOFF_S * 2.0 ** min(job.failed - 1, 16))
    failed = f"{job.failed} failed pod{'' if job.failed == 1 else 's'}"
    return (
        f"its Job {job.name} has {failed}: the Job controller makes pods again only after its "
        f"back-off, up to {format_duration(backoff)} after the last failure "
        f"({format_duration(JOB_BACKOFF_S)} doubled per failure since its last success, at most "
        f"{format_duration(JOB_BACKOFF_MAX_S)})"
    )


def _gang_job(gang: Gang, jobs: Mapping[str, JobRec]) -> JobRec | None:
    """The batch/v1 Job whose pods the gang is: a managed PodGroup's owner; else the Job that
    owns its pods; else, with no pod left, the one Job of its namespace whose pod template
    names its PodGroup."""
    group = gang.group
    if group is not None and group.managed and group.owner_uid:
        return jobs.get(group.owner_uid)
    if gang.pods or gang.finished:
        return owning_job([*gang.pods, *gang.finished], jobs)
    if group is None:
        return None
    naming = [j for j in jobs.values() if j.namespace == group.namespace and j.group == group.name]
    return naming[0] if len(naming) == 1 else None


def _owner_state(gang: Gang, job: JobRec | None, workloads: Workloads) -> tuple[OwnerState, str]:
    """What the gang's controller says: one Job for all its pods → that Job's state; pods
    with no controller → NONE; any other owner (or a Job not seen) → UNKNOWN. With it, why
    the workload failed when it did (`Workload.failure`).

    With no pod left to name it (an eviction deletes them; a Job past its `backoffLimit` makes
    no more), the workload is found from the PodGroup's side: a managed PodGroup's owner, or
    the one Job of its namespace whose pod template names a hand-written PodGroup. Without
    this, a Job that failed because its gang was evicted (a time limit, `backoffLimit: 0`)
    left its gang `Pending` "0 of N pods exist" for ever."""
    group = gang.group
    if gang.auto is not None and gang.auto.owner is not None:
        # A managed gang ends when its workload (Job, JobSet, …) says so.
        return _STATES.get(gang.auto.state, OwnerState.UNKNOWN), gang.auto.failure
    owners = {p.owner for p in [*gang.pods, *gang.finished]}
    if owners == {None}:
        return OwnerState.NONE, ""
    if not owners and group is not None and group.managed and group.owner_uid:
        # Any workload kind ganging knows, not only Jobs (a JobSet says Failed too).
        workload = workloads.by_uid.get(group.owner_uid)
        if workload is None:
            return OwnerState.UNKNOWN, ""
        return _STATES.get(workload.state, OwnerState.UNKNOWN), workload.failure
    if job is None:
        return OwnerState.UNKNOWN, ""
    why = job.workload.failure if job.workload is not None else ""
    return _STATES.get(job.state, OwnerState.UNKNOWN), why


_STATES = {
    "Complete": OwnerState.COMPLETE,
    "Failed": OwnerState.FAILED,
    "Active": OwnerState.ACTIVE,
}
"""A workload's own verdict (`Workload.state`, `JobRec.state`); others (`Unknown`: kinds
that never complete) leave it to the pod counts."""


def _workload_cap(gang: Gang, job: JobRec | None) -> WorkloadCap | None:
    """The standalone Job that makes a hand-written PodGroup's pods, and how many it runs at
    once. A Job under a JobSet (or any other owner) is left out: its siblings' pods join the
    same PodGroup."""
    if gang.group is None or gang.group.managed:
        return None
    if job is None or job.workload is None or job.workload.owner is not None:
        return None
    return WorkloadCap("Job", job.name, job.workload.members)


def _bare_evicted(gang: Gang, mark: EvictedMark | None) -> BareEviction | None:
    """The bare pods its last eviction deleted (`status.evictedBarePods`, written with the
    `Evicted` mark before any pod went) and its failed bare pods, while the gang has not started
    since (a start writes `scheduledAt`; the mark clears it)."""
    status = gang.status
    deleted = _int(status.get("evictedBarePods"))
    failed = sum(1 for p in gang.finished if p.phase == "Failed" and p.owner is None)
    if mark is None or deleted + failed <= 0 or status.get("scheduledAt") is not None:
        return None
    return BareEviction(deleted, mark.reason, mark.since, failed=failed)


def _evicted(status: Mapping[str, Any]) -> EvictedMark | None:
    for c in status.get("conditions") or []:
        if isinstance(c, Mapping) and c.get("type") == "Evicted" and c.get("status") == "True":
            since = parse_time(c.get("lastTransitionTime"))
            return EvictedMark(str(c.get("reason") or ""), since if since is not None else 0.0)
    return None


def _member_failure(group: GroupRec | None) -> MemberFailure | None:
    if group is None or group.member_failure is None:
        return None
    return MemberFailure(group.member_failure)


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: object) -> int:
    return value if isinstance(value, int) and value > 0 else 0


def _restored_usage(queue: QueueRec, half_life: float, now: float) -> float:
    """Usage persisted in Queue status, decayed from when it was written to now."""
    if queue.usage_updated is None:
        return queue.usage
    return decay_usage(queue.usage, max(0.0, now - queue.usage_updated), half_life)


def _add(target: dict[str, int], requests: Mapping[str, int]) -> None:
    for k, v in requests.items():
        target[k] = target.get(k, 0) + v


def _priority_class(gang: Gang) -> str | None:
    """The PriorityClass a gang's priority comes from: its PodGroup's, else its pods'."""
    if gang.group and gang.group.priority_class:
        return gang.group.priority_class
    return next((p.priority_class for p in gang.pods if p.priority_class), None)


def _invalid(gang: Gang, classes: Mapping[str, int]) -> str:
    """What could not be read in the gang's spec or its pods', naming the field and the value
    (the core makes it `Invalid` for this gang alone)."""
    group = gang.group
    if gang.auto is not None and gang.auto.problem:
        return gang.auto.problem
    if group is not None and group.error:
        return group.error
    if group is not None and group.priority_class and group.priority_class not in classes:
        return f"spec.priorityClassName: PriorityClass {group.priority_class!r} does not exist"
    bad = next((p for p in gang.pods if p.error), None)
    if bad is not None:
        return f"pod {bad.name}: {bad.error}"
    return ""


def _priority(gang: Gang, classes: Mapping[str, int]) -> int:
    if gang.group and gang.group.priority_class in classes:
        return classes[gang.group.priority_class]  # type: ignore[index]
    return max((p.priority for p in gang.pods), default=0)


def _time_limit(gang: Gang, queue: QueueRec | None) -> float | None:
    """The PodGroup's `timeLimitSeconds`, else its queue's default, else the members'
    `activeDeadlineSeconds` when every member has one (the kubelet ends each pod by then)."""
    group = gang.group
    if group and group.time_limit is not None:
        return group.time_limit
    if queue and queue.default_time_limit is not None:
        return queue.default_time_limit
    deadlines = [p.active_deadline for p in gang.pods]
    if deadlines and all(d is not None for d in deadlines):
        return max(d for d in deadlines if d is not None)
    return None
