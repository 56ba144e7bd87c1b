"""Evicting a Job's gang by suspending the Job, and resuming it once its pods are gone.

Why not evict the pods, as for any other gang: the Job controller's pod-failure back-off counts
every pod that ended since the Job's last success — those a `podFailurePolicy` `Ignore` on
`DisruptionTarget` keeps from `backoffLimit` included — and makes no pod before it is over
(10 s doubled per pod, at most 10 min). Measured on the dev cluster, one member evicted (as
`kubectl drain` does) and the rest by the operator pod by pod: a 4-pod Job got its pods back
80 s later, an 8-pod one 600.3 s later (the whole 10-min cap), though no node or GPU was the
reason; suspended, the 8-pod one 10.6 s later (the 10 s are for the member evicted first, which
the Job does count). A suspended Job's controller deletes its pods itself, removing its tracking
finalizer first, so they count neither as failures nor in the back-off (Kueue preempts Jobs the
same way); resumed, it makes them again at once.

The mark `phalanx.dev/suspended-for` on the Job (the eviction's reason) is the durable fact that
this operator suspended it: any replica, or one restarted after a crash, resumes a Job that
carries it once none of its pods is left, and never a Job a user suspended. A time limit still
deletes the pods (its run is over: the Job counts the failure, as Slurm's TIMEOUT ends a job).
A Job another controller manages (`spec.managedBy`) or one this operator may not patch (the
RBAC refuses) has its pods evicted as before.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from phalanx.k8s.api import ApiError, ClusterWrites
from phalanx.k8s.records import SUSPENDED_FOR, JobRec, PodRec, owning_job

log = logging.getLogger("phalanx.jobs")


def job_of(members: Iterable[PodRec], jobs: Mapping[str, JobRec]) -> JobRec | None:
    """The one batch/v1 Job every member belongs to, if that Job may be suspended for them:
    the Job controller runs it (no other `managedBy`) and a user has not suspended it."""
    job = owning_job(members, jobs)
    if job is None or job.state != "Active" or not job.job_controller:
        return None
    if job.suspended and job.suspended_for is None:
        return None  # the user's suspension: not ours to lift later
    return job


def to_resume(jobs: Mapping[str, JobRec], pods: Iterable[PodRec]) -> list[JobRec]:
    """Jobs this operator suspended none of whose pods still runs or terminates: resumed now,
    the controller makes them again at once. Finished pods do not count: a suspended Job's
    controller deletes only its active pods, and the member that failed (what `MemberFailed`
    evicted the gang for) stays `Failed` for as long as the Job keeps it."""
    marked = {uid: j for uid, j in jobs.items() if j.suspended_for is not None}
    if not marked:
        return []
    left = {
        p.owner[2] for p in pods if p.owner is not None and p.owner[2] in marked and not p.terminal
    }
    return [j for uid, j in sorted(marked.items()) if uid not in left]


async def suspend(api: ClusterWrites, job: JobRec, reason: str) -> bool:
    """Mark and suspend the Job; False when it could not be (the caller evicts the pods)."""
    try:
        await _patch(api, job, suspend=True, mark=reason)
    except ApiError as exc:
        if exc.status == 404:
            return True  # gone: so are its pods
        log.warning(
            "suspending Job %s/%s to evict its gang: %s; evicting its pods instead",
            job.namespace,
            job.name,
            exc,
        )
        return False
    return True


async def resume(api: ClusterWrites, job: JobRec) -> None:
    """Lift our suspension and our mark (one patch: a Job resumed is never left marked)."""
    try:
        await _patch(api, job, suspend=False, mark=None)
    except ApiError as exc:
        if exc.status != 404:
            log.warning("resuming Job %s/%s: %s; retried next cycle", job.namespace, job.name, exc)


async def _patch(api: ClusterWrites, job: JobRec, suspend: bool, mark: str | None) -> None:
    """`spec.suspend` and our mark in one merge patch; `metadata.uid` makes it that very Job's
    (one deleted and created again under its name is refused, not suspended)."""
    patch: dict[str, Any] = {
        "metadata": {"uid": job.uid, "annotations": {SUSPENDED_FOR: mark}},
        "spec": {"suspend": suspend},
    }
    await api.patch_job(job.namespace, job.name, patch)
