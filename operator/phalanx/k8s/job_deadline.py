"""A Job's gang past its time limit ends its Jobs through their own deadline, not by deleting pods.

A time limit is Slurm's `--time`: past it the run is over (TIMEOUT), the job is not run again.
Deleting the pods ends a run only when the Job has no retries left: its controller counts them
failed and, under its `backoffLimit` (6 unless set), makes them again. Walked on the dev cluster:
a Job of 2 pods with the default `backoffLimit` and a 10 s limit was evicted
`TimeLimitExceeded`, ran again 10 s later for another full limit, was evicted again, and was
waiting to run a third time 80 s on — every retry another time limit of the gang's GPUs. A
JobSet's child Jobs and a TrainJob's Job do the same (a JobSet with `maxRestarts` then restarts
as it is told to).

So the gang's Jobs are given what the Job API has for it: `spec.activeDeadlineSeconds` (mutable
on a running Job), lowered to how long each has been active (`status.startTime`, at least 1 s).
The Job controller then fails the Job at once with reason `DeadlineExceeded` and deletes its
pods, and the gang, whose workload reports `Failed`, is `Failed` too. Applied only where that
ends this gang and nothing else, as for suspension (`job_suspension.py`): every member is a
Job's pod, the Job controller runs each Job, and no live pod of those Jobs is outside the gang;
otherwise (and when the patch is refused) its pods are deleted as before.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable

from phalanx.k8s.api import ApiError, ClusterWrites
from phalanx.k8s.job_suspension import Owners
from phalanx.k8s.records import JobRec, PodRec

log = logging.getLogger("phalanx.jobs")


def jobs_to_end(
    members: Iterable[PodRec], gang_pods: Iterable[PodRec], owners: Owners
) -> list[JobRec] | None:
    """The Jobs whose deadline ends this gang's run and nothing else, or None (delete the pods)."""
    known = owners.jobs_of(members)
    if known is None or any(j.state != "Active" or not j.job_controller for j in known):
        return None
    return known if owners.alone({j.uid for j in known}, gang_pods) else None


def deadline_patch(job: JobRec, now: float) -> dict[str, object]:
    """How long it has been active (at least 1 s): past it at once. `metadata.uid` makes it that
    very Job's (one deleted and created again under its name is refused)."""
    active = now - job.started if job.started is not None else 1.0
    return {
        "metadata": {"uid": job.uid},
        "spec": {"activeDeadlineSeconds": max(1, math.floor(active))},
    }


async def end_jobs(api: ClusterWrites, jobs: list[JobRec], now: float) -> bool:
    """Give each Job its deadline; False when one was refused (the caller deletes the pods)."""
    ok = True
    for job in jobs:
        try:
            await api.patch_workload(
                "batch/v1", "jobs", job.namespace, job.name, deadline_patch(job, now)
            )
        except ApiError as exc:
            if exc.status == 404:
                continue  # gone: so are its pods
            log.warning(
                "ending Job %s/%s at its gang's time limit: %s; deleting its pods instead",
                job.namespace,
                job.name,
                exc,
            )
            ok = False
    return ok
