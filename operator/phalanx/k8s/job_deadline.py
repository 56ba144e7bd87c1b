"""A gang past its time limit ends its workload through the workload's own deadline, not by
deleting pods — for a Job's gang (its Jobs), a PyTorchJob's or MPIJob's (Kubeflow Training
Operator v1) and a RayJob's (KubeRay); a RayCluster's by suspending it.

A time limit is Slurm's `--time`: past it the run is over (TIMEOUT), the job is not run again.
Deleting the pods ends a run only when their controller does not make them again:

- a Job's controller counts them failed and, under its `backoffLimit` (6 unless set), makes them
  again. Walked on the dev cluster: a Job of 2 pods with the default `backoffLimit` and a 10 s
  limit was evicted `TimeLimitExceeded`, ran again 10 s later for another full limit, was evicted
  again, and was waiting to run a third time 80 s on. A JobSet's child Jobs and a TrainJob's Job
  do the same (a JobSet with `maxRestarts` then restarts as it is told to).
- the Training Operator makes a PyTorchJob's or MPIJob's missing pods again at once, without
  end: walked, a PyTorchJob of 3 pods with a 15 s limit was evicted and running again within
  2 s, every 15–17 s, for as long as it was watched (83 s, five runs) — each run another time
  limit of its GPUs.
- KubeRay v1.5 does the opposite: it does not make the head of a RayJob's provisioned cluster
  again, and the RayJob does not notice. Walked: a RayJob of a head and 2 workers with a 20 s
  limit was evicted, its 3 pods deleted, and the RayJob stayed where it was while its gang sat
  `Pending` "0 of 3 pods exist", first in its queue, for the minute watched — for ever, by
  KubeRay's code: a run neither over nor running.

So the workload is given what its API has for it: a Job's and a RayJob's
`spec.activeDeadlineSeconds` (mutable on a running one) and a Kubeflow job's
`spec.runPolicy.activeDeadlineSeconds`, lowered to how long it has been active
(`status.startTime`, at least 1 s). Its controller then fails it at once (the Job
`DeadlineExceeded`; the Training Operator "active longer than specified deadline"; KubeRay
`DeadlineExceeded`, which its `backoffLimit` never retries), and the gang, whose workload reports
`Failed`, is `Failed` too. The Job controller and the Training Operator delete the pods
themselves. KubeRay deletes a RayJob's cluster only with `shutdownAfterJobFinishes`, and only
after its `ttlSecondsAfterFinished`, so that cluster is suspended as well (its `spec.suspend`):
KubeRay deletes all its pods and makes none while it stays so — the GPUs are back at the time
limit and the cluster object is kept for whoever asked to keep it. Why not delete the pods here:
walked, KubeRay's worker reconcile, run while the head was still terminating, made a deleted
worker again, which then sat `Pending` for ever beside a Failed RayJob. A RayCluster of its own
has no deadline and KubeRay makes its deleted pods again — walked, a 15 s limit ran four times
in 65 s — so its suspension is what ends it: marked `TimeLimitExceeded`, it reads `Failed` to
ganging (its gang ends) and is never resumed here.

Applied only where that ends this gang and nothing else: every member is a Job's pod (the Job
controller running each Job), or the pod of one PyTorchJob or MPIJob, or of one RayJob's cluster
(no other controller named by `managedBy`), and no live pod of those workloads is outside the
gang; otherwise (and when a patch is refused) its pods are deleted as before.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from phalanx.core.autogang import OwnerRef, Workload
from phalanx.k8s.api import ApiError, ClusterWrites
from phalanx.k8s.job_suspension import KUBEFLOW_V1, OWN_CONTROLLER, PLURALS, Owners
from phalanx.k8s.records import SUSPENDED_FOR, JobRec, PodRec
from phalanx.k8s.workload_records import TIME_LIMIT_MARK

log = logging.getLogger("phalanx.jobs")


@dataclass(frozen=True, slots=True)
class Deadline:
    """A workload whose own deadline ends the gang's run, or a RayCluster of its own that its
    suspension ends (it has no deadline): what the patches need."""

    kind: str
    api_version: str
    namespace: str
    name: str
    uid: str
    started: float | None
    cluster: OwnerRef | None = None
    """A RayCluster to suspend (marked `TimeLimitExceeded`): a RayJob's, whose pods then go now
    rather than after the RayJob's TTL, or the one ended (`kind` RayCluster)."""

    @property
    def run_policy(self) -> bool:
        """The deadline sits in `spec.runPolicy` (Kubeflow v1), not in `spec` (a Job)."""
        return self.kind in KUBEFLOW_V1

    @classmethod
    def job(cls, job: JobRec) -> Deadline:
        return cls("Job", "batch/v1", job.namespace, job.name, job.uid, job.started)

    @classmethod
    def workload(cls, w: Workload, cluster: OwnerRef | None = None) -> Deadline:
        """A PyTorchJob, MPIJob or RayJob (with its cluster), or a RayCluster of its own."""
        ref = w.ref
        if ref.kind == "RayCluster":
            cluster = ref
        return cls(ref.kind, ref.api_version, w.namespace, ref.name, ref.uid, w.started, cluster)

    def patches(self, now: float) -> list[tuple[str, str, str, dict[str, Any]]]:
        """(apiVersion, plural, name, merge patch), in order: the deadline, then the cluster's
        suspension."""
        out = []
        if self.kind != "RayCluster":
            out.append((self.api_version, PLURALS[self.kind], self.name, deadline_patch(self, now)))
        if self.cluster is not None:
            c = self.cluster
            out.append((c.api_version, "rayclusters", c.name, cluster_suspension(c)))
        return out


def runs_to_end(
    members: Iterable[PodRec], gang_pods: Iterable[PodRec], owners: Owners
) -> list[Deadline] | None:
    """The workloads whose deadline ends this gang's run and nothing else, or None (delete the
    pods)."""
    members = list(members)
    known = owners.jobs_of(members)
    if known is not None:
        if any(j.state != "Active" or not j.job_controller for j in known):
            return None
        ended = [Deadline.job(j) for j in known]
        covered = {d.uid for d in ended}
    elif (ray := owners.ray_run_of(members)) is not None:
        w = ray.rayjob or ray.cluster
        if not _runs_itself(w):
            return None
        ended = [Deadline.workload(w, ray.cluster.ref)]
        covered = ray.owners
    else:
        kubeflow = owners.kubeflow_job_of(members)
        if kubeflow is None or not _runs_itself(kubeflow):
            return None
        ended = [Deadline.workload(kubeflow)]
        covered = {kubeflow.ref.uid}
    return ended if owners.alone(covered, gang_pods) else None


def _runs_itself(w: Workload) -> bool:
    """Running and run by its own controller (a PyTorchJob's or MPIJob's Training Operator, a
    RayJob's or RayCluster's KubeRay), which the deadline or the suspension reaches."""
    return w.state in ("Active", "Unknown") and w.managed_by in (
        None,
        OWN_CONTROLLER[w.ref.kind],
    )


def deadline_patch(target: Deadline, now: float) -> dict[str, Any]:
    """How long it has been active (at least 1 s): past it at once. `metadata.uid` makes it that
    very object's (one deleted and created again under its name is refused)."""
    active = now - target.started if target.started is not None else 1.0
    deadline = {"activeDeadlineSeconds": max(1, math.floor(active))}
    spec = {"runPolicy": deadline} if target.run_policy else deadline
    return {"metadata": {"uid": target.uid}, "spec": spec}


def cluster_suspension(cluster: OwnerRef) -> dict[str, Any]:
    """A RayCluster suspended, marked as ended at its time limit: KubeRay deletes its pods and
    makes none while it stays so; the mark makes it `Failed` to ganging
    (`workload_records.raycluster_state`), and it is never resumed here (`to_resume` resumes
    only what an eviction suspended)."""
    return {
        "metadata": {"uid": cluster.uid, "annotations": {SUSPENDED_FOR: TIME_LIMIT_MARK}},
        "spec": {"suspend": True},
    }


async def end_runs(api: ClusterWrites, targets: list[Deadline], now: float) -> bool:
    """Give each workload its deadline (and suspend a RayCluster); False when one was refused
    (the caller deletes the pods)."""
    ok = True
    for t in targets:
        try:
            for api_version, plural, name, patch in t.patches(now):
                await api.patch_workload(api_version, plural, t.namespace, name, patch)
        except ApiError as exc:
            if exc.status == 404:
                continue  # gone: so are its pods
            log.warning(
                "ending %s %s/%s by its deadline: %s; deleting its pods instead",
                t.kind,
                t.namespace,
                t.name,
                exc,
            )
            ok = False
    return ok
