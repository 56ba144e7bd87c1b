"""What the operator tells people and tools: PodGroup and Queue status, Events, pod conditions.

Reports never decide anything: each status body says what the core decided (the cycle's verdict
on a pending gang, the lifecycle's phase of every gang). They are written only when they change,
and the figures that merely drift (position, ETA, counts, numbers in a message) are refreshed at
a bounded rate, so that a bind burst is not slowed by bookkeeping:

- Status writes are started as tasks, at most `STATUS_WRITES` at once, and a gang with a write
  in flight is skipped until it lands; any later write of the same gang waits for it, so writes
  of one gang never land out of order.
- A gang bound whole has its `Running` status and `Scheduled` Event *deferred* while other gangs
  are still binding (on 2 cores the API server is the bottleneck of a burst, and these writes
  cost it more than the gang's binds, bench/write_cost.py). They go once no gang has been in
  flight for `status_quiet_s`, or when the oldest has waited `status_refresh_busy_s`, or just
  before any other write of the same gang. A crash loses only these reports: the next leader
  sees the gang bound whole and writes `Running` from its own view.
- What was written is kept (`written`, by PodGroup uid: the whole status as it is once our
  patches landed, each applied as the API server applies a merge patch) and read instead of the
  watched status until the watch shows the same (or `OVERLAY_S` has passed): the lifecycle reads
  a gang's recorded phase, its `Evicted` mark and its recreation journal through it, since the
  watch may not have shown the write yet. It is a cache of the cluster, pruned when the object
  goes.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable, Collection, Coroutine, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from phalanx.config import OperatorConfig
from phalanx.core import GPU, CycleResult, Reason
from phalanx.core.lifecycle import Action, FailReason, Phase
from phalanx.k8s.api import ApiError, ClusterWrites
from phalanx.k8s.bypass import REASON as BYPASS_REASON
from phalanx.k8s.bypass import Bypass
from phalanx.k8s.cluster_view import Gang, View
from phalanx.k8s.metrics import Metrics
from phalanx.k8s.records import NATIVE_GROUP, NATIVE_VERSION, GroupRec, PodRec
from phalanx.k8s.status import (
    PENDING_ONLY,
    bound_before_restart,
    condition,
    condition_of,
    diff,
    eviction_closed,
    kept_condition,
    merge_conditions,
    merge_patch,
    not_evicted,
    pending_status,
    pod_counts,
    queue_status_body,
    rfc3339,
    running_status,
    started_condition,
)
from phalanx.k8s.tasks import limited, pod_ref, spawn

log = logging.getLogger("phalanx.reporter")
STATUS_WRITES = 16
"""PodGroup status patches in flight at once (binds have their own, larger, limit)."""
POD_CONDITION_WRITES = 4
"""`PodScheduled` patches in flight at once: the lowest-priority writes there are."""
POD_CONDITIONS_PER_CYCLE = 64
"""At most this many `PodScheduled` patches started (or waiting) per cycle: a backlog of
thousands of pending pods is written over a few cycles, and what waits when a bind burst starts
is dropped and written after it (measured on the e2e bench before this: 0.1 extra pod status
patches per bound pod inside the burst)."""
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
        "observedGeneration",
    }
)
"""Status fields whose change alone is refreshed at a bounded rate (see `_status_change`)."""
OVERLAY_S = 60.0
"""The longest what we wrote is believed over a watch that shows otherwise (a watch is seconds
behind at worst; a status edited by hand after that is then what counts)."""


def _scheduled_true(status: Mapping[str, Any]) -> bool:
    c = condition_of(status, "Scheduled")
    return c is not None and c.get("status") == "True"


ANNOUNCED = {Phase.SUCCEEDED: "Normal", Phase.FAILED: "Warning", Phase.DEGRADED: "Warning"}
"""Phases whose arrival is also an Event on the PodGroup."""


@dataclass
class Deferred:
    """A gang's `Running` status and `Scheduled` Event, held back while other gangs bind."""

    gang: Gang
    status: dict[str, Any]
    reason: str
    message: str
    since: float = field(default_factory=time.monotonic)


def group_ref(gang: Gang) -> dict[str, str]:
    assert gang.group is not None
    return {
        "apiVersion": (
            f"{NATIVE_GROUP}/{NATIVE_VERSION}" if gang.group.native else "phalanx.dev/v1alpha1"
        ),
        "kind": "PodGroup",
        "name": gang.group.name,
        "namespace": gang.group.namespace,
        "uid": gang.group.uid,
    }


class Reporter:
    def __init__(
        self,
        config: OperatorConfig,
        api: ClusterWrites,
        metrics: Metrics,
        busy: Callable[[], bool],
    ) -> None:
        self.config = config
        self.api = api
        self.metrics = metrics
        self.busy = busy
        """Whether gangs are binding (drifting figures then wait longer; see the module)."""
        self.written: dict[str, dict[str, Any]] = {}
        """PodGroup uid → its whole status as our writes left it (see the module docstring)."""
        self.written_at: dict[str, float] = {}
        self.watched: dict[str, Mapping[str, Any]] = {}
        """PodGroup uid → its status as the watch last showed it."""
        self.queues_written: dict[str, tuple[str, dict[str, Any]]] = {}
        """Queue name → (its uid, its whole status as our writes left it)."""
        self.refreshed: dict[str, float] = {}
        self.native_sent: dict[str, list[dict[str, Any]]] = {}
        """Native PodGroup uid → the conditions last written to it."""
        self.reported: dict[str, tuple[str, str]] = {}
        self.deferred: dict[str, Deferred] = {}
        self.status_writes: dict[str, asyncio.Task[None]] = {}
        self.pod_writes: dict[str, asyncio.Task[None]] = {}
        self.pod_written: dict[str, tuple[str, str, float]] = {}
        """Pod uid → (topic: `gang`, `extra` or `PodGroupFinished`, message, when) of the
        `PodScheduled` condition last written."""
        self._background: set[asyncio.Task[None]] = set()
        self._status_slots = asyncio.Semaphore(STATUS_WRITES)
        self._pod_slots = asyncio.Semaphore(POD_CONDITION_WRITES)

    # -- Events -------------------------------------------------------------------------------

    def emit(
        self, involved: Mapping[str, str], reason: str, message: str, kind: str = "Normal"
    ) -> None:
        """Post an Event in the background: Events are for people, never worth a bind's wait."""
        task = asyncio.create_task(self.api.event(involved, reason, message, kind))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # -- the overlay the lifecycle reads ------------------------------------------------------

    def overlay(self) -> dict[str, Mapping[str, Any]]:
        """Per PodGroup uid, its status as our writes left it, where the watch has not shown it
        yet; a deferred `Running` counts, so a member failing in a burst is a member failure of
        a running gang, not a partly bound one."""
        out: dict[str, Mapping[str, Any]] = dict(self.written)
        for uid, d in self.deferred.items():
            out[uid] = merge_patch(self._base(uid, d.gang), d.status)
        return out

    def _base(self, uid: str, gang: Gang) -> Mapping[str, Any]:
        """The status a patch of this gang lands on, as best known now."""
        known = self.written.get(uid)
        if known is not None:
            return known
        return self.watched.get(uid, gang.status)

    def caught_up(self, groups: Collection[GroupRec]) -> None:
        """Read the watched statuses; stop believing our own over the ones that show it."""
        now = time.monotonic()
        for rec in groups:
            self.watched[rec.uid] = rec.status
            mine = self.written.get(rec.uid)
            if mine is None or rec.native:
                continue  # a native PodGroup's own status never shows ours: memory is all
            if dict(rec.status) == mine or now - self.written_at.get(rec.uid, now) > OVERLAY_S:
                del self.written[rec.uid]
                self.written_at.pop(rec.uid, None)

    def prune(self, live_groups: Collection[str], live_pods: Collection[str]) -> None:
        """Forget gangs and pods that are gone (the maps must not grow forever)."""
        keep = set(live_groups)
        for table in (
            self.written,
            self.written_at,
            self.watched,
            self.refreshed,
            self.reported,
            self.native_sent,
        ):
            for key in list(table):
                if key.startswith("orphan:"):
                    if key.removeprefix("orphan:") not in live_pods:
                        del table[key]
                elif key.removeprefix("ignored:") not in keep:
                    del table[key]
        for key in list(self.pod_written):
            if key not in live_pods:
                del self.pod_written[key]

    # -- PodGroup status ------------------------------------------------------------------------

    async def status_landed(self, uid: str) -> None:
        """Wait until a status write of this gang that is in flight has landed."""
        task = self.status_writes.get(uid)
        if task is not None:
            await asyncio.wait([task])

    async def patch_group(self, gang: Gang, patch: Mapping[str, Any]) -> None:
        """Write now, after the gang's deferred report if it has one (writes stay in order)."""
        earlier = self.deferred.pop(gang.uid, None)
        if earlier is not None:
            await self._write_deferred(earlier)
        await self.send_group_patch(gang, patch)

    async def send_group_patch(self, gang: Gang, patch: Mapping[str, Any]) -> None:
        assert gang.group is not None
        if gang.group.native:
            await self._send_native(gang, patch)
            return
        body = dict(patch)
        if gang.group.generation:
            body["observedGeneration"] = gang.group.generation
        try:
            await self.api.patch_group_status(gang.group.namespace, gang.group.name, body)
        except ApiError as exc:
            if exc.status != 404:
                log.warning("status of %s: %s", gang.key, exc)
            return
        self.written[gang.uid] = merge_patch(self._base(gang.uid, gang), body)
        self.written_at[gang.uid] = time.monotonic()
        # Drifting figures are refreshed status_refresh_s after the gang's last write of any
        # kind (a bind's own writes included), not after its last refresh.
        self.refreshed[gang.uid] = time.monotonic()

    async def _send_native(self, gang: Gang, patch: Mapping[str, Any]) -> None:
        """A native PodGroup: our status is kept in memory (its schema has no room for it: a
        restarted operator reads the gang from its pods, as after a lost report), and what it
        says is written as the native conditions kube-scheduler writes (`native_conditions`),
        only when they change."""
        assert gang.group is not None
        full = merge_patch(self._base(gang.uid, gang), patch)
        self.written[gang.uid] = full
        self.written_at[gang.uid] = time.monotonic()
        self.refreshed[gang.uid] = time.monotonic()
        shown = self.native_sent.get(gang.uid)
        previous: Mapping[str, Any] = (
            {"conditions": shown} if shown is not None else gang.group.status
        )
        desired = native_conditions(previous, full, time.time(), gang.group.generation)
        if desired == list(previous.get("conditions") or []):
            return
        try:
            await self.api.patch_native_group_status(
                gang.group.namespace, gang.group.name, list(desired)
            )
        except ApiError as exc:
            if exc.status != 404:
                log.warning("native status of %s: %s", gang.key, exc)
            return
        self.native_sent[gang.uid] = desired

    def defer(self, gang: Gang, status: dict[str, Any], reason: str, message: str) -> None:
        self.deferred[gang.uid] = Deferred(gang, status, reason, message)

    def flush_deferred(self, force: bool = False) -> None:
        """Start the deferred reports' writes if no gang has bound for `status_quiet_s`, or the
        oldest has waited `status_refresh_busy_s` (or `force`)."""
        if not self.deferred:
            return
        now = time.monotonic()
        waited = now - min(d.since for d in self.deferred.values())
        if self.busy() and waited < self.config.status_refresh_busy_s and not force:
            return
        for uid in sorted(self.deferred):
            if uid in self.status_writes:
                continue  # an earlier write of it is landing; the next flush takes this one
            write = self._write_deferred(self.deferred.pop(uid))
            spawn(self.status_writes, uid, limited(self._status_slots, write), "status")

    async def _write_deferred(self, d: Deferred) -> None:
        await self.send_group_patch(d.gang, d.status)
        # The reason it turned to, as `_write_status` remembers one: a gang that waits again
        # for the reason it waited for before it ran says so again (walked: a Job suspended a
        # second time got no `WaitingForPods` Event, the first one's still remembered).
        self.reported[d.gang.uid] = (d.reason, "")
        self.emit(group_ref(d.gang), d.reason, d.message)

    def write_statuses(
        self,
        view: View,
        result: CycleResult,
        now: float,
        assumed: Mapping[str, str],
        skip: Collection[str],
    ) -> None:
        """Start the status writes this cycle's verdicts call for. `skip`: gangs (by uid) whose
        binds, rollback or eviction are under way: their tasks own their status."""
        writes: dict[str, Coroutine[Any, Any, None]] = {}
        for key in sorted(view.gangs):
            gang = view.gangs[key]
            d = gang.decision
            uid = gang.uid
            if d is None or key in result.bindings or uid in skip:
                continue
            if uid in self.status_writes or uid in self.deferred:
                continue  # the write in flight (or the deferred one) comes first
            if gang.group is None:
                core = result.gangs.get(key)
                if d.action is Action.SCHEDULE and core is not None and gang.pods:
                    self._report_implicit(gang, core.reason, core.message)
                continue
            desired = self._desired(gang, result, now, assumed)
            if desired is None:
                continue
            write = self._status_change(gang, desired)
            if write is not None:
                writes[uid] = write
        for uid, write in writes.items():
            spawn(self.status_writes, uid, limited(self._status_slots, write), "status")

    def _desired(
        self, gang: Gang, result: CycleResult, now: float, assumed: Mapping[str, str]
    ) -> dict[str, Any] | None:
        """The status body the gang's verdict calls for (None: its task writes it)."""
        d = gang.decision
        assert d is not None and gang.group is not None
        if d.action is Action.SCHEDULE:
            core = result.gangs.get(gang.key)
            return pending_status(gang, core, assumed, now) if core is not None else None
        if d.action is Action.RUN:
            desired = running_status(gang, assumed, d.phase)
            kept = kept_condition(gang.status, d.phase, d.reason, d.message, now)
            changed = [kept] if kept is not None else []
            started_cond = started_condition(gang, now)
            if started_cond is not None:
                changed.append(started_cond)
            if gang.status.get("scheduledAt") is None:
                # Found running with no start of its own: applied again while its pods ran, or
                # written by an older version. Its run started when its first member was bound.
                started = gang.started if gang.started is not None else now
                desired["scheduledAt"] = rfc3339(started)
                if not any(
                    c.get("type") == "Scheduled" for c in gang.status.get("conditions") or []
                ):
                    changed.append(
                        condition(
                            gang.status,
                            "Scheduled",
                            "True",
                            Reason.SCHEDULED,
                            f"found {desired['bound']} members already bound (the first at "
                            f"{rfc3339(started)}) and no record of binding them: running, "
                            "its time limit counted from then",
                            now,
                        )
                    )
            elif not _scheduled_true(gang.status):
                # Bound whole as its decision record says, by an operator that stopped before
                # its deferred status after the binds (`Binder._bound_whole`) was written.
                leaf_level = self.config.topology_levels[-1][0]
                message = bound_before_restart(gang.status, int(desired["bound"]), leaf_level)
                changed.append(
                    condition(gang.status, "Scheduled", "True", Reason.SCHEDULED, message, now)
                )
                if condition_of(gang.status, "Evicted") is None:
                    changed.append(not_evicted(gang.status, now))
                desired.update({k: None for k in PENDING_ONLY if gang.status.get(k) is not None})
            if changed:
                desired["conditions"] = merge_conditions(gang.status, changed)
            return desired
        if d.action is Action.FAIL:
            previous = gang.status
            desired = {
                **running_status(gang, assumed, Phase.FAILED),
                "queuePosition": None,
                "estimatedStartTime": None,
                "pendingDetail": None,
            }
            # Why it ended, kept with the object (Kueue's Workloads say it the same way): the
            # Event that said so is gone within the hour, and a gang that ran still shows its
            # bind in `Scheduled`.
            changed = [condition(previous, "Finished", "True", d.reason, d.message, now)]
            closed = eviction_closed(previous, str(Phase.FAILED), str(d.reason), now)
            if closed is not None:
                changed.append(closed)
            waiting = next(
                (
                    c
                    for c in previous.get("conditions") or []
                    if isinstance(c, Mapping)
                    and c.get("type") == "Scheduled"
                    and c.get("status") == "False"
                ),
                None,
            )
            if d.reason == FailReason.SCHEDULE_TIMEOUT:
                changed.append(
                    condition(
                        previous, "Scheduled", "False", Reason.WAITING_FOR_PODS, d.message, now
                    )
                )
            elif (
                d.reason in (FailReason.WORKLOAD_FAILED, FailReason.MEMBER_FAILURES_EXCEEDED)
                and waiting is not None
            ):
                # Its wait is over: left as it was ("0 of 2 pods exist"), the REASON column
                # of a Failed gang would still read as a wait for pods that will never come.
                said = str(waiting.get("message") or "").split("; ")[0] or "waiting"
                changed.append(
                    condition(
                        previous,
                        "Scheduled",
                        "False",
                        str(waiting.get("reason") or Reason.WAITING_FOR_PODS),
                        f"{d.message}: it no longer waits (it was: {said})",
                        now,
                    )
                )
            desired["conditions"] = merge_conditions(previous, changed)
            return desired
        if d.action is Action.HOLD and d.phase is Phase.PENDING and d.message:
            # An eviction under way (its mark seen, members still to go): the bind's
            # `Scheduled=True` and its counts no longer hold. It waits for its pods: to go,
            # then to exist again.
            return {
                "phase": str(Phase.PENDING),
                **pod_counts(gang, assumed),
                "conditions": merge_conditions(
                    gang.status,
                    [
                        condition(
                            gang.status,
                            "Scheduled",
                            "False",
                            Reason.WAITING_FOR_PODS,
                            d.message,
                            now,
                        )
                    ],
                ),
            }
        if d.action is Action.NONE and d.phase in (Phase.SUCCEEDED, Phase.FAILED):
            desired = {
                **running_status(gang, assumed, d.phase),
                "queuePosition": None,
                "estimatedStartTime": None,
                "pendingDetail": None,
            }
            if d.phase is Phase.SUCCEEDED:
                done = _succeeded(gang.succeeded, gang.min_member)
                phase = str(Phase.SUCCEEDED)
                ended = [condition(gang.status, "Finished", "True", phase, done, now)]
                closed = eviction_closed(gang.status, phase, done, now)
                desired["conditions"] = merge_conditions(
                    gang.status, ended if closed is None else [*ended, closed]
                )
            return desired
        return None

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
        current = gang.status
        patch = diff(current, desired)
        if not patch:
            return None
        cond = next((c for c in desired.get("conditions") or [] if c["type"] == "Scheduled"), None)
        old = next(
            (
                c
                for c in current.get("conditions") or []
                if isinstance(c, Mapping) and c.get("type") == "Scheduled"
            ),
            None,
        )
        turned = cond is not None and (
            old is None
            or (old.get("status"), old.get("reason")) != (cond["status"], cond["reason"])
        )
        drifting = set(patch) <= DRIFTING_FIELDS
        now = time.monotonic()
        cfg = self.config
        every = cfg.status_refresh_busy_s if self.busy() else cfg.status_refresh_s
        recent = now - self.refreshed.get(gang.uid, 0.0) < every
        if drifting and not turned and recent:
            return None
        self.refreshed[gang.uid] = now
        return self._write_status(gang, patch, cond if turned else None)

    async def _write_status(
        self, gang: Gang, patch: Mapping[str, Any], turned: Mapping[str, Any] | None
    ) -> None:
        phase = patch.get("phase")
        await self.patch_group(gang, patch)
        if turned is not None and self.reported.get(gang.uid) != (turned["reason"], ""):
            self.reported[gang.uid] = (turned["reason"], "")
            if turned["status"] == "False":
                self.emit(group_ref(gang), turned["reason"], turned["message"], "Warning")
        if phase in ANNOUNCED and self.reported.get(gang.uid) != (phase, "phase"):
            self.reported[gang.uid] = (phase, "phase")
            d = gang.decision
            message = (d.message if d is not None and d.message else "") or (
                _succeeded(gang.succeeded, gang.min_member)
                if phase == Phase.SUCCEEDED
                else f"gang {str(phase).lower()}"
            )
            reason = d.reason if d is not None and d.reason else str(phase)
            self.emit(group_ref(gang), reason, message, ANNOUNCED[Phase(phase)])

    def _report_implicit(self, gang: Gang, reason: str, message: str) -> None:
        """The Warning Event of a waiting gang with no PodGroup (a gang of one), on its pod:
        when its reason turns, as a PodGroup's (`_write_status`), never for numbers that move
        (walked: "waited 3s …", "waited 5s …" made an Event per pod every cycle)."""
        pod = gang.pods[0]
        if self._once(gang.uid, reason, ""):
            self.emit(pod_ref(pod.namespace, pod.name, pod.uid), reason, message, "Warning")

    def report_orphans(self, view: View) -> None:
        """Pods naming a PodGroup that does not exist: a Warning Event, once, and on a pod not
        bound `PodScheduled=False` reason `PodGroupNotFound` with the same words. The condition
        stays with the pod where an Event expires (after an hour by default: a pod left waiting
        for a PodGroup never applied then showed nothing in `kubectl describe`); its reason is
        not `Unschedulable`, so no autoscaler adds nodes for it."""
        for pod in view.orphans:
            message = (
                (
                    f"waiting for PodGroup ({NATIVE_GROUP}) {pod.namespace}/{pod.group}: it "
                    f"does not exist, or this cluster does not serve {NATIVE_GROUP}/"
                    f"{NATIVE_VERSION} PodGroups (the operator checks at start)"
                )
                if pod.native_group
                else (
                    f"bound to {pod.node_name} with no PodGroup {pod.namespace}/{pod.group} "
                    "(deleted?): its resources still count as used; no gang rules (time "
                    "limit, member failure) apply to it until the PodGroup exists again"
                )
                if pod.node_name
                else f"waiting for PodGroup {pod.namespace}/{pod.group}: it does not exist"
            )
            key = f"orphan:{pod.uid}"
            if key not in self.reported:
                self.reported[key] = ("PodGroupNotFound", pod.group or "")
                self.emit(
                    pod_ref(pod.namespace, pod.name, pod.uid),
                    "PodGroupNotFound",
                    message,
                    "Warning",
                )
            if not pod.node_name and not pod.deleting:
                self._say_on_pod(pod, "PodGroupNotFound", message)

    def report_finished(self, view: View) -> None:
        """Pods that join a gang already `Succeeded` or `Failed` (a Job deleted and created
        again beside its hand-written PodGroup, bare pods applied again): terminal stays
        terminal, so they are never placed — a Warning Event each, once, says so and what to
        do. Without it they sat `Pending` with no condition and no Event at all (found walking
        a failed Job created again). No `PodScheduled=False Unschedulable`: an autoscaler
        would add nodes for pods that no node would let run."""
        for gang in view.gangs.values():
            d = gang.decision
            if d is None or d.phase not in (Phase.SUCCEEDED, Phase.FAILED) or gang.group is None:
                continue
            # A managed PodGroup is made again by the operator once deleted; a hand-written
            # one is the user's to apply again. A pod its workload left behind when it ended
            # (an elastic PyTorchJob's worker that never fitted) is not to be run at all.
            auto = gang.auto
            if auto is not None and auto.owner is not None and auto.state in ("Complete", "Failed"):
                owner = f"{auto.owner.kind} {gang.group.namespace}/{auto.owner.name}"
                ended = "succeeded" if auto.state == "Complete" else "failed"
                message = (
                    f"its PodGroup {gang.key} is {d.phase}, as {owner} {ended}: this pod, left "
                    "by it, is never placed (delete the pod, or the workload)"
                )
            else:
                again = (
                    "the operator makes it again for their workload"
                    if gang.group.managed
                    else "apply it again"
                )
                message = (
                    f"its PodGroup {gang.key} is {d.phase} and takes no new pods: delete it "
                    f"({again}) to run them"
                )
            for pod in gang.pods:
                if pod.node_name or pod.deleting:
                    continue
                self._tell_pod(pod, "PodGroupFinished", message, "Warning")
                # Kept on the pod, where the Event expires; and one that said `Unschedulable`
                # while it waited no longer asks an autoscaler for nodes.
                self._say_on_pod(pod, "PodGroupFinished", message)

    def _say_on_pod(self, pod: PodRec, reason: str, message: str) -> None:
        """`PodScheduled=False` with `reason` (never `Unschedulable`: nothing a new node offers
        lets such a pod run) on a pod not bound, unless it says so already or a write of it is
        on its way."""
        if pod.scheduled == ("False", reason, message[:1024]) or pod.uid in self.pod_writes:
            return
        if self.busy() or len(self.pod_writes) >= POD_CONDITIONS_PER_CYCLE:
            return  # as `write_pod_conditions`: never while gangs bind, never a flood; next cycle
        if self.pod_written.get(pod.uid, ("", ""))[:2] == (reason, message):
            return
        self.pod_written[pod.uid] = (reason, message, time.monotonic())
        self._spawn_pod_condition(pod, reason, message)

    def report_unganged(self, view: View) -> None:
        """Pods whose automatic gang cannot be made (owner not found, workload suspended), gangs
        of one that could be gangs (one pod per owner says how), and managed gangs whose pods
        carry spec annotations their workload does not (not read): an Event each, once. A pod
        that waits for its gang to be made says why in its `PodScheduled` condition too (kept
        where the Event expires; not `Unschedulable`: no node added would let it run)."""
        for pod, auto in view.unganged:
            self._tell_pod(pod, auto.problem_reason, auto.problem, "Warning")
            if not pod.node_name and not pod.deleting:
                self._say_on_pod(pod, auto.problem_reason, auto.problem)
        for pod, hint in view.hints:
            self._tell_pod(pod, "NotGanged", hint, "Normal")
        for gang in view.gangs.values():
            ignored = gang.ignored
            if not ignored or gang.group is None:
                continue
            if self._once(f"ignored:{gang.uid}", "AnnotationIgnored", ignored):
                log.info("%s: %s", gang.key, ignored)
                self.emit(group_ref(gang), "AnnotationIgnored", ignored, "Warning")

    def report_bypassed(self, found: Iterable[Bypass]) -> None:
        """Workloads whose pods went to another scheduler though opted in (`bypass`): a
        Warning Event on the workload and a line in the log, once each."""
        for b in found:
            log.warning(
                "%s %s/%s: %s",
                b.involved["kind"],
                b.involved["namespace"],
                b.involved["name"],
                b.message,
            )
            self.emit(b.involved, BYPASS_REASON, b.message, "Warning")

    def _once(self, key: str, reason: str, message: str) -> bool:
        """Whether (reason, message) is new for `key`, remembering it (`prune` forgets keys
        prefixed `orphan:` with their pod, others with their PodGroup)."""
        if self.reported.get(key) == (reason, message):
            return False
        self.reported[key] = (reason, message)
        return True

    def _tell_pod(self, pod: PodRec, reason: str, message: str, kind: str) -> None:
        if self._once(f"orphan:{pod.uid}", reason, message):
            log.info("pod %s: %s: %s", pod.key, reason, message)
            self.emit(pod_ref(pod.namespace, pod.name, pod.uid), reason, message, kind)

    # -- pods ---------------------------------------------------------------------------------

    def write_pod_conditions(self, view: View, result: CycleResult) -> None:
        """`PodScheduled=False`, reason `Unschedulable`, with the gang's message, on members of
        gangs that wait (kube-scheduler's signal, which cluster-autoscaler and Karpenter act on).

        The lowest priority of all writes: none while gangs bind, a few in flight at once, and
        a message whose numbers merely drift rewritten at most every `pod_condition_refresh_s`
        (the pod's own condition tells what is there, so a restart rewrites nothing), at most
        `POD_CONDITIONS_PER_CYCLE` a cycle, and one still waiting for a slot when gangs start
        binding is dropped until after the burst. The binding itself sets `PodScheduled=True`.
        """
        if self.busy():
            return
        now = time.monotonic()
        every = self.config.pod_condition_refresh_s
        budget = POD_CONDITIONS_PER_CYCLE - len(self.pod_writes)
        # (gang, what its waiting pods are told, pods placed now, topic): a message turning to
        # another topic (the gang's reason turning, from WaitingForPods to
        # TopologyUnsatisfiable say, or a gang that started, its extras still waiting) is
        # written at once; within one, numbers that drift are rewritten at most every
        # `pod_condition_refresh_s`.
        waits: list[tuple[Gang, str, Mapping[str, str], str]] = []
        for key in sorted(view.pending):
            core = result.gangs.get(key)
            if core is None or key in result.bindings or core.reason in _BOUND:
                continue
            waits.append((view.gangs[key], core.message, {}, f"gang {core.reason}"))
        for key, why in result.extras_waiting.items():
            # Members of a gang that runs (beyond minMember, or replacements) that did not fit.
            gang = view.gangs.get(key)
            if gang is not None:
                bound = sum(1 for p in gang.pods if p.node_name and not p.deleting)
                pods = f"{bound} pod{'' if bound == 1 else 's'} bound"
                message = f"waits to join its running gang ({pods}, minMember {gang.min_member}): "
                message += why
                waits.append((gang, message, result.extra_bindings.get(key, {}), "extra"))
        for gang, message, placed, topic in waits:
            for pod in gang.pods:
                if pod.node_name or pod.deleting or pod.uid in self.pod_writes or pod.key in placed:
                    continue
                shown = pod.scheduled
                if shown is not None and shown == ("False", "Unschedulable", message):
                    continue
                last = self.pod_written.get(pod.uid)
                if last is not None and last[:2] == (topic, message):
                    continue
                same_reason = shown is not None and shown[:2] == ("False", "Unschedulable")
                drifts = same_reason and last is not None and last[0] == topic
                if drifts and last is not None and now - last[2] < every:
                    continue
                if budget <= 0:
                    return  # the rest next cycle: a backlog's conditions never flood the server
                budget -= 1
                self.pod_written[pod.uid] = (topic, message, now)
                self._spawn_pod_condition(pod, "Unschedulable", f"gang {gang.key}: {message}")

    def _spawn_pod_condition(self, pod: PodRec, reason: str, message: str) -> None:
        """`PodScheduled=False` with `reason` on `pod`, in the background, as the lowest
        priority of all writes (`_write_pod_condition`).

        `lastTransitionTime` is sent only when the condition turns False: the strategic merge
        keeps the one the pod shows, so it says since when the pod has waited, as
        kube-scheduler's does (walked: it moved with every new message, so a pod that had
        waited an hour looked a minute old)."""
        cond: dict[str, Any] = {
            "type": "PodScheduled",
            "status": "False",
            "reason": reason,
            "message": message[:1024],
        }
        if pod.scheduled is None or pod.scheduled[0] != "False":
            cond["lastTransitionTime"] = rfc3339(time.time())
        work = self._write_pod_condition(pod.uid, pod.namespace, pod.name, cond)
        spawn(self.pod_writes, pod.uid, work, "pod condition")

    async def _write_pod_condition(
        self, uid: str, namespace: str, name: str, cond: Mapping[str, Any]
    ) -> None:
        async with self._pod_slots:
            if self.busy():
                # Gangs started binding while this waited: binds first; a later cycle writes it.
                self.pod_written.pop(uid, None)
                return
            await self._send_pod_condition(namespace, name, cond)

    async def _send_pod_condition(self, namespace: str, name: str, cond: Mapping[str, Any]) -> None:
        try:
            await self.api.patch_pod_condition(namespace, name, cond)
        except ApiError as exc:
            if exc.status not in (404, 409):
                log.warning("PodScheduled of %s/%s: %s", namespace, name, exc)

    # -- Queues -------------------------------------------------------------------------------

    async def write_queues(
        self,
        result: CycleResult,
        view: View,
        now: float,
        usage: Mapping[str, float],
        persist_usage: bool,
    ) -> None:
        for gone in self.queues_written.keys() - result.queues.keys():
            del self.queues_written[gone]
        self.metrics.forget_queues_except(set(result.queues))
        phases: Counter[tuple[str, str]] = Counter(
            (g.group.queue, str(g.decision.phase))
            for g in view.gangs.values()
            if g.group is not None and g.decision is not None
        )
        self.metrics.set_gangs(phases)
        for name, qs in sorted(result.queues.items()):
            self.metrics.set_queue(name, qs.deserved, qs.allocated, qs.pending_gangs)
            rec = view.queues.get(name)
            uid = rec.uid if rec is not None else ""
            known = self.queues_written.get(name)
            if known is not None and known[0] == uid:
                previous = known[1]
            else:  # first seen, or deleted and created again: what the object holds
                previous = dict(rec.status) if rec is not None else {}
            desired = queue_status_body(qs, usage.get(name, 0.0), now, previous)
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
            self.queues_written[name] = (uid, merge_patch(previous, patch))
        self.metrics.invalid_objects.labels(kind="Queue").set(
            sum(1 for qs in result.queues.values() if qs.invalid)
        )
        self.metrics.invalid_objects.labels(kind="PodGroup").set(
            sum(1 for d in result.gangs.values() if d.reason == Reason.INVALID)
        )
        total = sum(n.allocatable.get(GPU, 0) for n in view.snapshot.nodes)
        allocated = sum(qs.allocated.get(GPU, 0) for qs in result.queues.values())
        self.metrics.gpus.labels(state="allocated").set(allocated)
        self.metrics.gpus.labels(state="idle").set(max(0, total - allocated))

    # -- shutdown -------------------------------------------------------------------------------

    def tasks(self) -> list[asyncio.Task[None]]:
        return [*self.status_writes.values(), *self.pod_writes.values(), *self._background]


_BOUND = (Reason.SCHEDULED, Reason.BACKFILLED)


SCHEDULED_PHASES = frozenset({"Running", "Degraded", "Succeeded"})
PREEMPTED = frozenset({"Reclaimed", "Preempted"})


def native_conditions(
    previous: Mapping[str, Any], status: Mapping[str, Any], now: float, generation: int = 0
) -> list[dict[str, Any]]:
    """The conditions of a native PodGroup, as kube-scheduler writes them, from our status of
    its gang: `PodGroupScheduled` True (reason `Scheduled`) once it is bound whole, False with
    reason `Unschedulable` while it waits (`SchedulerError` when it is `Invalid`), our reason
    and message in its message; `DisruptionTarget` True while it is evicted (reason
    `PreemptionByScheduler` for reclaim and preemption, else ours). `Binding` changes nothing:
    the burst's writes stay binds. Other conditions are kept."""

    def find(ctype: str) -> Mapping[str, Any] | None:
        return next(
            (
                c
                for c in status.get("conditions") or []
                if isinstance(c, Mapping) and c.get("type") == ctype
            ),
            None,
        )

    phase = status.get("phase")
    sched, evicted = find("Scheduled"), find("Evicted")
    updated: list[dict[str, Any]] = []
    if phase in SCHEDULED_PHASES:
        message = str(sched.get("message", "")) if sched and sched.get("status") == "True" else ""
        updated.append(condition(previous, "PodGroupScheduled", "True", "Scheduled", message, now))
    elif phase != "Binding" and sched is not None and sched.get("status") == "False":
        reason = "SchedulerError" if sched.get("reason") == Reason.INVALID else "Unschedulable"
        message = f"{sched.get('reason')}: {sched.get('message', '')}"
        updated.append(condition(previous, "PodGroupScheduled", "False", reason, message, now))
    elif phase == "Failed":
        updated.append(
            condition(previous, "PodGroupScheduled", "False", "Unschedulable", "gang failed", now)
        )
    shown = next(
        (c for c in previous.get("conditions") or [] if c.get("type") == "DisruptionTarget"),
        None,
    )
    if phase not in SCHEDULED_PHASES and evicted is not None and evicted.get("status") == "True":
        why = str(evicted.get("reason", ""))
        reason = "PreemptionByScheduler" if why in PREEMPTED else why or "Evicted"
        message = f"{why}: {evicted.get('message', '')}"
        updated.append(condition(previous, "DisruptionTarget", "True", reason, message, now))
    elif phase in SCHEDULED_PHASES and shown is not None and shown.get("status") == "True":
        updated.append(
            condition(previous, "DisruptionTarget", "False", "Scheduled", "placed again", now)
        )
    if generation:
        for c in updated:
            c["observedGeneration"] = generation
    # The previous list in its order, ours set in place (new ones last); an unchanged
    # condition keeps its exact body, so "nothing to write" compares equal.
    out = [dict(c) for c in previous.get("conditions") or []]
    index = {c.get("type"): i for i, c in enumerate(out)}
    for c in updated:
        i = index.get(c["type"])
        if i is None:
            out.append(c)
        elif not _same(out[i], c):
            out[i] = c
    return out


def _same(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> bool:
    if old is None:
        return False
    keys = ("status", "reason", "message")
    return all(old.get(k) == new.get(k) for k in keys) and (
        "observedGeneration" not in new
        or old.get("observedGeneration") == new["observedGeneration"]
    )


def _succeeded(succeeded: int, min_member: int) -> str:
    """What a `Succeeded` gang's Event says: a Job of more completions than parallelism has
    had more members than its minimum, "5 members succeeded (minMember 2)", not "5 of 2"."""
    if succeeded > min_member:
        return f"{succeeded} members succeeded (minMember {min_member})"
    return f"{succeeded} of {min_member} members succeeded"
