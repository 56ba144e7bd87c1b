"""Workload objects (Job, JobSet, LeaderWorkerSet, PyTorchJob, MPIJob, TrainJob, RayCluster,
RayJob) reduced to the core's `autogang.Workload`: how many pods one gang of each has by its
spec, what in its spec makes it impossible to place whole, and what its conditions say.

The counting rules (issue 18, PRODUCT.md §2 "Gangs without a PodGroup"):
- Job: min(parallelism, completions) — completions unset means parallelism;
- JobSet: the sum over replicatedJobs of replicas × its Job's min(parallelism, completions);
- LeaderWorkerSet: one gang per group of `size` (leader plus workers);
- PyTorchJob, MPIJob: the sum of their replica specs' replicas;
- TrainJob: `trainer.numNodes`;
- RayCluster (and a RayJob's cluster): the head plus each worker group's minReplicas × numOfHosts.
A spec field missing takes the API's default (replicas, parallelism 1). Fields of the wrong type
are read as their default rather than crashing the loop: the API server validated the object
against its CRD's schema, and the owner's own controller reports what it cannot read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from phalanx.core.autogang import SUSPENDED_FOR_ANNOTATION as SUSPENDED_FOR
from phalanx.core.autogang import OwnerRef, Workload
from phalanx.core.reasons import EvictionReason

JOBSET_EXCLUSIVE = "alpha.jobset.sigs.k8s.io/exclusive-topology"
LWS_EXCLUSIVE = "leaderworkerset.sigs.k8s.io/exclusive-topology"

KEPT_ANNOTATIONS = ("phalanx.dev/", "scheduling.volcano.sh/queue-name")
TIME_LIMIT_MARK = str(EvictionReason.TIME_LIMIT_EXCEEDED)
"""The `phalanx.dev/suspended-for` of a RayCluster suspended at its gang's time limit."""
KEPT_LABELS = ("phalanx.dev/queue", "kueue.x-k8s.io/queue-name")


def parse_time(value: object) -> float | None:
    """An API timestamp (RFC 3339) as seconds since the epoch; None when absent or unreadable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def owner_ref(raw: Mapping[str, Any]) -> OwnerRef:
    return OwnerRef(
        str(raw.get("apiVersion") or ""),
        str(raw.get("kind") or ""),
        str(raw.get("name") or ""),
        str(raw.get("uid") or ""),
    )


def controller_of(meta: Mapping[str, Any]) -> OwnerRef | None:
    owners = meta.get("ownerReferences") or []
    found = next((o for o in owners if isinstance(o, Mapping) and o.get("controller")), None)
    return owner_ref(found) if found is not None else None


def kept(values: object, prefixes: tuple[str, ...]) -> dict[str, str]:
    """The labels or annotations ganging reads (a handful), not every one: records stay small."""
    if not isinstance(values, Mapping):
        return {}
    return {str(k): str(v) for k, v in values.items() if str(k).startswith(prefixes)}


def _integer(value: object) -> int | None:
    """`value` when it is an integer (never a bool), else None (unset, or of another type: the
    API server validated it against the CRD's schema)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _int(value: object, default: int) -> int:
    found = _integer(value)
    return found if found is not None and found >= 0 else default


def _map(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def job_pods(spec: Mapping[str, Any]) -> int:
    """A Job's pods at once: min(parallelism, completions); completions unset = parallelism."""
    parallelism = _int(spec.get("parallelism"), 1)
    completions = spec.get("completions")
    return min(parallelism, _int(completions, parallelism))


def _state(status: Mapping[str, Any], done: str, failed: str = "Failed") -> str:
    for c in status.get("conditions") or []:
        if isinstance(c, Mapping) and c.get("status") == "True":
            if c.get("type") == done:
                return "Complete"
            if c.get("type") == failed:
                return "Failed"
    return "Active"


JOB_ENDS = {
    "Complete": "Complete",
    "Failed": "Failed",
    "SuccessCriteriaMet": "Complete",
    "FailureTarget": "Failed",
}
"""A Job's conditions that end it, and how. `FailureTarget` and `SuccessCriteriaMet` come first
(Kubernetes 1.31+): the controller has decided and is terminating the pods; `Failed` or
`Complete` follows once they are gone. Read as the end, the gang ends with the decision: a Job
failed by its deadline (`job_deadline.py`) otherwise read for those seconds as "0 of 2 pods
exist; the Job controller makes pods again only after its back-off", which it never would."""


def job_state(status: Mapping[str, Any]) -> str:
    """`Complete`, `Failed` or `Active`, from a Job's status conditions (`JOB_ENDS`)."""
    for c in status.get("conditions") or []:
        if isinstance(c, Mapping) and c.get("status") == "True":
            end = JOB_ENDS.get(str(c.get("type")))
            if end is not None:
                return end
    return "Active"


def failure_of(status: Mapping[str, Any]) -> str:
    """ "Reason: message" of a workload's `Failed` condition (a Job's, a JobSet's, a Kubeflow
    job's; a Job's `FailureTarget` when `Failed` is not written yet): why its gang ended, which
    `its workload reports Failed` alone did not say."""
    found = {
        str(c.get("type")): c
        for c in status.get("conditions") or []
        if isinstance(c, Mapping) and c.get("status") == "True"
    }
    c = found.get("Failed") or found.get("FailureTarget")
    if c is None:
        return ""
    reason, message = str(c.get("reason") or ""), str(c.get("message") or "")
    return f"{reason}: {message}" if reason and message else reason or message


def _job(body: Mapping[str, Any]) -> tuple[int, str, str, bool]:
    spec = _map(body.get("spec"))
    return job_pods(spec), "", job_state(_map(body.get("status"))), bool(spec.get("suspend"))


def _jobset(body: Mapping[str, Any]) -> tuple[int, str, str, bool]:
    spec, meta = _map(body.get("spec")), _map(body.get("metadata"))
    members, unsupported = 0, ""
    order = _map(spec.get("startupPolicy")).get("startupPolicyOrder")
    if order == "InOrder":
        unsupported = (
            "spec.startupPolicy.startupPolicyOrder is InOrder: its replicated Jobs are created "
            "one after another, each once the one before is ready, so the JobSet cannot be "
            "placed whole; set it to AnyOrder (or drop startupPolicy)"
        )
    if JOBSET_EXCLUSIVE in (meta.get("annotations") or {}):
        unsupported = unsupported or (
            f"annotation {JOBSET_EXCLUSIVE}: exclusive placement puts each Job's pods after "
            "its leader pod by affinities, one Job at a time; remove it and ask "
            "phalanx.dev/topology-required instead"
        )
    for raw in spec.get("replicatedJobs") or []:
        rj = _map(raw)
        template = _map(rj.get("template"))
        if JOBSET_EXCLUSIVE in (_map(template.get("metadata")).get("annotations") or {}):
            unsupported = unsupported or (
                f"replicatedJobs {rj.get('name')!r}: annotation {JOBSET_EXCLUSIVE}: exclusive "
                "placement cannot be ganged; remove it and ask phalanx.dev/topology-required"
            )
        if rj.get("dependsOn"):
            unsupported = unsupported or (
                f"replicatedJobs {rj.get('name')!r}: dependsOn creates its Jobs only after "
                "others are ready or done, so the JobSet cannot be placed whole; drop dependsOn "
                "(or gang each part with a PodGroup of its own)"
            )
        members += _int(rj.get("replicas"), 1) * job_pods(_map(template.get("spec")))
    status = _map(body.get("status"))
    return members, unsupported, _state(status, "Completed"), bool(spec.get("suspend"))


def _lws(body: Mapping[str, Any]) -> tuple[int, str, str, bool]:
    spec, meta = _map(body.get("spec")), _map(body.get("metadata"))
    size = _int(_map(spec.get("leaderWorkerTemplate")).get("size"), 1)
    unsupported = ""
    if spec.get("startupPolicy") == "LeaderReady":
        unsupported = (
            "spec.startupPolicy is LeaderReady: the workers are created only once the leader "
            "is ready, so a group cannot be placed whole; set it to LeaderCreated"
        )
    elif LWS_EXCLUSIVE in (meta.get("annotations") or {}):
        unsupported = (
            f"annotation {LWS_EXCLUSIVE}: exclusive topology places workers after their leader "
            "by affinities; remove it and ask phalanx.dev/topology-required instead"
        )
    return size, unsupported, "Unknown", False


def _replica_sum(specs: object) -> int:
    return sum(_int(_map(r).get("replicas"), 1) for r in _map(specs).values())


def _pytorch(body: Mapping[str, Any]) -> tuple[int, str, str, bool]:
    spec = _map(body.get("spec"))
    suspended = bool(_map(spec.get("runPolicy")).get("suspend"))
    status = _map(body.get("status"))
    return _replica_sum(spec.get("pytorchReplicaSpecs")), "", _state(status, "Succeeded"), suspended


def _mpi(body: Mapping[str, Any]) -> tuple[int, str, str, bool]:
    spec = _map(body.get("spec"))
    suspended = bool(_map(spec.get("runPolicy")).get("suspend"))
    status = _map(body.get("status"))
    return _replica_sum(spec.get("mpiReplicaSpecs")), "", _state(status, "Succeeded"), suspended


def _trainjob(body: Mapping[str, Any]) -> tuple[int, str, str, bool]:
    spec = _map(body.get("spec"))
    nodes = _int(_map(spec.get("trainer")).get("numNodes"), 1)
    return nodes, "", _state(_map(body.get("status")), "Complete"), bool(spec.get("suspend"))


def ray_cluster_pods(spec: Mapping[str, Any]) -> int:
    """The head plus, per worker group, minReplicas (else replicas, else 0) × numOfHosts."""
    total = 1
    for raw in spec.get("workerGroupSpecs") or []:
        g = _map(raw)
        replicas = _int(g.get("minReplicas"), _int(g.get("replicas"), 0))
        total += replicas * max(1, _int(g.get("numOfHosts"), 1))
    return total


def _raycluster(body: Mapping[str, Any]) -> tuple[int, str, str, bool]:
    spec = _map(body.get("spec"))
    suspended = bool(spec.get("suspend"))
    return ray_cluster_pods(spec), "", raycluster_state(body, suspended), suspended


def raycluster_state(body: Mapping[str, Any], suspended: bool) -> str:
    """`Failed` while this operator holds it suspended at its time limit (`job_deadline.py`: a
    RayCluster has no deadline, and KubeRay would make its deleted pods again, a new run every
    limit); otherwise `Unknown`: a cluster never completes, its pods' phases decide."""
    annotations = _map(_map(body.get("metadata")).get("annotations"))
    ended = suspended and annotations.get(SUSPENDED_FOR) == TIME_LIMIT_MARK
    return "Failed" if ended else "Unknown"


def rayjob_state(status: Mapping[str, Any]) -> str:
    """What KubeRay's `jobDeploymentStatus` says of the run, not the Ray job's `jobStatus`: a
    RayJob past its `activeDeadlineSeconds` is `Failed` with no Ray job status at all, and one
    whose Ray job failed under its `backoffLimit` is `Retrying` (a new cluster comes), not over.
    `Complete` is a success only when the Ray job `SUCCEEDED` (a `STOPPED` one did not)."""
    deployment = str(status.get("jobDeploymentStatus") or "")
    if deployment in ("Failed", "ValidationFailed"):
        return "Failed"
    if deployment == "Complete":
        return "Complete" if status.get("jobStatus") == "SUCCEEDED" else "Failed"
    return "Active"


def _rayjob(body: Mapping[str, Any]) -> tuple[int, str, str, bool]:
    spec = _map(body.get("spec"))
    state = rayjob_state(_map(body.get("status")))
    return ray_cluster_pods(_map(spec.get("rayClusterSpec"))), "", state, bool(spec.get("suspend"))


def suspend_refused(body: Mapping[str, Any]) -> str:
    """Why suspending this workload would not requeue its run ("" when it would): KubeRay fails a
    RayJob suspended without `shutdownAfterJobFinishes` (`ValidationFailed`, for good), the
    limitation Kueue documents for RayJobs too."""
    if body.get("kind") != "RayJob" or not str(body.get("apiVersion") or "").startswith("ray.io/"):
        return ""
    if _map(body.get("spec")).get("shutdownAfterJobFinishes") is not True:
        return "a RayJob without spec.shutdownAfterJobFinishes fails if suspended"
    return ""


KINDS: dict[tuple[str, str], Callable[[Mapping[str, Any]], tuple[int, str, str, bool]]] = {
    ("batch", "Job"): _job,
    ("jobset.x-k8s.io", "JobSet"): _jobset,
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): _lws,
    ("kubeflow.org", "PyTorchJob"): _pytorch,
    ("kubeflow.org", "MPIJob"): _mpi,
    ("trainer.kubeflow.org", "TrainJob"): _trainjob,
    ("ray.io", "RayCluster"): _raycluster,
    ("ray.io", "RayJob"): _rayjob,
}

WATCHED: tuple[tuple[str, str], ...] = (
    ("jobset.x-k8s.io", "jobsets"),
    ("leaderworkerset.x-k8s.io", "leaderworkersets"),
    ("kubeflow.org", "pytorchjobs"),
    ("kubeflow.org", "mpijobs"),
    ("trainer.kubeflow.org", "trainjobs"),
    ("ray.io", "rayclusters"),
    ("ray.io", "rayjobs"),
)
"""The workload kinds besides Jobs the operator watches (when their CRDs are installed)."""


def workload_record(body: Mapping[str, Any]) -> Workload | None:
    """The workload, or None for a kind ganging does not know."""
    meta = _map(body.get("metadata"))
    api_version = str(body.get("apiVersion") or "")
    kind = str(body.get("kind") or "")
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    read = KINDS.get((group, kind))
    if read is None:
        return None
    members, unsupported, state, suspended = read(body)
    policy = _scheduling_policy(body)
    elastic = _elastic_min(body)
    return Workload(
        ref=OwnerRef(api_version, kind, str(meta.get("name") or ""), str(meta.get("uid") or "")),
        namespace=str(meta.get("namespace") or ""),
        owner=controller_of(meta),
        members=members,
        unsupported=unsupported,
        annotations=kept(meta.get("annotations"), KEPT_ANNOTATIONS),
        labels=kept(meta.get("labels"), KEPT_LABELS),
        state=state,
        failure=failure_of(_map(body.get("status"))) if state == "Failed" else "",
        suspended=suspended,
        managed_by=_managed_by(body),
        started=parse_time(_map(body.get("status")).get("startTime")),
        suspend_refused=suspend_refused(body),
        spec_queue=_policy_queue(policy),
        spec_min_member=_policy_min_available(policy) or elastic,
        member_failure="keep" if elastic is not None else None,
        spec_priority_class=_policy_priority_class(policy),
        spec_schedule_timeout=_policy_schedule_timeout(policy),
    )


POLICY = "spec.runPolicy.schedulingPolicy"


def _scheduling_policy(body: Mapping[str, Any]) -> Mapping[str, Any]:
    """A Kubeflow v1 job's `spec.runPolicy.schedulingPolicy`, what Volcano users set for the
    Training Operator's gang scheduling ({} for other kinds)."""
    if body.get("kind") not in ("PyTorchJob", "MPIJob"):
        return {}
    return _map(_map(_map(body.get("spec")).get("runPolicy")).get("schedulingPolicy"))


def _policy_queue(policy: Mapping[str, Any]) -> tuple[str, str] | None:
    queue = policy.get("queue")
    return (f"{POLICY}.queue", queue) if isinstance(queue, str) else None


def _policy_min_available(policy: Mapping[str, Any]) -> tuple[str, int] | None:
    """Any integer (the core refuses one out of range, naming the field)."""
    count = _integer(policy.get("minAvailable"))
    return (f"{POLICY}.minAvailable", count) if count is not None else None


def _policy_priority_class(policy: Mapping[str, Any]) -> str | None:
    """`priorityClass`, which the Training Operator gives Volcano's PodGroup and not the pods:
    read, a Volcano user's job keeps the priority it asked for (its pods' own class is used
    when it names none)."""
    value = policy.get("priorityClass")
    return value if isinstance(value, str) and value else None


def _policy_schedule_timeout(policy: Mapping[str, Any]) -> int | None:
    value = _integer(policy.get("scheduleTimeoutSeconds"))
    return value if value is not None and value > 0 else None


ELASTIC = "spec.elasticPolicy.minReplicas"


def _elastic_min(body: Mapping[str, Any]) -> tuple[str, int] | None:
    """An elastic PyTorchJob's (`torchrun --nnodes=MIN:MAX`) smallest run: `minReplicas`
    workers plus its other replicas (a Master), None for any other job. The Training Operator
    runs it with as few as `minReplicas` workers and lets them join and leave (scaled by its
    HPA, or by hand), so all of its `replicas` are not one gang: the rest are placed as they
    fit, and a member that leaves is replaced, not a reason to restart the rest."""
    if body.get("kind") != "PyTorchJob":
        return None
    spec = _map(body.get("spec"))
    count = _integer(_map(spec.get("elasticPolicy")).get("minReplicas"))
    if count is None:
        return None
    replicas = _map(spec.get("pytorchReplicaSpecs"))
    others = _replica_sum({k: v for k, v in replicas.items() if k != "Worker"})
    return (f"{ELASTIC} (+ {others} of its other replicas)" if others else ELASTIC), count + others


def _managed_by(body: Mapping[str, Any]) -> str | None:
    """`spec.managedBy`, or a Kubeflow v1 job's `spec.runPolicy.managedBy` (Training Operator
    v1.9+, for MultiKueue)."""
    spec = _map(body.get("spec"))
    value = spec.get("managedBy", _map(spec.get("runPolicy")).get("managedBy"))
    return value if isinstance(value, str) else None
