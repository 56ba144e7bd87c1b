"""Binding whole gangs (and the members that join running ones), and rolling a gang back.

The bind protocol of PRODUCT.md §4, for one gang:
 1. reserve the whole gang in memory (`assumed`) before any write, so the next cycle counts it
    as placed and nothing else lands on that capacity;
 2. record the decision on the PodGroup status — `phase: Binding`, `placement` (pod → node),
    `scheduledAt` (the durable start its time limit counts from), `Evicted=False` — before the
    first bind, so a restarted operator knows what was intended;
 3. bind every member concurrently through `pods/binding`, retrying failures against the held
    reservation until the bind deadline;
 4. whole: the `Running` report is deferred (see reporter.py); not whole: roll back — delete
    the bound members (a bound pod cannot be unbound), recreate bare ones from their spec — and
    re-queue the gang whole with `Evicted/BindFailed`.

Binds are pipelined: each gang's bind runs as a task and the cycle goes on without waiting for
it. While its task runs a gang is *in flight*: the lifecycle holds it (`binding`), and no other
write touches it.

Members that join a gang already running (extras, replacements) are bound one by one: a bind of
one that fails leaves that pod pending for a later cycle, never a reason to roll the gang back.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from phalanx.config import OperatorConfig
from phalanx.core import CycleResult, GangDecision, Reason
from phalanx.k8s.api import ApiError, ClusterWrites
from phalanx.k8s.cluster_view import Gang, View
from phalanx.k8s.metrics import Metrics
from phalanx.k8s.records import PodRec
from phalanx.k8s.reporter import Reporter, group_ref
from phalanx.k8s.status import (
    PENDING_ONLY,
    condition,
    evicted_mark,
    merge_conditions,
    not_evicted,
    placement_body,
    pod_counts,
    rfc3339,
)
from phalanx.k8s.tasks import pod_ref, spawn

log = logging.getLogger("phalanx.binder")
GONE_WAIT_S = 30.0
"""How long a rollback waits for a deleted bare pod to be gone before it recreates it."""


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
    die_after_records: int | None = None
    """PHALANX_FAULT_DIE_AFTER_RECORDS: die once N decision records have landed, before any
    bind of the N-th gang (a kill between the record and the binds)."""
    die_in_rollback: bool = False
    """PHALANX_FAULT_DIE_IN_ROLLBACK: die right after a rollback deleted a bare pod, before it
    creates it again (what the recreation journal is for)."""
    die_when_whole: bool = False
    """PHALANX_FAULT_DIE_WHEN_WHOLE: die once a gang's binds have all landed, before the status
    that says so (written deferred) is sent."""
    issued: int = 0
    finished: int = 0
    records: int = 0
    die: Callable[[], None] = field(default=lambda: __import__("os")._exit(137))

    def after_record(self) -> None:
        self.records += 1
        if self.die_after_records is not None and self.records >= self.die_after_records:
            log.error("fault injection: dying after %d decision records", self.records)
            self.die()

    def when_whole(self) -> None:
        if self.die_when_whole:
            log.error("fault injection: dying with a gang bound whole, its status not written")
            self.die()

    def after_rollback_delete(self) -> None:
        if self.die_in_rollback:
            log.error("fault injection: dying between a rollback's delete and its create")
            self.die()

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


class Binder:
    def __init__(
        self,
        config: OperatorConfig,
        api: ClusterWrites,
        metrics: Metrics,
        reporter: Reporter,
        poke: Callable[[], None],
        clock: Callable[[], float],
        faults: FaultInjection,
    ) -> None:
        self.config = config
        self.api = api
        self.metrics = metrics
        self.reporter = reporter
        self.poke = poke
        self.clock = clock
        self.faults = faults
        self.assumed: dict[str, str] = {}
        """Pod key → node of members bound (or being bound) that the watch has not shown yet."""
        self.assumed_at: dict[str, float] = {}
        self.inflight: dict[str, asyncio.Task[None]] = {}
        """Gang uid → its bind task (see the module docstring)."""
        self.joining: dict[str, asyncio.Task[None]] = {}
        """Gang uid → the task binding members that join it while it runs."""
        # Limits on writes in flight, each across all gangs and cycles. (A semaphore binds to the
        # running loop only when a task first waits on it, so making them here is safe.)
        self._bind_slots = asyncio.Semaphore(config.bind_concurrency)
        self._decision_slots = asyncio.Semaphore(max(1, config.bind_concurrency // 4))
        """Decision records' own slots: see `_bind_gang`."""
        self._quiet_timer: asyncio.TimerHandle | None = None
        """Set while `status_quiet_s` has not passed since the last gang in flight ended."""

    def busy(self) -> bool:
        """A gang is binding, or one ended less than `status_quiet_s` ago (the next of a trickle
        of gangs may be about to start). The timer itself is the state, so a timer the loop runs
        a clock tick early still ends the quiet period."""
        return bool(self.inflight) or self._quiet_timer is not None

    def forget_caught_up(self, pods: Iterable[PodRec], now: float) -> None:
        """Drop assumptions the watch confirms (or that outlived any plausible watch lag)."""
        by_key = {p.key: p for p in pods}
        for key in list(self.assumed):
            pod = by_key.get(key)
            stale = now - self.assumed_at.get(key, now) > 60
            if pod is None or pod.node_name is not None or pod.terminal or stale:
                self.assumed.pop(key, None)
                self.assumed_at.pop(key, None)

    # -- whole gangs ----------------------------------------------------------------------------

    def start_binds(self, result: CycleResult, view: View, now: float, busy: Iterable[str]) -> None:
        skip = set(busy)
        for key, pods in sorted(result.bindings.items()):
            gang = view.gangs[key]
            if gang.uid in skip:
                continue
            # Reserve the whole gang in the in-memory view before any write.
            self._assume(pods, now)
            work = self._bind_gang(gang, pods, result.gangs.get(key), now)
            spawn(self.inflight, gang.uid, work, "binding", then=self._bind_ended)

    def _assume(self, pods: Mapping[str, str], now: float) -> None:
        for pod_key, node in pods.items():
            self.assumed[pod_key] = node
            self.assumed_at[pod_key] = now

    def _bind_ended(self, failed: bool) -> None:
        """A gang's bind task ended. If it was the last in flight, the burst is over and the
        deferred reports go once `status_quiet_s` has passed.

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
                self.reporter.flush_deferred()

    def _on_quiet(self) -> None:
        """`status_quiet_s` has passed since the last gang in flight ended (a later end would
        have replaced this timer)."""
        self._quiet_timer = None
        self.reporter.flush_deferred()

    async def _bind_gang(
        self, gang: Gang, pods: Mapping[str, str], decision: GangDecision | None, now: float
    ) -> None:
        reason = str(decision.reason) if decision else str(Reason.SCHEDULED)
        placement = decision.placement if decision else None
        await self.reporter.status_landed(gang.uid)  # an earlier status must not land after ours
        if gang.group:
            # Record the decision before binding: a restarted operator can see what was intended,
            # and the time limit counts from `scheduledAt` from now on. Decisions have slots of
            # their own, a quarter of the binds': unbounded, a burst's decisions all went ahead
            # of its first bind (sharing the binds' FIFO slots, they still would). What only a
            # waiting gang has (PENDING_ONLY) goes: stale from now on.
            previous = gang.status
            record: dict[str, Any] = {
                "phase": "Binding",
                "placement": placement_body(placement, pods, {p.key: p.uid for p in gang.pods}),
                "scheduledAt": rfc3339(now),
                **{k: None for k in PENDING_ONLY if previous.get(k) is not None},
            }
            if any(
                isinstance(c, Mapping) and c.get("type") == "Evicted" and c.get("status") == "True"
                for c in previous.get("conditions") or []
            ):
                record["conditions"] = merge_conditions(previous, [not_evicted(previous, now)])
            async with self._decision_slots:
                await self.reporter.patch_group(gang, record)
            self.faults.after_record()
        results = await self._bind_all(gang, pods)
        if all(results):
            self.faults.when_whole()
            self._bound_whole(gang, pods, reason, decision, now)
            if any(p.key not in pods and p.node_name is None for p in gang.waiting({})):
                self.poke()  # members beyond this round are left to place
            return
        await self.rollback(gang, f"{results.count(False)} of {len(results)} binds failed")
        self.poke()  # its capacity is free again

    async def _bind_all(self, gang: Gang, pods: Mapping[str, str]) -> list[bool]:
        """Bind `pods` concurrently, each retried until the bind deadline; True per success."""
        by_key = {p.key: p for p in gang.pods}
        deadline = time.monotonic() + self.config.bind_deadline_s
        first_bind: float | None = None

        async def bind_one(pod_key: str, node: str) -> bool:
            nonlocal first_bind
            pod = by_key[pod_key]
            delay = 0.05
            while True:
                try:
                    async with self._bind_slots:
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
                    if exc.status in (404, -1) or time.monotonic() + delay > deadline:
                        log.warning("bind %s → %s failed: %s", pod_key, node, exc)
                        return False
                    if exc.status == 409 and "already assigned" in str(exc):
                        return await self._bound_to(pod, node)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)

        results = await asyncio.gather(*(bind_one(k, n) for k, n in sorted(pods.items())))
        if first_bind is not None:
            self.metrics.partial_bound_seconds.observe(time.monotonic() - first_bind)
        return list(results)

    async def _bound_to(self, pod: PodRec, node: str) -> bool:
        try:
            body = await self.api.read_pod(pod.namespace, pod.name)
        except ApiError:
            return False
        return bool(body.get("spec", {}).get("nodeName") == node)

    def _bound_whole(
        self,
        gang: Gang,
        pods: Mapping[str, str],
        reason: str,
        decision: GangDecision | None,
        now: float,
        message: str | None = None,
    ) -> None:
        queue = gang.group.queue if gang.group else "default"
        queued = gang.group.created if gang.group else now
        self.metrics.gang_wait_seconds.labels(queue=queue).observe(max(0.0, now - queued))
        if decision is not None and decision.placement is not None:
            leaf_level = self.config.topology_levels[-1][0]
            self.metrics.leaves_spanned.observe(len(decision.placement.domains.get(leaf_level, ())))
        message = message or (decision.message if decision else "bound")
        if gang.group:
            previous = gang.status
            status = {
                # All counts, not just `bound`: a count left stale here was the first drift
                # refresh of every gang, straight after its bind.
                **pod_counts(gang, self.assumed),
                "phase": "Running",
                "bound": len(gang.bound(self.assumed)),
                "conditions": merge_conditions(
                    previous,
                    [
                        condition(previous, "Scheduled", "True", reason, message, now),
                        not_evicted(previous, now),
                    ],
                ),
                "pendingDetail": None,
                "queuePosition": None,
                "estimatedStartTime": None,
            }
            self.reporter.defer(gang, status, reason, message)
        else:
            pod = gang.pods[0]
            self.reporter.emit(
                pod_ref(pod.namespace, pod.name, pod.uid), "Scheduled", f"bound to {pods[pod.key]}"
            )

    # -- roll forward -------------------------------------------------------------------------

    async def roll_forward(self, gang: Gang, pods: Mapping[str, str], now: float) -> None:
        """Finish a gang left partly bound (a crash between its decision record and its last
        bind): bind the rest where the record says — the cycle found it still fits — instead of
        throwing away the binds that landed. If they fail, roll back after all."""
        self._assume(pods, now)
        done = len(gang.bound(self.assumed)) - len(pods)
        message = f"rolled forward from its decision record: {len(pods)} more bound beside {done}"
        if gang.group:
            self.reporter.emit(group_ref(gang), "RolledForward", message)
        log.info("gang %s: %s", gang.key, message)
        results = await self._bind_all(gang, pods)
        if all(results):
            self._bound_whole(gang, pods, str(Reason.SCHEDULED), None, now, message)
            return
        await self.rollback(
            gang, f"rolling forward failed: {results.count(False)} of {len(results)} binds"
        )
        self.poke()

    # -- members joining a running gang -------------------------------------------------------

    def start_joins(self, result: CycleResult, view: View, now: float) -> None:
        for key, pods in sorted(result.extra_bindings.items()):
            gang = view.gangs.get(key)
            if gang is None or gang.uid in self.joining or gang.uid in self.inflight:
                continue
            self._assume(pods, now)
            spawn(self.joining, gang.uid, self._join(gang, pods), "joining")

    async def _join(self, gang: Gang, pods: Mapping[str, str]) -> None:
        results = await self._bind_all(gang, pods)
        for ok, pod_key in zip(results, sorted(pods), strict=True):
            if not ok:
                self.assumed.pop(pod_key, None)  # it stays pending; a later cycle tries again
        if gang.group and any(results):
            self.reporter.emit(
                group_ref(gang),
                "MembersJoined",
                f"{sum(results)} more member(s) bound to the running gang",
            )
        if not all(results):
            self.poke()

    # -- rollback -------------------------------------------------------------------------------

    async def rollback(self, gang: Gang, why: str) -> None:
        """Delete the bound members (a bound pod cannot be unbound); recreate bare ones.

        Durable first, in this order, so that a crash at any point loses nothing:
        1. the `Evicted/BindFailed` mark (a restarted operator sees the members are going and
           does not roll the gang back a second time);
        2. the recreation journal: `status.recreate`, pod UID → the bare pod to create again,
           written before any bare pod is deleted;
        3. the deletes, then the creates (`finish_recreations`, which a restarted operator runs
           from the journal too), each entry cleared once its pod exists again."""
        now = self.clock()
        log.warning("rolling back gang %s: %s", gang.key, why)
        bound = gang.bound(self.assumed)
        # A bare pod someone else is deleting (its user, its namespace going) is theirs to end:
        # recreating it would undo their delete. Only pods the rollback itself deletes return.
        bare = [p for p in bound if not p.controlled and not p.deleting]
        journal: dict[str, Any] = {}
        for pod in bare:
            try:
                body = await self.api.read_pod(pod.namespace, pod.name)
            except ApiError as exc:
                if exc.status != 404:
                    log.warning("rolling back %s: %s", pod.key, exc)
                continue
            if (body.get("metadata") or {}).get("deletionTimestamp") is None:
                journal[pod.uid] = _fresh_copy(body)
        if gang.group:
            patch = evicted_mark(gang.status, "BindFailed", why, now)
            if journal:
                patch["recreate"] = journal
            await self.reporter.patch_group(gang, patch)
            self.reporter.emit(group_ref(gang), "BindFailed", why, "Warning")
        await asyncio.gather(*(self._undo(pod) for pod in bound if pod.controlled))
        for pod in gang.pods:
            self.assumed.pop(pod.key, None)
        if gang.group and journal:
            await self.finish_recreations(gang, journal, {p.name: p.uid for p in gang.pods})

    async def finish_recreations(
        self, gang: Gang, journal: Mapping[str, Any], live: Mapping[str, str]
    ) -> None:
        """Replay the recreation journal: for each entry (old pod UID → pod body), delete the
        old pod if it is still there, then create the new one; a pod of that name with another
        UID means it was recreated already. Idempotent, so a restarted operator runs it again
        from `status.recreate`; an entry is cleared only once its pod exists again."""
        done: dict[str, None] = {}
        for uid, body in sorted(journal.items()):
            meta = body.get("metadata") if isinstance(body, Mapping) else None
            name = meta.get("name") if isinstance(meta, Mapping) else None
            namespace = gang.group.namespace if gang.group else ""
            if not isinstance(name, str) or not name:
                log.warning("recreation journal of %s: entry %s has no pod name", gang.key, uid)
                done[uid] = None
                continue
            current = live.get(name)
            try:
                if current is not None and current != uid:
                    done[uid] = None  # recreated already
                    continue
                if current == uid:
                    await self.api.delete_pod(namespace, name, uid)
                    self.faults.after_rollback_delete()
                if not await self._wait_gone_by_name(namespace, name, uid):
                    log.warning(
                        "rolling back %s/%s: still there; retried next cycle", namespace, name
                    )
                    continue
                await self.api.create_pod(namespace, dict(body))
                done[uid] = None
            except ApiError as exc:
                if exc.status == 409:
                    done[uid] = None  # a pod of that name exists again
                elif exc.status != 404:
                    log.warning("recreating %s/%s: %s; retried next cycle", namespace, name, exc)
        if done and gang.group:
            await self.reporter.patch_group(gang, {"recreate": done})

    async def _undo(self, pod: PodRec) -> None:
        """Roll back one controller-owned member: evicted, not plainly deleted — the eviction
        marks the pod DisruptionTarget, so a Job's podFailurePolicy can ignore it instead of
        counting a failure; its controller creates it again."""
        self.assumed.pop(pod.key, None)
        try:
            await self.api.evict(pod.namespace, pod.name, 0)
        except ApiError as exc:
            if exc.status == 429:
                try:
                    await self.api.delete_pod(pod.namespace, pod.name, pod.uid)
                except ApiError as err:
                    log.warning("rolling back %s: %s", pod.key, err)
            elif exc.status != 404:
                log.warning("rolling back %s: %s", pod.key, exc)

    async def _wait_gone_by_name(self, namespace: str, name: str, uid: str) -> bool:
        """Until the pod of that name and UID is gone (or GONE_WAIT_S has passed: False)."""
        deadline = time.monotonic() + GONE_WAIT_S
        while time.monotonic() < deadline:
            try:
                body = await self.api.read_pod(namespace, name)
            except ApiError as exc:
                if exc.status == 404:
                    return True
                raise
            if body.get("metadata", {}).get("uid") != uid:
                return True
            await asyncio.sleep(0.1)
        return False

    def tasks(self) -> list[asyncio.Task[None]]:
        return [*self.inflight.values(), *self.joining.values()]

    def stop(self) -> None:
        if self._quiet_timer is not None:
            self._quiet_timer.cancel()
            self._quiet_timer = None


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
