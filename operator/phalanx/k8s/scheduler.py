"""The scheduling loop: view → core decision → evictions, whole-gang binds, status.

One cycle, in order (numbered as the code below):
 1. take the watched records (a consistent-enough view: kopf has listed everything before the
    first cycle) and forget assumptions the watch has caught up with;
 2. accrue queue usage since the last cycle (decayed GPU-seconds);
 3. build the core snapshot; gangs left partly bound (a crash mid-bind, a member deleted) are
    rolled back or, if they were running, evicted whole;
 4. run the core;
 5. evict what the core chose (whole gangs, Eviction API) and gangs past their time limit;
 6. bind every gang the core placed — only while this replica holds a valid lease: reserve the
    whole gang in memory, record the decision on the PodGroup status, bind all members
    concurrently, retry failures against the reservation until the bind deadline, else roll back;
 7. write PodGroup and Queue status where it changed.

Binds are pipelined: step 6 starts each gang's bind as a task and the cycle goes on without
waiting for it, so the next cycle can place newly arrived gangs while earlier ones are still being
bound. That is safe because a gang's members are reserved (`assumed`) before its task starts: the
next cycle's view counts them as placed, so nothing else is put on that capacity. While its task
runs, a gang is *in flight*: no other step touches it (partial repair, evictions, status), since
its task owns its status and its rollback.

Status writes of step 7 are started the same way, at most `STATUS_WRITES` at once: a burst of
status patches must not hold up the next decision. A gang with a status write still in flight is
skipped until it lands, and a bind or an eviction of that gang waits for it first, so writes of
one gang never land out of order.

Binds come before bookkeeping. Of a gang's writes only the decision record has to precede its
binds; its `Running` status and its `Scheduled` Event only report what happened. While other
gangs are still binding they are *deferred*: on 2 cores the API server is the bottleneck of a
bind burst, and these two writes cost it more than the gang's binds (bench/write_cost.py), so
writing them in the burst slows every gang after this one. They are written once no gang has
been in flight for `status_quiet_s` (a burst can arrive as a trickle of gangs), or when the
oldest has waited `status_refresh_busy_s`, or just before any other write of the same gang (so a
gang's writes still land in order). A deferred gang counts as running to the
partial-gang repair. A crash loses only these reports: the next leader sees the gang bound whole
and writes its `Running` status from its own view.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from phalanx.config import OperatorConfig
from phalanx.core import (
    GPU,
    CycleResult,
    Reason,
    accrue_usage,
    schedule,
)
from phalanx.k8s.api import ApiError, ClusterWrites
from phalanx.k8s.metrics import Metrics
from phalanx.k8s.records import BudgetRec, GroupRec, NodeRec, PodRec, QueueRec
from phalanx.k8s.status import (
    condition,
    diff,
    merge_conditions,
    pending_status,
    placement_body,
    pod_counts,
    queue_status_body,
    rfc3339,
    running_status,
)
from phalanx.k8s.view import Gang, View, ViewCache, build_view

log = logging.getLogger("phalanx.scheduler")
STATUS_WRITES = 16
"""PodGroup status patches in flight at once (binds have their own, larger, limit)."""
PENDING_ONLY = ("queuePosition", "estimatedStartTime", "pendingDetail")
"""Status fields that describe a gang waiting; the decision record removes them."""
DRIFTING_FIELDS = frozenset(
    {
        "queuePosition",
        "estimatedStartTime",
        "pendingDetail",
        "conditions",
        "members",
        "bound",
        "running",
        "succeeded",
        "failed",
    }
)
"""Status fields whose change alone is refreshed at a bounded rate (see `_status_change`)."""


@dataclass(frozen=True)
class Records:
    nodes: list[NodeRec]
    pods: list[PodRec]
    groups: list[GroupRec]
    queues: list[QueueRec]
    priority_classes: Mapping[str, int]
    budgets: list[BudgetRec] = dataclasses.field(default_factory=list)


@dataclass
class Deferred:
    """A gang's `Running` status and `Scheduled` Event, held back while other gangs bind."""

    gang: Gang
    status: dict[str, Any]
    involved: dict[str, str]
    reason: str
    message: str
    since: float = field(default_factory=time.monotonic)


class Source(Protocol):
    """Where the loop reads the cluster from (kopf indexes in production, lists in tests)."""

    def records(self) -> Records: ...


class LeaderGate(Protocol):
    def may_act(self) -> bool: ...


class AlwaysLeader:
    def may_act(self) -> bool:
        return True


@dataclass
class FaultInjection:
    """Test-only: die abruptly after N successful binds (PHALANX_FAULT_DIE_AFTER_BINDS).

    The check runs *before* each bind is sent: the (N+1)-th bind waits for the N already sent to
    finish, then the process exits without any cleanup. So exactly N binds reach the API server,
    and with N below a gang's size the kill provably lands mid-gang.
    """

    die_after_binds: int | None = None
    bind_delay_s: float = 0.0
    """PHALANX_FAULT_BIND_DELAY_S: slow every bind down, so a test can act mid-bind."""
    issued: int = 0
    finished: int = 0
    die: Callable[[], None] = field(default=lambda: __import__("os")._exit(137))

    async def before_bind(self) -> None:
        if self.bind_delay_s:
            await asyncio.sleep(self.bind_delay_s)
        if self.die_after_binds is None:
            return
        if self.issued >= self.die_after_binds:
            while self.finished < self.issued:
                await asyncio.sleep(0.005)
            log.error("fault injection: dying after %d binds", self.finished)
            self.die()
        self.issued += 1

    def after_bind(self) -> None:
        self.finished += 1


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
        self.api = api
        self.source = source
        self.metrics = metrics or Metrics()
        self.leader = leader or AlwaysLeader()
        self.clock = clock
        self.faults = faults or FaultInjection()
        self.assumed: dict[str, str] = {}
        self.assumed_at: dict[str, float] = {}
        self.evicting: dict[str, float] = {}
        self.usage: dict[str, float] = {}
        self.usage_at: float | None = None
        self.usage_persisted_at = 0.0
        self.reported: dict[str, tuple[str, str]] = {}
        self.written: dict[str, dict[str, Any]] = {}
        self.wake = asyncio.Event()
        self.cycles = 0
        self._background: set[asyncio.Task[None]] = set()
        self.refreshed: dict[str, float] = {}
        self.inflight: dict[str, asyncio.Task[None]] = {}
        """Gangs whose bind task is running (key → task); see the module docstring."""
        self.status_writes: dict[str, asyncio.Task[None]] = {}
        """Gangs whose status-step write is in flight (key → task)."""
        # Limits on writes in flight, each across all gangs and cycles. (A semaphore binds to the
        # running loop only when a task first waits on it, so making them here is safe.)
        self._bind_slots = asyncio.Semaphore(config.bind_concurrency)
        self._decision_slots = asyncio.Semaphore(max(1, config.bind_concurrency // 4))
        """Decision records' own slots: see `_bind_gang`."""
        self._evict_slots = asyncio.Semaphore(config.bind_concurrency)
        self._status_slots = asyncio.Semaphore(STATUS_WRITES)
        self.deferred: dict[str, Deferred] = {}
        """Gangs bound whole whose `Running` status and Event wait for the burst to end."""
        self._quiet_timer: asyncio.TimerHandle | None = None
        """Set while `status_quiet_s` has not passed since the last gang in flight ended."""
        self.view_cache = ViewCache()

    # -- loop -------------------------------------------------------------------------------

    def _emit(
        self, involved: Mapping[str, str], reason: str, message: str, kind: str = "Normal"
    ) -> None:
        """Post an Event in the background: Events are for people, never worth a bind's wait."""
        task = asyncio.create_task(self.api.event(involved, reason, message, kind))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def settle(self) -> None:
        """Wait for every bind task and status write in flight, deferred ones included (the loop
        itself never waits: tests use this to observe a cycle's writes)."""
        while self.inflight or self.status_writes or self.deferred:
            pending = [*self.inflight.values(), *self.status_writes.values()]
            await asyncio.gather(*pending, return_exceptions=True)
            if not self.inflight:
                self._flush_deferred(force=True)

    async def stop(self) -> None:
        """Cancel every bind, status write and Event in flight (on shutdown, before the client
        closes under them). A gang cut off mid-bind is left partly bound on purpose: the next
        leader rolls it back (or evicts it whole) at its first cycle, as after a crash. Deferred
        reports are dropped: the next leader writes `Running` for gangs it finds bound whole."""
        if self._quiet_timer is not None:
            self._quiet_timer.cancel()
        tasks = [*self.inflight.values(), *self.status_writes.values(), *self._background]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _status_landed(self, key: str) -> None:
        """Wait until a status write of this gang that is in flight has landed."""
        task = self.status_writes.get(key)
        if task is not None:
            await asyncio.wait([task])

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
        self._forget_caught_up(records.pods, now)
        # 2. usage (the snapshot's queues then carry it, decayed to now)
        view = await asyncio.to_thread(self._view, records, now)
        self._accrue(view, now)
        view.snapshot = dataclasses.replace(
            view.snapshot,
            queues=tuple(
                dataclasses.replace(q, usage=self.usage.get(q.name, q.usage))
                for q in view.snapshot.queues
            ),
        )
        # 3. partial gangs (a gang in flight is its bind task's business)
        partial = view.partial - self.inflight.keys()
        if partial and self.leader.may_act():
            await self._repair_partial(view, partial)
            return None  # the next cycle decides on a clean view
        # 4. decide
        # In a worker thread: the event loop keeps serving watches and in-flight writes meanwhile.
        viewed = time.perf_counter()
        result = await asyncio.to_thread(schedule, view.snapshot, self.policy, now)
        decided = time.perf_counter()
        self.cycles += 1
        if result.bindings or result.evictions:
            log.info(
                "cycle %d: %d gang(s) to bind (%d pods), %d eviction(s), %d gang(s) already "
                "binding; view %.0f ms, core %.0f ms",
                self.cycles,
                len(result.bindings),
                sum(len(p) for p in result.bindings.values()),
                len(result.evictions),
                len(self.inflight),
                1000 * (viewed - started),
                1000 * (decided - viewed),
            )
        if not self.leader.may_act():
            return result
        # 5. evict
        await self._evict_decided(result, view, now)
        await self._enforce_time_limits(view, now)
        await self._evict_degraded(view)
        # 6. bind (started, not awaited)
        if result.bindings and self.leader.may_act():
            self._start_binds(result, view, now)
        # 7. status
        self._flush_deferred()
        await self._write_statuses(view, result, now)
        await self._write_queues(result, view, now)
        await self._report_orphans(view)
        self.metrics.cycle_seconds.observe(time.perf_counter() - started)
        return result

    def _view(self, records: Records, now: float) -> View:
        return build_view(
            nodes=records.nodes,
            pods=records.pods,
            groups=records.groups,
            queues=records.queues,
            priority_classes=records.priority_classes,
            scheduler_name=self.config.scheduler_name,
            assumed=self.assumed,
            evicting=set(self.evicting),
            usage=self.usage,
            half_life=self.config.usage_half_life_s,
            now=now,
            budgets=records.budgets,
            cache=self.view_cache,
        )

    def _forget_caught_up(self, pods: Iterable[PodRec], now: float) -> None:
        """Drop assumptions the watch confirms (or that outlived any plausible watch lag)."""
        by_key = {p.key: p for p in pods}
        for key in list(self.assumed):
            pod = by_key.get(key)
            stale = now - self.assumed_at.get(key, now) > 60
            if pod is None or pod.node_name is not None or pod.terminal or stale:
                self.assumed.pop(key, None)
                self.assumed_at.pop(key, None)
        live_groups = {f"{p.namespace}/{p.group}" for p in pods if p.group and not p.terminal}
        for key in list(self.evicting):
            if key not in live_groups or now > self.evicting[key]:
                self.evicting.pop(key, None)

    # -- 2. usage ---------------------------------------------------------------------------

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

    # -- 3. partial gangs -------------------------------------------------------------------

    async def _repair_partial(self, view: View, partial: set[str]) -> None:
        for key in sorted(partial):
            gang = view.gangs[key]
            was_running = key in self.deferred or bool(
                gang.group and gang.group.status.get("phase") == "Running"
            )
            if was_running:
                await self._evict_gang(
                    gang, "MemberFailed", "a member of the gang failed or was lost"
                )
            else:
                await self._rollback(gang, "the gang was left partly bound (operator restart?)")

    # -- 5. evictions -----------------------------------------------------------------------

    async def _evict_decided(self, result: CycleResult, view: View, now: float) -> None:
        victims = []
        for ev in result.evictions:
            gang = view.gangs.get(ev.gang)
            if gang is None or ev.gang in self.evicting or ev.gang in self.inflight:
                continue
            victims.append(self._evict_gang(gang, str(ev.reason), ev.message))
        # Concurrently (the pods' evictions share `bind_concurrency` slots): one after another,
        # a reclaim of a full `large` cluster held the loop for minutes.
        await asyncio.gather(*victims)

    async def _enforce_time_limits(self, view: View, now: float) -> None:
        victims = []
        for rg in view.snapshot.running:
            if rg.time_limit is None or rg.id in self.evicting or rg.id not in view.running:
                continue
            if rg.id in self.inflight:
                continue
            if now - rg.start_time > rg.time_limit:
                victims.append(
                    self._evict_gang(
                        view.gangs[rg.id],
                        "TimeLimitExceeded",
                        f"ran {now - rg.start_time:.0f}s, over its time limit of "
                        f"{rg.time_limit:.0f}s",
                    )
                )
        await asyncio.gather(*victims)

    async def _evict_degraded(self, view: View) -> None:
        if self.config.member_failure != "evict":
            return
        victims = []
        for key in sorted(view.running):
            gang = view.gangs[key]
            if key in self.evicting or key in self.inflight or gang.failed == 0:
                continue
            live = [p for p in gang.bound(self.assumed) if not p.deleting]
            if len(live) + gang.succeeded < gang.min_member:
                victims.append(
                    self._evict_gang(gang, "MemberFailed", f"{gang.failed} member(s) failed")
                )
        await asyncio.gather(*victims)

    async def _evict_gang(self, gang: Gang, reason: str, message: str) -> None:
        """Evict every bound pod of the gang through the Eviction API, with a grace period."""
        self.evicting[gang.key] = self.clock() + 120
        await self._status_landed(gang.key)
        self.metrics.evictions_total.labels(reason=reason).inc()

        async def evict_one(pod: PodRec) -> str | None:
            """Evict one member; its name if a disruption budget refused it."""
            self._emit(
                _ref_pod(pod), reason, f"evicted with its gang {gang.key}: {message}", "Warning"
            )
            try:
                async with self._evict_slots:
                    await self.api.evict(pod.namespace, pod.name, self.config.eviction_grace_s)
            except ApiError as exc:
                if exc.status == 429:
                    return pod.name
                if exc.status != 404:
                    log.warning("evicting %s: %s", pod.key, exc)
            return None

        refused = await asyncio.gather(*(evict_one(p) for p in gang.bound(self.assumed)))
        blocked = [name for name in refused if name is not None]
        if gang.group:
            previous = gang.group.status
            patch = {
                "phase": "Pending",
                "conditions": merge_conditions(
                    previous,
                    [condition(previous, "Evicted", "True", reason, message, self.clock())],
                ),
            }
            await self._patch_group(gang, patch)
            self._emit(_ref_group(gang), reason, f"gang evicted: {message}", "Warning")
        if blocked:
            log.warning("eviction of %s blocked by a disruption budget for %s", gang.key, blocked)
            if len(blocked) == len(gang.bound(self.assumed)):
                # Nothing was evicted: forget the decision so the next cycle, which sees the
                # budget, picks another victim instead of waiting on this one.
                self.evicting.pop(gang.key, None)

    # -- 6. binding -------------------------------------------------------------------------

    def _start_binds(self, result: CycleResult, view: View, now: float) -> None:
        for key, pods in sorted(result.bindings.items()):
            if key in self.inflight:
                continue  # more members of a gang still binding: placed by a later cycle
            gang = view.gangs[key]
            decision = result.gangs.get(key)
            # Reserve the whole gang in the in-memory view before any write.
            for pod_key, node in pods.items():
                self.assumed[pod_key] = node
                self.assumed_at[pod_key] = now
            work = self._bind_gang(gang, pods, decision, self._bind_slots, now)
            self._spawn(self.inflight, key, work, "binding", then=self._bind_ended)

    def _bind_ended(self, failed: bool) -> None:
        """A gang's bind task ended. If it was the last in flight, the burst is over and the
        deferred reports go now.

        A gang that bound whole does not poke the loop: its capacity was counted as placed from
        the moment it was reserved, so the next cycle could decide nothing new (measured: in a
        burst of 250 gangs these pokes ran ~20 cycles that placed nothing, about a third of the
        operator's CPU). A rollback, or members still left to place, pokes (`_bind_gang`).
        """
        if failed:
            self.poke()  # it ended without saying how: look again
        if not self.inflight:
            quiet = self.config.status_quiet_s
            if self._quiet_timer is not None:
                self._quiet_timer.cancel()
            if quiet > 0:
                self._quiet_timer = asyncio.get_running_loop().call_later(quiet, self._on_quiet)
            else:
                self._flush_deferred()

    def _on_quiet(self) -> None:
        """`status_quiet_s` has passed since the last gang in flight ended (a later end would
        have replaced this timer)."""
        self._quiet_timer = None
        self._flush_deferred()

    def _busy(self) -> bool:
        """A gang is binding, or one ended less than `status_quiet_s` ago (the next of a trickle
        of gangs may be about to start). The timer itself is the state, so a timer the loop runs
        a clock tick early still ends the quiet period."""
        return bool(self.inflight) or self._quiet_timer is not None

    @staticmethod
    def _spawn(
        tracked: dict[str, asyncio.Task[None]],
        key: str,
        work: Coroutine[Any, Any, None],
        what: str,
        then: Callable[[bool], None] | None = None,
    ) -> None:
        """Run `work` as a task tracked under `key` in `tracked` until it ends; log a failure.
        `then(failed)` runs when it has ended."""

        def done(task: asyncio.Task[None]) -> None:
            tracked.pop(key, None)
            failed = not task.cancelled() and task.exception() is not None
            if failed:
                log.error("%s of gang %s failed", what, key, exc_info=task.exception())
            if then is not None:
                then(failed)

        tracked[key] = task = asyncio.create_task(work, name=f"{what} {key}")
        task.add_done_callback(done)

    async def _bind_gang(
        self,
        gang: Gang,
        pods: Mapping[str, str],
        decision: Any,
        sem: asyncio.Semaphore,
        now: float,
    ) -> None:
        reason = str(decision.reason) if decision else str(Reason.SCHEDULED)
        placement = decision.placement if decision else None
        await self._status_landed(gang.key)  # an earlier pending status must not land after ours
        if gang.group:
            # Record the decision before binding: a restarted operator can see what was intended.
            # Decisions have slots of their own, a quarter of the binds': unbounded, a burst's
            # decisions all went ahead of its first bind (sharing the binds' FIFO slots, they
            # still would). What only a waiting gang has (PENDING_ONLY) goes: stale from now on.
            record: dict[str, Any] = {
                "phase": "Binding",
                "placement": placement_body(placement, pods),
                **{k: None for k in PENDING_ONLY if gang.group.status.get(k) is not None},
            }
            async with self._decision_slots:
                await self._patch_group(gang, record)
        by_key = {p.key: p for p in gang.pods}
        deadline = time.monotonic() + self.config.bind_deadline_s
        first_bind: float | None = None

        async def bind_one(pod_key: str, node: str) -> bool:
            nonlocal first_bind
            pod = by_key[pod_key]
            delay = 0.05
            while True:
                if not self.leader.may_act():
                    return False
                try:
                    async with sem:
                        await self.faults.before_bind()
                        try:
                            await self.api.bind(pod.namespace, pod.name, pod.uid, node)
                        finally:
                            self.faults.after_bind()
                    self.metrics.binds_total.labels(result="ok").inc()
                    first_bind = first_bind or time.monotonic()
                    return True
                except ApiError as exc:
                    self.metrics.binds_total.labels(result="error").inc()
                    if exc.status == 404 or time.monotonic() + delay > deadline:
                        log.warning("bind %s → %s failed: %s", pod_key, node, exc)
                        return False
                    if exc.status == 409 and "already assigned" in str(exc):
                        return await self._bound_to(pod, node)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)

        results = await asyncio.gather(*(bind_one(k, n) for k, n in sorted(pods.items())))
        if first_bind is not None:
            self.metrics.partial_bound_seconds.observe(time.monotonic() - first_bind)
        if all(results):
            await self._bound_whole(gang, pods, reason, decision, now)
            if any(p.key not in pods and p.node_name is None and not p.terminal for p in gang.pods):
                self.poke()  # members beyond this round are left to place
            return
        await self._rollback(gang, f"{results.count(False)} of {len(results)} binds failed")
        self.poke()  # its capacity is free again

    async def _bound_to(self, pod: PodRec, node: str) -> bool:
        try:
            body = await self.api.read_pod(pod.namespace, pod.name)
        except ApiError:
            return False
        return bool(body.get("spec", {}).get("nodeName") == node)

    async def _bound_whole(
        self, gang: Gang, pods: Mapping[str, str], reason: str, decision: Any, now: float
    ) -> None:
        queue = gang.group.queue if gang.group else "default"
        queued = gang.group.created if gang.group else now
        self.metrics.gang_wait_seconds.labels(queue=queue).observe(max(0.0, now - queued))
        if decision is not None and decision.placement is not None:
            leaf_level = self.policy.topology_levels[-1].name
            self.metrics.leaves_spanned.observe(len(decision.placement.domains.get(leaf_level, ())))
        message = decision.message if decision else "bound"
        if gang.group:
            previous = gang.group.status
            status = {
                # All counts, not just `bound`: a count left stale here was the first drift
                # refresh of every gang, straight after its bind.
                **pod_counts(gang, self.assumed),
                "phase": "Running",
                "bound": len(pods),
                "scheduledAt": rfc3339(now),
                "conditions": merge_conditions(
                    previous,
                    [
                        condition(previous, "Scheduled", "True", reason, message, now),
                        condition(previous, "Evicted", "False", "Running", "", now),
                    ],
                ),
                "pendingDetail": None,
                "queuePosition": None,
                "estimatedStartTime": None,
            }
            self.deferred[gang.key] = Deferred(gang, status, _ref_group(gang), reason, message)
        else:
            pod = gang.pods[0]
            self._emit(_ref_pod(pod), "Scheduled", f"bound to {pods[pod.key]}")

    def _flush_deferred(self, force: bool = False) -> None:
        """Start the deferred reports' writes if no gang has bound for `status_quiet_s`, or the
        oldest has waited `status_refresh_busy_s` (or `force`); see the module docstring."""
        if not self.deferred:
            return
        now = time.monotonic()
        waited = now - min(d.since for d in self.deferred.values())
        if self._busy() and waited < self.config.status_refresh_busy_s and not force:
            return
        for key in sorted(self.deferred):
            if key in self.status_writes:
                continue  # an earlier write of it is landing; the next flush takes this one
            write = self._write_deferred(self.deferred.pop(key))
            self._spawn(self.status_writes, key, self._limited(self._status_slots, write), "status")

    async def _write_deferred(self, d: Deferred) -> None:
        await self._send_group_patch(d.gang, d.status)
        self._emit(d.involved, d.reason, d.message)

    async def _rollback(self, gang: Gang, why: str) -> None:
        """Delete the bound members (a bound pod cannot be unbound); recreate bare ones."""
        bound = gang.bound(self.assumed)
        for pod in bound:
            self.assumed.pop(pod.key, None)
            if pod.controlled:
                # Evicted, not plainly deleted: the eviction marks the pod DisruptionTarget, so a
                # Job's podFailurePolicy can ignore it instead of counting a failure.
                try:
                    await self.api.evict(pod.namespace, pod.name, 0)
                except ApiError as exc:
                    if exc.status == 429:
                        with contextlib.suppress(ApiError):
                            await self.api.delete_pod(pod.namespace, pod.name, pod.uid)
                    elif exc.status != 404:
                        log.warning("rolling back %s: %s", pod.key, exc)
                continue
            try:
                body = await self.api.read_pod(pod.namespace, pod.name)
                await self.api.delete_pod(pod.namespace, pod.name, pod.uid)
                await self._wait_gone(pod)
                await self.api.create_pod(pod.namespace, _fresh_copy(body))
            except ApiError as exc:
                log.warning("rolling back %s: %s", pod.key, exc)
        for pod in gang.pods:
            self.assumed.pop(pod.key, None)
        log.warning("rolled back gang %s: %s", gang.key, why)
        if gang.group:
            now = self.clock()
            previous = gang.group.status
            await self._patch_group(
                gang,
                {
                    "phase": "Pending",
                    "placement": None,
                    "scheduledAt": None,
                    "conditions": merge_conditions(
                        previous,
                        [condition(previous, "Evicted", "True", "BindFailed", why, now)],
                    ),
                },
            )
            self._emit(_ref_group(gang), "BindFailed", why, "Warning")

    async def _wait_gone(self, pod: PodRec, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                body = await self.api.read_pod(pod.namespace, pod.name)
            except ApiError as exc:
                if exc.status == 404:
                    return
                raise
            if body.get("metadata", {}).get("uid") != pod.uid:
                return
            await asyncio.sleep(0.1)

    # -- 7. status --------------------------------------------------------------------------

    async def _write_statuses(self, view: View, result: CycleResult, now: float) -> None:
        writes: dict[str, Coroutine[Any, Any, None]] = {}
        for key in sorted(view.gangs):
            gang = view.gangs[key]
            if key in result.bindings or key in self.inflight or key in self.status_writes:
                continue
            if key in self.deferred:
                continue  # its deferred `Running` write is the next one due
            decision = result.gangs.get(key)
            if key in view.pending and decision is not None:
                if gang.group is None:
                    await self._report_implicit(gang, decision.reason, decision.message)
                    continue
                desired = pending_status(gang, decision, self.assumed, now)
            elif key in view.running and gang.group is not None:
                phase = "Running"
                if gang.succeeded >= gang.min_member and not gang.bound(self.assumed):
                    phase = "Succeeded"
                desired = running_status(gang, self.assumed, phase)
            elif gang.group is not None and not gang.pods and gang.succeeded >= gang.min_member:
                desired = running_status(gang, self.assumed, "Succeeded")
            else:
                continue
            write = self._status_change(gang, desired)
            if write is not None:
                writes[key] = write
        for key, write in writes.items():
            self._spawn(self.status_writes, key, self._limited(self._status_slots, write), "status")

    @staticmethod
    async def _limited(slots: asyncio.Semaphore, write: Coroutine[Any, Any, None]) -> None:
        async with slots:
            await write

    def _status_change(
        self, gang: Gang, desired: Mapping[str, Any]
    ) -> Coroutine[Any, Any, None] | None:
        """The write that brings the gang's status to `desired`, or None when none is due.

        Figures that only drift (position, ETA, numbers in the message, pod counts) are
        refreshed at most every `status_refresh_s` per gang — `status_refresh_busy_s` while
        gangs are binding — so a burst of binds does not turn into a patch of every gang on
        every cycle, and refreshes do not compete with binds for the API server (measured: they
        were over half of the PodGroup status patches of a bind burst). A phase or a reason
        that turns is written at once. Decided here, synchronously, so nothing is spawned for
        the many gangs with nothing to write.
        """
        assert gang.group is not None
        current = {**gang.group.status, **self.written.get(gang.key, {})}
        patch = diff(current, desired)
        if not patch:
            return None
        cond = next((c for c in desired.get("conditions") or [] if c["type"] == "Scheduled"), None)
        old = next((c for c in current.get("conditions") or [] if c["type"] == "Scheduled"), None)
        turned = cond is not None and (
            old is None or (old["status"], old["reason"]) != (cond["status"], cond["reason"])
        )
        drifting = set(patch) <= DRIFTING_FIELDS
        now = time.monotonic()
        cfg = self.config
        every = cfg.status_refresh_busy_s if self._busy() else cfg.status_refresh_s
        recent = now - self.refreshed.get(gang.key, 0.0) < every
        if drifting and not turned and recent:
            return None
        self.refreshed[gang.key] = now
        return self._write_status(gang, patch, cond if turned else None)

    async def _write_status(
        self, gang: Gang, patch: Mapping[str, Any], turned: Mapping[str, Any] | None
    ) -> None:
        await self._patch_group(gang, patch)
        if turned is not None and self.reported.get(gang.key) != (turned["reason"], ""):
            self.reported[gang.key] = (turned["reason"], "")
            if turned["status"] == "False":
                self._emit(_ref_group(gang), turned["reason"], turned["message"], "Warning")

    async def _report_implicit(self, gang: Gang, reason: str, message: str) -> None:
        pod = gang.pods[0]
        if self.reported.get(gang.key) != (reason, message):
            self.reported[gang.key] = (reason, message)
            self._emit(_ref_pod(pod), reason, message, "Warning")

    async def _report_orphans(self, view: View) -> None:
        for pod in view.orphans:
            key = f"orphan:{pod.key}"
            if key not in self.reported:
                self.reported[key] = ("PodGroupNotFound", pod.group or "")
                self._emit(
                    _ref_pod(pod),
                    "PodGroupNotFound",
                    f"waiting for PodGroup {pod.namespace}/{pod.group}: it does not exist",
                    "Warning",
                )

    async def _patch_group(self, gang: Gang, patch: Mapping[str, Any]) -> None:
        earlier = self.deferred.pop(gang.key, None)
        if earlier is not None:
            await self._write_deferred(earlier)  # it lands first: a gang's writes stay in order
        await self._send_group_patch(gang, patch)

    async def _send_group_patch(self, gang: Gang, patch: Mapping[str, Any]) -> None:
        assert gang.group is not None
        try:
            await self.api.patch_group_status(gang.group.namespace, gang.group.name, patch)
        except ApiError as exc:
            if exc.status != 404:
                log.warning("status of %s: %s", gang.key, exc)
            return
        written = self.written.setdefault(gang.key, {})
        written.update(patch)
        # Drifting figures are refreshed status_refresh_s after the gang's last write of any
        # kind (a bind's own writes included), not after its last refresh.
        self.refreshed[gang.key] = time.monotonic()

    async def _write_queues(self, result: CycleResult, view: View, now: float) -> None:
        persist_usage = now - self.usage_persisted_at >= self.config.usage_persist_interval_s
        for name, qs in sorted(result.queues.items()):
            for res, v in qs.deserved.items():
                self.metrics.queue_deserved.labels(queue=name, resource=res).set(v)
            for res, v in qs.allocated.items():
                self.metrics.queue_allocated.labels(queue=name, resource=res).set(v)
            self.metrics.queue_pending.labels(queue=name).set(qs.pending_gangs)
            desired = queue_status_body(qs, self.usage.get(name, 0.0), now)
            previous = self.written.get(f"queue:{name}", {})
            if not persist_usage and previous:
                desired["usage"] = previous.get("usage")
                desired["usageUpdatedAt"] = previous.get("usageUpdatedAt")
                # The factor is shown beside the usage it comes from (`phalanx share`): written
                # with it, or the two disagree for up to the persist interval (FAIRSHARE 0.5
                # beside USAGE 0). The cycle itself always uses the factor of the usage now.
                desired["fairShare"] = previous.get("fairShare")
            patch = diff(previous, desired)
            if not patch:
                continue
            try:
                await self.api.patch_queue_status(name, patch)
            except ApiError as exc:
                log.warning("status of queue %s: %s", name, exc)
                continue
            self.written[f"queue:{name}"] = {**previous, **patch}
        if persist_usage:
            self.usage_persisted_at = now
        total = sum(n.allocatable.get(GPU, 0) for n in view.snapshot.nodes)
        allocated = sum(qs.allocated.get(GPU, 0) for qs in result.queues.values())
        self.metrics.gpus.labels(state="allocated").set(allocated)
        self.metrics.gpus.labels(state="idle").set(max(0, total - allocated))


def _ref_group(gang: Gang) -> dict[str, str]:
    assert gang.group is not None
    return {
        "apiVersion": "phalanx.dev/v1alpha1",
        "kind": "PodGroup",
        "name": gang.group.name,
        "namespace": gang.group.namespace,
        "uid": gang.group.uid,
    }


def _ref_pod(pod: PodRec) -> dict[str, str]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": pod.name,
        "namespace": pod.namespace,
        "uid": pod.uid,
    }


def _fresh_copy(body: Mapping[str, Any]) -> dict[str, Any]:
    """A bare pod to recreate after rollback: same spec and metadata, unbound, no server fields."""
    meta = dict(body.get("metadata") or {})
    for k in (
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "managedFields",
        "generation",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "selfLink",
    ):
        meta.pop(k, None)
    spec = dict(body.get("spec") or {})
    spec.pop("nodeName", None)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
