"""Which bound members of a running gang have not started: one rule, read twice.

A bound member that does not run (its image cannot be pulled, its container restarts in a loop)
leaves the rest of its gang waiting at their rendezvous, every GPU of the gang held, while the
gang says `Running`. The gang's `Started` condition names such a member, and the start timeout
(`LifecyclePolicy.start_timeout`, like Kueue's `waitForPodsReady`) evicts the gang for it. Both
read the rule here, so that the member the condition names is the one the timeout counts from,
and the simulator and the tests see the rule without a cluster.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

STARTING = frozenset({"", "ContainerCreating", "PodInitializing"})
"""Waiting reasons of a bound pod on its way to running: reported only after
`NOT_STARTED_AFTER_S` (any other reason, such as `ImagePullBackOff`, at once)."""

NOT_STARTED_AFTER_S = 120.0
"""How long a bound member may take to start before its gang says so whatever its reason: image
pulls of multi-GB training images take a minute or more."""


@dataclass(frozen=True, slots=True)
class BoundMember:
    """A bound, not terminating member as the kubelet shows it: its pod's phase, the reason and
    message of its first waiting container (None when none waits) and when it was bound (None
    when the pod does not say)."""

    name: str
    phase: str
    waiting: tuple[str, str] | None = None
    bound_at: float | None = None


@dataclass(frozen=True, slots=True)
class NotStarted:
    """A bound member of a running gang that is not running: its name, the kubelet's reason
    (`ImagePullBackOff`, …, or "" while it is being created), when it was bound (None: unknown)
    and the kubelet's message. `ran`: its pod is `Running` and a container of it restarts in a
    loop (`CrashLoopBackOff`): it started once, so the start timeout does not count it."""

    pod: str
    reason: str
    since: float | None
    message: str = ""
    ran: bool = False


def not_running(members: Iterable[BoundMember], now: float) -> tuple[NotStarted, ...]:
    """The members not running, the longest waiting first (a member whose bind time is unknown
    as if bound `now`), then by name: a `Pending` pod on its node, whatever it waits for, and a
    `Running` pod whose container waits for a reason other than starting (a restart loop). A
    finished pod is not here: the lifecycle counts it as succeeded or failed."""
    out: list[NotStarted] = []
    for m in members:
        reason, message = m.waiting or ("", "")
        if m.phase == "Pending":
            out.append(NotStarted(m.name, reason, m.bound_at, message))
        elif m.phase == "Running" and reason not in STARTING:
            out.append(NotStarted(m.name, reason, m.bound_at, message, ran=True))
    return tuple(sorted(out, key=lambda s: (-_waited(s, now), s.pod)))


def reported(stuck: Sequence[NotStarted], now: float) -> tuple[NotStarted, ...]:
    """Those of `stuck` the gang's `Started=False` names: a reason other than starting at once,
    any after `NOT_STARTED_AFTER_S` (a pull of a large image is no news before that)."""
    return tuple(
        s for s in stuck if s.reason not in STARTING or _waited(s, now) >= NOT_STARTED_AFTER_S
    )


def timing_out(stuck: Sequence[NotStarted]) -> NotStarted | None:
    """The member the start timeout counts from: the one waiting longest that never ran and
    whose bind time is known. A member with no bind time is left out, not counted from t=0,
    which would evict its gang at once."""
    return next((s for s in stuck if not s.ran and s.since is not None), None)


def _waited(s: NotStarted, now: float) -> float:
    return now - s.since if s.since is not None else 0.0
