"""A gang's whole life, decided from facts: phase, and what the operator must do about it.

Why here and not in the adapter: every rule below (a member finishing early, a member failing, a
time limit, a schedule timeout, a crash mid-bind, the workload finishing) is scheduling policy. In
the pure core the simulator replays it, the scenario tables and the hypothesis state machine test
it without a cluster, and the operator only carries the decisions out.

The state machine (PRODUCT.md §2 and §4; `docs/design.md` draws it):

    Pending ──bind decided──▶ Binding ──all bound──▶ Running ──▶ Succeeded
       ▲                        │                     │  ▲
       │        partly bound,   │                     │  │ replacements bound (keep)
       │        no bind running ▼                     ▼  │
       └──────────────── rolled back (BindFailed)   Degraded ──evict──▶ evicted whole
       └──────── evicted whole (Reclaimed, Preempted, TimeLimitExceeded, MemberFailed) ◀┘
    Pending ──scheduleTimeoutSeconds──▶ Failed;  any ──workload Failed──▶ Failed

Every input is a fact the cluster holds (pods and their phases, the PodGroup's durable status:
`scheduledAt`, `phase`, the `Evicted` condition and its transition time, `memberFailures`), plus
one thing only the running operator knows: whether it is binding the gang right now. Nothing is
a timer in memory, so a restarted operator re-decides every gang the same way.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from phalanx.core.reasons import EvictionReason, format_duration
from phalanx.core.starting import NotStarted


class Phase(enum.StrEnum):
    """`status.phase` of a PodGroup (the only values the contract allows)."""

    PENDING = "Pending"
    BINDING = "Binding"
    RUNNING = "Running"
    DEGRADED = "Degraded"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


TERMINAL = frozenset({Phase.SUCCEEDED, Phase.FAILED})


class MemberState(enum.StrEnum):
    """One pod of a gang, as the lifecycle counts it."""

    PENDING = "Pending"
    """Exists, not bound, not being deleted: waits to be placed."""
    BOUND = "Bound"
    """Bound and not finished (starting, or a phase we do not know: still holds its node)."""
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    TERMINATING = "Terminating"
    """Bound and being deleted: holds its node until it is gone, but is no longer a member."""
    LOST = "Lost"
    """Bound to a node that is gone, or NotReady for longer than `node_lost_seconds`."""


LIVE = frozenset({MemberState.BOUND, MemberState.RUNNING})


class OwnerState(enum.StrEnum):
    """What the gang's controller owner (a Job, a JobSet…) says of the workload."""

    NONE = "None"
    """No controller owner (bare pods): the pod counts decide completion."""
    ACTIVE = "Active"
    COMPLETE = "Complete"
    FAILED = "Failed"
    UNKNOWN = "Unknown"
    """Owned by a kind whose conditions are not read (or could not be): pod counts decide."""


class MemberFailure(enum.StrEnum):
    """What a running gang that drops below `minMember` does (`spec.memberFailure`)."""

    EVICT = "evict"
    KEEP = "keep"


class Action(enum.StrEnum):
    """What the operator does about a gang this cycle."""

    SCHEDULE = "Schedule"
    """Pending: the cycle places it (all or nothing)."""
    RUN = "Run"
    """Holds its capacity; members still pending (extras, replacements) are placed as they fit."""
    HOLD = "Hold"
    """Holds its capacity and nothing is to be done: a bind or an eviction is under way."""
    EVICT = "Evict"
    """Evict every bound member now, whole (`reason`)."""
    REPAIR = "Repair"
    """Partly bound, no bind running, its decision record naming every member: the cycle rolls
    it forward (binds the rest where the record says) if that still fits, back otherwise."""
    ROLL_BACK = "RollBack"
    """Partly bound, no bind running, no usable decision record: delete the bound members,
    re-queue whole."""
    FAIL = "Fail"
    """Mark the gang `Failed` (terminal)."""
    NONE = "None"
    """Finished: nothing holds capacity for it any more (or what is left is the workload's)."""


class Record(enum.StrEnum):
    """The decision record (`status.placement.pods`, pod UID → node) against the pods."""

    NONE = "None"
    MATCHES = "Matches"
    """Every bound member sits on its recorded node, and enough others are named to finish."""
    STALE = "Stale"
    """It names pods that are gone, or bound members elsewhere (an older version, a hand edit)."""


def check_record(
    recorded: Mapping[str, str] | None,
    bound: Mapping[str, str],
    pending: Iterable[str],
    need: int,
) -> tuple[Record, str]:
    """Whether a partly bound gang can be finished from its record, and if not, why (for the
    Warning Event). `recorded` and `bound` map pod UIDs to nodes; `pending` are UIDs of members
    not bound."""
    if not recorded:
        return Record.NONE, "it has no decision record"
    moved = sorted(uid for uid, node in bound.items() if recorded.get(uid) != node)
    if moved:
        return (
            Record.STALE,
            f"its decision record does not name where {len(moved)} bound pod(s) are",
        )
    named = [uid for uid in pending if uid in recorded]
    if len(bound) + len(named) < need:
        gone = len(recorded) - len(bound) - len(named)
        return Record.STALE, f"its decision record names {gone} pod(s) that no longer exist"
    return Record.MATCHES, ""


class FailReason(enum.StrEnum):
    """Reason written with `phase: Failed`."""

    SCHEDULE_TIMEOUT = "ScheduleTimeout"
    WORKLOAD_FAILED = "WorkloadFailed"
    MEMBER_FAILURES_EXCEEDED = "MemberFailuresExceeded"


@dataclass(frozen=True, slots=True)
class EvictedMark:
    """The PodGroup's `Evicted=True` condition: why, and since when (its transition time)."""

    reason: str
    since: float


@dataclass(frozen=True, slots=True)
class Disrupted:
    """Members among the failed and the terminating that something outside the workload
    stopped: their pod carries `DisruptionTarget=True` (Kubernetes sets it on a pod it evicts
    through the Eviction API, as `kubectl drain` does, on one a `NoExecute` taint, a kubelet's
    node-pressure eviction, the pod garbage collector or kube-scheduler's preemption deletes).
    `reason` is that condition's reason (`EvictionByEvictionAPI`, …) for the first of them.

    A gang that loses one is still broken (evicted whole, as for any member failure), but the
    failure is not its own: a Job's `podFailurePolicy` ignores it by the same condition, Slurm
    requeues a job whose node was drained or failed without holding it against the job, and
    Volcano tells `PodEvicted` from `PodFailed`. So it is said apart in the message and not
    counted in `memberFailures`, whose back-off is for workloads that keep crashing."""

    failed: int = 0
    terminating: int = 0
    reason: str = "DisruptionTarget"
    gone: int = 0
    """Those no longer in the API: Failed, released and deleted before a cycle saw them (a
    Job's pod under kwok goes within milliseconds); they are among the members the message
    would otherwise count as deleted."""


@dataclass(frozen=True, slots=True)
class LifecyclePolicy:
    """The operator's settings the lifecycle depends on.

    `member_failure`: the default of `spec.memberFailure` (`--member-failure`). Backoff after the
    k-th `MemberFailed` eviction: min(`backoff_max`, `backoff_base` × 2^(k−1)) seconds, so a gang
    that keeps crashing costs its controller and the API server less and less. An eviction whose
    members are still bound and not terminating `eviction_retry` seconds after it was marked is
    issued again (an eviction refused or lost, e.g. across a crash). `start_timeout`: a running
    gang one of whose bound members has not started that many seconds after its bind is
    evicted whole as a member failure (0: never), as Kueue's `waitForPodsReady` does: an image
    that cannot be pulled otherwise holds the whole gang's GPUs for as long as nobody looks.
    `member_failure_limit`: the `MemberFailed` eviction that brings `memberFailures` to it is
    the last (0: no limit): once its members are gone the gang is `Failed`
    (`MemberFailuresExceeded`), and its workload is ended with it where it can be
    (`LifecycleDecision.final`), as Kueue deactivates
    a workload after `backoffLimitCount` requeues and Slurm holds a job whose launch failed.
    Why it is needed: a Job's controller counts no start timeout against its `backoffLimit` (the
    operator suspends the Job to evict it, and a suspended Job's pods count for nothing), so a
    wrong image would otherwise be placed, time out and back off for ever.
    """

    member_failure: MemberFailure = MemberFailure.EVICT
    node_lost_seconds: float = 300.0
    backoff_base: float = 10.0
    backoff_max: float = 600.0
    eviction_retry: float = 60.0
    start_timeout: float = 0.0
    member_failure_limit: int = 0


@dataclass(frozen=True, slots=True)
class GangFacts:
    """Everything the lifecycle decides one gang from.

    `recorded_phase` is `status.phase` as the object holds it (a string: a hand-edited status
    may hold anything, and is then simply not believed). `scheduled_at` is the durable start
    (`status.scheduledAt`, written with the decision record, before the first bind).
    `bound_since`: when the first of its live members was bound, as the pods say (`run_start`).
    `binding`: this operator has a bind of the gang in flight (the one fact only memory holds;
    a restarted operator has none in flight, which is the truth). `evicting_now`: it has an
    eviction or a rollback of the gang in flight, whose `Evicted` mark the watch may not show
    yet.
    """

    id: str
    min_member: int
    members: tuple[MemberState, ...] = ()
    created: float = 0.0
    recorded_phase: str | None = None
    scheduled_at: float | None = None
    bound_since: float | None = None
    evicted: EvictedMark | None = None
    owner: OwnerState = OwnerState.NONE
    owner_failure: str = ""
    """Why its workload failed, in the workload's own words (its `Failed` condition)."""
    binding: bool = False
    evicting_now: bool = False
    member_failure: MemberFailure | None = None
    member_failures: int = 0
    disrupted: Disrupted | None = None
    not_started: NotStarted | None = None
    time_limit: float | None = None
    schedule_timeout: float | None = None
    record: Record = Record.NONE
    record_problem: str = ""


def run_start(facts: GangFacts) -> float | None:
    """When the gang's run started, for its time limit: `scheduled_at`, else when its first
    live member was bound. A PodGroup deleted and applied again while its pods run has no
    `scheduledAt`; counting from the moment it was found (as once) would let anyone who may
    delete and create PodGroups restart a gang's time limit at will, and every reservation
    planned from that limit would start late."""
    return facts.scheduled_at if facts.scheduled_at is not None else facts.bound_since


@dataclass(frozen=True, slots=True)
class LifecycleDecision:
    """The verdict on one gang.

    `need`: pods still to place all or nothing (`minMember` less the members that already
    succeeded, so a workload restarted after some members finished is not asked for more pods
    than it will make). `not_before`: a `MemberFailed` backoff that holds a `SCHEDULE` back.
    `member_failures`: the count to record (raised with a `MemberFailed` eviction).
    `evicting`: the gang's capacity is on its way back (an eviction or rollback decided now or
    under way): counted as used now, free from now on in plans, charged to no queue.
    `lingering`: the gang is over (`Succeeded`, `Failed`) but members are still bound: they hold
    capacity, charged to its queue, until they end. Walked on the dev cluster: a PyTorchJob
    (`restartPolicy: Never`) whose one worker failed was `Failed` while its Training Operator
    (`cleanPodPolicy: None`, its default) left the 3 other pods running; their 24 GPUs were
    charged to no queue, whose allocation said 32 where 56 were held.
    """

    phase: Phase
    action: Action
    reason: str = ""
    message: str = ""
    need: int = 0
    not_before: float | None = None
    member_failures: int = 0
    evicting: bool = False
    lingering: bool = False
    final: bool = False
    """A `MemberFailed` eviction that reaches `LifecyclePolicy.member_failure_limit`: the gang
    ends `Failed`, and its workload is ended rather than suspended to run again."""

    @property
    def holds_capacity(self) -> bool:
        return self.lingering or self.action in (
            Action.RUN,
            Action.HOLD,
            Action.EVICT,
            Action.ROLL_BACK,
            Action.REPAIR,
        )


def member_lost(node_exists: bool, not_ready_since: float | None, now: float, after: float) -> bool:
    """Whether a bound member counts as lost: its node is gone, or NotReady for over `after` s."""
    if not node_exists:
        return True
    return not_ready_since is not None and now - not_ready_since > after


def backoff_seconds(failures: int, policy: LifecyclePolicy) -> float:
    """Delay before a gang evicted `failures` times for `MemberFailed` may be placed again."""
    if failures <= 0:
        return 0.0
    exponent = min(failures - 1, 62)  # 2^62 × base is past any cap: no overflow
    return float(min(policy.backoff_max, policy.backoff_base * math.pow(2.0, exponent)))


@dataclass(frozen=True, slots=True)
class _Counts:
    live: int
    pending: int
    succeeded: int
    failed: int
    terminating: int
    lost: int

    @staticmethod
    def of(members: Iterable[MemberState]) -> _Counts:
        c = dict.fromkeys(MemberState, 0)
        for m in members:
            c[m] += 1
        return _Counts(
            live=c[MemberState.BOUND] + c[MemberState.RUNNING],
            pending=c[MemberState.PENDING],
            succeeded=c[MemberState.SUCCEEDED],
            failed=c[MemberState.FAILED],
            terminating=c[MemberState.TERMINATING],
            lost=c[MemberState.LOST],
        )


def gives_up(failures: int, policy: LifecyclePolicy) -> bool:
    """Whether `failures` member failures reach the limit (`member_failure_limit`, 0: none)."""
    return 0 < policy.member_failure_limit <= failures


def decide(facts: GangFacts, policy: LifecyclePolicy, now: float) -> LifecycleDecision:
    """Phase and action for one gang (see the module docstring). Pure and total: any facts,
    however odd (a hand-edited status, a phase the contract does not know), get a decision."""
    d = _decide(facts, policy, now)
    if (
        d.action is Action.EVICT
        and d.reason == EvictionReason.MEMBER_FAILED
        and gives_up(d.member_failures, policy)
    ):
        # The eviction that reaches the limit, or that one issued again (it was lost).
        limit = policy.member_failure_limit
        return replace(
            d,
            final=True,
            message=f"{d.message}; member failure {d.member_failures} of at most {limit} "
            "(--member-failure-limit): the gang ends Failed",
        )
    return d


def _decide(facts: GangFacts, policy: LifecyclePolicy, now: float) -> LifecycleDecision:
    n = _Counts.of(facts.members)
    need = max(0, facts.min_member - n.succeeded)
    failures = max(0, facts.member_failures)
    recorded = facts.recorded_phase

    # Terminal states stay terminal. `Failed` always; `Succeeded` unless live members contradict
    # it (a status edited by hand is re-decided from the cluster).
    # Over, with members still bound: they hold capacity until they end (`lingering`).
    lingering = n.live > 0
    if recorded == Phase.FAILED:
        return LifecycleDecision(
            Phase.FAILED, Action.NONE, need=need, member_failures=failures, lingering=lingering
        )
    if recorded == Phase.SUCCEEDED and n.live == 0:
        return LifecycleDecision(Phase.SUCCEEDED, Action.NONE, need=need, member_failures=failures)

    # Its last member failure (`member_failure_limit`) ends it once its members are gone
    # (until then its eviction is under way, and issued again if it was lost), whatever its
    # workload says meanwhile: the eviction that reached the limit ended the workload too.
    ev = facts.evicted
    held = n.live + n.terminating + n.lost
    last = (
        ev is not None
        and ev.reason == EvictionReason.MEMBER_FAILED
        and gives_up(failures, policy)
        and (facts.scheduled_at is None or facts.scheduled_at <= ev.since)
    )
    if last and not held:
        return LifecycleDecision(
            Phase.FAILED,
            Action.FAIL,
            FailReason.MEMBER_FAILURES_EXCEEDED,
            f"evicted for member failures {failures} times, at most "
            f"{policy.member_failure_limit} (--member-failure-limit): not placed again; fix "
            "what failed, then delete its workload (and a hand-written PodGroup) and apply "
            "them again",
            need=need,
            member_failures=failures,
        )

    # The workload's own verdict wins when it has one.
    if facts.owner is OwnerState.COMPLETE:
        return LifecycleDecision(
            Phase.SUCCEEDED, Action.NONE, need=need, member_failures=failures, lingering=lingering
        )
    if facts.owner is OwnerState.FAILED and not last:
        return LifecycleDecision(
            Phase.FAILED,
            Action.FAIL,
            FailReason.WORKLOAD_FAILED,
            "its workload reports Failed"
            + (f" ({facts.owner_failure})" if facts.owner_failure else ""),
            need=need,
            member_failures=failures,
            lingering=lingering,
        )

    if facts.evicting_now:
        # Our eviction (or rollback) is under way, its mark perhaps not seen yet: the capacity
        # is on its way back, so the gang is neither charged to its queue nor a victim again
        # (a reclaim decided twice in two cycles would evict again or pick other victims).
        return LifecycleDecision(
            Phase.PENDING, Action.HOLD, evicting=True, need=need, member_failures=failures
        )
    if facts.binding:
        return LifecycleDecision(Phase.BINDING, Action.HOLD, need=need, member_failures=failures)

    # An eviction marked after the gang last started and not finished yet: wait for it, and
    # issue it again if its members are still there long after (refused, or lost in a crash).
    if ev is not None and held and (facts.scheduled_at is None or facts.scheduled_at <= ev.since):
        if n.live and now - ev.since > policy.eviction_retry:
            return LifecycleDecision(
                Phase.PENDING,
                Action.EVICT,
                ev.reason,
                f"eviction ({ev.reason}) issued again: {n.live} member(s) still bound "
                f"{format_duration(now - ev.since)} after it",
                evicting=True,
                need=need,
                member_failures=failures,
            )
        return LifecycleDecision(
            Phase.PENDING,
            Action.HOLD,
            ev.reason,
            _leaving(n, ev, now),
            evicting=True,
            need=need,
            member_failures=failures,
        )

    owned = facts.owner is OwnerState.ACTIVE
    if n.live == 0 and n.succeeded >= facts.min_member and not owned and n.pending == 0:
        return LifecycleDecision(Phase.SUCCEEDED, Action.NONE, need=need, member_failures=failures)

    whole = n.live + n.succeeded >= facts.min_member and n.live + n.succeeded > 0
    ran = recorded in (Phase.RUNNING, Phase.DEGRADED)
    limit, started = facts.time_limit, run_start(facts)
    ran_for = now - started if started is not None else 0.0
    if n.live and limit is not None and ran_for >= limit and (whole or ran):
        return LifecycleDecision(
            Phase.DEGRADED if ran and not whole else Phase.RUNNING,
            Action.EVICT,
            EvictionReason.TIME_LIMIT_EXCEEDED,
            f"ran {format_duration(ran_for)}: its time limit of {format_duration(limit)} is up",
            evicting=True,
            need=need,
            member_failures=failures,
        )
    stuck = facts.not_started
    evicts = (facts.member_failure or policy.member_failure) is MemberFailure.EVICT
    since = stuck.since if stuck is not None and not stuck.ran else None
    if (
        whole
        and ran
        and evicts
        and stuck
        and since is not None
        and 0 < policy.start_timeout <= now - since
    ):
        return LifecycleDecision(
            Phase.RUNNING,
            Action.EVICT,
            EvictionReason.MEMBER_FAILED,
            f"{stuck.pod} not started {format_duration(now - since)} after its bind"
            + (f" ({stuck.reason})" if stuck.reason else "")
            + f", past the start timeout of {format_duration(policy.start_timeout)}; evicting "
            "the gang whole so that it restarts whole",
            evicting=True,
            need=need,
            member_failures=failures + 1,
        )
    if whole:
        # With nothing live (enough succeeded, but the owner has not said it is done, or more
        # members are to come) nothing holds capacity; later members are placed as extras.
        return LifecycleDecision(Phase.RUNNING, Action.RUN, need=need, member_failures=failures)

    gone = n.failed + n.lost + n.terminating
    if ran and (n.live or gone):
        # A member deleted outright (no finalizer holds it) is not there to count: it is the
        # difference, so the numbers in the message add up to minMember. Its controller may
        # have made it again already (a PyTorchJob's pod of the same name, within the same
        # second): that new pod is pending, and said so. Why that is still a member failure,
        # and a workload scaled up again while it runs is one too: see `docs/design.md`.
        deleted = max(0, facts.min_member - (n.live + n.succeeded + gone))
        again = min(n.pending, deleted)
        d = facts.disrupted or Disrupted()
        out_failed, out_terminating = min(d.failed, n.failed), min(d.terminating, n.terminating)
        out_gone = min(d.gone, deleted)
        outside = out_failed + out_terminating + out_gone
        removed = n.terminating - out_terminating + deleted - out_gone
        own = n.failed - out_failed + removed
        evicted = f", {outside} evicted from outside ({d.reason})" if outside else ""
        what = (
            f"{n.live + n.succeeded} of {facts.min_member} members left "
            f"({n.failed - out_failed} failed, {n.lost} lost, {removed} deleted{evicted}"
            + (f"; {again} new pod{'s' if again > 1 else ''} pending" if again else "")
            + ")"
        )
        if (facts.member_failure or policy.member_failure) is MemberFailure.KEEP:
            return LifecycleDecision(
                Phase.DEGRADED,
                Action.RUN,
                "MemberFailed",
                f"{what}; kept running (memberFailure: keep), replacements placed as they fit",
                need=need,
                member_failures=failures,
            )
        # Only a failure of its own counts (and backs off): members evicted from outside or on
        # a lost node say nothing about the workload (`Disrupted`).
        return LifecycleDecision(
            Phase.DEGRADED,
            Action.EVICT,
            EvictionReason.MEMBER_FAILED,
            what
            + "; evicting the gang whole so that it restarts whole"
            + ("" if own else f" (no failure of its own: memberFailures stays {failures})"),
            need=need,
            member_failures=failures + 1 if own else failures,
            evicting=True,
        )

    if n.live:
        # Partly bound, never whole, and no bind of ours running: a crash or a lost bind.
        if facts.record is Record.MATCHES:
            return LifecycleDecision(
                Phase.BINDING,
                Action.REPAIR,
                EvictionReason.BIND_FAILED,
                f"left partly bound ({n.live} of {need} bound) with no bind in progress",
                need=need,
                member_failures=failures,
            )
        return LifecycleDecision(
            Phase.BINDING,
            Action.ROLL_BACK,
            EvictionReason.BIND_FAILED,
            f"left partly bound ({n.live} of {need} bound) with no bind in progress, and "
            + (facts.record_problem or "it has no decision record"),
            evicting=True,
            need=need,
            member_failures=failures,
        )

    # Pending.
    if facts.schedule_timeout is not None and n.pending < need:
        since = max(facts.created, ev.since if ev is not None else facts.created)
        waited = now - since
        if waited > facts.schedule_timeout:
            return LifecycleDecision(
                Phase.FAILED,
                Action.FAIL,
                FailReason.SCHEDULE_TIMEOUT,
                f"{n.pending} of {need} pods existed after {format_duration(waited)}, past its "
                f"scheduleTimeoutSeconds ({format_duration(facts.schedule_timeout)})",
                need=need,
                member_failures=failures,
            )
    not_before = None
    if ev is not None and ev.reason == EvictionReason.MEMBER_FAILED and failures:
        until = ev.since + backoff_seconds(failures, policy)
        if until > now:
            not_before = until
    return LifecycleDecision(
        Phase.PENDING, Action.SCHEDULE, not_before=not_before, need=need, member_failures=failures
    )


def _leaving(n: _Counts, ev: EvictedMark, now: float) -> str:
    """What an eviction under way waits for, in numbers: "evicted (MemberFailed) 12s ago; 1
    member still to go (1 terminating) before it is placed again". Until then the gang's status
    still said `Scheduled` "bound 3 pods" with 3 bound — for a minute after a node was deleted,
    while the pod on it waited for the pod garbage collector."""
    parts = [
        f"{count} {what}"
        for count, what in (
            (n.live, "still bound"),
            (n.terminating, "terminating"),
            (n.lost, "on a lost node"),
        )
        if count
    ]
    held = n.live + n.terminating + n.lost
    return (
        f"evicted ({ev.reason}) {format_duration(now - ev.since)} ago; {held} "
        f"member{'s' if held != 1 else ''} still to go ({', '.join(parts)}) before it is placed "
        "again"
    )
