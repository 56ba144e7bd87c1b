"""Compact records of the API objects the scheduler reads, made from raw bodies.

The kopf indexes hold these instead of whole bodies: a 10,000-pod cluster must fit the operator in
a few hundred MiB, and the snapshot builder should not re-parse quantities every cycle. Parsing
errors do not raise: they are kept on the record (`error`) so the gang concerned gets reason
`Invalid` and every other gang is scheduled as usual.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from phalanx.core import MatchExpression, NodeSelectorTerm, Taint, Toleration
from phalanx.core.autogang import MANAGED_LABEL, SUSPENDED_FOR_ANNOTATION, OwnerRef, Workload
from phalanx.k8s.workload_records import (
    KEPT_ANNOTATIONS,
    controller_of,
    job_state,
    kept,
    parse_time,
    workload_record,
)
from phalanx.quantity import QuantityError, resource_list

GROUP_LABEL = "phalanx.dev/pod-group"
_NO_ANNOTATIONS: Mapping[str, str] = {}
_NO_OWNER = OwnerRef("", "", "", "")
SCHED_PLUGINS_LABEL = "scheduling.x-k8s.io/pod-group"
VOLCANO_ANNOTATION = "scheduling.k8s.io/group-name"
SUSPENDED_FOR = SUSPENDED_FOR_ANNOTATION
"""Annotation on a Job this operator suspended to evict its gang (the eviction's reason):
`k8s/job_suspension.py`."""
RUN_FOR_ANNOTATION = "phalanx.dev/run-for"
GPU = "nvidia.com/gpu"
GPU_COUNT_LABEL = "nvidia.com/gpu.count"
NATIVE_GROUP, NATIVE_VERSION = "scheduling.k8s.io", "v1alpha2"
"""Kubernetes' own PodGroup (1.36, alpha, behind the GenericWorkload gate); 1.37 serves v1beta1."""
NATIVE_QUEUE_LABEL = "phalanx.dev/queue"
MAX_MIN_MEMBER = 10_000
"""As the CRD's `minMember` maximum: a native PodGroup asking for more waits `Invalid`."""


@dataclass(frozen=True, slots=True)
class NodeRec:
    name: str
    allocatable: Mapping[str, int]
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    unschedulable: bool
    ready: bool
    not_ready_since: float | None = None
    """When its Ready condition last turned away from True (None while Ready): members on a
    node NotReady for longer than `--node-lost-seconds` are lost (core.lifecycle)."""


@dataclass(frozen=True, slots=True)
class PodRec:
    key: str
    namespace: str
    name: str
    uid: str
    scheduler_name: str
    group: str | None
    node_name: str | None
    phase: str
    deleting: bool
    requests: Mapping[str, int]
    node_selector: Mapping[str, str] = field(default_factory=dict)
    affinity: tuple[NodeSelectorTerm, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    priority: int = 0
    controlled: bool = False
    created: float = 0.0
    gated: bool = False
    """Has scheduling gates: not ready to be scheduled (as for kube-scheduler)."""
    labels: Mapping[str, str] = field(default_factory=dict)
    error: str | None = None
    owner: tuple[str, str, str] | None = None
    """Its controller owner reference: (kind, name, uid)."""
    active_deadline: float | None = None
    """`spec.activeDeadlineSeconds`: a gang all of whose members have one is time-limited by it."""
    scheduled: tuple[str, str, str] | None = None
    """Its `PodScheduled` condition as the pod shows it: (status, reason, message)."""
    priority_class: str | None = None
    """`spec.priorityClassName` (its queue may not allow it)."""
    owner_api: str = ""
    """Its controller owner's apiVersion (which kind of workload it is: `core.autogang`)."""
    annotations: Mapping[str, str] = field(default_factory=dict)
    """Only the annotations automatic ganging reads (`phalanx.dev/*`, Volcano's queue)."""
    native_group: bool = False
    """`group` is a native `scheduling.k8s.io` PodGroup, named by `spec.schedulingGroup`."""
    bound_at: float | None = None
    """When it was bound: its `PodScheduled=True` transition (the binding sets it), else
    `status.startTime`. Where a gang's run started when its PodGroup has no `scheduledAt`."""
    disruption: str | None = None
    """The reason of its `DisruptionTarget=True` condition (`EvictionByEvictionAPI`, …): something
    outside its workload is stopping it (`lifecycle.Disrupted`)."""
    waiting: tuple[str, str] | None = None
    """Bound and not finished: the first of its containers, init containers first, that is
    waiting, as (reason, message): `ImagePullBackOff` before it starts, `CrashLoopBackOff`
    while it restarts, …"""

    @property
    def terminal(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    @property
    def holds_capacity(self) -> bool:
        """Bound and not finished: what counts against a node."""
        return self.node_name is not None and not self.terminal


@dataclass(frozen=True, slots=True)
class GroupRec:
    key: str
    namespace: str
    name: str
    uid: str
    min_member: int
    queue: str
    priority_class: str | None
    topology_required: str | None
    topology_preferred: str | None
    time_limit: float | None
    schedule_timeout: float | None
    min_resources: Mapping[str, int] | None
    created: float
    status: Mapping[str, Any]
    implicit: bool = False
    error: str | None = None
    member_failure: str | None = None
    """`spec.memberFailure` (`evict` | `keep`); None: the operator's `--member-failure`."""
    generation: int = 0
    managed: bool = False
    """Made by the operator for a workload's pods (label `phalanx.dev/managed`: `core.autogang`)."""
    owner_uid: str = ""
    """Its controller owner's uid (a managed PodGroup's workload)."""
    native: bool = False
    """A native `scheduling.k8s.io/v1alpha2` PodGroup (kube-scheduler's gang API): `status` is
    its own (conditions only); what the operator records of the gang lives in memory
    (`Reporter.written`), and the reporter writes it back as native conditions."""


@dataclass(frozen=True, slots=True)
class JobRec:
    """A batch/v1 Job, reduced to what ends its gang (`Complete`, `Failed` or `Active`) and what
    ganging its pods needs (`workload`)."""

    namespace: str
    name: str
    uid: str
    state: str
    workload: Workload | None = None
    failed: int = 0
    """`status.failed`: pods that failed (the controller backs off before making more)."""
    group: str | None = None
    """The PodGroup its pod template names (`pod_group_name`): how a hand-written PodGroup's
    gang knows its Job once no pod is left to say so (evicted pods are deleted)."""
    suspended: bool = False
    """`spec.suspend`."""
    suspended_for: str | None = None
    """This operator's mark (`job_suspension.SUSPENDED_FOR`): it suspended the Job to evict
    its gang, and resumes it once its pods are gone."""
    job_controller: bool = True
    """The Job controller runs it (`spec.managedBy` unset or its own): suspending it works."""
    started: float | None = None
    """`status.startTime`: what its `activeDeadlineSeconds` counts from (`job_deadline.py`)."""
    pod_requests: Mapping[str, int] | None = None
    """What each of its pods requests, from its pod template (None if unreadable): what its
    gang holds while the Job makes its pods again (`cluster_view._restart_resources`)."""


@dataclass(frozen=True, slots=True)
class QueueRec:
    name: str
    weight: int
    guarantee: Mapping[str, int]
    limit: Mapping[str, int] | None
    reclaimable: bool
    namespaces: tuple[str, ...]
    priority: int
    default_time_limit: float | None
    max_time_limit: float | None
    usage: float
    usage_updated: float | None
    status: Mapping[str, Any]
    error: str | None = None
    priority_classes: tuple[str, ...] | None = None
    uid: str = ""
    """A Queue deleted and created again under its name is another object, with no status."""


@dataclass(frozen=True, slots=True)
class BudgetRec:
    """A PodDisruptionBudget, reduced to what decides whether a gang may be evicted now."""

    namespace: str
    name: str
    match_labels: Mapping[str, str]
    match_expressions: tuple[MatchExpression, ...]
    disruptions_allowed: int

    def selects(self, labels: Mapping[str, str]) -> bool:
        if any(labels.get(k) != v for k, v in self.match_labels.items()):
            return False
        for e in self.match_expressions:
            value = labels.get(e.key)
            if e.operator == "In" and value not in e.values:
                return False
            if e.operator == "NotIn" and value in e.values:
                return False
            if e.operator == "Exists" and value is None:
                return False
            if e.operator == "DoesNotExist" and value is not None:
                return False
        return True


def budget_record(body: Mapping[str, Any]) -> BudgetRec:
    meta, spec = body.get("metadata", {}), body.get("spec", {})
    selector = spec.get("selector") or {}
    return BudgetRec(
        namespace=meta.get("namespace", ""),
        name=meta.get("name", ""),
        match_labels=dict(selector.get("matchLabels") or {}),
        match_expressions=tuple(
            MatchExpression(e["key"], e["operator"], tuple(e.get("values") or ()))
            for e in selector.get("matchExpressions") or []
        ),
        disruptions_allowed=int((body.get("status") or {}).get("disruptionsAllowed") or 0),
    )


def node_record(body: Mapping[str, Any]) -> NodeRec:
    meta, spec, status = body.get("metadata", {}), body.get("spec", {}), body.get("status", {})
    labels = dict(meta.get("labels") or {})
    try:
        alloc = resource_list(status.get("allocatable"))
    except QuantityError:
        alloc = {}
    if GPU not in alloc and labels.get(GPU_COUNT_LABEL, "").isdigit():
        alloc[GPU] = int(labels[GPU_COUNT_LABEL])
    taints = tuple(
        Taint(t.get("key", ""), t.get("value", "") or "", t.get("effect", "NoSchedule"))
        for t in spec.get("taints") or []
    )
    ready_cond = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    ready = ready_cond is not None and ready_cond.get("status") == "True"
    not_ready_since = None
    if not ready:
        # No transition time (or no condition at all): counted from now by the view, which
        # keeps the first time it saw the node so.
        not_ready_since = parse_time((ready_cond or {}).get("lastTransitionTime"))
    return NodeRec(
        meta["name"],
        alloc,
        labels,
        taints,
        bool(spec.get("unschedulable")),
        ready,
        not_ready_since,
    )


def pod_group_name(meta: Mapping[str, Any]) -> str | None:
    """The PodGroup a pod joins: ours, scheduler-plugins' label, or Volcano's annotation."""
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    return (
        labels.get(GROUP_LABEL)
        or labels.get(SCHED_PLUGINS_LABEL)
        or annotations.get(VOLCANO_ANNOTATION)
        or None
    )


def native_group_name(spec: Mapping[str, Any]) -> str | None:
    """The native PodGroup a pod names (`spec.schedulingGroup.podGroupName`, Kubernetes 1.36)."""
    group = spec.get("schedulingGroup")
    name = group.get("podGroupName") if isinstance(group, Mapping) else None
    return name if isinstance(name, str) and name else None


def pod_requests(spec: Mapping[str, Any]) -> dict[str, int]:
    """Effective requests as the kube-scheduler computes them: sum of containers, at least the
    largest init container, plus pod overhead; one `pods` slot."""
    total: dict[str, int] = {}
    for c in spec.get("containers") or []:
        for k, v in resource_list(_container_requests(c)).items():
            total[k] = total.get(k, 0) + v
    for c in spec.get("initContainers") or []:
        for k, v in resource_list(_container_requests(c)).items():
            total[k] = max(total.get(k, 0), v)
    for k, v in resource_list(spec.get("overhead")).items():
        total[k] = total.get(k, 0) + v
    total["pods"] = 1
    return total


def _container_requests(container: Mapping[str, Any]) -> dict[str, object]:
    res = container.get("resources") or {}
    # Requests default to limits when only limits are given (the API server does the same).
    return {**(res.get("limits") or {}), **(res.get("requests") or {})}


def _affinity(spec: Mapping[str, Any]) -> tuple[NodeSelectorTerm, ...]:
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    return tuple(
        NodeSelectorTerm(
            tuple(
                MatchExpression(e["key"], e["operator"], tuple(e.get("values") or ()))
                for e in term.get("matchExpressions") or []
            )
        )
        for term in required.get("nodeSelectorTerms") or []
    )


def pod_record(body: Mapping[str, Any]) -> PodRec:
    meta, spec, status = body.get("metadata", {}), body.get("spec", {}), body.get("status", {})
    error = None
    try:
        requests = pod_requests(spec)
    except (QuantityError, KeyError) as exc:
        requests, error = {"pods": 1}, f"resources.requests.{exc}"
    try:
        affinity = _affinity(spec)
    except KeyError as exc:
        affinity, error = (), f"bad node affinity: {exc}"
    tolerations = tuple(
        Toleration(
            t.get("key", "") or "",
            t.get("operator", "Equal") or "Equal",
            t.get("value", "") or "",
            t.get("effect", "") or "",
        )
        for t in spec.get("tolerations") or []
    )
    owners = meta.get("ownerReferences") or []
    controller = next((o for o in owners if o.get("controller")), None)
    deadline = spec.get("activeDeadlineSeconds")
    scheduled = next(
        (c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), None
    )
    disruption = next(
        (
            str(c.get("reason") or "DisruptionTarget")
            for c in status.get("conditions") or []
            if c.get("type") == "DisruptionTarget" and c.get("status") == "True"
        ),
        None,
    )
    waiting = None
    if spec.get("nodeName") and status.get("phase", "Pending") in ("Pending", "Running"):
        waiting = _waiting(status)
    native = native_group_name(spec)
    bound_at = None
    if spec.get("nodeName"):
        if scheduled is not None and scheduled.get("status") == "True":
            bound_at = parse_time(scheduled.get("lastTransitionTime"))
        if bound_at is None:
            bound_at = parse_time(status.get("startTime"))
    return PodRec(
        key=f"{meta.get('namespace')}/{meta.get('name')}",
        namespace=meta.get("namespace", ""),
        name=meta.get("name", ""),
        uid=meta.get("uid", ""),
        scheduler_name=spec.get("schedulerName", "default-scheduler"),
        group=native or pod_group_name(meta),
        native_group=native is not None,
        node_name=spec.get("nodeName") or None,
        phase=status.get("phase", "Pending"),
        deleting=meta.get("deletionTimestamp") is not None,
        requests=requests,
        node_selector=dict(spec.get("nodeSelector") or {}),
        affinity=affinity,
        tolerations=tolerations,
        priority=int(spec.get("priority") or 0),
        controlled=any(o.get("controller") for o in owners),
        created=parse_time(meta.get("creationTimestamp")) or 0.0,
        gated=bool(spec.get("schedulingGates")),
        labels=dict(meta.get("labels") or {}),
        error=error,
        owner=(
            (
                str(controller.get("kind", "")),
                str(controller.get("name", "")),
                str(controller.get("uid", "")),
            )
            if controller
            else None
        ),
        active_deadline=_positive(deadline),
        priority_class=spec.get("priorityClassName") or None,
        owner_api=str(controller.get("apiVersion", "")) if controller else "",
        bound_at=bound_at,
        disruption=disruption,
        waiting=waiting,
        annotations=kept(meta.get("annotations"), KEPT_ANNOTATIONS) or _NO_ANNOTATIONS,
        scheduled=(
            (
                str(scheduled.get("status", "")),
                str(scheduled.get("reason", "")),
                str(scheduled.get("message", "")),
            )
            if scheduled
            else None
        ),
    )


def _waiting(status: Mapping[str, Any]) -> tuple[str, str] | None:
    """(reason, message) of the first waiting container of a pod not started yet."""
    for key in ("initContainerStatuses", "containerStatuses"):
        for c in status.get(key) or []:
            state = c.get("state") if isinstance(c, Mapping) else None
            waiting = state.get("waiting") if isinstance(state, Mapping) else None
            if isinstance(waiting, Mapping):
                return str(waiting.get("reason") or ""), str(waiting.get("message") or "")
    return None


def owning_job(pods: Iterable[PodRec], jobs: Mapping[str, JobRec]) -> JobRec | None:
    """The batch/v1 Job that is the controller owner of every one of `pods` (None when they
    have none, several, another kind, or a Job not watched)."""
    owners = {p.owner for p in pods}
    owner = next(iter(owners)) if len(owners) == 1 else None
    return jobs.get(owner[2]) if owner is not None and owner[0] == "Job" else None


def job_record(body: Mapping[str, Any]) -> JobRec:
    meta, status = body.get("metadata", {}), body.get("status", {})
    spec = body.get("spec") or {}
    state = job_state(status)
    try:
        template = ((spec.get("template") or {}).get("spec")) or {}
        requests: dict[str, int] | None = pod_requests(template)
    except (QuantityError, KeyError, AttributeError, TypeError):
        requests = None
    return JobRec(
        meta.get("namespace", ""),
        meta.get("name", ""),
        meta.get("uid", ""),
        state,
        workload_record({"apiVersion": "batch/v1", "kind": "Job", **body}),
        failed=_count(status.get("failed")),
        group=pod_group_name(((spec.get("template") or {}).get("metadata")) or {}),
        suspended=spec.get("suspend") is True,
        suspended_for=(meta.get("annotations") or {}).get(SUSPENDED_FOR),
        job_controller=spec.get("managedBy") in (None, "kubernetes.io/job-controller"),
        started=parse_time(status.get("startTime")),
        pod_requests=requests,
    )


def _count(value: Any) -> int:
    return value if isinstance(value, int) and value > 0 else 0


def group_record(body: Mapping[str, Any]) -> GroupRec:
    meta, spec = body.get("metadata", {}), body.get("spec", {})
    error = None
    try:
        min_resources = resource_list(spec["minResources"]) if "minResources" in spec else None
    except QuantityError as exc:
        min_resources, error = None, f"spec.minResources.{exc}"
    topology = spec.get("topology") or {}
    min_member = spec.get("minMember")
    if not isinstance(min_member, int) or min_member < 1:
        error, min_member = f"spec.minMember must be an integer >= 1, got {min_member!r}", 1
    member_failure = spec.get("memberFailure")
    if member_failure not in (None, "evict", "keep"):
        error = f"spec.memberFailure must be evict or keep, got {member_failure!r}"
        member_failure = None
    return GroupRec(
        key=f"{meta.get('namespace')}/{meta.get('name')}",
        namespace=meta.get("namespace", ""),
        name=meta.get("name", ""),
        uid=meta.get("uid", ""),
        min_member=min_member,
        queue=spec.get("queue") or "default",
        priority_class=spec.get("priorityClassName"),
        topology_required=topology.get("required"),
        topology_preferred=topology.get("preferred"),
        time_limit=_positive(spec.get("timeLimitSeconds")),
        schedule_timeout=_positive(spec.get("scheduleTimeoutSeconds")),
        min_resources=min_resources,
        created=parse_time(meta.get("creationTimestamp")) or 0.0,
        status=dict(body.get("status") or {}),
        error=error,
        member_failure=member_failure,
        generation=int(meta.get("generation") or 0),
        managed=(meta.get("labels") or {}).get(MANAGED_LABEL) == "true",
        owner_uid=(controller_of(meta) or _NO_OWNER).uid,
    )


def native_group_record(
    body: Mapping[str, Any], levels: Mapping[str, str] | None = None
) -> GroupRec:
    """A native `scheduling.k8s.io/v1alpha2` PodGroup as a gang: `schedulingPolicy.gang.minCount`
    is its `minMember` (a `basic` policy: 1, each pod placed when it fits), its one topology
    constraint's node label key (`levels`: label key → Phalanx level) is `required`. Its queue is
    its label `phalanx.dev/queue`, else `default`; `spec.priorityClassName` its class."""
    meta, spec = body.get("metadata", {}), body.get("spec") or {}
    levels = levels or {}
    errors: list[str] = []
    policy = spec.get("schedulingPolicy") or {}
    gang = policy.get("gang")
    min_member = 1
    if isinstance(gang, Mapping):
        count = gang.get("minCount")
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            errors.append(f"spec.schedulingPolicy.gang.minCount must be >= 1, got {count!r}")
        elif count > MAX_MIN_MEMBER:
            errors.append(
                f"spec.schedulingPolicy.gang.minCount {count:,} is above the {MAX_MIN_MEMBER:,} "
                "members a gang may have"
            )
        else:
            min_member = count
    elif "basic" not in policy:
        errors.append("spec.schedulingPolicy names neither gang nor basic")
    required = None
    constraints = spec.get("schedulingConstraints") or {}
    topology = constraints.get("topology") or [] if isinstance(constraints, Mapping) else []
    if isinstance(topology, list) and topology:
        key = topology[0].get("key") if isinstance(topology[0], Mapping) else None
        required = levels.get(key) if isinstance(key, str) else None
        if required is None:
            known = ", ".join(f"{label} ({level})" for label, level in levels.items()) or "none"
            errors.append(
                f"spec.schedulingConstraints.topology key {key!r} is not a topology level of "
                f"this scheduler (levels: {known})"
            )
    labels = meta.get("labels") or {}
    return GroupRec(
        key=f"{meta.get('namespace')}/{meta.get('name')}",
        namespace=meta.get("namespace", ""),
        name=meta.get("name", ""),
        uid=meta.get("uid", ""),
        min_member=min_member,
        queue=labels.get(NATIVE_QUEUE_LABEL) or "default",
        priority_class=spec.get("priorityClassName") or None,
        topology_required=required,
        topology_preferred=None,
        time_limit=None,
        schedule_timeout=None,
        min_resources=None,
        created=parse_time(meta.get("creationTimestamp")) or 0.0,
        status=dict(body.get("status") or {}),
        error="; ".join(errors) or None,
        generation=int(meta.get("generation") or 0),
        native=True,
    )


def queue_record(body: Mapping[str, Any]) -> QueueRec:
    meta, spec, status = body.get("metadata", {}), body.get("spec", {}), body.get("status", {})
    errors: list[str] = []
    guarantee: dict[str, int] = {}
    limit: dict[str, int] | None = None
    try:
        guarantee = resource_list(spec.get("guarantee"))
    except QuantityError as exc:
        errors.append(f"spec.guarantee.{exc}")
    try:
        limit = resource_list(spec["limit"]) if spec.get("limit") is not None else None
    except QuantityError as exc:
        errors.append(f"spec.limit.{exc}")
    classes = spec.get("priorityClasses")
    if classes is not None and not (
        isinstance(classes, list) and all(isinstance(c, str) for c in classes)
    ):
        errors.append(f"spec.priorityClasses must be a list of names, got {classes!r}")
        classes = None
    weight = spec.get("weight", 1)
    if not isinstance(weight, int) or isinstance(weight, bool):
        errors.append(f"spec.weight must be an integer, got {weight!r}")
        weight = 1
    error = "; ".join(errors) or None
    usage = status.get("usage")
    return QueueRec(
        name=meta.get("name", ""),
        weight=int(weight or 1),
        guarantee=guarantee,
        limit=limit,
        reclaimable=bool(spec.get("reclaimable", True)),
        namespaces=tuple(spec.get("namespaces") or ()),
        priority=int(spec.get("priority") or 0),
        default_time_limit=_positive(spec.get("defaultTimeLimitSeconds")),
        max_time_limit=_positive(spec.get("maxTimeLimitSeconds")),
        usage=float(usage) if isinstance(usage, int | float) else 0.0,
        usage_updated=parse_time(status.get("usageUpdatedAt")),
        status=dict(status),
        error=error,
        priority_classes=tuple(classes) if classes is not None else None,
        uid=str(meta.get("uid", "")),
    )


def _positive(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and value > 0 else None
