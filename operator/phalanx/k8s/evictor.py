"""Evicting whole gangs: what the cycle decided (reclaim, preemption) and what the lifecycle did
(time limit, member failure, an eviction issued again).

The `Evicted=True` mark goes on the PodGroup *before* any pod is evicted: it is the durable
fact that this gang's capacity is on its way back. The next cycle — in this operator or in one
restarted after a crash — reads it and neither counts the gang as running nor evicts it twice;
if its members are still bound long after, the lifecycle has the eviction issued again. Members
go through the Eviction API with a grace period, concurrently, bounded by `bind_concurrency`
slots (one after another, a reclaim of a full `large` cluster held the loop for minutes). A
Job's, JobSet's, TrainJob's, PyTorchJob's, MPIJob's or RayJob's gang is evicted by suspending it
instead (`k8s/job_suspension.py` says why), and a Job's, PyTorchJob's, MPIJob's or RayJob's gang
past its time limit ends through its workload's own deadline, a RayCluster's by its suspension
(`k8s/job_deadline.py`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping

from phalanx.config import OperatorConfig
from phalanx.core.reasons import EvictionReason
from phalanx.k8s.api import ApiError, ClusterWrites
from phalanx.k8s.cluster_view import Gang
from phalanx.k8s.job_deadline import end_runs, runs_to_end
from phalanx.k8s.job_suspension import NO_OWNERS, Owners, suspend, target_of
from phalanx.k8s.metrics import Metrics
from phalanx.k8s.records import PodRec
from phalanx.k8s.reporter import Reporter, group_ref
from phalanx.k8s.status import evicted_mark
from phalanx.k8s.tasks import pod_ref

log = logging.getLogger("phalanx.evictor")


class Evictor:
    def __init__(
        self,
        config: OperatorConfig,
        api: ClusterWrites,
        metrics: Metrics,
        reporter: Reporter,
        clock: Callable[[], float],
    ) -> None:
        self.config = config
        self.api = api
        self.metrics = metrics
        self.reporter = reporter
        self.clock = clock
        self._slots = asyncio.Semaphore(config.bind_concurrency)
        self.owners: Owners = NO_OWNERS
        """The watched Jobs, workloads and pods, set each cycle: a Job's or JobSet's gang is
        evicted by suspending it."""

    async def evict(
        self,
        gang: Gang,
        reason: str,
        message: str,
        assumed: Mapping[str, str],
        member_failures: int | None = None,
        final: bool = False,
    ) -> None:
        """Mark the gang evicted (durably), then evict every bound member with a grace period.

        The mark counts the members with no controller (`evictedBarePods`): nothing makes
        them again, and the gang's `WaitingForPods` says so for as long as it waits. A `final`
        eviction (the last member failure, `--member-failure-limit`) ends the workload's run as
        a time limit does, by its own deadline: suspended, it would be resumed and run again,
        and a Job left suspended for good never reads as ended to whatever waits on it."""
        await self.reporter.status_landed(gang.uid)
        self.metrics.evictions_total.labels(reason=reason).inc()
        members = [p for p in gang.bound(assumed) if not p.deleting]
        if gang.group:
            bare = sum(1 for p in members if p.owner is None)
            patch = evicted_mark(gang.status, reason, message, self.clock(), bare_pods=bare)
            if member_failures is not None:
                patch["memberFailures"] = member_failures
            await self.reporter.patch_group(gang, patch)
            self.reporter.emit(group_ref(gang), reason, f"gang evicted: {message}", "Warning")
        ends = final or reason == EvictionReason.TIME_LIMIT_EXCEEDED
        if ends:
            ended = runs_to_end(members, [*gang.pods, *gang.finished], self.owners)
            if ended and await end_runs(self.api, ended, self.clock()):
                # Its controller fails each (a Job `DeadlineExceeded`) and deletes its pods;
                # the gang is Failed with its workload.
                names = ", ".join(d.name for d in ended)
                how = f"{ended[0].kind} {names} ended by its deadline"
                self._said(gang, members, reason, how, message)
                return
        target = target_of(members, [*gang.pods, *gang.finished], self.owners) if not ends else None
        if target is not None and await suspend(self.api, target, reason):
            # Its controller deletes the pods, counted neither as failures nor in its back-off
            # (`k8s/job_suspension.py`); the cycle resumes it once they are gone.
            how = f"its {target.title} suspended until its pods are gone"
            self._said(gang, members, reason, how, message)
            return
        refused = await asyncio.gather(
            *(self._evict_one(gang, p, reason, message) for p in members)
        )
        blocked = [why for why in refused if why is not None]
        if blocked and gang.group and self.reporter.reported.get(gang.uid) != (reason, "budget"):
            # Reported once per eviction, not every time it is issued again.
            self.reporter.reported[gang.uid] = (reason, "budget")
            self.reporter.emit(group_ref(gang), "DisruptionBudget", blocked[0], "Warning")

    def _said(self, gang: Gang, members: list[PodRec], reason: str, how: str, message: str) -> None:
        """Each member's Event when its workload's controller removes it (`how`), not us."""
        for p in members:
            self.reporter.emit(
                pod_ref(p.namespace, p.name, p.uid),
                reason,
                f"evicted with its gang {gang.key} ({how}): {message}",
                "Warning",
            )

    async def _evict_one(self, gang: Gang, pod: PodRec, reason: str, message: str) -> str | None:
        """Evict one member; what a disruption budget said, if it refused.

        Time limits delete (the run is over, whatever a budget says). Reclaim and preemption
        were decided knowing the budgets — a protected gang is chosen only when no other would
        do — so a refusal does not stop them: the pod is deleted, with a Warning that names the
        budget, as kube-scheduler's preemption does. A member failure's eviction is retried by
        the lifecycle (`eviction_retry`); its controller will restart the gang either way."""
        self.reporter.emit(
            pod_ref(pod.namespace, pod.name, pod.uid),
            reason,
            f"evicted with its gang {gang.key}: {message}",
            "Warning",
        )
        grace = self.config.eviction_grace_s
        try:
            async with self._slots:
                if reason == EvictionReason.TIME_LIMIT_EXCEEDED:
                    await self.api.delete_pod(pod.namespace, pod.name, pod.uid, grace)
                else:
                    await self.api.evict(pod.namespace, pod.name, grace)
        except ApiError as exc:
            if exc.status == 429:
                why = f"a PodDisruptionBudget refused evicting {pod.name}: {exc}"
                if reason in (EvictionReason.RECLAIMED, EvictionReason.PREEMPTED):
                    log.warning("%s; deleting it anyway (a budget never vetoes %s)", why, reason)
                    await self._delete(pod, grace)
                    return f"{why}; deleted anyway: {str(reason).lower()} is not vetoed by budgets"
                return why
            if exc.status != 404:
                log.warning("evicting %s: %s", pod.key, exc)
        return None

    async def _delete(self, pod: PodRec, grace: int) -> None:
        try:
            async with self._slots:
                await self.api.delete_pod(pod.namespace, pod.name, pod.uid, grace)
        except ApiError as exc:
            if exc.status != 404:
                log.warning("deleting %s: %s", pod.key, exc)
