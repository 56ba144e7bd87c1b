"""The typed reasons of PRODUCT.md §2 and the wording of the messages that carry numbers.

Reasons are a `StrEnum` so that they compare equal to the exact strings written to PodGroup
conditions; tools and tests match on those strings. Messages are for people: durations are
relative ("in 1h05m") because the core has no clock or time zone; the operator renders
`estimatedStartTime` as RFC 3339 itself.
"""

from __future__ import annotations

import enum


class Reason(enum.StrEnum):
    """Reason of the `Scheduled` condition of a PodGroup."""

    SCHEDULED = "Scheduled"
    BACKFILLED = "Backfilled"
    WAITING_FOR_PODS = "WaitingForPods"
    QUEUE_NOT_FOUND = "QueueNotFound"
    QUEUE_FORBIDDEN = "QueueForbidden"
    QUEUE_OVER_LIMIT = "QueueOverLimit"
    INSUFFICIENT_CAPACITY = "InsufficientCapacity"
    TOPOLOGY_UNSATISFIABLE = "TopologyUnsatisfiable"
    WAITING_FOR_RESERVATION = "WaitingForReservation"
    INVALID = "Invalid"
    BACKING_OFF = "BackingOff"
    """Evicted for `MemberFailed` again and again: waits out its backoff before it is placed."""


class EvictionReason(enum.StrEnum):
    """Reason of the `Evicted` condition: every way a gang loses its capacity before it ends
    (the cycle decides `Reclaimed`, `Preempted` and `ReservationDue`, the lifecycle the
    others)."""

    RECLAIMED = "Reclaimed"
    PREEMPTED = "Preempted"
    TIME_LIMIT_EXCEEDED = "TimeLimitExceeded"
    MEMBER_FAILED = "MemberFailed"
    BIND_FAILED = "BindFailed"
    RESERVATION_DUE = "ReservationDue"
    """Started speculatively on held capacity (`Policy.speculate`) and still running when a
    gang's start came due on it."""


def format_duration(seconds: float) -> str:
    """Short human duration: 45s, 12m, 1h05m, 2d03h."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s}s"
    m, s = divmod(s, 60)
    if m < 60:
        return f"{m}m" if s == 0 else f"{m}m{s:02d}s"
    h, m = divmod(m, 60)
    if h < 24:
        return f"{h}h{m:02d}m"
    d, h = divmod(h, 24)
    return f"{d}d{h:02d}h"


def units(amount: int, gpus: bool) -> str:
    """'64 GPUs' / '1 GPU' or '3 pods' — gangs without GPUs are counted in pods."""
    noun = "GPU" if gpus else "pod"
    return f"{amount} {noun}{'' if amount == 1 else 's'}"


YIELDS_WHEN_DUE = "binding until then, but gangs ahead of it in the order may start there first"
"""The clause of a waiting gang's message whose binding reservation is not honoured when it
comes due (below the size that starts ahead of the order): `phalanx explain` reads it."""


def eta_phrase(start: float | None, now: float, ending: int) -> str:
    """'; expected start in 25m when 2 running gangs end' (or no ETA)."""
    if start is None:
        return ""
    if start <= now:
        return "; expected start now, as capacity being freed comes back"
    if ending <= 0:
        when = "capacity frees up"
    elif ending == 1:
        when = "1 running gang ends"
    else:
        when = f"{ending} running gangs end"
    return f"; expected start in {format_duration(start - now)} when {when}"


def bare_evicted_phrase(deleted: int, failed: int, reason: str, ago: float) -> str:
    """'its eviction (Reclaimed) 3m ago deleted 2 pods that no controller makes again: apply them
    again to run the gang (…)' — why a gang of bare pods waits for ever, and the way out. Its
    failed bare pods are named too: they stay `Failed` (a pod is never run again), so applying
    the same manifest again leaves them as they are until they are deleted."""

    def pods(n: int, kind: str = "") -> str:
        return f"{n} {kind}pod{'' if n == 1 else 's'}"

    what = [f"deleted {pods(deleted)}"] if deleted else []
    if failed:
        what.append(f"left {pods(failed, 'failed ')}")
    them = "it" if deleted + failed == 1 else "them"
    todo = f"apply {them} again"
    if failed:
        todo = f"delete the failed pod{'' if failed == 1 else 's'} and {todo}"
    return (
        f"its eviction ({reason}) {format_duration(ago)} ago {' and '.join(what)} that no "
        f"controller makes again: {todo} to run the gang (pods under a Job, JobSet or other "
        "controller are made again by it)"
    )


def too_few_phrase(kind: str, name: str, pods: int, need: int) -> str:
    """'its Job train runs at most 2 pods at once, fewer than the 4 it needs together: …'"""
    return (
        f"its {kind} {name} runs at most {pods} pod{'' if pods == 1 else 's'} at once, fewer "
        f"than the {need} it needs together: it starts only if other pods join its PodGroup "
        f"(lower spec.minMember to {pods}, or let the {kind} run {need} at once)"
    )
