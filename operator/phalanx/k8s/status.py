"""PodGroup and Queue status bodies, computed from a cycle's view and decisions (pure).

Status is written only when it changes, so these functions return exactly the owned fields, and
`diff` says which differ from what the object shows (a merge patch that sets removed fields to
null). `lastTransitionTime` moves only when a condition's status or reason changes, as the
Kubernetes API conventions ask.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from phalanx.core import GangDecision, Placement, QueueStatus
from phalanx.core.reasons import format_duration
from phalanx.core.starting import NOT_STARTED_AFTER_S, STARTING, not_running, reported
from phalanx.k8s.cluster_view import Gang, bound_members
from phalanx.quantity import format_units

OWNED_GROUP_FIELDS = (
    "phase",
    "conditions",
    "pendingDetail",
    "members",
    "bound",
    "running",
    "succeeded",
    "failed",
    "placement",
    "queuePosition",
    "estimatedStartTime",
    "queuedAt",
    "scheduledAt",
    "memberFailures",
    "observedGeneration",
    "recreate",
    "phantomDueAt",
    "evictedBarePods",
)


def rfc3339(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


PENDING_ONLY = ("queuePosition", "estimatedStartTime", "pendingDetail", "evictedBarePods")
"""Status fields that describe a gang waiting (or why it waits): the decision record removes
them, and so does the status of a gang found bound whole after a restart."""


def condition_of(status: Mapping[str, Any], ctype: str) -> Mapping[str, Any] | None:
    """The condition of type `ctype` in `status` (a status edited by hand may lack any)."""
    return next((c for c in status.get("conditions") or [] if c.get("type") == ctype), None)


def condition(
    previous: Mapping[str, Any],
    ctype: str,
    status: str,
    reason: str,
    message: str,
    now: float,
) -> dict[str, Any]:
    """A condition that keeps its transition time while status and reason stay the same."""
    old = condition_of(previous, ctype)
    keep = old is not None and old.get("status") == status and old.get("reason") == reason
    return {
        "type": ctype,
        "status": status,
        "reason": reason,
        "message": message,
        # `.get`: a status edited by hand may lack it; a crash here would stop every cycle.
        "lastTransitionTime": (old.get("lastTransitionTime") if keep and old else None)
        or rfc3339(now),
    }


def not_evicted(previous: Mapping[str, Any], now: float) -> dict[str, Any]:
    """`Evicted=False` (reason `Running`) for a gang bound whole, with a message that says
    why: bound again after an eviction (naming that eviction's reason), or never evicted in
    this run. A message already written for this state is kept, so the status written after
    the binds does not undo the one written before them."""
    old = condition_of(previous, "Evicted")
    if old is not None and old.get("status") == "True":
        message = f"bound again after its eviction ({old.get('reason') or 'Evicted'})"
    elif old is not None and old.get("message"):
        message = str(old["message"])
    else:
        message = "not evicted since it was bound"
    return condition(previous, "Evicted", "False", "Running", message, now)


def bound_before_restart(status: Mapping[str, Any], bound: int, leaf_level: str) -> str:
    """The `Scheduled` message of a gang bound whole by an operator that stopped before it said
    so: the status after the binds is written deferred (batched while other gangs bind), so a
    crash in between left a `Running` gang with no `Scheduled` condition at all, or one that
    still said why it had waited (walked: `kill -9` just after a 6-pod gang's binds). Numbers
    from its decision record (`placement`, `scheduledAt`), which the binds followed."""
    placement = status.get("placement")
    placement = placement if isinstance(placement, Mapping) else {}
    nodes = placement.get("nodes") or []
    domains = placement.get("domains")
    leaves = list((domains.get(leaf_level) if isinstance(domains, Mapping) else None) or [])
    where = ""
    if nodes and leaves:
        under = f"{len(leaves)} leaf" if len(leaves) == 1 else f"{len(leaves)} leaves"
        shown = ", ".join(str(x) for x in leaves[:4]) + (" …" if len(leaves) > 4 else "")
        where = f" on {len(nodes)} node{'' if len(nodes) == 1 else 's'} under {under} ({shown})"
    at = status.get("scheduledAt")
    return (
        f"bound {bound} pod{'' if bound == 1 else 's'}{where} as decided"
        + (f" at {at}" if at else "")
        + "; the operator stopped before it said so and found them bound when it started again"
    )


def eviction_closed(
    previous: Mapping[str, Any], phase: str, why: str, now: float
) -> dict[str, Any] | None:
    """`Evicted=False` (reason the phase it ended in) for a gang that ends while an eviction
    of it was under way, as `Evicted=True` says the gang waits to run again (PRODUCT §2) and an
    ended gang never does; None when no eviction was open. Walked: a Job (`backoffLimit: 0`)
    whose member failed was `Failed`/`WorkloadFailed` and still said "evicting the gang whole so
    that it restarts whole"."""
    old = condition_of(previous, "Evicted")
    if old is None or old.get("status") != "True":
        return None
    message = (
        f"ended {phase} ({why}) while its eviction ({old.get('reason') or 'Evicted'}) was under "
        "way: not placed again"
    )
    return condition(previous, "Evicted", "False", phase, message, now)


def kept_condition(
    previous: Mapping[str, Any], phase: str, reason: str, message: str, now: float
) -> dict[str, Any] | None:
    """`Evicted=False` for a gang that lost members and runs on (`memberFailure: keep`): reason
    `MemberFailed` with the counts while it is `Degraded`, back to `Running` once whole again;
    None when nothing changes. Walked: a `Degraded` elastic PyTorchJob's conditions still said
    "not evicted since it was bound", and only an Event (gone within the hour) said why."""
    old = condition_of(previous, "Evicted")
    if phase == "Degraded" and reason == "MemberFailed":
        return condition(previous, "Evicted", "False", "MemberFailed", message, now)
    if (
        phase == "Running"
        and old is not None
        and (old.get("status"), old.get("reason")) == ("False", "MemberFailed")
    ):
        return condition(
            previous,
            "Evicted",
            "False",
            "Running",
            "whole again: members had failed and it ran on (memberFailure: keep)",
            now,
        )
    return None


def started_condition(gang: Gang, now: float) -> dict[str, Any] | None:
    """`Started=False` when bound members of a running gang are not running, as
    `core.starting.reported` decides (a container waiting with a reason other than starting,
    such as `ImagePullBackOff`, `CreateContainerConfigError` or `CrashLoopBackOff` in a pod
    that restarts its containers; any not running `NOT_STARTED_AFTER_S` after its bind).
    The others are bound and wait at their rendezvous holding every GPU of the gang, and the
    gang said `Running` (its counts "4 bound (3 running)" alone said anything was wrong): Kueue
    has `PodsReady` for this. `True` again, once all run, only after a `False`; None when
    there is nothing to write, which is every healthy gang."""
    bound = bound_members(gang)
    stuck = reported(not_running(bound, now), now)
    old = condition_of(gang.status, "Started")
    if not stuck:
        if old is None or old.get("status") != "False":
            return None
        running = sum(1 for m in bound if m.phase == "Running")
        return condition(
            gang.status, "Started", "True", "Running", f"{running} bound members running", now
        )
    first = stuck[0]
    reason = first.reason if first.reason not in STARTING else "NotStarted"
    others = f" (and {len(stuck) - 1} more)" if len(stuck) > 1 else ""
    why = f"{reason}: {first.message}" if first.message else reason
    if reason == "NotStarted":  # the kubelet's reason, if any, in brackets
        why = f"not started {format_duration(NOT_STARTED_AFTER_S)} after its bind" + (
            f" ({first.reason})" if first.reason else ""
        )
    rest = len(bound) - len(stuck)
    holding = (
        f"the other {rest} hold their GPUs meanwhile"
        if rest > 1
        else "the other holds its GPUs meanwhile"
        if rest
        else "they hold their GPUs meanwhile"
    )
    text = (
        f"{len(stuck)} of {len(bound)} bound members not running: {first.pod} {why}{others}; "
        f"{holding}"
    )
    return condition(gang.status, "Started", "False", reason, text, now)


def merge_conditions(
    previous: Mapping[str, Any], updated: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    by_type = {c["type"]: c for c in previous.get("conditions") or []}
    for c in updated:
        by_type[c["type"]] = c
    return [by_type[t] for t in sorted(by_type)]


def placement_body(
    placement: Placement | None, pods: Mapping[str, str] | None, uids: Mapping[str, str]
) -> dict[str, Any]:
    """The decision record: domains, nodes, and pod UID → node (`pods` is keyed by pod key,
    `uids` maps those keys to UIDs). By UID, because a pod re-created under the same name by
    its controller is another pod: a restarted operator must not bind it by a record made for
    the old one."""
    body: dict[str, Any] = {}
    if placement is not None:
        body["domains"] = {k: list(v) for k, v in placement.domains.items()}
        body["nodes"] = list(placement.nodes)
    if pods is not None:
        body["pods"] = {uids[k]: v for k, v in sorted(pods.items()) if k in uids}
        body.setdefault("nodes", sorted(set(pods.values())))
    return body


def pod_counts(gang: Gang, assumed: Mapping[str, str]) -> dict[str, int]:
    live = [p for p in gang.pods if not p.deleting]
    return {
        "members": len(live) + gang.succeeded + gang.failed,
        "bound": len(gang.bound(assumed)),
        "running": sum(1 for p in live if p.phase == "Running"),
        "succeeded": gang.succeeded,
        "failed": gang.failed,
    }


def pending_status(
    gang: Gang,
    decision: GangDecision,
    assumed: Mapping[str, str],
    now: float,
) -> dict[str, Any]:
    previous = gang.status
    status: dict[str, Any] = {
        "phase": "Pending",
        **pod_counts(gang, assumed),
        "conditions": merge_conditions(
            previous,
            [condition(previous, "Scheduled", "False", decision.reason, decision.message, now)],
        ),
        "pendingDetail": decision.detail.to_status() if decision.detail else None,
        "queuePosition": decision.queue_position,
        "estimatedStartTime": rfc3339(decision.estimated_start)
        if decision.estimated_start is not None
        else None,
        "queuedAt": previous.get("queuedAt") or rfc3339(gang.group.created if gang.group else now),
        "placement": None,
        "scheduledAt": None,
        "phantomDueAt": _phantom_due_at(previous, decision, now),
    }
    return status


def _phantom_due_at(previous: Mapping[str, Any], decision: GangDecision, now: float) -> str | None:
    """When a gang with `minResources` and no pods first found its reservation due: kept while it
    still waits for its pods (its grace counts from it), gone once they exist."""
    if decision.reason != "WaitingForPods":
        return None
    shown = previous.get("phantomDueAt")
    if isinstance(shown, str) and shown:
        return shown
    return rfc3339(now) if decision.due_without_pods else None


def running_status(
    gang: Gang, assumed: Mapping[str, str], phase: str = "Running"
) -> dict[str, Any]:
    """Counts and phase of a bound (or finished) gang; conditions and placement are kept as
    written at bind. A `phantomDueAt` left from its wait for its pods is removed: a gang bound
    in the cycle its pods appeared never had a pending status written without it, and a Job's
    gang evicted again days later (planned from its template meanwhile) read as past its grace,
    holding nothing."""
    return {"phase": str(phase), **pod_counts(gang, assumed), "phantomDueAt": None}


def evicted_mark(
    previous: Mapping[str, Any], reason: str, message: str, now: float, bare_pods: int = 0
) -> dict[str, Any]:
    """The status patch that marks a gang evicted (or rolled back): the durable fact that its
    capacity is on its way back, written before any of its pods goes. No start, no placement:
    its next run gets new ones. `bare_pods`: members it deletes that no controller makes again
    (a rollback makes its bare pods again itself, so it passes none). A new eviction rewrites
    the count; the same one issued again (its members still bound a minute on, or across a
    restart, with no start in between) sees only the members left, so the larger count stays."""
    again = previous.get("scheduledAt") is None and any(
        isinstance(c, Mapping)
        and (c.get("type"), c.get("status"), c.get("reason")) == ("Evicted", "True", reason)
        for c in previous.get("conditions") or []
    )
    before = previous.get("evictedBarePods")
    if again and isinstance(before, int):
        bare_pods = max(bare_pods, before)
    return {
        "phase": "Pending",
        "placement": None,
        "scheduledAt": None,
        "evictedBarePods": bare_pods if bare_pods > 0 else None,
        "conditions": merge_conditions(
            previous, [condition(previous, "Evicted", "True", reason, message, now)]
        ),
    }


def merge_patch(target: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """`target` with a JSON merge patch (RFC 7386) applied, as the API server applies ours: maps
    merge key by key, null removes, anything else (lists included) replaces."""
    out = dict(target)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge_patch(out[key], value)
        elif isinstance(value, Mapping):
            out[key] = merge_patch({}, value)
        else:
            out[key] = value
    return out


def diff(current: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any]:
    """The merge patch that turns `current` into `desired` on the fields `desired` names.

    A map in both is diffed key by key, and a key it no longer has is sent as null: a merge
    patch merges maps, so sending the new map whole would leave the old one's other keys (a
    Queue's `allocated` that fell to nothing kept its last GPUs; a gang's `pendingDetail` would
    keep the `bestDomain` of a cycle when topology was what blocked it)."""
    patch: dict[str, Any] = {}
    for key, value in desired.items():
        old = current.get(key)
        if value is None:
            if old is not None:
                patch[key] = None
        elif isinstance(value, Mapping) and isinstance(old, Mapping):
            inner = diff(old, value)
            inner.update(dict.fromkeys(old.keys() - value.keys()))
            if inner:
                patch[key] = inner
        elif old != value:
            patch[key] = value
    return patch


def queue_status_body(
    qs: QueueStatus, usage: float, now: float, previous: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    def fmt(resources: Mapping[str, int]) -> dict[str, str]:
        return {k: format_units(k, v) for k, v in sorted(resources.items())}

    ready = (
        condition(previous or {}, "Ready", "False", "Invalid", qs.message, now)
        if qs.invalid
        else condition(previous or {}, "Ready", "True", "Ready", "", now)
    )
    return {
        "conditions": merge_conditions(previous or {}, [ready]),
        "deserved": fmt(qs.deserved),
        "allocated": fmt(qs.allocated),
        "borrowed": fmt(qs.borrowed),
        "pendingGangs": qs.pending_gangs,
        "runningGangs": qs.running_gangs,
        "fairShare": round(qs.fair_share, 6),
        "usage": round(usage, 3),
        "usageUpdatedAt": rfc3339(now),
        "message": qs.message or None,
    }
