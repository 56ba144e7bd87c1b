"""Evicting a Job's, a JobSet's, a TrainJob's, a PyTorchJob's, an MPIJob's or a RayJob's gang by
suspending it, and resuming it once its pods are gone.

Why not evict the pods, as for any other gang: the Job controller's pod-failure back-off counts
every pod that ended since the Job's last success — those a `podFailurePolicy` `Ignore` on
`DisruptionTarget` keeps from `backoffLimit` included — and makes no pod before it is over
(10 s doubled per pod, at most 10 min). Measured on the dev cluster, one member evicted (as
`kubectl drain` does) and the rest by the operator pod by pod: a 4-pod Job got its pods back
80 s later, an 8-pod one 600.3 s later (the whole 10-min cap), a JobSet of two 4-pod Jobs 80.3 s
later (each child Job backs off for its own pods), though no node or GPU was the reason;
suspended, the 8-pod Job 10.6 s later (the 10 s are for the member evicted first, which the Job
does count). A suspended Job's controller deletes its pods itself, removing its tracking
finalizer first, so they count neither as failures nor in the back-off (Kueue preempts Jobs the
same way); resumed, it makes them again at once.

A JobSet's gang is its child Jobs' pods: the JobSet is suspended, not its Jobs — its controller
suspends every child Job then, and resumes at once any child Job suspended under a JobSet that
is not (so suspending a child Job alone would race it).

A TrainJob's (Kubeflow Trainer v2) gang is its JobSet's pods: the TrainJob is suspended, and its
controller applies `spec.suspend` to the JobSet from its own (read in its JobSet plugin's
`Build`), so suspending the JobSet alone would be undone. Why it matters more there than
anywhere: the Trainer's JobSet has one Job of `numNodes` pods with the Job's default
`backoffLimit` (6) and no `podFailurePolicy`, and a JobSet without `failurePolicy` fails with its
first failed Job. Walked on the dev cluster (Trainer v2.0.0, JobSet v0.12.0): a TrainJob of 8
nodes lost one pod to the Eviction API (`kubectl drain`); evicted pod by pod, its Job counted 8
failures, failed `BackoffLimitExceeded`, and the JobSet and the TrainJob were `Failed` 1.6 s
later: one drained node ended the training run.

A PyTorchJob's or MPIJob's gang (Kubeflow Training Operator v1) is its own pods: the job is
suspended by `spec.runPolicy.suspend`, as Kueue preempts them. Why: a kubelet turns a pod it
stops for a deletion `Failed` before it goes (its containers killed, `getPhase` with the pod
terminal), and the Training Operator fails a job with `restartPolicy: Never` for any failed
replica. Walked on the dev cluster (the real Training Operator v1.8.1, the pods held by a
finalizer so that kwok's terminate stage turns them `Failed` on deletion as a kubelet does): a
PyTorchJob of 8 pods (`Never`) preempted pod by pod for a higher-priority gang was `Failed`
("PyTorchJob ptw is failed because 4 Worker replica(s) failed") 0.3 s later — preemption lost
the run instead of requeueing it. Suspended, its controller deletes the pods and counts nothing
(its reconcile stops at the suspension); it is resumed only once none of its pods is left at
all, ended ones included — resumed with a `Failed` pod still there, it would count it.

A RayJob's gang (KubeRay) is the pods of the RayCluster it made: the RayJob is suspended, as
Kueue preempts them. Why: KubeRay v1.5 does not make the head of a RayJob's provisioned cluster
again ("skipping head creation to let RayJob controller handle the failure", its RayCluster
controller), so a RayJob whose pods are evicted has a cluster that never comes back, and its
Ray job is lost with the head. Suspended, KubeRay deletes the cluster and its submitter Job and
waits `Suspended`; resumed, it makes a new cluster, whose pods are a new gang. Only a RayJob with
`shutdownAfterJobFinishes` may be suspended — KubeRay fails any other (`ValidationFailed`) — so
any other has its pods evicted, as before (`Workload.suspend_refused`).

The mark `phalanx.dev/suspended-for` on the workload suspended (the eviction's reason) is the
durable fact that this operator suspended it: any replica, or one restarted after a crash,
resumes a workload that carries it once none of its pods runs, and never one a user suspended. A
time limit is not a suspension: the run is over, as Slurm's TIMEOUT ends a job
(`job_deadline.py`). A workload another controller manages (`spec.managedBy`, a Kubeflow job's
`spec.runPolicy.managedBy`), owns (only a CronJob's Jobs are suspended, and a TrainJob's JobSet
through the TrainJob) or admits (Kueue resumes a workload labelled with one of its queues once
admitted), one with pods outside the gang (suspending it would evict them too), or one this
operator may not patch (the RBAC refuses) has its pods evicted as before.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from phalanx.core.autogang import KUEUE_QUEUE_LABEL, Workload
from phalanx.k8s.api import ApiError, ClusterWrites
from phalanx.k8s.records import SUSPENDED_FOR, JobRec, PodRec

log = logging.getLogger("phalanx.jobs")

JOBSET_CONTROLLER = "jobset.sigs.k8s.io/jobset-controller"
TRAINJOB_CONTROLLER = "trainer.kubeflow.org/trainjob-controller"
TRAINING_OPERATOR = "kubeflow.org/training-operator"
KUBERAY = "ray.io/kuberay-operator"
KUBEFLOW_V1 = {"PyTorchJob": "pytorchjobs", "MPIJob": "mpijobs"}
"""The Training Operator v1 kinds Phalanx gangs, by their plural: each has `spec.runPolicy`, whose
`suspend`, `activeDeadlineSeconds` and `managedBy` (v1.9+) this operator reads or writes."""
OWN_CONTROLLER = {
    "JobSet": JOBSET_CONTROLLER,
    "TrainJob": TRAINJOB_CONTROLLER,
    **dict.fromkeys(KUBEFLOW_V1, TRAINING_OPERATOR),
    "RayJob": KUBERAY,
    "RayCluster": KUBERAY,
}
"""The `managedBy` of a workload its own controller runs (or unset)."""
PLURALS = {
    "Job": "jobs",
    "JobSet": "jobsets",
    "TrainJob": "trainjobs",
    **KUBEFLOW_V1,
    "RayJob": "rayjobs",
}


@dataclass(frozen=True, slots=True)
class Suspendable:
    """A Job, JobSet, TrainJob, PyTorchJob, MPIJob or RayJob whose suspension evicts its gang:
    what the patch needs."""

    kind: str
    api_version: str
    namespace: str
    name: str
    uid: str

    @property
    def run_policy(self) -> bool:
        """Its `suspend` sits in `spec.runPolicy` (Kubeflow v1), not in `spec`."""
        return self.kind in KUBEFLOW_V1

    @property
    def title(self) -> str:
        return f"{self.kind} {self.name}"

    @classmethod
    def job(cls, job: JobRec) -> Suspendable:
        return cls("Job", "batch/v1", job.namespace, job.name, job.uid)

    @classmethod
    def workload(cls, workload: Workload) -> Suspendable:
        """A JobSet, TrainJob, PyTorchJob, MPIJob or RayJob."""
        ref = workload.ref
        return cls(ref.kind, ref.api_version, workload.namespace, ref.name, ref.uid)


@dataclass(frozen=True, slots=True)
class RayRun:
    """A RayCluster's run: the cluster, the RayJob that made it (None for a cluster of its own)
    and that RayJob's submitter Jobs (by uid)."""

    cluster: Workload
    rayjob: Workload | None = None
    submitters: frozenset[str] = frozenset()

    @property
    def owners(self) -> set[str]:
        """The uids its pods name as their owner."""
        return {self.cluster.ref.uid, *self.submitters}


@dataclass(frozen=True)
class Owners:
    """The cycle's Jobs (by uid), workloads of the other kinds (by uid) and pods: what finds the
    workload of a gang and tells when its pods are gone. Set on the evictor each cycle."""

    jobs: Mapping[str, JobRec]
    workloads: Mapping[str, Workload]
    pods: Sequence[PodRec]

    def jobset_of(self, job: JobRec) -> str | None:
        """The uid of the JobSet that owns `job`, if one does."""
        owner = job.workload.owner if job.workload is not None else None
        return owner.uid if owner is not None and owner.kind == "JobSet" else None

    def jobs_of(self, members: Iterable[PodRec]) -> list[JobRec] | None:
        """The Jobs of `members` (in uid order), or None unless every member is the pod of a
        Job this cycle knows."""
        members = list(members)
        if not members or any(p.owner is None or p.owner[0] != "Job" for p in members):
            return None
        jobs = [self.jobs.get(u) for u in sorted({p.owner[2] for p in members if p.owner})]
        known = [j for j in jobs if j is not None]
        return known if len(known) == len(jobs) else None

    def alone(self, covered: set[str], gang_pods: Iterable[PodRec]) -> bool:
        """No live pod of the Jobs of uid in `covered` is outside the gang (`gang_pods`): what
        is done to those Jobs is done to this gang and nothing else."""
        in_gang = {p.uid for p in gang_pods}
        return not any(
            p.owner is not None
            and p.owner[2] in covered
            and not p.terminal
            and p.uid not in in_gang
            for p in self.pods
        )

    def kubeflow_job_of(self, members: Iterable[PodRec]) -> Workload | None:
        """The one PyTorchJob or MPIJob (Training Operator v1) that owns every member, if one
        does and this cycle knows it."""
        uids = {p.owner[2] if p.owner is not None else None for p in members}
        if len(uids) != 1:
            return None
        (uid,) = uids
        w = self.workloads.get(uid) if uid is not None else None
        if w is None or w.ref.kind not in KUBEFLOW_V1 or w.ref.group != "kubeflow.org":
            return None
        return w

    def ray_run_of(self, members: Iterable[PodRec]) -> RayRun | None:
        """The RayCluster of every member, and the RayJob that made it if one did — its pods,
        and that RayJob's submitter Job's pod (KubeRay's `K8sJobMode` makes it once the cluster
        is ready; a queue-labelled namespace has it scheduled by Phalanx, in the RayJob's
        gang) — if this cycle knows them all."""
        clusters: set[str] = set()
        submitters: set[str] = set()
        for p in members:
            if p.owner is not None and p.owner[0] == "RayCluster":
                clusters.add(p.owner[2])
            elif p.owner is not None and p.owner[0] == "Job":
                submitters.add(p.owner[2])
            else:
                return None
        if len(clusters) != 1:
            return None
        (uid,) = clusters
        cluster = self.workloads.get(uid)
        if cluster is None or cluster.ref.group != "ray.io":
            return None
        top = cluster.owner
        if top is None and not submitters:
            return RayRun(cluster)
        w = self.workloads.get(top.uid) if top is not None and top.kind == "RayJob" else None
        if w is None or w.ref.group != "ray.io":
            return None
        for job_uid in submitters:
            job = self.jobs.get(job_uid)
            owner = job.workload.owner if job is not None and job.workload is not None else None
            if owner is None or owner.uid != w.ref.uid:
                return None
        return RayRun(cluster, w, frozenset(submitters))

    def trainjob_of(self, jobset: str) -> str | None:
        """The uid of the TrainJob that owns the JobSet of uid `jobset`, if one does."""
        w = self.workloads.get(jobset)
        owner = w.owner if w is not None else None
        return owner.uid if owner is not None and owner.kind == "TrainJob" else None


NO_OWNERS = Owners({}, {}, ())


def target_of(
    members: Iterable[PodRec], gang_pods: Iterable[PodRec], owners: Owners
) -> Suspendable | None:
    """The one Job, JobSet, TrainJob, PyTorchJob, MPIJob or RayJob every member belongs to, if
    suspending it evicts this gang and nothing else: its own controller runs it (no other
    `managedBy`), a user has not suspended it, and none of its live pods is outside the gang
    (`gang_pods`)."""
    members = list(members)
    known = owners.jobs_of(members)
    if known is None and (ray := owners.ray_run_of(members)) is not None:
        # A cluster of its own is not suspended: KubeRay makes its evicted pods again, a new run.
        target = _workload_target(ray.rayjob) if ray.rayjob is not None else None
        return target if target is not None and owners.alone(ray.owners, gang_pods) else None
    if known is None:
        kubeflow = owners.kubeflow_job_of(members)
        if kubeflow is None:
            return None
        target = _workload_target(kubeflow)
        return target if target is not None and owners.alone({target.uid}, gang_pods) else None
    parents = {owners.jobset_of(j) for j in known}
    if len(parents) != 1:
        return None
    (parent,) = parents
    if parent is None:
        if len(known) != 1:
            return None
        (job,) = known
        target = _job_target(job)
        covered = {job.uid}
    else:
        # A TrainJob's JobSet through the TrainJob (it sets the JobSet's `spec.suspend`).
        top = owners.workloads.get(owners.trainjob_of(parent) or parent)
        target = _workload_target(top) if top is not None else None
        covered = {u for u, j in owners.jobs.items() if owners.jobset_of(j) == parent}
    if target is None:
        return None
    return target if owners.alone(covered, gang_pods) else None


def _job_target(job: JobRec) -> Suspendable | None:
    if job.state != "Active" or not job.job_controller or not _unowned(job.workload, "CronJob"):
        return None
    if job.suspended and job.suspended_for is None:
        return None  # the user's suspension: not ours to lift later
    return Suspendable.job(job)


def _workload_target(w: Workload) -> Suspendable | None:
    """A JobSet, TrainJob, PyTorchJob, MPIJob or RayJob: active, run by its own controller, under
    no other that could set its `spec.suspend` back, not suspended by a user, and one whose
    suspension requeues its run."""
    if w.state != "Active" or w.managed_by not in (None, OWN_CONTROLLER.get(w.ref.kind)):
        return None
    if w.suspend_refused:
        return None
    if not _unowned(w):
        return None
    if w.suspended and SUSPENDED_FOR not in w.annotations:
        return None
    return Suspendable.workload(w)


def _unowned(workload: Workload | None, *kinds: str) -> bool:
    """No controller above it that could set its `spec.suspend` back: a TrainJob sets its
    JobSet's from its own, and Kueue resumes a workload it admitted (one labelled with a Kueue
    queue) — a CronJob, or one of `kinds`, never does."""
    if workload is None:
        return True
    if KUEUE_QUEUE_LABEL in workload.labels:
        return False
    return workload.owner is None or workload.owner.kind in kinds


def to_resume(owners: Owners) -> list[Suspendable]:
    """Workloads this operator suspended none of whose pods still runs or terminates: resumed
    now, their controllers make the pods again at once. A Job's finished pods do not count: a
    suspended Job's controller deletes only its active pods, and the member that failed (what
    `MemberFailed` evicted the gang for) stays `Failed` for as long as the Job keeps it. A
    PyTorchJob's or MPIJob's do: its controller deletes them all, and would count a `Failed` one
    still there when resumed. So do a RayJob's (its cluster's pods): KubeRay deletes the whole
    cluster, and a RayJob resumed while it is still `Suspending` finishes that first."""
    marked = [Suspendable.job(j) for j in owners.jobs.values() if j.suspended_for is not None] + [
        Suspendable.workload(w)
        for w in owners.workloads.values()
        if w.ref.kind in PLURALS and SUSPENDED_FOR in w.annotations
    ]
    if not marked:
        return []
    alive: set[str] = set()
    for p in owners.pods:
        if p.owner is not None and p.owner[0] in KUBEFLOW_V1:
            alive.add(p.owner[2])
            continue
        if p.owner is not None and p.owner[0] == "RayCluster":
            cluster = owners.workloads.get(p.owner[2])
            if cluster is not None and cluster.owner is not None:
                alive.add(cluster.owner.uid)
            continue
        if p.owner is None or p.owner[0] != "Job" or p.terminal:
            continue
        alive.add(p.owner[2])
        job = owners.jobs.get(p.owner[2])
        if job is not None and job.workload is not None and job.workload.owner is not None:
            alive.add(job.workload.owner.uid)  # a RayJob's submitter
        parent = owners.jobset_of(job) if job is not None else None
        if parent is not None:
            alive.add(parent)
            grandparent = owners.trainjob_of(parent)
            if grandparent is not None:
                alive.add(grandparent)
    return sorted((t for t in marked if t.uid not in alive), key=lambda t: t.uid)


async def suspend(api: ClusterWrites, target: Suspendable, reason: str) -> bool:
    """Mark and suspend the workload; False when it could not be (the caller evicts the pods)."""
    try:
        await _patch(api, target, suspend=True, mark=reason)
    except ApiError as exc:
        if exc.status == 404:
            return True  # gone: so are its pods
        log.warning(
            "suspending %s %s/%s to evict its gang: %s; evicting its pods instead",
            target.kind,
            target.namespace,
            target.name,
            exc,
        )
        return False
    return True


async def resume(api: ClusterWrites, target: Suspendable) -> None:
    """Lift our suspension and our mark (one patch: a workload resumed is never left marked)."""
    try:
        await _patch(api, target, suspend=False, mark=None)
    except ApiError as exc:
        if exc.status != 404:
            log.warning(
                "resuming %s %s/%s: %s; retried next cycle",
                target.kind,
                target.namespace,
                target.name,
                exc,
            )


async def _patch(api: ClusterWrites, target: Suspendable, suspend: bool, mark: str | None) -> None:
    """`spec.suspend` (`spec.runPolicy.suspend`) and our mark in one merge patch;
    `metadata.uid` makes it that very object's (one deleted and created again under its name is
    refused, not suspended)."""
    field = {"suspend": suspend}
    patch: dict[str, Any] = {
        "metadata": {"uid": target.uid, "annotations": {SUSPENDED_FOR: mark}},
        "spec": {"runPolicy": field} if target.run_policy else field,
    }
    await api.patch_workload(
        target.api_version, PLURALS[target.kind], target.namespace, target.name, patch
    )
