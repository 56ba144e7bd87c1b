"""The adapter carrying out lifecycle verdicts, against a fake API: members joining a running
gang, writes refused to a non-leader or cut off at their deadline, memory keyed by uid, pod
conditions, finished gangs."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from phalanx.config import build_config
from phalanx.k8s.api import ApiError
from phalanx.k8s.guarded import NOT_LEADER, TIMED_OUT, GuardedWrites
from phalanx.k8s.records import pod_record
from phalanx.k8s.scheduler import Scheduler
from tests.unit.k8s.test_records_and_view import group, pod
from tests.unit.k8s.test_scheduler_loop import FakeApi, ListSource


def cycle(sched: Scheduler) -> None:
    async def go() -> None:
        await sched.cycle()
        await sched.settle()

    asyncio.run(go())


def scheduler(
    api: FakeApi, pods: list[dict[str, Any]], groups: list[dict[str, Any]], **cfg: Any
) -> Scheduler:
    config = build_config(bind_deadline_s=0.3, metrics_port=0, health_port=0, **cfg)
    return Scheduler(config, api, ListSource(pods, groups), clock=lambda: 1000.0)


def running(name: str, group_name: str, node: str, gpus: int = 4) -> dict[str, Any]:
    return pod(name, group=group_name, gpus=gpus, node_name=node, phase="Running")


def with_status(body: dict[str, Any], **status: Any) -> dict[str, Any]:
    return {**body, "status": status}


def test_a_member_that_joins_a_running_gang_is_bound_alone() -> None:
    """g runs 2 of its 3 pods (minMember 2); the third is bound by itself, no decision record,
    no rollback."""
    api = FakeApi()
    pods = [running("a", "g", "n1"), running("b", "g", "n1"), pod("c", group="g", gpus=4)]
    g = with_status(group("g", 2), phase="Running", scheduledAt="2026-01-01T00:00:00Z")
    sched = scheduler(api, pods, [g])
    cycle(sched)
    assert ("bind", "c") in api.calls
    assert ("status", "Binding") not in api.calls
    assert not [c for c in api.calls if c[0] in ("delete", "evict")]


def test_a_joining_member_whose_bind_fails_stays_pending_and_the_gang_keeps_running() -> None:
    api = FakeApi(failing={"c"})
    pods = [running("a", "g", "n1"), running("b", "g", "n1"), pod("c", group="g", gpus=4)]
    g = with_status(group("g", 2), phase="Running", scheduledAt="2026-01-01T00:00:00Z")
    sched = scheduler(api, pods, [g])
    cycle(sched)
    assert ("bind", "c") in api.calls
    assert not [c for c in api.calls if c[0] in ("delete", "evict")], "never rolled back"
    assert ("evicted", "BindFailed") not in api.calls
    assert "ns/c" not in sched.assumed, "its reservation is dropped: a later cycle tries again"


def test_a_member_succeeding_early_leaves_the_gang_running() -> None:
    api = FakeApi()
    pods = [running("a", "g", "n1"), pod("b", group="g", gpus=4, node_name="n1", phase="Succeeded")]
    g = with_status(group("g", 2), phase="Running", scheduledAt="2026-01-01T00:00:00Z")
    cycle(scheduler(api, pods, [g]))
    assert not [c for c in api.calls if c[0] in ("evict", "delete", "evicted")], api.calls


def test_a_gang_whose_members_all_succeeded_is_written_succeeded() -> None:
    api = FakeApi()
    done = [pod(n, group="g", gpus=4, node_name="n1", phase="Succeeded") for n in ("a", "b")]
    g = with_status(group("g", 2), phase="Running", scheduledAt="2026-01-01T00:00:00Z")
    cycle(scheduler(api, done, [g]))
    assert ("status", "Succeeded") in api.calls
    assert ("event", "Succeeded") in api.calls
    final = api.statuses[-1]
    assert final["succeeded"] == 2 and final["members"] == 2, final
    (ended,) = [c for c in final["conditions"] if c["type"] == "Finished"]
    assert (ended["status"], ended["reason"], ended["message"]) == (
        "True",
        "Succeeded",
        "2 of 2 members succeeded",
    ), "why it ended stays with the object (Events expire)"


def test_a_failed_member_evicts_the_gang_whole_and_the_mark_is_written_first() -> None:
    api = FakeApi()
    pods = [running("a", "g", "n1"), pod("b", group="g", gpus=4, node_name="n1", phase="Failed")]
    g = with_status(group("g", 2), phase="Running", scheduledAt="2026-01-01T00:00:00Z")
    cycle(scheduler(api, pods, [g]))
    evicted = api.calls.index(("evicted", "MemberFailed"))
    assert api.calls.index(("evict", "a")) > evicted, "durable mark before any pod is evicted"
    mark = next(s for s in api.statuses if s.get("memberFailures"))
    assert mark["memberFailures"] == 1 and mark["scheduledAt"] is None


def drained(body: dict[str, Any], phase: str) -> dict[str, Any]:
    """`body` as the Eviction API leaves it (what `kubectl drain` does): `DisruptionTarget`."""
    condition = {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI"}
    return {**body, "status": {"phase": phase, "conditions": [condition]}}


@pytest.mark.parametrize("phase", ["Failed", "Running"])
def test_a_drained_member_evicts_the_gang_whole_without_counting_a_failure(phase: str) -> None:
    """b was drained: Failed, or still terminating (deletionTimestamp, still Running); either
    way its gang is evicted whole, the mark names the drain, `memberFailures` stays 0."""
    api = FakeApi()
    b = drained(pod("b", group="g", gpus=4, node_name="n1"), phase)
    if phase == "Running":
        b["metadata"] = {**b["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"}
    g = with_status(group("g", 2), phase="Running", scheduledAt="2026-01-01T00:00:00Z")
    cycle(scheduler(api, [running("a", "g", "n1"), b], [g]))
    assert ("evicted", "MemberFailed") in api.calls
    (mark,) = [s for s in api.statuses if "memberFailures" in s]
    (evicted,) = [c for c in mark["conditions"] if c["type"] == "Evicted"]
    assert evicted["message"].startswith(
        "1 of 2 members left (0 failed, 0 lost, 0 deleted, 1 evicted from outside "
        "(EvictionByEvictionAPI)); evicting the gang whole"
    ), evicted
    assert mark["memberFailures"] == 0, mark


def test_a_drained_member_gone_before_a_cycle_saw_it_is_still_no_failure_of_its_own() -> None:
    """b was drained, Failed, released and deleted between two cycles: only the watch saw it
    go (`Records.gone`). Gone after the gang started (scheduledAt t=900, gone at t=950), it
    is evicted from outside; gone before (t=850, an earlier run), it is a member deleted."""
    b = drained(pod("b", group="g", gpus=4, node_name="n1"), "Failed")
    g = with_status(group("g", 2), phase="Running", scheduledAt="1970-01-01T00:15:00Z")
    for at, counted in ((950.0, 0), (850.0, 1)):
        api = FakeApi()
        sched = scheduler(api, [running("a", "g", "n1")], [g])
        sched.source.records().gone.append((pod_record(b), at))
        cycle(sched)
        (mark,) = [s for s in api.statuses if "memberFailures" in s]
        assert mark["memberFailures"] == counted, (at, mark)
        (evicted,) = [c for c in mark["conditions"] if c["type"] == "Evicted"]
        said = "1 evicted from outside (EvictionByEvictionAPI)" in evicted["message"]
        assert said == (counted == 0), evicted


def test_a_member_being_deleted_on_a_deleted_node_is_lost_not_a_failure_of_its_own() -> None:
    """b's node was deleted, and b is being deleted (by its controller: no `DisruptionTarget`),
    but with no kubelet left to confirm it, it stays terminating until the pod garbage
    collector removes it. It counts as lost, as it did before its delete began: g is evicted
    whole with `memberFailures` left at 0 (a node lost says nothing about the workload), and,
    walked, the wait after said "1 terminating" for a minute where the truth is "on a lost
    node". Counted as terminating, it was a member deleted: a failure of g's own."""
    api = FakeApi()
    b = pod("b", group="g", gpus=4, node_name="gone", phase="Running")
    b["metadata"]["deletionTimestamp"] = "1970-01-01T00:16:00Z"
    g = with_status(group("g", 2), phase="Running", scheduledAt="1970-01-01T00:15:00Z")
    cycle(scheduler(api, [running("a", "g", "n1"), b], [g]))
    (mark,) = [s for s in api.statuses if "memberFailures" in s]
    assert mark["memberFailures"] == 0, mark
    (evicted,) = [c for c in mark["conditions"] if c["type"] == "Evicted"]
    assert evicted["message"].startswith(
        "1 of 2 members left (0 failed, 1 lost, 0 deleted); evicting the gang whole"
    ), evicted


def pulling(name: str, reason: str, message: str = "") -> dict[str, Any]:
    """A member bound at t=990 whose container waits (`Pending` on its node)."""
    body = pod(name, group="g", gpus=4, node_name="n1")
    waiting = {"reason": reason, "message": message}
    body["status"] = {
        "phase": "Pending",
        "conditions": [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": "1970-01-01T00:16:30Z"}
        ],
        "containerStatuses": [{"name": "c", "state": {"waiting": waiting}}],
    }
    return body


def started_of(api: FakeApi) -> dict[str, Any] | None:
    found = [c for s in api.statuses for c in s.get("conditions", []) if c["type"] == "Started"]
    return found[-1] if found else None


def test_a_running_gang_says_which_bound_member_cannot_start() -> None:
    """b's image cannot be pulled: g is bound whole and `Running`, and a is at its rendezvous
    holding its GPUs; `Started=False` names b and the kubelet's reason. A member still being
    created 10 s after its bind is on its way: nothing is written."""
    g = with_status(group("g", 2), phase="Running", scheduledAt="1970-01-01T00:16:30Z")
    api = FakeApi()
    stuck = pulling("b", "ImagePullBackOff", 'Back-off pulling image "busybx"')
    cycle(scheduler(api, [running("a", "g", "n1"), stuck], [g]))
    said = started_of(api)
    assert said is not None, api.statuses
    assert (said["status"], said["reason"]) == ("False", "ImagePullBackOff")
    assert said["message"] == (
        '1 of 2 bound members not running: b ImagePullBackOff: Back-off pulling image "busybx"; '
        "the other holds its GPUs meanwhile"
    )
    api = FakeApi()
    both = [pulling("a", "ErrImagePull"), pulling("b", "ErrImagePull")]
    cycle(scheduler(api, both, [g]))
    said = started_of(api)
    assert said is not None and said["message"] == (
        "2 of 2 bound members not running: a ErrImagePull (and 1 more); they hold their GPUs "
        "meanwhile"
    ), said
    api = FakeApi()
    cycle(scheduler(api, [running("a", "g", "n1"), pulling("b", "ContainerCreating")], [g]))
    assert started_of(api) is None, "on its way"
    slow = pulling("b", "ContainerCreating")
    slow["status"]["conditions"][0]["lastTransitionTime"] = "1970-01-01T00:14:10Z"  # t=850
    api = FakeApi()
    cycle(scheduler(api, [running("a", "g", "n1"), slow], [g]))
    said = started_of(api)
    assert said is not None and said["reason"] == "NotStarted", said
    assert said["message"].startswith(
        "1 of 2 bound members not running: b not started 2m after its bind (ContainerCreating)"
    ), said


def test_a_member_restarting_in_a_loop_is_not_running_either() -> None:
    """b's pod is `Running` but its container keeps failing and is restarted
    (`restartPolicy: OnFailure`): the kubelet says `CrashLoopBackOff` and so does the gang."""
    g = with_status(group("g", 2), phase="Running", scheduledAt="1970-01-01T00:16:30Z")
    crashing = pulling("b", "CrashLoopBackOff", "back-off 40s restarting failed container=c")
    crashing["status"]["phase"] = "Running"
    api = FakeApi()
    cycle(scheduler(api, [running("a", "g", "n1"), crashing], [g]))
    said = started_of(api)
    assert said is not None and (said["status"], said["reason"]) == (
        "False",
        "CrashLoopBackOff",
    ), said
    assert said["message"].startswith(
        "1 of 2 bound members not running: b CrashLoopBackOff: back-off 40s restarting"
    ), said


def test_with_a_start_timeout_a_gang_whose_member_never_starts_is_evicted_whole() -> None:
    """`--start-timeout-seconds 5`: b was bound at t=990 and waits `ImagePullBackOff`; at
    t=1000 the gang is evicted whole (`MemberFailed`, counted), the mark naming b. Without the
    flag only `Started=False` says so."""
    g = with_status(group("g", 2), phase="Running", scheduledAt="1970-01-01T00:16:30Z")
    stuck = pulling("b", "ImagePullBackOff", 'Back-off pulling image "busybx"')
    api = FakeApi()
    cycle(scheduler(api, [running("a", "g", "n1"), stuck], [g], start_timeout_seconds=5))
    assert ("evicted", "MemberFailed") in api.calls, api.calls
    (mark,) = [s for s in api.statuses if "memberFailures" in s]
    (evicted,) = [c for c in mark["conditions"] if c["type"] == "Evicted"]
    assert evicted["message"].startswith("b not started 10s after its bind (ImagePullBackOff)")
    assert mark["memberFailures"] == 1
    api = FakeApi()
    cycle(scheduler(api, [running("a", "g", "n1"), stuck], [g]))
    assert ("evicted", "MemberFailed") not in api.calls


def test_a_member_that_starts_at_last_turns_started_true() -> None:
    g = with_status(
        group("g", 2),
        phase="Running",
        scheduledAt="1970-01-01T00:16:30Z",
        conditions=[{"type": "Started", "status": "False", "reason": "ImagePullBackOff"}],
    )
    api = FakeApi()
    cycle(scheduler(api, [running("a", "g", "n1"), running("b", "g", "n1")], [g]))
    said = started_of(api)
    assert said is not None and (said["status"], said["reason"]) == ("True", "Running"), said
    assert said["message"] == "2 bound members running"


def test_a_running_gang_drops_the_phantom_due_time_of_its_wait_for_pods() -> None:
    """Bound in the cycle its pods appeared, a gang never had a pending status written without
    `phantomDueAt`; left there, its next wait for pods (a Job's gang evicted again days later)
    would read as past its grace. Running, it is removed."""
    g = with_status(
        group("g", 2),
        phase="Running",
        scheduledAt="1970-01-01T00:16:30Z",
        phantomDueAt="1970-01-01T00:16:00Z",
    )
    api = FakeApi()
    cycle(scheduler(api, [running("a", "g", "n1"), running("b", "g", "n1")], [g]))
    assert any("phantomDueAt" in s and s["phantomDueAt"] is None for s in api.statuses), (
        api.statuses
    )


def test_member_failure_keep_writes_degraded_and_evicts_nothing() -> None:
    api = FakeApi()
    pods = [running("a", "g", "n1"), pod("b", group="g", gpus=4, node_name="n1", phase="Failed")]
    g = with_status(
        group("g", 2, memberFailure="keep"), phase="Running", scheduledAt="2026-01-01T00:00:00Z"
    )
    cycle(scheduler(api, pods, [g]))
    assert ("status", "Degraded") in api.calls
    assert not [c for c in api.calls if c[0] in ("evict", "delete")]


def test_a_gang_past_its_time_limit_from_its_durable_start_is_evicted() -> None:
    """scheduledAt 1970-01-01T00:10:00Z = t 600; now 1000; limit 300 s: over by 100 s."""
    api = FakeApi()
    pods = [running("a", "g", "n1"), running("b", "g", "n1")]
    g = with_status(
        group("g", 2, timeLimitSeconds=300), phase="Running", scheduledAt="1970-01-01T00:10:00Z"
    )
    cycle(scheduler(api, pods, [g]))
    assert ("evicted", "TimeLimitExceeded") in api.calls


def test_a_partly_bound_gang_is_rolled_back_while_another_gang_is_scheduled() -> None:
    """No cycle-wide early return: h (pending) binds in the very cycle g is rolled back."""
    api = FakeApi()
    pods = [
        pod("a", group="g", gpus=4, node_name="n1", phase="Running"),
        pod("b", group="g", gpus=4),
        pod("c", group="h", gpus=8),
    ]
    g = with_status(group("g", 2), phase="Binding")
    cycle(scheduler(api, pods, [g, group("h", 1)]))
    assert ("evicted", "BindFailed") in api.calls
    assert ("bind", "c") in api.calls


def test_a_podgroup_recreated_under_the_same_name_gets_its_own_status() -> None:
    """Memory is keyed by uid: the status written to the old object (the same a new one would
    get: same gang, same reason) does not hide the new object's empty status."""
    api = FakeApi()
    big = pod("a", group="g", gpus=64)  # fits nowhere: InsufficientCapacity
    sched = scheduler(api, [big], [group("g", 1)])
    cycle(sched)
    written_before = len(api.statuses)
    assert written_before >= 1
    new = group("g", 1)
    new["metadata"]["uid"] = "g-g-second"
    sched.source = ListSource([big], [new])
    cycle(sched)
    assert len(api.statuses) > written_before, "the re-created PodGroup got a status"
    assert "g-g" not in sched.reporter.written, "the old object's memory was pruned"


def test_a_pending_member_gets_pod_scheduled_false_once() -> None:
    api = FakeApi()
    pods = [pod("a", group="g", gpus=64), pod("b", group="g", gpus=64)]
    sched = scheduler(api, pods, [group("g", 2)])
    cycle(sched)
    assert ("pod-condition", "a") in api.calls and ("pod-condition", "b") in api.calls
    before = api.calls.count(("pod-condition", "a"))
    cycle(sched)  # same message: not written again
    assert api.calls.count(("pod-condition", "a")) == before


def test_writes_are_refused_to_a_non_leader_and_cut_off_at_their_deadline() -> None:
    class Slow(FakeApi):
        async def bind(self, namespace: str, pod: str, uid: str, node: str) -> None:
            await asyncio.sleep(5)

    class Flag:
        leader = False

        def may_act(self) -> bool:
            return self.leader

    flag = Flag()
    guarded = GuardedWrites(Slow(), flag, timeout_s=0.05)

    async def go() -> None:
        with pytest.raises(ApiError) as refused:
            await guarded.bind("ns", "a", "u", "n1")
        assert refused.value.status == NOT_LEADER and guarded.refused == 1
        flag.leader = True
        with pytest.raises(ApiError) as late:
            await guarded.bind("ns", "a", "u", "n1")
        assert late.value.status == TIMED_OUT

    asyncio.run(go())


def _half_bound(record: dict[str, str] | None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """g: a bound on n1, b pending; the decision record (if any) says a → n1, b → n2."""
    pods = [pod("a", group="g", gpus=8, node_name="n1", phase="Running"), pod("b", group="g")]
    status: dict[str, Any] = {"phase": "Binding", "scheduledAt": "1970-01-01T00:16:00Z"}
    if record is not None:
        status["placement"] = {"pods": record}
    return pods, {**group("g", 2), "status": status}


def test_a_gang_left_partly_bound_is_rolled_forward_from_its_decision_record() -> None:
    api = FakeApi()
    pods, g = _half_bound({"uid-a": "n1", "uid-b": "n2"})
    sched = scheduler(api, pods, [g])
    cycle(sched)
    assert ("bind", "b") in api.calls
    assert not [c for c in api.calls if c[0] in ("delete", "evict", "evicted")], api.calls
    assert ("event", "RolledForward") in api.calls
    assert ("status", "Running") in api.calls
    assert sched.assumed.get("ns/b") == "n2", "bound where the record says"


def test_a_record_whose_node_is_taken_rolls_the_gang_back() -> None:
    api = FakeApi()
    pods, g = _half_bound({"uid-a": "n1", "uid-b": "n2"})
    blocker = pod("x", gpus=8, node_name="n2", scheduler="default-scheduler", phase="Running")
    cycle(scheduler(api, [*pods, blocker], [g]))
    assert ("bind", "b") not in api.calls
    assert ("evicted", "BindFailed") in api.calls
    assert ("delete", "a") in api.calls, "the bound member goes (a bare pod: recreated)"


def test_a_gang_with_no_record_or_a_stale_one_is_rolled_back_with_the_reason() -> None:
    for record in (None, {"uid-a": "n1", "uid-old": "n2"}):
        api = FakeApi()
        pods, g = _half_bound(record)
        cycle(scheduler(api, pods, [g]))
        assert ("evicted", "BindFailed") in api.calls, record
        assert ("bind", "b") not in api.calls
        mark = next(s for s in api.statuses if s.get("placement", 0) is None)
        why = next(c for c in mark["conditions"] if c["type"] == "Evicted")["message"]
        assert ("no decision record" if record is None else "no longer exist") in why, why


def test_a_bare_pods_rollback_journals_it_before_the_delete_and_clears_it_after_the_create() -> (
    None
):
    api = FakeApi()
    pods, g = _half_bound(None)
    cycle(scheduler(api, pods, [g]))
    journal_at = next(i for i, s in enumerate(api.statuses) if s.get("recreate"))
    assert "uid-a" in api.statuses[journal_at]["recreate"]
    statuses_before_delete = api.calls[: api.calls.index(("delete", "a"))].count
    assert statuses_before_delete(("evicted", "BindFailed")) == 1, "mark and journal first"
    assert api.calls.index(("create", "a")) > api.calls.index(("delete", "a"))
    assert api.statuses[-1].get("recreate") == {"uid-a": None}, "cleared once recreated"


def test_a_journal_left_by_a_dead_operator_is_finished_and_is_idempotent() -> None:
    """The old operator died between delete and create: `a` is gone, its journal entry left.
    Another entry's pod (`b`) was recreated already (same name, a new UID): only cleared."""
    api = FakeApi()
    body_a = {"metadata": {"name": "a", "labels": {}}, "spec": {"containers": []}}
    body_b = {"metadata": {"name": "b", "labels": {}}, "spec": {"containers": []}}
    g = {
        **group("g", 2),
        "status": {"phase": "Pending", "recreate": {"uid-a": body_a, "uid-old-b": body_b}},
    }
    cycle(scheduler(api, [pod("b", group="g")], [g]))
    assert api.calls.count(("create", "a")) == 1
    assert ("create", "b") not in api.calls and ("delete", "b") not in api.calls
    assert api.statuses[-1]["recreate"] == {"uid-a": None, "uid-old-b": None}


def test_what_was_written_is_read_as_the_api_server_applies_merge_patches() -> None:
    """Two journal entries, one cleared: the other is still owed (a shallow update of the
    overlay lost it, and the journal was replayed for ever); once the watch shows the same
    status, the overlay goes."""
    from phalanx.k8s.cluster_view import Gang
    from phalanx.k8s.records import group_record
    from phalanx.k8s.status import merge_patch

    assert merge_patch({"a": {"x": 1, "y": 2}, "b": 1}, {"a": {"x": None}, "b": None}) == {
        "a": {"y": 2}
    }
    api = FakeApi()
    sched = scheduler(api, [], [])
    body = {**group("g", 1), "status": {"recreate": {"u1": {"n": 1}, "u2": {"n": 2}}}}
    rec = group_record(body)
    gang = Gang("ns/g", rec, status=rec.status)
    sched.reporter.caught_up([rec])
    asyncio.run(sched.reporter.send_group_patch(gang, {"recreate": {"u1": None}}))
    assert sched.reporter.overlay()["g-g"]["recreate"] == {"u2": {"n": 2}}
    shown = group_record({**body, "status": sched.reporter.written["g-g"]})
    sched.reporter.caught_up([shown])
    assert "g-g" not in sched.reporter.overlay(), "the watch caught up: its status counts again"


def test_pod_conditions_of_a_backlog_go_a_bounded_number_per_cycle() -> None:
    """100 pending pods: one cycle writes at most POD_CONDITIONS_PER_CYCLE of them, the next
    the rest (and nothing twice)."""
    from phalanx.k8s.reporter import POD_CONDITIONS_PER_CYCLE

    api = FakeApi()
    pods = [pod(f"p{i:03d}", group="big", gpus=64) for i in range(100)]
    sched = scheduler(api, pods, [group("big", 100)])
    cycle(sched)
    first = sum(1 for c in api.calls if c[0] == "pod-condition")
    assert first == POD_CONDITIONS_PER_CYCLE
    cycle(sched)
    written = [c[1] for c in api.calls if c[0] == "pod-condition"]
    assert len(written) == 100 and len(set(written)) == 100


def test_a_bare_member_its_user_is_deleting_is_not_recreated_by_a_rollback() -> None:
    """g bound whole, its Running report not written yet (phase Binding); its user deletes
    both pods, one after the other. A cycle between the two deletes sees a gone and b bound:
    partly bound, so the gang is rolled back — but b, whose deletion has begun by the time the
    rollback reads it, is its user's to end, not ours to recreate (found by the peers bench's
    teardown)."""

    class Deleting(FakeApi):
        async def read_pod(self, namespace: str, pod: str) -> dict[str, Any]:
            body = await super().read_pod(namespace, pod)
            body["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
            return body

    status = {
        "phase": "Binding",
        "scheduledAt": "1970-01-01T00:16:00Z",
        "placement": {"pods": {"uid-a": "n1", "uid-b": "n1"}},
    }
    api = Deleting()
    b = pod("b", group="g", gpus=8, node_name="n1", phase="Running")
    cycle(scheduler(api, [b], [{**group("g", 2), "status": status}]))
    assert ("evicted", "BindFailed") in api.calls
    assert not [c for c in api.calls if c[0] == "create"], api.calls


def test_a_gang_whose_eviction_is_under_way_no_longer_says_it_is_scheduled() -> None:
    """Reclaimed 12 s ago (its mark seen), both members still bound: its status turns from the
    bind's `Scheduled=True` "bound 2 pods" to waiting, with the members still to go, and its
    counts are written again. Walked: a node deleted under a Job's gang left it `Pending`,
    `Scheduled` "bound 3 pods", 3 bound, for the minute its pods took to go."""
    from phalanx.k8s.status import condition, merge_patch

    api = FakeApi()
    pods = [running("a", "g", "n1"), running("b", "g", "n1")]
    marks = [
        condition({}, "Scheduled", "True", "Scheduled", "bound 2 pods (8 GPUs) on 1 node", 900.0),
        condition({}, "Evicted", "True", "Reclaimed", "reclaimed for queue research", 988.0),
    ]
    g = with_status(group("g", 2), phase="Pending", conditions=marks, bound=3, running=3)
    cycle(scheduler(api, pods, [g]))
    written = merge_patch(g["status"], api.statuses[-1])
    scheduled = next(c for c in written["conditions"] if c["type"] == "Scheduled")
    assert (scheduled["status"], scheduled["reason"], scheduled["message"]) == (
        "False",
        "WaitingForPods",
        "evicted (Reclaimed) 12s ago; 2 members still to go (2 still bound) before it is placed "
        "again",
    )
    assert (written["phase"], written["bound"], written["running"]) == ("Pending", 2, 2)
    assert not [c for c in api.calls if c[0] in ("evict", "delete", "bind")], api.calls


def test_a_cycle_counts_its_podgroups_by_phase_in_the_metrics() -> None:
    """g runs whole; h has 1 of its 2 pods: Running 1, Pending 1, the other phases 0."""
    api = FakeApi()
    pods = [running("a", "g", "n1"), running("b", "g", "n1"), pod("c", group="h", gpus=4)]
    g = with_status(group("g", 2), phase="Running", scheduledAt="2026-01-01T00:00:00Z")
    sched = scheduler(api, pods, [g, group("h", 2)])
    cycle(sched)

    def count(phase: str) -> float | None:
        labels = {"queue": "default", "phase": phase}
        return sched.metrics.registry.get_sample_value("phalanx_gangs", labels)

    assert [count(p) for p in ("Running", "Pending", "Degraded", "Failed")] == [1, 1, 0, 0]


def test_the_member_failure_at_the_limit_is_the_last_and_the_gang_is_written_failed() -> None:
    """`--member-failure-limit 2`: g failed once before, and b fails now. The eviction makes
    `memberFailures` 2 and says it is the last. While a is still bound the eviction is under
    way (nothing evicted again, not yet `Failed`); once it is gone g is `Failed`
    `MemberFailuresExceeded`, its `Finished` condition says why. Without the limit the same
    gang only waits to run again."""
    failed = [running("a", "g", "n1"), pod("b", group="g", gpus=4, node_name="n1", phase="Failed")]
    g = with_status(
        group("g", 2), phase="Running", scheduledAt="1970-01-01T00:16:30Z", memberFailures=1
    )
    api = FakeApi()
    cycle(scheduler(api, failed, [g], member_failure_limit=2))
    mark = next(s for s in api.statuses if s.get("memberFailures"))
    assert mark["memberFailures"] == 2, mark
    (evicted,) = [c for c in mark["conditions"] if c["type"] == "Evicted"]
    assert evicted["message"].endswith(
        "member failure 2 of at most 2 (--member-failure-limit): the gang ends Failed"
    ), evicted["message"]
    marked = with_status(
        group("g", 2), phase="Pending", memberFailures=2, conditions=mark["conditions"]
    )
    api = FakeApi()
    cycle(scheduler(api, [running("a", "g", "n1")], [marked], member_failure_limit=2))
    assert ("evict", "a") not in api.calls, api.calls
    assert not [s for s in api.statuses if s.get("phase") == "Failed"], api.statuses
    api = FakeApi()
    cycle(scheduler(api, [], [marked], member_failure_limit=2))
    (final,) = [s for s in api.statuses if s.get("phase") == "Failed"]
    (ended,) = [c for c in final["conditions"] if c["type"] == "Finished"]
    assert (ended["reason"], ended["status"]) == ("MemberFailuresExceeded", "True"), ended
    assert ended["message"].startswith("evicted for member failures 2 times, at most 2"), ended
    api = FakeApi()
    cycle(scheduler(api, [], [marked]))
    assert not [s for s in api.statuses if s.get("phase") == "Failed"], api.statuses


def test_a_pending_pods_condition_turns_at_once_when_its_gangs_reason_does() -> None:
    """Cycle 1: only a of g's 2 pods (16 GPUs each, nodes of 8) exists: a is told the gang
    waits for its pods. Cycle 2, in the same minute: b exists too, and the gang waits because
    no node can hold a member; a is told that at once, not left saying "1 of 2 pods exist" for
    the refresh interval, which is for numbers that drift within one reason (walked: the first
    4 pods of a 5-pod gang kept "k of 5 pods exist" while the gang said
    `TopologyUnsatisfiable`). a's second write leaves out `lastTransitionTime`, so the merge
    keeps since when it waits; b's, the first, carries one."""
    api = FakeApi()
    a = pod("a", group="g", gpus=16)
    sched = scheduler(api, [a], [group("g", 2)])
    cycle(sched)
    first = api.pod_conditions["a"]["message"]
    assert first == "gang ns/g: 1 of 2 pods exist", first
    shown = {**a, "status": {"phase": "Pending", "conditions": [dict(api.pod_conditions["a"])]}}
    sched.source = ListSource([shown, pod("b", group="g", gpus=16)], [group("g", 2)])
    cycle(sched)
    now = api.pod_conditions["a"]["message"]
    assert now != first and "1 of 2 pods exist" not in now, now
    assert now == api.pod_conditions["b"]["message"], "both members say their gang's message"
    assert "lastTransitionTime" in api.pod_conditions["b"], "b's condition turns False now"
    assert "lastTransitionTime" not in api.pod_conditions["a"], (
        "a was False already: the merge keeps since when it waits",
        api.pod_conditions["a"],
    )


def test_a_gang_whose_members_all_succeed_while_its_eviction_is_under_way_closes_it() -> None:
    """g (minMember 2) was being evicted for its time limit when both its members succeeded:
    it ends `Succeeded`, and `Evicted` turns False with why, as it will not run again."""
    from phalanx.k8s.status import condition

    api = FakeApi()
    done = [pod(n, group="g", gpus=4, node_name="n1", phase="Succeeded") for n in ("a", "b")]
    marks = [condition({}, "Evicted", "True", "TimeLimitExceeded", "past its limit", 990.0)]
    g = with_status(group("g", 2), phase="Running", conditions=marks, bound=2, running=2)
    cycle(scheduler(api, done, [g]))
    assert api.statuses[-1]["phase"] == "Succeeded", api.statuses
    (closed,) = [c for c in api.statuses[-1]["conditions"] if c["type"] == "Evicted"]
    assert (closed["status"], closed["reason"]) == ("False", "Succeeded"), closed
    assert closed["message"] == (
        "ended Succeeded (2 of 2 members succeeded) while its eviction (TimeLimitExceeded) was "
        "under way: not placed again"
    ), closed


def test_a_gang_bound_whole_before_a_crash_says_scheduled_after_the_restart() -> None:
    """g's decision record (a → n1, b → n2 at t=960) and both binds landed, then the operator
    stopped before its deferred status after the binds: the PodGroup still said `Binding`, its
    `Scheduled` condition why it had waited (walked: `kill -9` just after a 6-pod gang's binds
    left it `Running` with no `Scheduled` condition at all). The restarted operator writes it
    `Running`, `Scheduled=True` from the record's numbers, `Evicted=False`, no queue position
    left over."""
    from phalanx.k8s.status import condition

    pods = [running("a", "g", "n1", gpus=8), running("b", "g", "n2", gpus=8)]
    waited = condition({}, "Scheduled", "False", "InsufficientCapacity", "needs 16 GPUs", 900.0)
    status = {
        "phase": "Binding",
        "scheduledAt": "1970-01-01T00:16:00Z",
        "placement": {
            "domains": {"leaf": ["leaf-1"]},
            "nodes": ["n1", "n2"],
            "pods": {"uid-a": "n1", "uid-b": "n2"},
        },
        "queuePosition": 1,
        "conditions": [waited],
    }
    api = FakeApi()
    cycle(scheduler(api, pods, [{**group("g", 2), "status": status}]))
    assert not [c for c in api.calls if c[0] in ("bind", "delete", "evict", "evicted")], api.calls
    (written,) = [s for s in api.statuses if s.get("phase") == "Running"]
    by_type = {c["type"]: c for c in written["conditions"]}
    scheduled = by_type["Scheduled"]
    assert (scheduled["status"], scheduled["reason"]) == ("True", "Scheduled"), scheduled
    assert scheduled["message"] == (
        "bound 2 pods on 2 nodes under 1 leaf (leaf-1) as decided at 1970-01-01T00:16:00Z; the "
        "operator stopped before it said so and found them bound when it started again"
    ), scheduled
    assert by_type["Evicted"]["status"] == "False", by_type
    assert written["queuePosition"] is None, written
    api = FakeApi()
    said = {**status, "phase": "Running", "conditions": [scheduled], "queuePosition": None}
    cycle(scheduler(api, pods, [{**group("g", 2), "status": said}]))
    assert not [s for s in api.statuses if "conditions" in s], "said once, not again"
