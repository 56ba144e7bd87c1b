"""`core.starting`: which bound members have not started, which the `Started` condition names
and which one the start timeout counts from. Times are seconds; `now` is 1000."""

from __future__ import annotations

from phalanx.core.starting import (
    NOT_STARTED_AFTER_S,
    BoundMember,
    NotStarted,
    not_running,
    reported,
    timing_out,
)

NOW = 1000.0


def test_a_member_that_waits_for_another_reason_than_starting_is_reported_at_once() -> None:
    """b waits `ImagePullBackOff` 5 s after its bind: reported now. c is being created (60 s):
    not yet. a runs. d finished: the lifecycle counts it, not this rule."""
    members = [
        BoundMember("a", "Running", None, 900.0),
        BoundMember("b", "Pending", ("ImagePullBackOff", "Back-off pulling image"), 995.0),
        BoundMember("c", "Pending", ("ContainerCreating", ""), 940.0),
        BoundMember("d", "Succeeded", None, 900.0),
    ]
    stuck = not_running(members, NOW)
    assert [s.pod for s in stuck] == ["c", "b"], "c has waited 60 s, b 5 s"
    assert [s.pod for s in reported(stuck, NOW)] == ["b"]
    assert reported(stuck, NOW)[0].message == "Back-off pulling image"


def test_a_member_still_being_created_is_reported_after_two_minutes() -> None:
    """c was bound at t=880: at t=999 (119 s) it is on its way, at t=1000 (120 s) reported."""
    assert NOT_STARTED_AFTER_S == 120.0
    c = [BoundMember("c", "Pending", ("ContainerCreating", ""), 880.0)]
    assert reported(not_running(c, NOW - 1), NOW - 1) == ()
    assert [s.pod for s in reported(not_running(c, NOW), NOW)] == ["c"]


def test_a_running_member_restarting_in_a_loop_is_reported_but_does_not_time_out() -> None:
    """b's pod is `Running` and its container waits `CrashLoopBackOff`: it is not running
    (reported) but it did start once, so the start timeout does not count it; c, bound later
    and `Pending`, is the one the timeout counts from."""
    members = [
        BoundMember("b", "Running", ("CrashLoopBackOff", "back-off 40s"), 700.0),
        BoundMember("c", "Pending", ("ErrImagePull", ""), 900.0),
    ]
    stuck = not_running(members, NOW)
    assert [(s.pod, s.ran) for s in stuck] == [("b", True), ("c", False)]
    assert [s.pod for s in reported(stuck, NOW)] == ["b", "c"]
    assert timing_out(stuck) == NotStarted("c", "ErrImagePull", 900.0)


def test_a_member_whose_bind_time_is_unknown_is_never_timed_from_zero() -> None:
    """a's pod says no bind time: it sorts as if bound now (after b, bound at t=990) and the
    start timeout does not count from it (from t=0 it would evict the gang at once); with only
    a there is nothing to time out."""
    a = BoundMember("a", "Pending", ("ImagePullBackOff", ""), None)
    b = BoundMember("b", "Pending", ("ImagePullBackOff", ""), 990.0)
    stuck = not_running([a, b], NOW)
    assert [s.pod for s in stuck] == ["b", "a"]
    assert timing_out(stuck) == NotStarted("b", "ImagePullBackOff", 990.0)
    assert timing_out(not_running([a], NOW)) is None
    assert [s.pod for s in reported(not_running([a], NOW), NOW)] == ["a"], "still named"
