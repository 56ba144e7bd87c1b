"""Every lifecycle transition, each case written out by hand (phalanx.core.lifecycle).

Times: the gang was created at t=0, `now` is t=1000 unless a case says otherwise. Members are
written as a string, one letter a pod: P pending, B bound, R running, S succeeded, F failed,
T terminating, L lost.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest

from phalanx.core.lifecycle import (
    Action,
    Disrupted,
    EvictedMark,
    GangFacts,
    LifecyclePolicy,
    MemberFailure,
    MemberState,
    OwnerState,
    Phase,
    Record,
    backoff_seconds,
    check_record,
    decide,
    member_lost,
)
from phalanx.core.starting import NotStarted

LETTER = {
    "P": MemberState.PENDING,
    "B": MemberState.BOUND,
    "R": MemberState.RUNNING,
    "S": MemberState.SUCCEEDED,
    "F": MemberState.FAILED,
    "T": MemberState.TERMINATING,
    "L": MemberState.LOST,
}
NOW = 1000.0
POLICY = LifecyclePolicy()


def facts(members: str, min_member: int = 4, **kw: object) -> GangFacts:
    return GangFacts(
        id="ns/g",
        min_member=min_member,
        members=tuple(LETTER[c] for c in members),
        **kw,  # type: ignore[arg-type]
    )


@dataclass(frozen=True)
class Case:
    name: str
    facts: GangFacts
    phase: Phase
    action: Action
    reason: str = ""
    need: int | None = None
    now: float = NOW


CASES = [
    # -- pending ----------------------------------------------------------------------------
    Case("new gang, all pods exist", facts("PPPP"), Phase.PENDING, Action.SCHEDULE, need=4),
    Case("new gang, pods still coming", facts("PP"), Phase.PENDING, Action.SCHEDULE, need=4),
    Case("extras exist beyond minMember", facts("PPPPPP"), Phase.PENDING, Action.SCHEDULE),
    Case(
        "restarted after 2 members had succeeded: only 2 more needed",
        facts("SSPP", recorded_phase="Pending"),
        Phase.PENDING,
        Action.SCHEDULE,
        need=2,
    ),
    # -- binding ----------------------------------------------------------------------------
    Case(
        "our bind is in flight",
        facts("BBPP", binding=True, recorded_phase="Binding"),
        Phase.BINDING,
        Action.HOLD,
    ),
    Case(
        "our eviction is in flight, its mark not seen yet: held, capacity on its way back",
        facts("RRRR", binding=True, evicting_now=True, recorded_phase="Running"),
        Phase.PENDING,
        Action.HOLD,
    ),
    Case(
        "partly bound and no bind in flight (a crash): rolled back",
        facts("BBPP", recorded_phase="Binding", scheduled_at=900.0),
        Phase.BINDING,
        Action.ROLL_BACK,
        "BindFailed",
    ),
    Case(
        "partly bound after a crash, its decision record names every member: repaired",
        facts("BBPP", recorded_phase="Binding", scheduled_at=900.0, record=Record.MATCHES),
        Phase.BINDING,
        Action.REPAIR,
    ),
    Case(
        "partly bound, its decision record stale (edited, or an older version's): rolled back",
        facts(
            "BBPP",
            recorded_phase="Binding",
            record=Record.STALE,
            record_problem="its decision record names 2 pod(s) that no longer exist",
        ),
        Phase.BINDING,
        Action.ROLL_BACK,
        "BindFailed",
    ),
    Case(
        "all bound but the Running report was lost in a crash: running",
        facts("BBRR", recorded_phase="Binding", scheduled_at=900.0),
        Phase.RUNNING,
        Action.RUN,
    ),
    # -- running ----------------------------------------------------------------------------
    Case(
        "all running",
        facts("RRRR", recorded_phase="Running", scheduled_at=900.0),
        Phase.RUNNING,
        Action.RUN,
    ),
    Case(
        "one member finished first: the others keep running",
        facts("SRRR", recorded_phase="Running", scheduled_at=900.0),
        Phase.RUNNING,
        Action.RUN,
    ),
    Case(
        "three finished, one running",
        facts("SSSR", recorded_phase="Running", scheduled_at=900.0),
        Phase.RUNNING,
        Action.RUN,
    ),
    Case(
        "running with an extra waiting to be placed",
        facts("RRRRP", recorded_phase="Running", scheduled_at=900.0),
        Phase.RUNNING,
        Action.RUN,
    ),
    Case(
        "running past its time limit (100 s, started 900 s ago)",
        facts("RRRR", recorded_phase="Running", scheduled_at=100.0, time_limit=100.0),
        Phase.RUNNING,
        Action.EVICT,
        "TimeLimitExceeded",
    ),
    Case(
        "within its time limit",
        facts("RRRR", recorded_phase="Running", scheduled_at=950.0, time_limit=100.0),
        Phase.RUNNING,
        Action.RUN,
    ),
    Case(
        "PodGroup applied again while its pods run (no scheduledAt, no phase): its limit "
        "counts from its first member's bind, 150 s ago",
        facts("RRRR", bound_since=850.0, time_limit=100.0),
        Phase.RUNNING,
        Action.EVICT,
        "TimeLimitExceeded",
    ),
    Case(
        "no scheduledAt, members bound 50 s ago: within its 100-s limit",
        facts("RRRR", bound_since=950.0, time_limit=100.0),
        Phase.RUNNING,
        Action.RUN,
    ),
    Case(
        "scheduledAt is the start when written (binds come after it): 50 s of 100",
        facts(
            "RRRR",
            recorded_phase="Running",
            scheduled_at=950.0,
            bound_since=800.0,
            time_limit=100.0,
        ),
        Phase.RUNNING,
        Action.RUN,
    ),
    # -- member failure ---------------------------------------------------------------------
    Case(
        "a member failed, memberFailure evict (default): evicted whole",
        facts("FRRR", recorded_phase="Running", scheduled_at=900.0),
        Phase.DEGRADED,
        Action.EVICT,
        "MemberFailed",
    ),
    Case(
        "a member deleted by hand (terminating)",
        facts("TRRR", recorded_phase="Running", scheduled_at=900.0),
        Phase.DEGRADED,
        Action.EVICT,
        "MemberFailed",
    ),
    Case(
        "a member's node lost",
        facts("LRRR", recorded_phase="Running", scheduled_at=900.0),
        Phase.DEGRADED,
        Action.EVICT,
        "MemberFailed",
    ),
    Case(
        "a member failed, memberFailure keep: runs on degraded",
        facts(
            "FRRR",
            recorded_phase="Running",
            scheduled_at=900.0,
            member_failure=MemberFailure.KEEP,
        ),
        Phase.DEGRADED,
        Action.RUN,
        "MemberFailed",
    ),
    Case(
        "keep: a replacement is pending beside the failed one",
        facts(
            "FRRRP",
            recorded_phase="Degraded",
            scheduled_at=900.0,
            member_failure=MemberFailure.KEEP,
        ),
        Phase.DEGRADED,
        Action.RUN,
        "MemberFailed",
    ),
    Case(
        "keep: the replacement is bound, whole again",
        facts(
            "FRRRR",
            recorded_phase="Degraded",
            scheduled_at=900.0,
            member_failure=MemberFailure.KEEP,
        ),
        Phase.RUNNING,
        Action.RUN,
    ),
    Case(
        "a succeeded member and a failed one: still below minMember",
        facts("SFRR", recorded_phase="Running", scheduled_at=900.0),
        Phase.DEGRADED,
        Action.EVICT,
        "MemberFailed",
    ),
    Case(
        "a member deleted and made again before the operator saw it: a member failure",
        facts("RRRP", recorded_phase="Running", scheduled_at=900.0),
        Phase.DEGRADED,
        Action.EVICT,
        "MemberFailed",
    ),
    Case(
        "keep, degraded, its replacement pending: still degraded",
        facts(
            "RRRP",
            recorded_phase="Degraded",
            scheduled_at=900.0,
            member_failure=MemberFailure.KEEP,
        ),
        Phase.DEGRADED,
        Action.RUN,
        "MemberFailed",
    ),
    Case(
        "a failed member beside a whole gang (extras) is no failure of the gang",
        facts("FRRRR", recorded_phase="Running", scheduled_at=900.0),
        Phase.RUNNING,
        Action.RUN,
    ),
    # -- evictions under way ----------------------------------------------------------------
    Case(
        "evicted 10 s ago, members terminating: hold, nothing new",
        facts(
            "TTTT",
            recorded_phase="Pending",
            evicted=EvictedMark("Reclaimed", 990.0),
            scheduled_at=None,
        ),
        Phase.PENDING,
        Action.HOLD,
        "Reclaimed",
    ),
    Case(
        "evicted 10 s ago, members not yet terminating: hold",
        facts("RRRR", recorded_phase="Pending", evicted=EvictedMark("Preempted", 990.0)),
        Phase.PENDING,
        Action.HOLD,
        "Preempted",
    ),
    Case(
        "evicted 500 s ago and members still bound: evicted again",
        facts("RRRR", recorded_phase="Pending", evicted=EvictedMark("Reclaimed", 500.0)),
        Phase.PENDING,
        Action.EVICT,
        "Reclaimed",
    ),
    Case(
        "evicted, pods gone, the controller's new pods pending: scheduled again",
        facts("PPPP", recorded_phase="Pending", evicted=EvictedMark("Reclaimed", 500.0)),
        Phase.PENDING,
        Action.SCHEDULE,
    ),
    Case(
        "an old Evicted mark from before the last start does not hold a running gang",
        facts(
            "RRRR",
            recorded_phase="Running",
            evicted=EvictedMark("Reclaimed", 500.0),
            scheduled_at=600.0,
        ),
        Phase.RUNNING,
        Action.RUN,
    ),
    # -- completion -------------------------------------------------------------------------
    Case(
        "all members succeeded, no owner",
        facts("SSSS", recorded_phase="Running", scheduled_at=900.0),
        Phase.SUCCEEDED,
        Action.NONE,
    ),
    Case(
        "all succeeded but the Job has not said Complete (more completions may come)",
        facts("SSSS", recorded_phase="Running", scheduled_at=900.0, owner=OwnerState.ACTIVE),
        Phase.RUNNING,
        Action.RUN,
    ),
    Case(
        "the Job says Complete",
        facts("SSSS", recorded_phase="Running", owner=OwnerState.COMPLETE),
        Phase.SUCCEEDED,
        Action.NONE,
    ),
    Case(
        "Succeeded stays Succeeded after the pods are deleted",
        facts("", recorded_phase="Succeeded"),
        Phase.SUCCEEDED,
        Action.NONE,
    ),
    Case(
        "a status edited by hand to Succeeded while members run: re-decided",
        facts("RRRR", recorded_phase="Succeeded", scheduled_at=900.0),
        Phase.RUNNING,
        Action.RUN,
    ),
    Case(
        "a phase the contract does not know: re-decided from the cluster",
        facts("RRRR", recorded_phase="Exploded", scheduled_at=900.0),
        Phase.RUNNING,
        Action.RUN,
    ),
    # -- failure ----------------------------------------------------------------------------
    Case(
        "the Job failed",
        facts("FFRR", recorded_phase="Running", owner=OwnerState.FAILED),
        Phase.FAILED,
        Action.FAIL,
        "WorkloadFailed",
    ),
    Case(
        "Failed is terminal, whatever the pods do",
        facts("PPPP", recorded_phase="Failed"),
        Phase.FAILED,
        Action.NONE,
    ),
    Case(
        "short of pods past scheduleTimeoutSeconds (100 s, created 1000 s ago)",
        facts("PP", schedule_timeout=100.0),
        Phase.FAILED,
        Action.FAIL,
        "ScheduleTimeout",
    ),
    Case(
        "short of pods within scheduleTimeoutSeconds",
        facts("PP", schedule_timeout=2000.0),
        Phase.PENDING,
        Action.SCHEDULE,
    ),
    Case(
        "all pods exist past the timeout: waiting for capacity is no timeout",
        facts("PPPP", schedule_timeout=100.0),
        Phase.PENDING,
        Action.SCHEDULE,
    ),
    Case(
        "the timeout counts from the last eviction, not creation",
        facts("PP", schedule_timeout=100.0, evicted=EvictedMark("Reclaimed", 950.0)),
        Phase.PENDING,
        Action.SCHEDULE,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_transition(case: Case) -> None:
    got = decide(case.facts, POLICY, case.now)
    assert (got.phase, got.action) == (case.phase, case.action), got.message
    if case.reason:
        assert got.reason == case.reason
    if case.need is not None:
        assert got.need == case.need


def test_member_failed_eviction_counts_failures_and_the_next_schedule_backs_off() -> None:
    """Evicted for MemberFailed at t=1000 with 2 earlier failures: the count becomes 3; the
    next SCHEDULE waits 10 × 2^(3−1) = 40 s, until t=1040."""
    ev = decide(facts("FRRR", recorded_phase="Running", member_failures=2), POLICY, NOW)
    assert ev.action is Action.EVICT and ev.member_failures == 3
    pending = facts(
        "PPPP",
        recorded_phase="Pending",
        member_failures=3,
        evicted=EvictedMark("MemberFailed", 1000.0),
    )
    assert decide(pending, POLICY, 1010.0).not_before == 1040.0
    assert decide(pending, POLICY, 1041.0).not_before is None


LIMIT3 = LifecyclePolicy(member_failure_limit=3)


def test_the_member_failure_that_reaches_the_limit_is_the_last_and_the_gang_ends_failed() -> None:
    """`--member-failure-limit 3`, 2 earlier failures: the eviction at t=1000 makes it 3 and is
    the last (`final`: its workload is ended with it). While its members go it is an eviction
    under way like any other, issued again (still `final`) if 2 members are still bound at
    t=1061, past `eviction_retry` (60 s), and its workload's failure (the deadline the last
    eviction gave it) is not the verdict; once they are gone the gang is `Failed`
    (`MemberFailuresExceeded`). With 1 earlier failure the eviction is an ordinary one, and
    without a limit none is ever the last."""
    running = facts("FRRR", recorded_phase="Running", member_failures=2)
    last = decide(running, LIMIT3, NOW)
    assert (last.action, last.member_failures, last.final) == (Action.EVICT, 3, True)
    assert last.message.endswith(
        "; member failure 3 of at most 3 (--member-failure-limit): the gang ends Failed"
    ), last.message
    assert not decide(replace(running, member_failures=1), LIMIT3, NOW).final
    assert not decide(running, POLICY, NOW).final
    leaving = facts(
        "TTRR",
        recorded_phase="Pending",
        member_failures=3,
        evicted=EvictedMark("MemberFailed", 1000.0),
    )
    going = decide(leaving, LIMIT3, 1005.0)
    assert (going.phase, going.action, going.evicting) == (Phase.PENDING, Action.HOLD, True)
    failing = replace(leaving, owner=OwnerState.FAILED)
    assert decide(failing, LIMIT3, 1005.0).action is Action.HOLD, "not WorkloadFailed yet"
    again = decide(leaving, LIMIT3, 1061.0)
    assert (again.action, again.final, again.member_failures) == (Action.EVICT, True, 3), again
    gone = replace(leaving, members=())
    over = decide(gone, LIMIT3, 1005.0)
    assert (over.phase, over.action, over.reason) == (
        Phase.FAILED,
        Action.FAIL,
        "MemberFailuresExceeded",
    ), over.message
    assert over.message.startswith("evicted for member failures 3 times, at most 3"), over.message
    ended = replace(gone, owner=OwnerState.FAILED)
    assert decide(ended, LIMIT3, 1005.0).reason == "MemberFailuresExceeded", "not WorkloadFailed"
    assert decide(gone, POLICY, 1005.0).phase is Phase.PENDING
    assert (
        decide(replace(gone, evicted=EvictedMark("Reclaimed", 1000.0)), LIMIT3, 1005.0).phase
        is Phase.PENDING
    ), "a reclaim is no member failure"


@pytest.mark.parametrize(
    ("members", "counts"),
    [
        ("FRRR", "3 of 4 members left (1 failed, 0 lost, 0 deleted)"),
        ("TRRR", "3 of 4 members left (0 failed, 0 lost, 1 deleted)"),
        ("LRRR", "3 of 4 members left (0 failed, 1 lost, 0 deleted)"),
        # Deleted outright: the pod is gone from the API, the gang has 3 of its 4 members.
        ("RRR", "3 of 4 members left (0 failed, 0 lost, 1 deleted)"),
        ("SRR", "3 of 4 members left (0 failed, 0 lost, 1 deleted)"),
        ("FRR", "2 of 4 members left (1 failed, 0 lost, 1 deleted)"),
        # Deleted and made again by its controller (a pod of the same name) before a cycle saw it.
        ("RRRP", "3 of 4 members left (0 failed, 0 lost, 1 deleted; 1 new pod pending)"),
        ("RRPP", "2 of 4 members left (0 failed, 0 lost, 2 deleted; 2 new pods pending)"),
        ("FRRP", "2 of 4 members left (1 failed, 0 lost, 1 deleted; 1 new pod pending)"),
    ],
)
def test_a_member_failure_message_accounts_for_every_member(members: str, counts: str) -> None:
    """The message's numbers add up to minMember: left + failed + lost + deleted = 4."""
    d = decide(facts(members, recorded_phase="Running", scheduled_at=900.0), POLICY, NOW)
    assert d.reason == "MemberFailed"
    assert d.message.startswith(counts + "; evicting the gang whole"), d.message


DRAIN = "EvictionByEvictionAPI"


@pytest.mark.parametrize(
    ("members", "disrupted", "counts", "failures"),
    [
        # `kubectl drain`: the member is terminating (or already Failed) with DisruptionTarget.
        (
            "TRRR",
            Disrupted(terminating=1, reason=DRAIN),
            "0 failed, 0 lost, 0 deleted, 1 evicted from outside (EvictionByEvictionAPI)",
            2,
        ),
        (
            "FRRR",
            Disrupted(failed=1, reason=DRAIN),
            "0 failed, 0 lost, 0 deleted, 1 evicted from outside (EvictionByEvictionAPI)",
            2,
        ),
        # A node gone: its member is lost, no failure of the workload's either.
        ("LRRR", None, "0 failed, 1 lost, 0 deleted", 2),
        # One evicted from outside, one failed on its own: that one counts.
        (
            "FTRR",
            Disrupted(terminating=1, reason="DeletionByTaintManager"),
            "1 failed, 0 lost, 0 deleted, 1 evicted from outside (DeletionByTaintManager)",
            3,
        ),
        # Failed, released and deleted before a cycle saw it: remembered from the watch.
        (
            "RRR",
            Disrupted(gone=1, reason=DRAIN),
            "0 failed, 0 lost, 0 deleted, 1 evicted from outside (EvictionByEvictionAPI)",
            2,
        ),
        # Evicted from outside, and another deleted outright by someone: the deletion counts.
        (
            "FRR",
            Disrupted(failed=1, reason=DRAIN),
            "0 failed, 0 lost, 1 deleted, 1 evicted from outside (EvictionByEvictionAPI)",
            3,
        ),
    ],
)
def test_members_evicted_from_outside_are_said_apart_and_not_counted_as_failures(
    members: str, disrupted: Disrupted | None, counts: str, failures: int
) -> None:
    """A gang of 4 with 2 failures on record loses members: only a failure of its own (a member
    failed or deleted) raises `memberFailures` and so its back-off; members a drain, a taint or
    node pressure stopped (their `DisruptionTarget`), or on a lost node, are said apart."""
    d = decide(
        facts(members, recorded_phase="Running", member_failures=2, disrupted=disrupted),
        POLICY,
        NOW,
    )
    assert (d.action, d.reason) == (Action.EVICT, "MemberFailed")
    left = sum(1 for c in members if c == "R")
    assert d.message.startswith(f"{left} of 4 members left ({counts}); evicting the gang whole"), (
        d.message
    )
    assert d.member_failures == failures
    assert d.message.endswith("(no failure of its own: memberFailures stays 2)") == (
        failures == 2
    ), d.message


def test_a_gang_drained_with_no_failure_on_record_is_placed_again_at_once() -> None:
    """Evicted at t=1000 for a drained member, nothing of its own on record: `memberFailures`
    stays 0, so the next SCHEDULE has no back-off (one failure of its own would wait 10 s)."""
    ev = decide(
        facts("FRRR", recorded_phase="Running", disrupted=Disrupted(failed=1, reason=DRAIN)),
        POLICY,
        NOW,
    )
    assert ev.action is Action.EVICT and ev.member_failures == 0
    pending = facts("PPPP", recorded_phase="Pending", evicted=EvictedMark("MemberFailed", 1000.0))
    assert decide(pending, POLICY, 1001.0).not_before is None
    own = facts(
        "PPPP",
        recorded_phase="Pending",
        member_failures=1,
        evicted=EvictedMark("MemberFailed", 1000.0),
    )
    assert decide(own, POLICY, 1001.0).not_before == 1010.0


def test_with_keep_a_drained_member_is_said_apart_too() -> None:
    d = decide(
        facts(
            "TRRR",
            recorded_phase="Running",
            member_failure=MemberFailure.KEEP,
            disrupted=Disrupted(terminating=1, reason=DRAIN),
        ),
        POLICY,
        NOW,
    )
    assert (d.phase, d.action) == (Phase.DEGRADED, Action.RUN)
    assert d.message.startswith(
        "3 of 4 members left (0 failed, 0 lost, 0 deleted, 1 evicted from outside "
        "(EvictionByEvictionAPI)); kept running"
    ), d.message


@pytest.mark.parametrize(
    ("members", "message"),
    [
        ("TTTT", "evicted (Reclaimed) 12s ago; 4 members still to go (4 terminating)"),
        (
            "RRTL",
            "evicted (Reclaimed) 12s ago; 4 members still to go (2 still bound, 1 "
            "terminating, 1 on a lost node)",
        ),
        ("TSS", "evicted (Reclaimed) 12s ago; 1 member still to go (1 terminating)"),
    ],
)
def test_an_eviction_under_way_says_what_it_waits_for(members: str, message: str) -> None:
    """Marked at t = 988, seen at 1000: the members still holding capacity, by state
    (succeeded ones hold none and are not counted)."""
    d = decide(
        facts(members, recorded_phase="Pending", evicted=EvictedMark("Reclaimed", 988.0)),
        POLICY,
        NOW,
    )
    assert (d.action, d.evicting) == (Action.HOLD, True)
    assert d.message == message + " before it is placed again", d.message


def test_backoff_is_exponential_and_capped() -> None:
    assert [backoff_seconds(k, POLICY) for k in range(6)] == [0, 10, 20, 40, 80, 160]
    assert backoff_seconds(7, POLICY) == 600  # 640 capped
    assert backoff_seconds(10_000, POLICY) == 600  # no overflow


def test_operator_default_member_failure_applies_when_the_gang_says_nothing() -> None:
    keep = LifecyclePolicy(member_failure=MemberFailure.KEEP)
    got = decide(facts("FRRR", recorded_phase="Running"), keep, NOW)
    assert (got.phase, got.action) == (Phase.DEGRADED, Action.RUN)
    # ...and the gang's own field wins over it.
    mine = facts("FRRR", recorded_phase="Running", member_failure=MemberFailure.EVICT)
    assert decide(mine, keep, NOW).action is Action.EVICT


def test_member_lost_rule() -> None:
    assert member_lost(False, None, NOW, 300.0)
    assert not member_lost(True, None, NOW, 300.0)
    assert not member_lost(True, 800.0, NOW, 300.0)  # NotReady 200 s
    assert member_lost(True, 600.0, NOW, 300.0)  # NotReady 400 s


def test_capacity_is_held_exactly_while_pods_may_be_bound() -> None:
    """What holds capacity: running, binding, being evicted or rolled back, and a finished gang
    whose members are still bound (`lingering`); not pending gangs, nor finished ones whose
    members have all ended."""
    holds = {
        c.name: decide(c.facts, POLICY, c.now).holds_capacity
        for c in CASES
        if c.action in (Action.SCHEDULE, Action.NONE, Action.FAIL)
    }
    assert [name for name, held in holds.items() if held] == ["the Job failed"], holds


def test_a_finished_gang_holds_capacity_while_members_are_still_bound() -> None:
    """Walked: a PyTorchJob (`restartPolicy: Never`) whose one worker failed was `Failed` while
    the Training Operator (`cleanPodPolicy: None`) left its 3 other pods running; their GPUs were
    charged to no queue. Those members hold capacity (charged to its queue) until they end."""
    for f in (
        facts("FRRR", recorded_phase="Running", owner=OwnerState.FAILED),
        facts("FRRR", recorded_phase="Failed"),
        facts("SRRR", recorded_phase="Running", owner=OwnerState.COMPLETE),
    ):
        d = decide(f, POLICY, NOW)
        assert d.phase in (Phase.FAILED, Phase.SUCCEEDED) and d.lingering and d.holds_capacity, f
    for f in (
        facts("FFSS", recorded_phase="Running", owner=OwnerState.FAILED),
        facts("", recorded_phase="Failed"),
        facts("SSSS", recorded_phase="Succeeded"),
    ):
        d = decide(f, POLICY, NOW)
        assert not d.lingering and not d.holds_capacity, f


def test_the_record_check() -> None:
    """UIDs a, b bound on n1, n2; c, d pending; need 4."""
    rec = {"a": "n1", "b": "n2", "c": "n1", "d": "n2"}
    bound = {"a": "n1", "b": "n2"}
    assert check_record(rec, bound, ["c", "d"], 4) == (Record.MATCHES, "")
    assert check_record(None, bound, ["c", "d"], 4)[0] is Record.NONE
    moved = check_record(rec, {"a": "n1", "b": "n3"}, ["c", "d"], 4)
    assert moved[0] is Record.STALE and "1 bound pod" in moved[1]
    # d was replaced by a pod with another UID (e): the record cannot finish the gang.
    gone = check_record(rec, bound, ["c", "e"], 4)
    assert gone[0] is Record.STALE and "1 pod(s) that no longer exist" in gone[1]


def test_a_gang_whose_eviction_is_in_flight_is_on_its_way_out() -> None:
    """Before the `Evicted` mark shows in the watch, the gang already counts as leaving: the
    cycle charges it to no queue and never picks it as a victim again."""
    d = decide(
        facts("RRRR", binding=True, evicting_now=True, recorded_phase="Running"), POLICY, NOW
    )
    assert d.evicting and d.holds_capacity
    assert not decide(facts("RRRR", binding=True, recorded_phase="Running"), POLICY, NOW).evicting


def test_a_failed_workload_is_quoted_in_the_gangs_failure() -> None:
    """Its workload's own words follow the verdict; without them, the verdict alone."""
    said = decide(
        facts(
            "F",
            min_member=2,
            recorded_phase="Running",
            owner=OwnerState.FAILED,
            owner_failure="BackoffLimitExceeded: Job has reached the specified backoff limit",
        ),
        POLICY,
        NOW,
    )
    assert (said.phase, said.action, said.message) == (
        Phase.FAILED,
        Action.FAIL,
        "its workload reports Failed (BackoffLimitExceeded: Job has reached the specified "
        "backoff limit)",
    )
    plain = decide(facts("F", min_member=2, owner=OwnerState.FAILED), POLICY, NOW)
    assert plain.message == "its workload reports Failed"


START = LifecyclePolicy(start_timeout=300.0)


@pytest.mark.parametrize(
    ("now", "policy", "member_failure", "action"),
    [
        (1100.0, START, None, Action.EVICT),  # bound at 790: 310 s, past 300
        (1080.0, START, None, Action.RUN),  # 290 s: not yet
        (1100.0, POLICY, None, Action.RUN),  # no start timeout (the default)
        (1100.0, START, MemberFailure.KEEP, Action.RUN),  # an elastic gang keeps its members
    ],
)
def test_a_member_that_never_starts_evicts_its_gang_after_the_start_timeout(
    now: float, policy: LifecyclePolicy, member_failure: MemberFailure | None, action: Action
) -> None:
    """g-1 was bound at t=790 and waits `ImagePullBackOff`; the others are bound and hold their
    GPUs. With a start timeout of 300 s, at t=1100 (310 s) the gang is evicted whole as a member
    failure of its own (the count goes 1 → 2, so it backs off)."""
    f = facts(
        "RRRB",
        recorded_phase="Running",
        member_failures=1,
        member_failure=member_failure,
        not_started=NotStarted("g-1", "ImagePullBackOff", 790.0),
    )
    d = decide(f, policy, now)
    assert (d.phase, d.action) == (Phase.RUNNING, action), d.message
    if action is Action.EVICT:
        assert d.reason == "MemberFailed" and d.member_failures == 2
        assert d.message == (
            "g-1 not started 5m10s after its bind (ImagePullBackOff), past the start timeout "
            "of 5m; evicting the gang whole so that it restarts whole"
        )


def test_the_start_timeout_counts_neither_a_member_that_ran_nor_an_unknown_bind_time() -> None:
    """With a start timeout of 300 s, at t=1100: g-1 restarting in a loop since t=790 started
    once (`ran`), and a member with no bind time cannot be timed; neither evicts the gang."""
    for stuck in (
        NotStarted("g-1", "CrashLoopBackOff", 790.0, ran=True),
        NotStarted("g-1", "ImagePullBackOff", None),
    ):
        f = facts("RRRB", recorded_phase="Running", not_started=stuck)
        assert decide(f, START, 1100.0).action is Action.RUN, stuck
