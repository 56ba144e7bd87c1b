"""Automatic gangs: the gang a pod of ours belongs to when no PodGroup names it.

A user who labels a namespace (or a Job) with a queue should not also have to write a PodGroup:
a Job of 8 workers scheduled pod by pod is the partial start gang scheduling exists to prevent.
KAI's pod-grouper walks owners up to the top workload; Volcano makes a PodGroup for every job.
Phalanx walks the pod's controller owners up to the **highest kind it knows** and makes one
managed PodGroup per such workload (per group for a LeaderWorkerSet), sized from the workload's
own spec. The rules live here, pure, so unit tables pin them and the adapter only carries them
out (`k8s/gang_maker.py` creates the PodGroups).

Why stop at the highest *known* kind and not the top owner: a CronJob owns one Job per run, and
each run is its own gang; a Deployment's ReplicaSets are revisions, not one job. Unknown kinds
are never read (the operator's RBAC covers only the workload kinds below), so a pod owned by one
is ganged only when its pod template says how many to wait for (`phalanx.dev/min-member`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

MANAGED_LABEL = "phalanx.dev/managed"
"""On every PodGroup the operator made itself (value "true")."""
MIN_MEMBER_ANNOTATION = "phalanx.dev/min-member"
TOPOLOGY_REQUIRED_ANNOTATION = "phalanx.dev/topology-required"
TOPOLOGY_PREFERRED_ANNOTATION = "phalanx.dev/topology-preferred"
TIME_LIMIT_ANNOTATION = "phalanx.dev/time-limit-seconds"
SPEC_ANNOTATIONS = (
    MIN_MEMBER_ANNOTATION,
    TIME_LIMIT_ANNOTATION,
    TOPOLOGY_REQUIRED_ANNOTATION,
    TOPOLOGY_PREFERRED_ANNOTATION,
)
"""The annotations that carry a managed PodGroup's spec: read from the workload of a known kind
(its own metadata), from the pod of any other."""
QUEUE_LABEL = "phalanx.dev/queue"
SUSPENDED_FOR_ANNOTATION = "phalanx.dev/suspended-for"
"""On a Job or JobSet the operator suspended to evict its gang (the reason): its pods stay in
that gang meanwhile — those that finished count, those terminating leave it — where a workload
suspended by anyone else (Kueue) has its pods wait unganged until it resumes."""
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
VOLCANO_QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
LWS_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
LWS_GROUP_LABEL = "leaderworkerset.sigs.k8s.io/group-index"

KNOWN_KINDS: frozenset[tuple[str, str]] = frozenset(
    {
        ("batch", "Job"),
        ("jobset.x-k8s.io", "JobSet"),
        ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"),
        ("kubeflow.org", "PyTorchJob"),
        ("kubeflow.org", "MPIJob"),
        ("trainer.kubeflow.org", "TrainJob"),
        ("ray.io", "RayCluster"),
        ("ray.io", "RayJob"),
    }
)
"""(API group, kind) of the workloads whose specs say how many pods make one gang."""

_LEVEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_NAME_MAX = 253


@dataclass(frozen=True)
class OwnerRef:
    """A controller owner reference, as the API holds it."""

    api_version: str
    kind: str
    name: str
    uid: str

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0] if "/" in self.api_version else ""


@dataclass(frozen=True)
class Workload:
    """A workload object of a known kind, reduced to what ganging it needs.

    `members` is how many pods one gang of it has by its spec (a Job: min(parallelism,
    completions)); `unsupported` names a spec field that makes it impossible to place whole,
    with what to change ("" when none); `state` is what its own conditions say
    (`Active`, `Complete`, `Failed`; `Unknown` for kinds that never complete, e.g. a
    LeaderWorkerSet: its pods' phases decide).
    """

    ref: OwnerRef
    namespace: str
    owner: OwnerRef | None
    members: int
    unsupported: str = ""
    annotations: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    state: str = "Active"
    failure: str = ""
    """Why it failed, as its own `Failed` condition says ("BackoffLimitExceeded: Job has
    reached the specified backoff limit"; "" when it has not, or its kind does not say)."""
    suspended: bool = False
    managed_by: str | None = None
    """`spec.managedBy`: a controller other than the kind's own may run it (Kueue's
    MultiKueue); the adapter then evicts its gang pod by pod instead of suspending it."""
    started: float | None = None
    """`status.startTime` (seconds since the epoch), where its kind has one: how long its run
    has been active when a time limit ends it by its own deadline (`k8s/job_deadline.py`)."""
    suspend_refused: str = ""
    """Why suspending it would not requeue its run ("" when it would): its gang is then evicted
    pod by pod (`k8s/job_suspension.py`)."""
    spec_queue: tuple[str, str] | None = None
    """(field, queue): a queue its spec names in another scheduler's own field — a Kubeflow v1
    job's `spec.runPolicy.schedulingPolicy.queue`, which Volcano users set. Read after every
    label and annotation, before the namespace's label."""
    spec_min_member: tuple[str, int] | None = None
    """(field, count): how many of its pods its spec says the gang needs — a Kubeflow v1 job's
    `spec.runPolicy.schedulingPolicy.minAvailable`; the `phalanx.dev/min-member` annotation
    overrides it. An elastic PyTorchJob's is its `spec.elasticPolicy.minReplicas` (plus its
    other replicas) unless `minAvailable` is set."""
    member_failure: str | None = None
    """`memberFailure` its gang's PodGroup gets ("keep" for an elastic PyTorchJob, whose
    workers may leave and be replaced while the rest train on); None: the operator's default."""
    spec_priority_class: str | None = None
    """A PriorityClass its spec names for its gang (a Kubeflow v1 job's
    `schedulingPolicy.priorityClass`): its PodGroup's `priorityClassName`, before its pods'."""
    spec_schedule_timeout: int | None = None
    """Its `schedulingPolicy.scheduleTimeoutSeconds`: its PodGroup's `scheduleTimeoutSeconds`."""

    @property
    def title(self) -> str:
        return f"{self.ref.kind} {self.namespace}/{self.ref.name}"


@dataclass(frozen=True)
class PodOwnership:
    """What of a pod decides its automatic gang: its controller owner and a few labels and
    annotations (queue labels, LeaderWorkerSet group labels, `phalanx.dev/*` annotations)."""

    namespace: str
    name: str
    owner: OwnerRef | None
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class AutoGang:
    """The managed PodGroup a pod belongs to, or why it has none.

    `name` "" means no managed PodGroup: the pod is a gang of one (`hint` says how to gang it,
    "" for a bare pod), or it waits (`problem_reason` set: `OwnerNotFound`, `Suspended`).
    With a name, `problem_reason` `Invalid` means the PodGroup is made but its gang waits,
    with `problem` naming the annotation or field to fix.
    """

    name: str = ""
    owner: OwnerRef | None = None
    min_member: int = 1
    queue: str = "default"
    topology_required: str | None = None
    topology_preferred: str | None = None
    time_limit: int | None = None
    member_failure: str | None = None
    priority_class: str | None = None
    """Set at creation only (with `schedule_timeout`): not part of `spec`, which is compared
    to make the PodGroup again, as the pods' own class is written there too."""
    schedule_timeout: int | None = None
    state: str = "Active"
    failure: str = ""
    """Its workload's `Workload.failure`."""
    queue_source: str = ""
    """Which label (annotation) of which object named `queue` ("" for the default)."""
    problem_reason: str = ""
    problem: str = ""
    hint: str = ""
    ignored: str = ""
    """Spec annotations on the pod (its template's) that its known-kind workload does not carry:
    not read, and said once (walked: a PyTorchJob's time limit written on its pod templates ran
    92 s past its 15 s, silently)."""

    @property
    def spec(self) -> ManagedSpec:
        """What of a PodGroup spec this gang's workload asks for now."""
        return ManagedSpec(
            self.min_member,
            self.queue,
            self.topology_required,
            self.topology_preferred,
            self.time_limit,
            self.member_failure,
        )

    @property
    def waits(self) -> bool:
        """The pod must not be scheduled on its own: its gang is not made (yet)."""
        return not self.name and self.problem_reason != ""


@dataclass(frozen=True)
class ManagedSpec:
    """The part of a PodGroup spec automatic ganging sets (all of it immutable once made)."""

    min_member: int
    queue: str
    topology_required: str | None
    topology_preferred: str | None
    time_limit: int | None
    member_failure: str | None = None


def needs_remake(
    current: ManagedSpec, wanted: ManagedSpec, *, managed: bool, placed: bool, busy: bool
) -> bool:
    """Whether a managed PodGroup must be deleted and made again: its spec is immutable, and its
    workload now says otherwise (scaled, re-annotated). Only while the gang waits with nothing
    placed: a running gang keeps its spec (scaled down, it simply needs fewer members; see
    `k8s.cluster_view.Gang.min_member`). A hand-written PodGroup is never touched."""
    return managed and not placed and not busy and current != wanted


def managed_name(kind: str, name: str, group_index: str | None = None) -> str:
    """`<kind>-<name>` in lower case (`leaderworkerset-<name>-<group index>`), at most 253."""
    base = f"{kind.lower()}-{name}" + (f"-{group_index}" if group_index is not None else "")
    return base[:_NAME_MAX]


def queue_of(labels: Mapping[str, str], annotations: Mapping[str, str]) -> str | None:
    """A queue named on an object: our label, else Kueue's, else Volcano's annotation."""
    found = _queue_key(labels, annotations)
    return found[1] if found is not None else None


def _queue_key(labels: Mapping[str, str], annotations: Mapping[str, str]) -> tuple[str, str] | None:
    for key in (QUEUE_LABEL, KUEUE_QUEUE_LABEL):
        if labels.get(key):
            return f"label {key}", labels[key]
    if annotations.get(VOLCANO_QUEUE_ANNOTATION):
        return f"annotation {VOLCANO_QUEUE_ANNOTATION}", annotations[VOLCANO_QUEUE_ANNOTATION]
    return None


def _queue(
    sources: list[tuple[str, Mapping[str, str], Mapping[str, str]]],
    namespace: str,
    namespace_queue: str | None,
    spec_queue: tuple[str, str, str] | None = None,
) -> tuple[str, str]:
    """The queue and what named it: the first object of `sources` (what, labels, annotations)
    that names one, else the workload's spec field (`spec_queue`: what, field, queue), else the
    namespace's label, else `default`."""
    for what, labels, notes in sources:
        found = _queue_key(labels, notes)
        if found is not None:
            return found[1], f"{found[0]} of {what}"
    if spec_queue is not None and spec_queue[2]:
        what, field_path, queue = spec_queue
        return queue, f"{field_path} of {what}"
    if namespace_queue:
        return namespace_queue, f"label {QUEUE_LABEL} of namespace {namespace}"
    return "default", ""


def resolve(
    pod: PodOwnership,
    workloads: Mapping[str, Workload],
    leader_worker_sets: Mapping[tuple[str, str], Workload],
    namespace_queue: str | None = None,
) -> AutoGang:
    """The automatic gang of `pod` (which names no PodGroup).

    `workloads` are the known-kind workloads by uid, `leader_worker_sets` by (namespace, name):
    an LWS's pods are owned by StatefulSets (the workers' by their leader pod), so its group is
    read from the labels its pod webhook sets. `namespace_queue` is the namespace's
    `phalanx.dev/queue` label. Queue precedence: the pod's label (its template's own, or the
    workload's copied there by the admission policy), the workload's, the namespace's.
    """
    group_index = pod.labels.get(LWS_GROUP_LABEL)
    lws_name = pod.labels.get(LWS_NAME_LABEL)
    chain: list[Workload] = []
    if lws_name is not None and group_index is not None:
        lws = leader_worker_sets.get((pod.namespace, lws_name))
        if lws is None:
            return AutoGang(
                problem_reason="OwnerNotFound",
                problem=f"LeaderWorkerSet {pod.namespace}/{lws_name} (label {LWS_NAME_LABEL}) "
                "is not found; the pod waits for it",
            )
        chain.append(lws)
    else:
        ref = pod.owner
        while ref is not None:
            w = workloads.get(ref.uid)
            if w is None:
                if (ref.group, ref.kind) in KNOWN_KINDS:
                    return AutoGang(
                        problem_reason="OwnerNotFound",
                        problem=f"{ref.kind} {pod.namespace}/{ref.name} (uid {ref.uid}), "
                        f"owner of pod {pod.name}, is not found: the pod waits for it "
                        "(deleted, not yet seen, or not readable: the operator's RBAC must "
                        f"allow get, list, watch on {ref.kind} objects)",
                    )
                break  # a kind we do not read: the walk stops below it
            chain.append(w)
            ref = w.owner
    if not chain:
        return _other_kind(pod, namespace_queue)
    top = chain[-1]
    if top.suspended and SUSPENDED_FOR_ANNOTATION not in top.annotations:
        return AutoGang(
            problem_reason="Suspended",
            problem=f"{top.title} is suspended (e.g. by Kueue until it admits it); its pods "
            "are ganged when it resumes",
        )
    name = managed_name(top.ref.kind, top.ref.name, group_index if lws_name is not None else None)
    unsupported = next((w.unsupported for w in reversed(chain) if w.unsupported), "")
    members = top.members
    annotations = top.annotations
    queue, queue_source = _queue(
        [
            (f"pod {pod.namespace}/{pod.name}", pod.labels, pod.annotations),
            (top.title, top.labels, top.annotations),
        ],
        pod.namespace,
        namespace_queue,
        (top.title, *top.spec_queue) if top.spec_queue is not None else None,
    )
    base = AutoGang(
        name=name,
        owner=top.ref,
        min_member=max(1, members),
        queue=queue,
        queue_source=queue_source,
        state=top.state,
        failure=top.failure,
        member_failure=top.member_failure,
        priority_class=top.spec_priority_class,
        schedule_timeout=top.spec_schedule_timeout,
    )
    if unsupported:
        return _with_problem(base, f"{top.title}: {unsupported}")
    if top.spec_min_member is not None:
        field_path, count = top.spec_min_member
        if not 1 <= count <= members:
            return _with_problem(
                base,
                f"{top.title}: {field_path} is {count}, not between 1 and the {members} pods "
                "it runs: the gang could never start",
            )
        base = replace(base, min_member=count)
    gang = _apply_annotations(base, annotations, top.title, members)
    ignored = [k for k in SPEC_ANNOTATIONS if k in pod.annotations and k not in annotations]
    if ignored:
        kind = top.ref.kind
        gang = replace(
            gang,
            ignored=f"annotation {', '.join(ignored)} on its pods (their template) is not read: "
            f"for a {kind}, Phalanx reads it from the {kind}'s own metadata; annotate "
            f"{top.title} (a PodGroup's spec is fixed once made: delete the {kind} and create "
            "it again)",
        )
    return gang


def _other_kind(pod: PodOwnership, namespace_queue: str | None) -> AutoGang:
    """A bare pod, or one owned by a kind Phalanx does not read: a gang of one, unless its own
    annotations (its pod template's) say how many of its owner's pods to wait for."""
    owner = pod.owner
    if owner is None:
        return AutoGang()
    if MIN_MEMBER_ANNOTATION not in pod.annotations:
        return AutoGang(
            hint=f"pods of {owner.kind} {pod.namespace}/{owner.name} are scheduled one at a "
            f"time: annotate its pod template {MIN_MEMBER_ANNOTATION}=N (or write a PodGroup) "
            "to place N of them together"
        )
    queue, queue_source = _queue(
        [(f"pod {pod.namespace}/{pod.name}", pod.labels, pod.annotations)],
        pod.namespace,
        namespace_queue,
    )
    base = AutoGang(
        name=managed_name(owner.kind, owner.name),
        owner=owner,
        state="Unknown",
        queue=queue,
        queue_source=queue_source,
    )
    return _apply_annotations(base, pod.annotations, f"pod {pod.namespace}/{pod.name}", None)


def _apply_annotations(
    base: AutoGang, annotations: Mapping[str, str], where: str, members: int | None
) -> AutoGang:
    """What a PodGroup spec would say, from the workload's annotations; a bad value makes the
    gang `Invalid` (naming the annotation), never the pods loose."""
    gang = base
    value, problem = _int_annotation(annotations, MIN_MEMBER_ANNOTATION, where, "")
    if problem:
        return _with_problem(gang, problem)
    if value is not None:
        if members is not None and value > members:
            return _with_problem(
                gang,
                f"{where}: annotation {MIN_MEMBER_ANNOTATION} is {value}, more than the "
                f"{members} pods it runs: the gang could never start",
            )
        gang = replace(gang, min_member=value)
    limit, problem = _int_annotation(annotations, TIME_LIMIT_ANNOTATION, where, " (seconds)")
    if problem:
        return _with_problem(gang, problem)
    if limit is not None:
        gang = replace(gang, time_limit=limit)
    for key in (TOPOLOGY_REQUIRED_ANNOTATION, TOPOLOGY_PREFERRED_ANNOTATION):
        level = annotations.get(key)
        if level is not None and not _LEVEL.match(level):
            return _with_problem(
                gang,
                f"{where}: annotation {key} must name a topology level (lower-case "
                f"letters, digits, '-'), got {level!r}",
            )
    return replace(
        gang,
        topology_required=annotations.get(TOPOLOGY_REQUIRED_ANNOTATION),
        topology_preferred=annotations.get(TOPOLOGY_PREFERRED_ANNOTATION),
    )


def _int_annotation(
    annotations: Mapping[str, str], key: str, where: str, unit: str
) -> tuple[int | None, str]:
    """`key`'s value as a positive integer (None when absent), or the problem naming it."""
    raw = annotations.get(key)
    if raw is None:
        return None, ""
    value = _positive_int(raw)
    if value is None:
        return None, f"{where}: annotation {key} must be a positive integer{unit}, got {raw!r}"
    return value, ""


def _positive_int(raw: str) -> int | None:
    text = raw.strip()
    if not text.isdigit():
        return None
    value = int(text)
    return value if 1 <= value <= 10_000 else None


def _with_problem(gang: AutoGang, problem: str) -> AutoGang:
    return replace(gang, problem_reason="Invalid", problem=problem)
