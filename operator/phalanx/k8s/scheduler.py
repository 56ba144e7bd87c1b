"""The scheduling loop: view → core decisions → the adapter's hands carry them out.

One cycle, in order:
 1. take the watched records and forget assumptions the watch has caught up with;
 2. build the view: each gang's lifecycle verdict (`core.lifecycle`) and the core snapshot;
    accrue queue usage since the last cycle (decayed GPU-seconds);
 3. run the core cycle (placement, fair share, reclaim, backfill);
 4. only while this replica may act (leader): carry out what was decided, each gang's work as a
    task of its own, none awaited here —
    - the lifecycle's evictions (time limit, member failure, an eviction issued again) and
      rollbacks (a gang left partly bound), and the cycle's evictions (reclaim, preemption):
      `evictor.py`, `binder.py`;
    - the cycle's bindings: whole gangs, and members joining running gangs: `binder.py`;
    - status, Events and pod conditions where they changed: `reporter.py`.

No gang's trouble holds up the others: a partly bound gang is rolled back in its own task while
the cycle schedules everyone else, and every API call is bounded by the bind deadline
(`guarded.py`). A gang with a task under way (binding, rollback, eviction) is *busy*: the
lifecycle holds it and no other write touches it. Every write goes through `GuardedWrites`,
which refuses it unless this replica holds the lease, so a deposed leader writes nothing.

Everything per gang is keyed by the PodGroup's uid (a PodGroup deleted and re-created under the
same name is a new gang) and forgotten when the object goes.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from phalanx.config import OperatorConfig
from phalanx.core import CycleResult, accrue_usage, schedule
from phalanx.core.lifecycle import Action
from phalanx.k8s.api import ClusterWrites
from phalanx.k8s.binder import Binder, FaultInjection
from phalanx.k8s.bypass import BypassWatch
from phalanx.k8s.cluster_view import Gang, View, ViewCache, Workloads, build_view
from phalanx.k8s.evictor import Evictor
from phalanx.k8s.gang_maker import GangMaker
from phalanx.k8s.guarded import AlwaysLeader, GuardedWrites, LeaderGate
from phalanx.k8s.job_suspension import Owners, resume, to_resume
from phalanx.k8s.metrics import Metrics
from phalanx.k8s.records import BudgetRec, GroupRec, JobRec, NodeRec, PodRec, QueueRec
from phalanx.k8s.reporter import Deferred, Reporter
from phalanx.k8s.tasks import spawn

__all__ = ["AlwaysLeader", "FaultInjection", "LeaderGate", "Records", "Scheduler", "Source"]

log = logging.getLogger("phalanx.scheduler")

BYPASS_SCAN_S = 2.0
"""How often the pods other schedulers bound are read for opted-in ones (`bypass`): a scan of
every pod, so not every cycle; a workload's pods are found within this long of being bound."""


@dataclass(frozen=True)
class Records:
    nodes: list[NodeRec]
    pods: list[PodRec]
    groups: list[GroupRec]
    queues: list[QueueRec]
    priority_classes: Mapping[str, int]
    budgets: list[BudgetRec] = dataclasses.field(default_factory=list)
    jobs: Mapping[str, JobRec] = dataclasses.field(default_factory=dict)
    """batch/v1 Jobs by uid."""
    workloads: Workloads = dataclasses.field(default_factory=Workloads)
    """What automatic ganging reads (`core.autogang`)."""
    gone: list[tuple[PodRec, float]] = dataclasses.field(default_factory=list)
    """Bound pods of ours that left the API evicted from outside, and when (`IndexSource`)."""


class Source(Protocol):
    """Where the loop reads the cluster from (informers and kopf indexes in production, lists
    in tests)."""

    def records(self) -> Records: ...


class Scheduler:
    def __init__(
        self,
        config: OperatorConfig,
        api: ClusterWrites,
        source: Source,
        metrics: Metrics | None = None,
        leader: LeaderGate | None = None,
        clock: Callable[[], float] = time.time,
        faults: FaultInjection | None = None,
    ) -> None:
        self.config = config
        self.policy = config.to_policy()
        self.lifecycle = config.to_lifecycle()
        self.leader = leader or AlwaysLeader()
        self.api = GuardedWrites(api, self.leader, config.bind_deadline_s)
        self.source = source
        self.metrics = metrics or Metrics()
        self.clock = clock
        self.usage: dict[str, float] = {}
        self.usage_at: float | None = None
        self.usage_persisted_at = 0.0
        self.wake = asyncio.Event()
        self.cycles = 0
        self.view_cache = ViewCache()
        self.reporter = Reporter(config, self.api, self.metrics, busy=self._busy)
        self.binder = Binder(
            config,
            self.api,
            self.metrics,
            self.reporter,
            self.poke,
            clock,
            faults or FaultInjection(),
        )
        self.evictor = Evictor(config, self.api, self.metrics, self.reporter, clock)
        self.gang_maker = GangMaker(self.api, self.reporter.emit)
        self.oddities_logged: set[str] = set()
        self.bypass = BypassWatch(every=BYPASS_SCAN_S)
        self.leaving: dict[str, asyncio.Task[None]] = {}
        """Gang uid → its eviction or rollback task: its capacity is on its way back."""
        self.acting: dict[str, asyncio.Task[None]] = {}
        """Gang uid → its other repair task (a roll forward, recreating a rollback's pods)."""
        self.resuming: dict[str, asyncio.Task[None]] = {}
        """Job or JobSet uid → the task resuming it (suspended to evict its gang:
        `k8s/job_suspension`)."""

    # What tests and the operator read of the parts.
    @property
    def assumed(self) -> dict[str, str]:
        return self.binder.assumed

    @property
    def inflight(self) -> dict[str, asyncio.Task[None]]:
        return self.binder.inflight

    @property
    def deferred(self) -> dict[str, Deferred]:
        return self.reporter.deferred

    @property
    def refreshed(self) -> dict[str, float]:
        return self.reporter.refreshed

    @property
    def status_writes(self) -> dict[str, asyncio.Task[None]]:
        return self.reporter.status_writes

    def _busy(self) -> bool:
        return self.binder.busy()

    def busy_gangs(self) -> set[str]:
        """Uids of gangs with a bind, rollback, eviction or repair under way."""
        return {*self.binder.inflight, *self.acting, *self.leaving}

    # -- loop -------------------------------------------------------------------------------

    async def settle(self) -> None:
        """Wait for every task in flight, deferred reports included (the loop itself never
        waits: tests use this to observe a cycle's writes)."""
        while self._pending_tasks() or self.reporter.deferred:
            await asyncio.gather(*self._pending_tasks(), return_exceptions=True)
            if not self.binder.inflight:
                self.reporter.flush_deferred(force=True)

    def _pending_tasks(self) -> list[asyncio.Task[None]]:
        return [
            *self.binder.tasks(),
            *self.acting.values(),
            *self.leaving.values(),
            *self.resuming.values(),
            *self.gang_maker.tasks.values(),
            *self.reporter.status_writes.values(),
            *self.reporter.pod_writes.values(),
        ]

    async def stop(self) -> None:
        """Cancel every task in flight (on shutdown, before the client closes under them). A
        gang cut off mid-bind is left partly bound on purpose: the next leader rolls it back (or
        evicts it whole) at its first cycle, as after a crash. Deferred reports are dropped: the
        next leader writes `Running` for gangs it finds bound whole."""
        self.binder.stop()
        tasks = [*self._pending_tasks(), *self.reporter.tasks()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def poke(self) -> None:
        """Something changed: run a cycle soon (debounced, `_settle_pokes`)."""
        self.wake.set()

    async def _settle_pokes(self) -> None:
        """Wait until the pokes stop for `debounce_quiet_s`, but no longer than `debounce_s`
        after the first.

        Why a quiet period rather than a fixed delay: changes come in two kinds. A burst (a Job
        creating its pods, gates lifted one by one) is worth gathering into one cycle, and the
        cap still makes one every `debounce_s` while it lasts. A lone change (a Queue's limit
        lifted, a gang's PodGroup created after its pods, a gang finishing) has nothing to gather:
        a fixed 0.2 s delay left the API server idle before the first decision of a release
        (bench/e2e_bench.py logs each window's first-bind delay). A timer cycle (no poke) starts
        at once.
        """
        if not self.wake.is_set():
            return
        loop = asyncio.get_running_loop()
        cap = loop.time() + self.config.debounce_s
        while True:
            self.wake.clear()
            left = cap - loop.time()
            if left <= 0:
                return
            try:
                await asyncio.wait_for(
                    self.wake.wait(), timeout=min(self.config.debounce_quiet_s, left)
                )
            except TimeoutError:
                return  # quiet

    async def run(self, synced: asyncio.Event) -> None:
        await synced.wait()
        log.info("view synced; scheduling")
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake.wait(), timeout=self.config.cycle_interval_s)
            await self._settle_pokes()
            try:
                await self.cycle()
            except Exception:
                log.exception("scheduling cycle failed; retrying next cycle")

    async def cycle(self) -> CycleResult | None:
        started = time.perf_counter()
        now = self.clock()
        # 1. records, assumptions
        records = self.source.records()
        self.binder.forget_caught_up(records.pods, now)
        self.reporter.caught_up(records.groups)
        # 2. the view (lifecycle verdicts, snapshot) and usage
        busy = self.busy_gangs()
        view = await asyncio.to_thread(self._view, records, now, busy)
        self._accrue(view, now)
        view.snapshot = dataclasses.replace(
            view.snapshot,
            queues=tuple(
                dataclasses.replace(q, usage=self.usage.get(q.name, q.usage))
                for q in view.snapshot.queues
            ),
        )
        # 3. decide (in a worker thread: the event loop keeps serving watches and writes)
        viewed = time.perf_counter()
        result = await asyncio.to_thread(schedule, view.snapshot, self.policy, now)
        decided = time.perf_counter()
        self.cycles += 1
        if result.bindings or result.evictions or result.extra_bindings:
            log.info(
                "cycle %d: %d gang(s) to bind (%d pods), %d joining, %d eviction(s), %d gang(s) "
                "already binding; view %.0f ms, core %.0f ms",
                self.cycles,
                len(result.bindings),
                sum(len(p) for p in result.bindings.values()),
                sum(len(p) for p in result.extra_bindings.values()),
                len(result.evictions),
                len(self.binder.inflight),
                1000 * (viewed - started),
                1000 * (decided - viewed),
            )
        self._prune(view, records)
        if not self.leader.may_act():
            self.metrics.cycles_total.labels(role="standby").inc()
            await self._stand_down()
            return result
        self.metrics.cycles_total.labels(role="leader").inc()
        # 4. act
        owners = Owners(records.jobs, records.workloads.by_uid, records.pods)
        self.evictor.owners = owners
        self._resume_jobs(owners)
        self._act_on_lifecycle(view, result, busy)
        self._evict_decided(result, view, busy)
        busy = self.busy_gangs()
        self.binder.start_binds(result, view, now, busy)
        self.binder.start_joins(result, view, now)
        self.reporter.flush_deferred()
        self.reporter.write_statuses(view, result, now, self.binder.assumed, self.busy_gangs())
        persist = now - self.usage_persisted_at >= self.config.usage_persist_interval_s
        await self.reporter.write_queues(result, view, now, self.usage, persist)
        if persist:
            self.usage_persisted_at = now
        self.reporter.report_orphans(view)
        self.reporter.report_finished(view)
        self.reporter.report_unganged(view)
        self.reporter.report_bypassed(
            self.bypass.check(records.pods, records.workloads.namespace_queues, now)
        )
        self._log_oddities(view)
        self.gang_maker.act(view.to_make, view.remake)
        self.reporter.write_pod_conditions(view, result)
        self.metrics.cycle_seconds.observe(time.perf_counter() - started)
        return result

    def _log_oddities(self, view: View) -> None:
        """Each input outside the contract, once while it lasts (a status edited by hand stays
        edited until the next write: a warning every cycle would drown the log)."""
        for key, message in view.oddities.items():
            if key not in self.oddities_logged:
                log.warning("%s", message)
        self.oddities_logged = set(view.oddities)

    async def _stand_down(self) -> None:
        """Not (or no longer) the leader: stop every task in flight and drop deferred reports.
        Their writes would be refused anyway (`GuardedWrites`); stopping them keeps a deposed
        leader from even trying, and a gang it left partly bound is the next leader's to repair
        from its decision record."""
        tasks = self._pending_tasks()
        if not tasks and not self.reporter.deferred:
            return
        log.warning("not the leader: stopping %d task(s) in flight", len(tasks))
        self.reporter.deferred.clear()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _view(self, records: Records, now: float, busy: set[str]) -> View:
        return build_view(
            nodes=records.nodes,
            pods=records.pods,
            groups=records.groups,
            queues=records.queues,
            priority_classes=records.priority_classes,
            scheduler_name=self.config.scheduler_name,
            assumed=self.binder.assumed,
            usage=self.usage,
            half_life=self.config.usage_half_life_s,
            now=now,
            budgets=records.budgets,
            cache=self.view_cache,
            jobs=records.jobs,
            gone=records.gone,
            written=self.reporter.overlay(),
            busy=busy,
            lifecycle=self.lifecycle,
            workloads=records.workloads,
            evicting=self.leaving.keys(),
        )

    def _prune(self, view: View, records: Records) -> None:
        self.reporter.prune({g.uid for g in view.gangs.values()}, {p.uid for p in records.pods})

    # -- usage ------------------------------------------------------------------------------

    def _accrue(self, view: View, now: float) -> None:
        if self.usage_at is None:
            self.usage = {q.name: q.usage for q in view.snapshot.queues}
            self.usage_at = now
            return
        dt = max(0.0, now - self.usage_at)
        allocated: dict[str, float] = {}
        for gang in view.snapshot.running:
            gpus = sum(m.requests.get(self.policy.fair_share_resource, 0) for m in gang.members)
            allocated[gang.queue] = allocated.get(gang.queue, 0.0) + gpus
        for q in view.snapshot.queues:
            self.usage[q.name] = accrue_usage(
                self.usage.get(q.name, q.usage),
                dt,
                allocated.get(q.name, 0.0),
                self.config.usage_half_life_s,
            )
        self.usage_at = now

    # -- acting on verdicts -----------------------------------------------------------------

    def _resume_jobs(self, owners: Owners) -> None:
        """Jobs and JobSets suspended to evict their gangs, once their pods are gone
        (`k8s/job_suspension`): one task each, at most one at a time per workload."""
        for target in to_resume(owners):
            if target.uid not in self.resuming:
                spawn(self.resuming, target.uid, resume(self.api, target), f"resume {target.kind}")

    def _act(self, gang: Gang, work: Coroutine[Any, Any, None], what: str) -> None:
        tracked = self.leaving if what in ("eviction", "rollback") else self.acting
        spawn(tracked, gang.uid, work, what, then=lambda _failed: self.poke())

    def _act_on_lifecycle(self, view: View, result: CycleResult, busy: set[str]) -> None:
        """Start the evictions, rollbacks and repairs the lifecycle decided (each in a task of
        its own: a slow one never holds up the cycle or another gang). A repair goes the way the
        cycle found: forward where the recorded placement still fits, else back."""
        for key in sorted(view.gangs):
            gang = view.gangs[key]
            d = gang.decision
            if d is None or gang.uid in busy:
                continue
            journal = gang.status.get("recreate")
            if isinstance(journal, Mapping) and journal:
                # A rollback's bare pods still to recreate (this operator's, or one that died
                # between a delete and its create): finish that first.
                live = {p.name: p.uid for p in [*gang.pods, *gang.finished]}
                self._act(gang, self.binder.finish_recreations(gang, journal, live), "recreate")
                continue
            if d.action is Action.EVICT:
                failures = d.member_failures if d.reason == "MemberFailed" else None
                work = self.evictor.evict(
                    gang, d.reason, d.message, self.assumed, failures, final=d.final
                )
                self._act(gang, work, "eviction")
            elif d.action is Action.ROLL_BACK:
                if d.reason == "BindFailed":
                    self.metrics.repairs_total.labels(result="back").inc()
                self._act(gang, self.binder.rollback(gang, d.message), "rollback")
            elif d.action is Action.REPAIR and key in result.roll_forward:
                work = self.binder.roll_forward(gang, result.roll_forward[key], self.clock())
                self.metrics.repairs_total.labels(result="forward").inc()
                self._act(gang, work, "roll forward")
            elif d.action is Action.REPAIR and key in result.roll_back:
                why = f"{d.message}; its recorded placement no longer fits: {result.roll_back[key]}"
                self.metrics.repairs_total.labels(result="back").inc()
                self._act(gang, self.binder.rollback(gang, why), "rollback")

    def _evict_decided(self, result: CycleResult, view: View, busy: set[str]) -> None:
        for ev in result.evictions:
            gang = view.gangs.get(ev.gang)
            if (
                gang is None
                or gang.uid in busy
                or gang.uid in self.leaving
                or gang.uid in self.acting
            ):
                continue
            work = self.evictor.evict(gang, str(ev.reason), ev.message, self.assumed)
            self._act(gang, work, "eviction")
