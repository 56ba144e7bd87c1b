"""PodGroup and Queue objects → the rows of `phalanx queue`, `share` and `explain` (pure).

Inputs are the objects as the API returns them (plain dicts; status as `k8s/status.py` writes it:
quantities as strings such as "16", conditions, `estimatedStartTime` in RFC 3339). Everything is
read defensively: a PodGroup the operator has not seen yet has no status, and the views must still
show it. The JSON keys are the contract of PRODUCT.md §6; tools depend on them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from phalanx.core.never_fits import NEVER_PHRASES
from phalanx.core.reasons import YIELDS_WHEN_DUE, Reason, format_duration
from phalanx.inspection.errors import ViewError
from phalanx.quantity import QuantityError, to_units

GPU = "nvidia.com/gpu"
#: The core's ETA phrase ("… when 2 running gangs end"), to repeat beside the absolute time.
_ENDING = re.compile(r"when (\d+ running gangs? ends?)")
PENDING_PHASES = frozenset({"Pending"})
#: Order of phases in the plain `queue` listing: what holds GPUs first, then what waits.
PHASE_RANK = {
    "Running": 0,
    "Degraded": 1,
    "Binding": 2,
    "Pending": 3,
    "Succeeded": 4,
    "Failed": 5,
}

Obj = Mapping[str, Any]


# -- small readers --------------------------------------------------------------------------------


def _dict(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _float(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    return None


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def quantity(resources: object, resource: str) -> int | None:
    """One resource of a resource list in whole units ("16" → 16); None when absent or bad."""
    value = _dict(resources).get(resource)
    if value is None:
        return None
    try:
        return to_units(resource, value)
    except QuantityError:
        return None


def parse_time(text: str | None) -> datetime | None:
    """RFC 3339 ("2026-11-30T05:12:00Z") → an aware datetime; None when absent or bad."""
    if not text:
        return None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def condition(obj: Obj, ctype: str) -> Mapping[str, Any] | None:
    conditions = _dict(obj.get("status")).get("conditions")
    if not isinstance(conditions, list):
        return None
    return next((c for c in conditions if isinstance(c, Mapping) and c.get("type") == ctype), None)


def _meta(obj: Obj) -> tuple[str, str]:
    meta = _dict(obj.get("metadata"))
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


# -- phalanx queue ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GangRow:
    """One PodGroup as `phalanx queue` shows it (like a line of `squeue`)."""

    namespace: str
    name: str
    queue: str
    phase: str | None
    bound: int
    min: int
    reason: str | None
    position: int | None
    eta: str | None

    def to_json(self) -> dict[str, Any]:
        """Exactly the keys of PRODUCT.md §6."""
        return {
            "namespace": self.namespace,
            "name": self.name,
            "queue": self.queue,
            "phase": self.phase,
            "bound": self.bound,
            "min": self.min,
            "reason": self.reason,
            "position": self.position,
            "eta": self.eta,
        }

    @property
    def pending(self) -> bool:
        """Waiting to start: `Pending`, or not yet seen by the operator (no phase)."""
        return self.phase is None or self.phase in PENDING_PHASES


def gang_row(obj: Obj) -> GangRow:
    namespace, name = _meta(obj)
    spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
    scheduled = condition(obj, "Scheduled")
    return GangRow(
        namespace=namespace,
        name=name,
        queue=_str(spec.get("queue")) or "default",
        phase=_str(status.get("phase")),
        bound=_int(status.get("bound")) or 0,
        min=_int(spec.get("minMember")) or 0,
        reason=_str(scheduled.get("reason")) if scheduled else None,
        position=_int(status.get("queuePosition")),
        eta=_str(status.get("estimatedStartTime")),
    )


def _eta_key(row: GangRow) -> tuple[int, float]:
    when = parse_time(row.eta)
    return (0, when.timestamp()) if when is not None else (1, 0.0)


def _position_key(row: GangRow) -> tuple[int, int]:
    return (0, row.position) if row.position is not None else (1, 0)


def queue_rows(podgroups: Iterable[Obj], *, start: bool = False) -> list[GangRow]:
    """The rows of `phalanx queue`.

    Plain: by queue, then what runs before what waits, pending gangs by their position.
    `start` (like `squeue --start`): only the gangs waiting to start, soonest expected start
    first (gangs without an ETA last), then by position in their queue.
    """
    rows = [gang_row(o) for o in podgroups]
    if start:
        rows = [r for r in rows if r.pending]
        return sorted(
            rows, key=lambda r: (_eta_key(r), _position_key(r), r.queue, r.namespace, r.name)
        )
    return sorted(
        rows,
        key=lambda r: (
            r.queue,
            PHASE_RANK.get(r.phase or "Pending", len(PHASE_RANK)),
            _position_key(r),
            r.namespace,
            r.name,
        ),
    )


# -- phalanx share ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ShareRow:
    """One Queue as `phalanx share` shows it (like a line of `sshare`), GPUs as numbers.

    Status figures are None for a queue the operator has not reported on yet.
    """

    queue: str
    weight: int
    guarantee: int
    deserved: int | None
    allocated: int | None
    borrowed: int | None
    usage: float | None
    fair_share: float | None
    pending_gangs: int | None = None
    running_gangs: int | None = None
    message: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The keys of PRODUCT.md §6, plus the table's PENDING and RUNNING gang counts (named
        as in Queue status), so a script sees every column a person sees."""
        return {
            "queue": self.queue,
            "weight": self.weight,
            "guarantee": self.guarantee,
            "deserved": self.deserved,
            "allocated": self.allocated,
            "borrowed": self.borrowed,
            "pendingGangs": self.pending_gangs,
            "runningGangs": self.running_gangs,
            "usage": self.usage,
            "fairShare": self.fair_share,
        }

    @property
    def scaled(self) -> bool:
        """Whether the operator said the guarantees were scaled down to fit the cluster."""
        return self.message is not None and "scaled down" in self.message

    @property
    def demand_capped(self) -> bool:
        """Deserves less than its guarantee, the guarantees not scaled: then its demand (GPUs
        its gangs hold and wait for) is what caps it (PRODUCT.md §4)."""
        return self.deserved is not None and self.deserved < self.guarantee and not self.scaled


def split_name(given: str, namespace: str | None) -> tuple[str | None, str]:
    """`phalanx explain`'s argument: a PodGroup's name, or `NAMESPACE/NAME` as its own output
    and `kubectl get gang -A` show it (users copy that). A Kubernetes name has no `/`, so the
    form is unambiguous; a `-n` that names another namespace is refused rather than one of the
    two silently winning."""
    if "/" not in given:
        return namespace, given
    ns, _, name = given.partition("/")
    if not ns or not name or "/" in name:
        raise ViewError(f"{given!r} is neither a PodGroup name nor NAMESPACE/NAME")
    if namespace is not None and namespace != ns:
        raise ViewError(f"{given!r} names namespace {ns!r} but -n says {namespace!r}: give one")
    return ns, name


def share_row(obj: Obj, resource: str = GPU) -> ShareRow:
    _, name = _meta(obj)
    spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
    reported = bool(status)
    return ShareRow(
        queue=name,
        weight=_int(spec.get("weight")) or 1,
        guarantee=quantity(spec.get("guarantee"), resource) or 0,
        # The operator writes every queue's figures each cycle; an absent resource means 0.
        deserved=(quantity(status.get("deserved"), resource) or 0) if reported else None,
        allocated=(quantity(status.get("allocated"), resource) or 0) if reported else None,
        borrowed=(quantity(status.get("borrowed"), resource) or 0) if reported else None,
        usage=_float(status.get("usage")),
        fair_share=_float(status.get("fairShare")),
        pending_gangs=_int(status.get("pendingGangs")),
        running_gangs=_int(status.get("runningGangs")),
        message=_str(status.get("message")),
    )


def share_rows(queues: Iterable[Obj], resource: str = GPU) -> list[ShareRow]:
    return sorted((share_row(q, resource) for q in queues), key=lambda r: r.queue)


HOLDING = ("Binding", "Running", "Degraded")
"""Phases of a gang whose members hold capacity."""


def queueless(podgroups: Iterable[Obj], queues: Iterable[Obj]) -> dict[str, list[str]]:
    """Gangs that hold capacity though their queue does not exist (it was deleted under them),
    by queue name, as NAMESPACE/NAME. They run on, but their GPUs are charged to no queue and
    so appear in no row of `phalanx share` (walked: `kubectl delete queue research` under two
    running gangs left 48 GPUs that the view did not show anywhere)."""
    names = {str((q.get("metadata") or {}).get("name")) for q in queues}
    out: dict[str, list[str]] = {}
    for g in podgroups:
        queue = str((g.get("spec") or {}).get("queue") or "default")
        if queue in names or (g.get("status") or {}).get("phase") not in HOLDING:
            continue
        meta = g.get("metadata") or {}
        out.setdefault(queue, []).append(f"{meta.get('namespace')}/{meta.get('name')}")
    return {q: sorted(gangs) for q, gangs in sorted(out.items())}


def unfinished(pods: Iterable[Obj]) -> list[Obj]:
    """The pods not `Succeeded` or `Failed`."""
    return [p for p in pods if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]


def missing_group(namespace: str, name: str, pods: Iterable[Obj]) -> str:
    """What `phalanx explain` says of a PodGroup that does not exist, given the pods that name
    it (label `phalanx.dev/pod-group`, not yet finished): a PodGroup deleted under its running
    gang leaves them bound, holding GPUs charged to no queue, and the bare "not found" said
    nothing of them (walked: `kubectl delete podgroup finetune` under its running Job). Applied
    again, the PodGroup adopts its bound members (roll forward from what is bound)."""
    base = f'PodGroup "{name}" not found in namespace "{namespace}"'
    live = unfinished(pods)
    if not live:
        return base
    bound = [p for p in live if (p.get("spec") or {}).get("nodeName")]
    gpus = 0
    for p in bound:
        for c in (p.get("spec") or {}).get("containers") or []:
            requests = (c.get("resources") or {}).get("requests") or {}
            try:
                gpus += to_units(GPU, requests.get(GPU, 0))
            except QuantityError:
                continue
    one = len(live) == 1
    said = f"{len(live)} pod{'' if one else 's'} labelled phalanx.dev/pod-group={name}"
    waiting = len(live) - len(bound)
    parts = []
    if bound:
        parts.append(
            f"{len(bound)} bound, holding {gpus} GPUs charged to no queue and under no gang "
            "rule (time limit, member failure)"
        )
    if waiting:
        parts.append(f"{waiting} waiting for it")
    todo = (
        "apply the PodGroup again and its bound members are adopted"
        if bound
        else "apply the PodGroup"
    )
    it = "it" if one else "them"
    return f"{base}; {said} name{'s' if one else ''} it: {', '.join(parts)}; {todo}, or delete {it}"


# -- phalanx explain ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Members:
    """A gang's pod counts as its status has them (PRODUCT.md §2), with its `minMember`.

    `explain` showed the reason a gang waits but not its pods: a running gang with members
    still waiting to join, or one that lost members and runs on, looked the same as a whole
    one unless the user listed and described its pods."""

    exist: int
    min: int
    bound: int
    running: int
    succeeded: int
    failed: int

    @property
    def waiting(self) -> int:
        """Pods that exist, are not bound and have not finished: waiting to be placed."""
        return max(0, self.exist - self.bound - self.succeeded - self.failed)

    def to_json(self) -> dict[str, int]:
        return {
            "exist": self.exist,
            "min": self.min,
            "bound": self.bound,
            "running": self.running,
            "waiting": self.waiting,
            "succeeded": self.succeeded,
            "failed": self.failed,
        }

    def text(self, phase: str | None) -> str:
        """The counts in a line, e.g. "6 (minMember 4): 4 bound (4 running), 2 waiting, 0
        succeeded, 0 failed", and for a gang that runs, where its waiting pods say why."""
        out = (
            f"{self.exist} (minMember {self.min}): {self.bound} bound ({self.running} running), "
            f"{self.waiting} waiting, {self.succeeded} succeeded, {self.failed} failed"
        )
        if self.waiting and phase in ("Running", "Degraded"):
            who = (
                "the pod waiting to join says why in its"
                if self.waiting == 1
                else f"the {self.waiting} pods waiting to join say why in their"
            )
            out += f"; {who} PodScheduled condition (kubectl describe pod)"
        return out


def members_of(obj: Obj) -> Members | None:
    """The counts, or None before the operator has written any (a gang it has not seen)."""
    spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
    exist = _int(status.get("members"))
    if exist is None:
        return None
    return Members(
        exist=exist,
        min=_int(spec.get("minMember")) or 0,
        bound=_int(status.get("bound")) or 0,
        running=_int(status.get("running")) or 0,
        succeeded=_int(status.get("succeeded")) or 0,
        failed=_int(status.get("failed")) or 0,
    )


@dataclass(frozen=True, slots=True)
class Explanation:
    """Why a gang waits, in numbers, and what would let it start."""

    namespace: str
    name: str
    queue: str | None
    """Its queue; None only for a gang of one whose queue a workload's label may name."""
    phase: str | None
    reason: str | None
    message: str | None
    detail: Mapping[str, Any] | None
    position: int | None
    eta: str | None
    would_start: tuple[str, ...]
    evicted: str | None = None
    members: Members | None = None
    degraded: str | None = None
    finished: str | None = None
    """Why a gang that is over ended (its `Finished` condition): "WorkloadFailed: its workload
    reports Failed", "Succeeded: 7 of 7 members succeeded"."""
    not_started: str | None = None
    """Bound members of a running gang that do not start (its `Started=False` condition):
    "ImagePullBackOff: 1 of 4 bound members not running: …"."""
    events: tuple[EventLine, ...] = ()
    """Its last Events (`recent_events`), when the user may list them."""
    kind: str = "PodGroup"
    """What holds its status: `Pod` for a gang of one, which has no PodGroup (`pod_gang`)."""
    member_of: str | None = None
    """The pod name `explain` was given when it explains that pod's PodGroup."""

    def to_json(self) -> dict[str, Any]:
        """`reason, message, detail` (PRODUCT.md §6) and what surrounds them."""
        return {
            "reason": self.reason,
            "message": self.message,
            "detail": dict(self.detail) if self.detail is not None else None,
            "namespace": self.namespace,
            "name": self.name,
            "queue": self.queue,
            "phase": self.phase,
            "position": self.position,
            "eta": self.eta,
            "wouldStart": list(self.would_start),
            "evicted": self.evicted,
            "members": self.members.to_json() if self.members is not None else None,
            "degraded": self.degraded,
            "finished": self.finished,
            "notStarted": self.not_started,
            "events": [e.to_json() for e in self.events],
            "kind": self.kind,
            "memberOf": self.member_of,
        }


def _gpus(n: int) -> str:
    return f"{n} GPU" if n == 1 else f"{n} GPUs"


#: Reasons of gangs that get a reservation, and so an ETA, when one can be planned.
_PLANNED = frozenset(
    {Reason.INSUFFICIENT_CAPACITY, Reason.TOPOLOGY_UNSATISFIABLE, Reason.WAITING_FOR_RESERVATION}
)


def _more_free(n: int) -> str:
    n = max(0, n)
    return f"{n} more free GPU" if n == 1 else f"{n} more free GPUs"


def _more_pods(obj: Obj, missing: int, members: int, minimum: int) -> str:
    """What a gang waiting for its pods needs. A managed PodGroup's pods come from the workload
    that owns it, so that is what to look at (walked: a suspended Job's gang was told to label
    pods with a PodGroup name its user never wrote); a hand-written one's from whatever labels
    pods with its name."""
    namespace, name = _meta(obj)
    meta = _dict(obj.get("metadata"))
    owners = [_dict(o) for o in meta.get("ownerReferences") or ()]
    owner = next((o for o in owners if o.get("controller")), owners[0] if owners else None)
    counted = f"({members} of {minimum} exist)"
    if _dict(meta.get("labels")).get("phalanx.dev/managed") == "true" and owner is not None:
        workload = f"{_str(owner.get('kind')) or 'workload'} {namespace}/{_str(owner.get('name'))}"
        return f"needs {missing} more pod(s) from its {workload}, which makes them {counted}"
    return (
        f"needs {missing} more pod(s) labelled phalanx.dev/pod-group={name} in namespace "
        f"{namespace} {counted}"
    )


def would_start(obj: Obj, now: datetime, queues: Iterable[Obj] | None = None) -> tuple[str, ...]:
    """What would let the gang start, worked out from the numbers in its status.

    `queues` (the Queue objects, when the user may list them) says whose borrowed GPUs reclaim
    could take back for a gang within its queue's deserved share, how its queue's deserved share
    came about, and how many GPUs there are for it at most (so no hint has a queue hold more).
    """
    queues = list(queues) if queues is not None else None
    namespace, _ = _meta(obj)
    spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
    scheduled = condition(obj, "Scheduled")
    reason = _str(scheduled.get("reason")) if scheduled else None
    phase = _str(status.get("phase"))
    queue = _str(spec.get("queue")) or "default"
    if phase in ("Running", "Degraded", "Binding", "Succeeded", "Failed"):
        return ()
    if reason is None:
        return ("no decision yet: the operator has not reported on this PodGroup (is it running?)",)
    if scheduled is not None and scheduled.get("status") == "True":
        return ()
    message = (_str(scheduled.get("message")) if scheduled else None) or ""
    detail = _dict(status.get("pendingDetail"))
    requested = _int(detail.get("requestedGPUs"))
    free = _int(detail.get("freeGPUs"))
    best, best_free = _str(detail.get("bestDomain")), _int(detail.get("bestDomainFreeGPUs"))
    deserved = _int(detail.get("queueDeservedGPUs"))
    allocated = _int(detail.get("queueAllocatedGPUs"))
    hints: list[str] = []

    if reason in (Reason.INSUFFICIENT_CAPACITY, Reason.TOPOLOGY_UNSATISFIABLE) and any(
        what in message for what in NEVER_PHRASES
    ):
        # Nothing that ends or is evicted helps: no queue or ETA hint either.
        return (
            "no capacity freeing up lets it start as written: change its pods (requests, count, "
            "node selector, affinity, tolerations) or its required topology (the message says "
            "what no node or domain offers), or add nodes that have it",
        )
    if reason == Reason.WAITING_FOR_PODS:
        # As the core counts (`N of M pods exist`): pods that may still run, against minMember
        # less the members that succeeded; a failed pod is never run again.
        done = _int(status.get("succeeded")) or 0
        members = max(
            0, (_int(status.get("members")) or 0) - done - (_int(status.get("failed")) or 0)
        )
        minimum = max(0, (_int(spec.get("minMember")) or 0) - done)
        missing = max(0, minimum - members)
        evicted = condition(obj, "Evicted")
        still_bound = _int(status.get("bound")) or 0
        if evicted is not None and evicted.get("status") == "True" and still_bound:
            # An eviction under way: its pods come back (or are applied again) only after.
            hints.append(
                f"needs its eviction ({_str(evicted.get('reason')) or 'unknown'}) to finish: "
                f"{still_bound} member(s) still on their nodes"
            )
        hints.append(_more_pods(obj, missing, members, minimum))
    elif reason == Reason.QUEUE_NOT_FOUND:
        hints.append(f"needs a Queue named {queue}, or spec.queue naming an existing Queue")
    elif reason == Reason.QUEUE_FORBIDDEN:
        hints.append(f"needs namespace {namespace} in spec.namespaces of the Queue {queue}")
    elif reason == Reason.QUEUE_OVER_LIMIT:
        hints.append(f"needs gangs of the queue {queue} to end, or a higher spec.limit on it")
    elif reason == Reason.INVALID:
        hints.append("needs a corrected spec (see the message)")
    elif reason == Reason.TOPOLOGY_UNSATISFIABLE and requested is not None:
        level = _str(_dict(spec.get("topology")).get("required")) or "domain"
        if best is not None and best_free is not None and best_free < requested:
            hints.append(
                f"needs {_more_free(requested - best_free)} under one {level} "
                f"({requested} requested; the best {level}, {best}, has {best_free} free)"
            )
        elif best is not None and best_free is not None:
            # Enough GPUs under the domain, but not on nodes where its pods fit ("needs 0 more
            # free GPUs" read as if it were about to start).
            hints.append(
                f"needs free GPUs under one {level} on nodes where its pods fit (the best "
                f"{level}, {best}, has {best_free} free for {requested} requested, but not on "
                "nodes matching its per-pod requests, selectors and tolerations)"
            )
        else:
            hints.append(f"needs {_gpus(requested)} free under one {level}")
    elif reason == Reason.INSUFFICIENT_CAPACITY and requested is not None and free is not None:
        if requested > free:
            hints.append(
                f"needs {_more_free(requested - free)} that it can use "
                f"({requested} requested, {free} free now)"
            )
        else:
            hints.append(
                f"needs free GPUs where its pods fit ({free} free for {requested} requested, "
                "but not on nodes matching its per-pod requests, selectors and tolerations)"
            )
    elif reason == Reason.WAITING_FOR_RESERVATION:
        if free is not None and requested is not None and free >= requested:
            hints.append(
                f"{free} GPUs are free but reserved for gangs ahead of it: it could start now "
                "(backfill) only with a timeLimitSeconds ending before their reservations"
            )
        else:
            hints.append("starts when the capacity being freed for it (evictions) comes back")

    rows = [share_row(q) for q in queues] if queues is not None else None
    if deserved is not None and allocated is not None and requested is not None:
        after = allocated + requested
        if after > deserved:
            hint = (
                f"its queue {queue} holds {allocated} GPUs and deserves {deserved}: this gang's "
                f"{requested} would put it {after - deserved} over its share, which it can "
                "borrow from idle GPUs but not reclaim from other queues"
            )
            # Never a holding beyond what there is: what is free for it plus what every queue
            # holds is the most its queue could hold (other queues' gangs all ended). Beyond
            # that, its own queue's gangs must end first.
            room = (
                free + sum(r.allocated or 0 for r in rows)
                if rows is not None and free is not None
                else None
            )
            if room is not None and after > room:
                hint += (
                    f"; {room} GPUs are free or held by gangs in all, so it can start only "
                    f"after its queue's own running gangs free {after - room}"
                )
            hints.append(hint)
        elif requested:
            within = (
                f"its queue {queue} would hold {after} of its deserved {deserved} GPUs "
                f"(allocated {allocated})"
            )
            hints.append(within + _reclaim_phrase(queue, queues))
    if deserved is not None and rows is not None:
        hints.extend(_deserved_phrase(queue, deserved, rows))

    eta = parse_time(_str(status.get("estimatedStartTime")))
    if eta is not None:
        wait = (eta - now).total_seconds()
        when = "now" if wait <= 0 else f"in {format_duration(wait)}"
        said = _str(scheduled.get("message") if scheduled else None) or ""
        ending = _ENDING.search(said)
        # A gang short of its starvation bound gets an ETA from the same plan that holds
        # nothing ("(not binding)" in its message): calling it a reservation would promise a
        # start that smaller gangs may still push back.
        held = "its reservation"
        if "(not binding)" in said:
            held = "expected, not binding: it holds no reservation yet"
        elif YIELDS_WHEN_DUE in said:
            # Below the size whose reservation starts ahead of the order: the cycle its
            # capacity frees, gangs of less work walked before it may take it.
            held = f"its reservation, {YIELDS_WHEN_DUE}"
        hints.append(
            f"starts at {eta.strftime('%Y-%m-%dT%H:%M:%SZ')} ({when}), {held}"
            + (f", when {ending.group(1)}" if ending else "")
        )
    elif reason in _PLANNED:
        hints.append(
            "no expected start: no reservation (running gangs without a time limit, beyond "
            "the backfill depth, or backfill off)"
        )
    return tuple(hints)


def _deserved_phrase(own: str, deserved: int, rows: list[ShareRow]) -> list[str]:
    """How its queue's deserved share came about, when it is not simply its guarantee: capped by
    demand, or raised by capacity that no guarantee holds or that other queues do not ask for."""
    mine = next((r for r in rows if r.queue == own), None)
    if mine is None or deserved == mine.guarantee:
        return []
    if mine.scaled:
        return [f"its queue {own} deserves {deserved}: {mine.message}"]
    if deserved < mine.guarantee:
        return [
            f"its queue {own} deserves {deserved} of its guarantee {mine.guarantee}: a queue "
            "deserves no more than its demand (GPUs its gangs hold and wait for); the rest "
            "is lent to other queues"
        ]
    capped = [
        f"{r.queue} {r.deserved} of {r.guarantee}"
        for r in rows
        if r.queue != own and r.demand_capped
    ]
    return [
        f"its queue {own} deserves {deserved}: its guarantee {mine.guarantee} plus "
        f"{deserved - mine.guarantee} of the GPUs that no guarantee holds or that other queues "
        "do not ask for, shared by weight"
        + (
            f" (capped by their demand, these deserve less than their guarantee: "
            f"{', '.join(capped)})"
            if capped
            else ""
        )
    ]


def _reclaim_phrase(own: str, queues: Iterable[Obj] | None) -> str:
    """Whose borrowed GPUs reclaim could take back (PRODUCT.md §4), from the queues' status."""
    if queues is None:
        return ": within its share, GPUs other queues borrowed can be reclaimed for it"
    borrowers = [
        (r.queue, r.borrowed or 0, _dict(q.get("spec")).get("reclaimable", True) is not False)
        for q in queues
        if (r := share_row(q)).queue != own and (r.borrowed or 0) > 0
    ]
    if not borrowers:
        return ": within its share, but no other queue is borrowing GPUs to give back"
    can = [f"{name} ({n})" for name, n, ok in borrowers if ok]
    cannot = [f"{name} ({n})" for name, n, ok in borrowers if not ok]
    if can:
        return (
            f": within its share, the GPUs borrowed by {', '.join(can)} can be reclaimed for "
            "it, whole gangs, when that lets it start and leaves each lender its deserved share "
            "(the message says why nothing was)"
        )
    return (
        f": within its share, but the GPUs borrowed by {', '.join(cannot)} are not reclaimable: "
        "it waits for those gangs to end"
    )


#: `pendingDetail` keys in the order of PRODUCT.md §2 (the API server returns them sorted).
DETAIL_ORDER = (
    "requestedGPUs",
    "freeGPUs",
    "bestDomain",
    "bestDomainFreeGPUs",
    "queueDeservedGPUs",
    "queueAllocatedGPUs",
)


def _ordered(detail: Mapping[str, Any]) -> dict[str, Any]:
    rank = {k: i for i, k in enumerate(DETAIL_ORDER)}
    return {k: detail[k] for k in sorted(detail, key=lambda k: (rank.get(k, len(rank)), k))}


EVENTS_SHOWN = 5


@dataclass(frozen=True, slots=True)
class EventLine:
    """One Event about the gang, as `explain` lists it: the last `EVENTS_SHOWN`, oldest first."""

    type: str
    reason: str
    message: str
    count: int
    last: datetime | None

    def text(self, now: datetime) -> str:
        ago = f"{format_duration((now - self.last).total_seconds())} ago" if self.last else "-"
        times = f" (×{self.count})" if self.count > 1 else ""
        return f"{ago:>9}  {self.type:<7} {self.reason}: {self.message}{times}"

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "reason": self.reason,
            "message": self.message,
            "count": self.count,
            "last": self.last.isoformat().replace("+00:00", "Z") if self.last else None,
        }


def recent_events(events: Iterable[Obj]) -> tuple[EventLine, ...]:
    """The gang's history as its Events tell it, which its conditions (the latest of each kind)
    do not: each bind, eviction and wait in turn. Events expire (an hour by default), so this
    is the recent history only."""
    lines: list[tuple[datetime | None, int, EventLine]] = []
    for e in events:
        last = parse_time(
            _str(e.get("lastTimestamp"))
            or _str(e.get("eventTime"))
            or _str(e.get("firstTimestamp"))
        )
        series = _dict(e.get("series"))
        count = _int(series.get("count")) or _int(e.get("count")) or 1
        # Times are to the second: within one, the order the API server stored them in.
        version = _str(_dict(e.get("metadata")).get("resourceVersion")) or ""
        line = EventLine(
            _str(e.get("type")) or "",
            _str(e.get("reason")) or "",
            _str(e.get("message")) or "",
            count,
            last,
        )
        lines.append((last, int(version) if version.isdigit() else 0, line))
    lines.sort(key=lambda t: (t[0] is not None, t[0] or datetime.min, t[1]))
    return tuple(line for _, _, line in lines[-EVENTS_SHOWN:])


def explanation(obj: Obj, now: datetime, queues: Iterable[Obj] | None = None) -> Explanation:
    namespace, name = _meta(obj)
    spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
    scheduled = condition(obj, "Scheduled")
    evicted = condition(obj, "Evicted")
    finished = condition(obj, "Finished")
    detail = status.get("pendingDetail")
    return Explanation(
        namespace=namespace,
        name=name,
        queue=_str(spec.get("queue")) or "default",
        phase=_str(status.get("phase")),
        reason=_str(scheduled.get("reason")) if scheduled else None,
        message=_str(scheduled.get("message")) if scheduled else None,
        detail=_ordered(detail) if isinstance(detail, Mapping) else None,
        position=_int(status.get("queuePosition")),
        eta=_str(status.get("estimatedStartTime")),
        would_start=would_start(obj, now, queues),
        evicted=(
            f"{evicted.get('reason')}: {evicted.get('message')}"
            if evicted is not None and evicted.get("status") == "True"
            else None
        ),
        members=members_of(obj),
        # A gang that lost members and runs on (memberFailure: keep) says so in Evicted=False.
        degraded=(
            _str(evicted.get("message"))
            if evicted is not None
            and (evicted.get("status"), evicted.get("reason")) == ("False", "MemberFailed")
            else None
        ),
        finished=(
            f"{finished.get('reason')}: {finished.get('message')}"
            if finished is not None and finished.get("status") == "True"
            else None
        ),
        not_started=(
            f"{started.get('reason')}: {started.get('message')}"
            if (started := condition(obj, "Started")) is not None
            and started.get("status") == "False"
            and status.get("phase") in ("Running", "Degraded")
            else None
        ),
    )
