"""Automatic gangs through the adapter (view, gang maker, reporter) against a fake API: the
managed PodGroup made for a Job's pods, its pods bound as one gang once it exists, re-made when
the Job is resized while it waits, a running gang scaled down not evicted, a broken owner chain
reported, an unknown owner kind left a gang of one with a hint."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from phalanx.config import build_config
from phalanx.k8s.cluster_view import Workloads
from phalanx.k8s.records import (
    SUSPENDED_FOR,
    group_record,
    job_record,
    node_record,
    pod_record,
    queue_record,
)
from phalanx.k8s.scheduler import Records, Scheduler
from phalanx.k8s.workload_records import workload_record
from tests.unit.k8s.test_records_and_view import node, pod, view
from tests.unit.k8s.test_scheduler_loop import FakeApi

JOB_REF = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "name": "train",
    "uid": "job-uid",
    "controller": True,
}


def job_pod(name: str, **kw: Any) -> dict[str, Any]:
    body = pod(name, gpus=4, **kw)
    body["metadata"]["ownerReferences"] = [JOB_REF]
    return body


def job(parallelism: int) -> dict[str, Any]:
    return {
        "metadata": {"name": "train", "namespace": "ns", "uid": "job-uid"},
        "spec": {"parallelism": parallelism, "completions": parallelism},
    }


def pytorchjob(
    name: str, spec: dict[str, Any], status: dict[str, Any] | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A PyTorchJob in namespace `ns` (uid `ptj-uid`): the owner reference its pods carry, and
    the object itself."""
    api = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob"}
    ref = {**api, "name": name, "uid": "ptj-uid", "controller": True}
    body = {
        **api,
        "metadata": {"name": name, "namespace": "ns", "uid": "ptj-uid"},
        "spec": spec,
        "status": status or {},
    }
    return ref, body


def managed(min_member: int, owner: dict[str, Any] | None = None, **status: Any) -> dict[str, Any]:
    """The managed PodGroup of `owner` (the Job `train` unless said), as the operator makes it."""
    owner = owner or JOB_REF
    name = f"{str(owner['kind']).lower()}-{owner['name']}"
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"g-{name}",
            "labels": {"phalanx.dev/managed": "true"},
            "ownerReferences": [owner],
        },
        "spec": {"minMember": min_member, "queue": "research"},
        "status": status,
    }


class Source:
    def __init__(
        self,
        pods: list[dict[str, Any]],
        groups: list[dict[str, Any]],
        jobs: list[dict[str, Any]],
        others: Sequence[dict[str, Any]] = (),
    ) -> None:
        """`others`: workloads of kinds besides Job (whole bodies, with apiVersion and kind)."""
        job_recs = {j.uid: j for j in map(job_record, jobs)}
        other_recs = [w for w in map(workload_record, others) if w is not None]
        self._records = Records(
            nodes=[node_record(node("n1")), node_record(node("n2"))],
            pods=[pod_record(p) for p in pods],
            groups=[group_record(g) for g in groups],
            queues=[
                queue_record({"metadata": {"name": name}, "spec": {}})
                for name in ("default", "research")
            ],
            priority_classes={},
            jobs=job_recs,
            workloads=Workloads(
                {
                    **{u: j.workload for u, j in job_recs.items() if j.workload is not None},
                    **{w.ref.uid: w for w in other_recs},
                },
                {},
                {"ns": "research"},
            ),
        )

    def records(self) -> Records:
        return self._records


def run(
    pods: list[dict[str, Any]],
    groups: list[dict[str, Any]],
    jobs: list[dict[str, Any]],
    api: FakeApi | None = None,
    others: Sequence[dict[str, Any]] = (),
    cycles: int = 1,
) -> FakeApi:
    api = api or FakeApi()
    config = build_config(bind_deadline_s=0.3, metrics_port=0, health_port=0)
    sched = Scheduler(config, api, Source(pods, groups, jobs, others), clock=lambda: 1000.0)

    async def go() -> None:
        for _ in range(cycles):
            await sched.cycle()
            await sched.settle()

    asyncio.run(go())
    return api


def test_a_jobs_pods_get_their_podgroup_made_and_wait_for_it() -> None:
    api = run([job_pod("train-0"), job_pod("train-1")], [], [job(2)])
    assert ("create-group", "job-train") in api.calls
    (body,) = api.made
    assert body["spec"] == {"minMember": 2, "queue": "research"}  # the namespace's label
    assert body["metadata"]["labels"] == {"phalanx.dev/managed": "true"}
    (owner,) = body["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"], owner["controller"]) == ("Job", "job-uid", True)
    assert not [c for c in api.calls if c[0] == "bind"], "nothing bound before its gang exists"


def test_once_made_the_pods_are_bound_as_one_gang() -> None:
    api = run([job_pod("train-0"), job_pod("train-1")], [managed(2)], [job(2)])
    assert sorted(c for c in api.calls if c[0] == "bind") == [
        ("bind", "train-0"),
        ("bind", "train-1"),
    ]
    assert ("create-group", "job-train") not in api.calls


def test_a_job_resized_while_its_gang_waits_gets_its_podgroup_made_again() -> None:
    pods = [job_pod(f"train-{i}") for i in range(3)]
    api = run(pods, [managed(2)], [job(3)])
    assert ("delete-group", "job-train") in api.calls
    assert not [c for c in api.calls if c[0] == "bind"], "nothing placed under the old spec"


def test_a_running_gang_whose_job_is_scaled_down_is_not_evicted() -> None:
    """minMember 3 when it started; the Job now wants 2 and removed a pod: 2 run on."""
    pods = [job_pod(f"train-{i}", node_name="n1", phase="Running") for i in range(2)]
    group = managed(3, phase="Running", scheduledAt="2026-01-01T00:00:00Z")
    api = run(pods, [group], [job(2)])
    assert not [c for c in api.calls if c[0] in ("evict", "delete", "evicted", "delete-group")], (
        api.calls
    )


def test_a_running_gangs_member_that_does_not_fit_says_why_on_the_pod() -> None:
    """An elastic job's extra worker (minMember 2, 2 bound on n1 and n2, 4 GPUs each of 8, and
    the rest of each node taken by another gang) waits, and its pod says why with numbers."""
    pods = [job_pod(f"train-{i}", node_name=f"n{i + 1}", phase="Running") for i in range(2)]
    pods += [pod(f"other-{i}", gpus=4, node_name=f"n{i + 1}", phase="Running") for i in range(2)]
    pods.append(job_pod("train-extra"))
    group = managed(2, phase="Running", scheduledAt="2026-01-01T00:00:00Z", bound=2)
    api = run(pods, [group], [job(3)])
    assert not [c for c in api.calls if c[0] == "bind"], api.calls
    cond = api.pod_conditions["train-extra"]
    assert (cond["status"], cond["reason"]) == ("False", "Unschedulable")
    assert cond["message"] == (
        "gang ns/job-train: waits to join its running gang (2 pods bound, minMember 2): needs 4 "
        "GPUs on one node; the most free on a node it may use is 0"
    )


def test_a_waiting_pods_condition_turns_at_once_when_its_gang_starts_without_it() -> None:
    """Cycle 1: the gang (minMember 2 of 3 pods, 4 GPUs each) waits, every node full: its pods
    say the gang's wait. Cycle 2: it runs on 2 and its third pod waits to join: that pod is
    told so in the same minute, not left with the wait of a gang that no longer waits."""
    others = [pod(f"other-{i}", gpus=8, node_name=f"n{i + 1}", phase="Running") for i in range(2)]
    waiting = [job_pod(f"train-{i}") for i in range(2)] + [job_pod("train-extra")]
    elastic = job(3)
    elastic["metadata"]["annotations"] = {"phalanx.dev/min-member": "2"}
    source = Source(waiting + others, [managed(2)], [elastic])
    api = FakeApi()
    config = build_config(bind_deadline_s=0.3, metrics_port=0, health_port=0)
    sched = Scheduler(config, api, source, clock=lambda: 1000.0)

    async def cycle() -> None:
        await sched.cycle()
        await sched.settle()

    asyncio.run(cycle())
    assert "waits to join" not in api.pod_conditions["train-extra"]["message"]
    half = [pod(f"other-{i}", gpus=4, node_name=f"n{i + 1}", phase="Running") for i in range(2)]
    bound = [job_pod(f"train-{i}", node_name=f"n{i + 1}", phase="Running") for i in range(2)]
    running = managed(2, phase="Running", scheduledAt="2026-01-01T00:00:00Z", bound=2)
    extra = job_pod("train-extra")
    extra["status"]["conditions"] = [dict(api.pod_conditions["train-extra"])]  # as written
    sched.source = Source([*bound, extra, *half], [running], [elastic])
    asyncio.run(cycle())
    assert api.pod_conditions["train-extra"]["message"].startswith(
        "gang ns/job-train: waits to join its running gang (2 pods bound, minMember 2)"
    )


def test_a_pod_whose_job_is_gone_waits_and_is_reported() -> None:
    """In an Event and in its `PodScheduled` condition (reason `OwnerNotFound`, kept where the
    Event expires; not `Unschedulable`, which an autoscaler would add nodes for)."""
    api = run([job_pod("train-0")], [], [])
    assert not [c for c in api.calls if c[0] in ("bind", "create-group")]
    assert ("event", "OwnerNotFound") in api.calls
    cond = api.pod_conditions["train-0"]
    assert (cond["status"], cond["reason"]) == ("False", "OwnerNotFound"), cond
    assert "train" in cond["message"], cond


def test_a_pod_of_an_unknown_kind_is_a_gang_of_one_with_a_hint() -> None:
    body = pod("web-0", gpus=4)
    body["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": "web",
            "uid": "rs",
            "controller": True,
        }
    ]
    api = run([body], [], [])
    assert ("bind", "web-0") in api.calls
    assert ("event", "NotGanged") in api.calls


def test_a_bad_min_member_annotation_makes_the_gang_invalid_not_loose() -> None:
    bad = job(2)
    bad["metadata"]["annotations"] = {"phalanx.dev/min-member": "-1"}
    api = run([job_pod("train-0"), job_pod("train-1")], [managed(2)], [bad])
    assert not [c for c in api.calls if c[0] == "bind"]
    assert any(c == ("status", "Pending") for c in api.calls)
    invalid = [
        c for s in api.statuses for c in s.get("conditions", []) if c.get("reason") == "Invalid"
    ]
    assert invalid and "phalanx.dev/min-member" in invalid[0]["message"]


def test_a_queue_label_naming_no_queue_says_which_label_to_fix() -> None:
    labelled = job(2)
    labelled["metadata"]["labels"] = {"phalanx.dev/queue": "nope"}
    group = managed(2)
    group["spec"]["queue"] = "nope"
    api = run([job_pod("train-0"), job_pod("train-1")], [group], [labelled])
    assert not [c for c in api.calls if c[0] == "bind"]
    found = [
        c
        for s in api.statuses
        for c in s.get("conditions", [])
        if c.get("reason") == "QueueNotFound"
    ]
    assert found, api.statuses
    assert found[0]["message"] == (
        "queue 'nope' does not exist (named by label phalanx.dev/queue of Job ns/train)"
    )


def test_a_gang_waiting_for_its_jobs_pods_says_the_jobs_failure_back_off() -> None:
    """Evicted whole after a member failed, the Job's pods are gone and the Job has 3 failed
    pods: its controller makes them again only 10 s × 2² = 40 s after the last failure, which
    `WaitingForPods` says; with no failed pods it says only the count."""
    failed = {**job(3), "status": {"failed": 3, "active": 0}}
    api = run([], [managed(3)], [failed])
    messages = [
        c["message"]
        for s in api.statuses
        for c in s.get("conditions", [])
        if c["type"] == "Scheduled" and c["reason"] == "WaitingForPods"
    ]
    assert messages and messages[-1] == (
        "0 of 3 pods exist; its Job train has 3 failed pods: the Job controller makes pods "
        "again only after its back-off, up to 40s after the last failure (10s doubled per "
        "failure since its last success, at most 10m)"
    ), messages
    plain = run([], [managed(3)], [job(3)])
    assert [
        c["message"]
        for s in plain.statuses
        for c in s.get("conditions", [])
        if c["type"] == "Scheduled"
    ][-1] == "0 of 3 pods exist"


def _phases(api: FakeApi) -> list[str]:
    return [s["phase"] for s in api.statuses if "phase" in s]


def test_a_gang_whose_job_failed_after_its_pods_were_evicted_is_failed_not_waiting() -> None:
    """Evicted (a time limit; `backoffLimit: 0`), the pods are deleted and the Job says
    `Failed`: with no pod left to name the Job, the managed PodGroup's owner does. Before, the
    gang stayed `Pending` "0 of 2 pods exist" for ever (found walking a Job past its limit)."""
    failed = {
        **job(2),
        "status": {"failed": 2, "conditions": [{"type": "Failed", "status": "True"}]},
    }
    evicted = {"type": "Evicted", "status": "True", "reason": "TimeLimitExceeded"}
    waits = {
        "type": "Scheduled",
        "status": "False",
        "reason": "WaitingForPods",
        "message": "0 of 2 pods exist; its Job train has 2 failed pods: …",
    }
    api = run([], [managed(2, phase="Pending", conditions=[evicted, waits])], [failed])
    assert _phases(api)[-1:] == ["Failed"], api.statuses
    (said,) = [c for c in api.statuses[-1]["conditions"] if c["type"] == "Scheduled"]
    assert (said["reason"], said["message"]) == (
        "WaitingForPods",
        "its workload reports Failed: it no longer waits (it was: 0 of 2 pods exist)",
    ), said
    (ended,) = [c for c in api.statuses[-1]["conditions"] if c["type"] == "Finished"]
    assert (ended["status"], ended["reason"], ended["message"]) == (
        "True",
        "WorkloadFailed",
        "its workload reports Failed",
    ), ended
    # `Evicted=True` says it waits to run again; it never will (walked: a Job whose member
    # failed was Failed and still said "evicting the gang whole so that it restarts whole").
    (closed,) = [c for c in api.statuses[-1]["conditions"] if c["type"] == "Evicted"]
    assert (closed["status"], closed["reason"], closed["message"]) == (
        "False",
        "Failed",
        "ended Failed (WorkloadFailed) while its eviction (TimeLimitExceeded) was under way: "
        "not placed again",
    ), closed
    still = run([], [managed(2, phase="Pending", conditions=[evicted, waits])], [job(2)])
    assert "Failed" not in _phases(still), "an active Job's gang waits for its pods again"


def test_a_gang_that_ran_and_whose_job_failed_keeps_why_in_finished() -> None:
    """Walked: a Job (`backoffLimit: 0`) whose member failed ended `Failed`, and `explain` showed
    only its bind ("Scheduled: bound 2 pods …"); why it ended was in an Event alone."""
    why = {
        "reason": "BackoffLimitExceeded",
        "message": "Job has reached the specified backoff limit",
    }
    failed = {
        **job(2),
        "status": {"failed": 1, "conditions": [{"type": "Failed", "status": "True", **why}]},
    }
    bound = {"type": "Scheduled", "status": "True", "reason": "Scheduled", "message": "bound 2"}
    api = run([], [managed(2, phase="Running", conditions=[bound])], [failed])
    assert _phases(api)[-1:] == ["Failed"], api.statuses
    conditions = {c["type"]: c for c in api.statuses[-1]["conditions"]}
    assert conditions["Scheduled"]["reason"] == "Scheduled", "its bind stays as it was"
    ended = conditions["Finished"]
    assert (ended["reason"], ended["message"]) == (
        "WorkloadFailed",
        "its workload reports Failed (BackoffLimitExceeded: Job has reached the specified backoff "
        "limit)",
    )


def test_a_hand_written_podgroup_knows_its_failed_job_by_the_jobs_pod_template() -> None:
    """A PodGroup of ours with no owner, all its pods gone: the one Job in its namespace whose
    pod template names it (label `phalanx.dev/pod-group`) decides. Two such Jobs: unknown."""

    def named_job(name: str, uid: str, state: str | None) -> dict[str, Any]:
        conditions = [{"type": state, "status": "True"}] if state else []
        return {
            "metadata": {"name": name, "namespace": "ns", "uid": uid},
            "spec": {
                "parallelism": 2,
                "completions": 2,
                "template": {"metadata": {"labels": {"phalanx.dev/pod-group": "train"}}},
            },
            "status": {"conditions": conditions},
        }

    group = {
        "metadata": {"name": "train", "namespace": "ns", "uid": "g-train"},
        "spec": {"minMember": 2, "queue": "research"},
        "status": {"phase": "Pending"},
    }
    api = run([], [group], [named_job("train", "j1", "Failed")])
    assert _phases(api)[-1:] == ["Failed"], api.statuses
    other = {**named_job("other", "j3", "Failed")}
    other["spec"]["template"]["metadata"]["labels"] = {"phalanx.dev/pod-group": "else"}
    assert "Failed" not in _phases(run([], [group], [other])), "a Job naming another group"
    two = run([], [group], [named_job("train", "j1", "Failed"), named_job("again", "j2", None)])
    assert "Failed" not in _phases(two), "two Jobs name it: neither decides"


def last_waiting_message(api: FakeApi) -> str:
    """The message of the last `WaitingForPods` the gang's status was written with."""
    return [
        c["message"]
        for s in api.statuses
        for c in s.get("conditions", [])
        if c["type"] == "Scheduled" and c["reason"] == "WaitingForPods"
    ][-1]


def test_a_hand_written_podgroups_wait_names_its_jobs_back_off_too() -> None:
    """The Job is found for a PodGroup of ours by its pod template when no pod is left."""
    group = {
        "metadata": {"name": "train", "namespace": "ns", "uid": "g-train"},
        "spec": {"minMember": 2, "queue": "research"},
        "status": {"phase": "Pending"},
    }
    body = {
        **job(2),
        "status": {"failed": 1},
    }
    body["spec"]["template"] = {"metadata": {"labels": {"phalanx.dev/pod-group": "train"}}}
    assert last_waiting_message(run([], [group], [body])) == (
        "0 of 2 pods exist; its Job train has 1 failed pod: the Job controller makes pods again "
        "only after its back-off, up to 10s after the last failure (10s doubled per failure "
        "since its last success, at most 10m)"
    )


def test_a_drained_jobs_wait_names_the_back_off_its_status_does_not_show() -> None:
    """A Job whose podFailurePolicy ignored its drained member has no failure in its status,
    but its controller backs off for that member all the same: the gang, evicted whole for it
    (`MemberFailed`), says so while it waits, planned from its Job's pod template meanwhile
    (`_restart_resources`). Without the mark, or with the Job suspended (our eviction still
    under way), there is nothing to say about a back-off."""
    evicted = {
        "type": "Evicted",
        "status": "True",
        "reason": "MemberFailed",
        "lastTransitionTime": "1970-01-01T00:16:00Z",
    }
    group = {
        "metadata": {"name": "train", "namespace": "ns", "uid": "g-train"},
        "spec": {"minMember": 2, "queue": "research"},
        "status": {"phase": "Pending", "conditions": [evicted]},
    }
    body = job(2)
    body["spec"]["template"] = {"metadata": {"labels": {"phalanx.dev/pod-group": "train"}}}
    assert last_waiting_message(run([], [group], [body])) == (
        "0 of 2 pods exist; its Job train makes pods again only after its back-off, which counts "
        "the pods its podFailurePolicy ignores though its status shows none: 10s doubled per pod "
        "failed or evicted since its last success, at most 10m, after the last; it fits now "
        "and starts once they exist, its capacity held for it"
    )
    reclaimed = {
        **group,
        "status": {"phase": "Pending", "conditions": [{**evicted, "reason": "Reclaimed"}]},
    }
    assert last_waiting_message(run([], [reclaimed], [body])) == "0 of 2 pods exist"
    ours = {"annotations": {SUSPENDED_FOR: "MemberFailed"}}
    suspended = {**body, "metadata": {**body["metadata"], **ours}}
    suspended["spec"] = {**body["spec"], "suspend": True}
    assert last_waiting_message(run([], [group], [suspended])) == (
        "0 of 2 pods exist; it fits now and starts once they exist, its capacity held for it"
    )


def test_a_gang_whose_job_its_user_suspended_says_so_while_it_waits() -> None:
    """The Job `train` suspended by its user (`spec.suspend`, no mark of ours) while its gang
    ran: the Job controller deleted its pods, and the gang waits for pods that come only once
    the Job is resumed; it says so rather than only "0 of 2 pods exist" (walked: the gang of a
    suspended Job read as if its pods were on their way). It is held outside the order: no
    queue position. Resumed, the note is gone and it has one."""
    body = job(2)
    body["spec"]["suspend"] = True
    api = run([], [managed(2, phase="Running")], [body])
    assert last_waiting_message(api) == (
        "0 of 2 pods exist; its Job train is suspended (spec.suspend): it makes no pods until "
        "resumed"
    )
    assert api.statuses[-1].get("queuePosition") is None, api.statuses[-1]
    assert run([], [managed(2, phase="Running")], [job(2)]).statuses[-1]["queuePosition"] == 1
    assert last_waiting_message(run([], [managed(2, phase="Running")], [job(2)])) == (
        "0 of 2 pods exist"
    )


def test_a_job_suspended_a_second_time_after_it_ran_again_says_so_again() -> None:
    """Suspended (a `WaitingForPods` Warning Event), resumed and bound (`Scheduled`), suspended
    again: the second wait is an Event of its own (walked: it was not, the first one's reason
    still remembered as the last said)."""
    api = FakeApi()
    config = build_config(bind_deadline_s=0.3, metrics_port=0, health_port=0)
    held = job(2)
    held["spec"]["suspend"] = True
    group = managed(2, phase="Running")
    sched = Scheduler(config, api, Source([], [group], [held]), clock=lambda: 1000.0)

    async def cycle() -> None:
        await sched.cycle()
        await sched.settle()
        sched.reporter.flush_deferred(force=True)
        await sched.settle()

    asyncio.run(cycle())
    sched.source = Source([job_pod("train-0"), job_pod("train-1")], [group], [job(2)])
    asyncio.run(cycle())
    sched.source = Source([], [group], [held])
    asyncio.run(cycle())
    said = [c[1] for c in api.calls if c[0] == "event" and c[1] in ("WaitingForPods", "Scheduled")]
    assert said == ["WaitingForPods", "Scheduled", "WaitingForPods"], api.calls


def test_a_gang_whose_pytorchjob_its_user_suspended_says_so_and_ours_does_not() -> None:
    """Any kind ganging knows, not only Jobs: the PyTorchJob `ptj` suspended through its run
    policy while its gang ran, its pods gone. Suspended by its user, the wait names it and the
    field; suspended by this operator to evict the gang (`phalanx.dev/suspended-for`), the
    `Evicted` condition tells instead, and the note is not there."""
    from tests.unit.k8s.test_job_suspension import PYTORCHJOB_REF, _pytorchjob

    group = managed(3, PYTORCHJOB_REF, phase="Running", scheduledAt="1970-01-01T00:16:00Z")
    held = _pytorchjob(suspend=True)
    assert last_waiting_message(run([], [group], [], others=[held])) == (
        "0 of 3 pods exist; its PyTorchJob ptj is suspended (spec.runPolicy.suspend): it makes "
        "no pods until resumed"
    )
    ours = _pytorchjob(suspend=True)
    ours["metadata"]["annotations"] = {SUSPENDED_FOR: "Reclaimed"}
    assert "suspended" not in last_waiting_message(run([], [group], [], others=[ours]))


def test_new_pods_of_a_finished_podgroup_are_told_so_and_not_unschedulable() -> None:
    """A failed Job deleted and created again beside its hand-written PodGroup: the PodGroup is
    `Failed` (terminal), so its new pods are never placed; each gets one Warning Event and
    `PodScheduled=False` reason `PodGroupFinished` with the same words (kept where the Event
    expires), never `Unschedulable`, which an autoscaler would add nodes for. A second cycle
    writes nothing again."""
    group = {
        "metadata": {"name": "train", "namespace": "ns", "uid": "g-train"},
        "spec": {"minMember": 2, "queue": "research"},
        "status": {"phase": "Failed"},
    }
    pods = [pod(f"train-{i}", group="train", gpus=4) for i in range(2)]
    api = run(pods, [group], [], cycles=2)
    assert [c for c in api.calls if c[0] in ("event", "bind", "pod-condition")] == [
        ("event", "PodGroupFinished"),
        ("pod-condition", "train-0"),
        ("event", "PodGroupFinished"),
        ("pod-condition", "train-1"),
    ], api.calls
    cond = api.pod_conditions["train-0"]
    assert (cond["status"], cond["reason"]) == ("False", "PodGroupFinished"), cond
    assert cond["message"].startswith("its PodGroup ns/train is Failed"), cond
    pending = {**group, "status": {"phase": "Pending"}}
    assert ("event", "PodGroupFinished") not in run(pods, [pending], []).calls


def test_a_pod_naming_a_missing_podgroup_is_told_so_in_its_condition_too() -> None:
    """`lost-0` names the PodGroup `lost`, which does not exist: one Warning Event and
    `PodScheduled=False` reason `PodGroupNotFound` (walked: only the Event said it, and an
    Event expires after an hour), not `Unschedulable`: no node added lets it run. Shown on the
    pod already, it is not written again; a bound orphan (`held-0`) keeps its `True`."""
    waiting = pod("lost-0", group="lost", gpus=4)
    bound = pod("held-0", group="held", gpus=4, node_name="n1", phase="Running")
    api = run([waiting, bound], [], [], cycles=2)
    said = sorted(c for c in api.calls if c[0] in ("event", "pod-condition"))
    assert said == [
        ("event", "PodGroupNotFound"),
        ("event", "PodGroupNotFound"),
        ("pod-condition", "lost-0"),
    ], api.calls
    cond = api.pod_conditions["lost-0"]
    assert (cond["status"], cond["reason"]) == ("False", "PodGroupNotFound"), cond
    assert cond["message"] == "waiting for PodGroup ns/lost: it does not exist", cond
    shown = {**waiting, "status": {"phase": "Pending", "conditions": [dict(cond)]}}
    again = run([shown], [], [])
    assert ("pod-condition", "lost-0") not in again.calls, again.calls


def test_a_burst_of_pods_naming_missing_podgroups_is_told_a_bounded_number_per_cycle() -> None:
    """70 pods created before their PodGroups (a chart's order): their `PodGroupNotFound`
    conditions go at most `POD_CONDITIONS_PER_CYCLE` (64) a cycle, the rest the next, as every
    pod condition does; each pod's Event goes at once."""
    from phalanx.k8s.reporter import POD_CONDITIONS_PER_CYCLE

    pods = [pod(f"early-{i}", group=f"early-{i}", gpus=1) for i in range(70)]
    api = run(pods, [], [])
    assert len(api.pod_conditions) == POD_CONDITIONS_PER_CYCLE == 64
    assert sum(c == ("event", "PodGroupNotFound") for c in api.calls) == 70
    assert len(run(pods, [], [], cycles=2).pod_conditions) == 70


def test_spec_annotations_on_a_known_kinds_pods_are_said_not_read_once() -> None:
    """Walked: a PyTorchJob's time limit written on its pod templates, not on the PyTorchJob, ran
    92 s past its 15 s without a word. The PodGroup is made without it and a Warning says where
    to write it, once however many cycles see it."""
    from tests.unit.k8s.test_job_suspension import PYTORCHJOB_REF, _ptj_pod, _pytorchjob

    pods = [_ptj_pod(i) for i in range(3)]
    for p in pods:
        p["metadata"]["annotations"] = {"phalanx.dev/time-limit-seconds": "15"}
    group = managed(3, PYTORCHJOB_REF, phase="Running", scheduledAt="1970-01-01T00:16:00Z")
    api = run(pods, [group], [], others=[_pytorchjob()], cycles=2)
    said = [c for c in api.calls if c == ("event", "AnnotationIgnored")]
    assert len(said) == 1, api.calls


def test_a_pod_left_pending_by_a_finished_workload_is_told_so_and_unschedulable_no_more() -> None:
    """An elastic PyTorchJob succeeded with 2 of its 3 workers; the third never fitted and was
    told it waits to join (`Unschedulable`). Its PodGroup is `Succeeded`, as the job: the pod
    is told it is never placed, and its condition is no longer `Unschedulable` (walked: it kept
    the old one, so an autoscaler would still have added a node for it)."""
    ptj_ref, ptj = pytorchjob(
        "el",
        {
            "elasticPolicy": {"minReplicas": 2, "maxReplicas": 3},
            "pytorchReplicaSpecs": {"Worker": {"replicas": 3}},
        },
        {"conditions": [{"type": "Succeeded", "status": "True"}]},
    )
    left = pod("el-worker-2", gpus=4)
    left["metadata"]["ownerReferences"] = [ptj_ref]
    left["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "…"}
    ]
    group = managed(2, ptj_ref, phase="Succeeded")
    group["spec"]["memberFailure"] = "keep"
    api = run([left], [group], [], others=[ptj])
    said = (
        "its PodGroup ns/pytorchjob-el is Succeeded, as PyTorchJob ns/el succeeded: this pod, "
        "left by it, is never placed (delete the pod, or the workload)"
    )
    assert api.events == [("el-worker-2", "PodGroupFinished", said)], api.events
    cond = api.pod_conditions["el-worker-2"]
    assert (cond["status"], cond["reason"], cond["message"]) == ("False", "PodGroupFinished", said)


def test_a_job_of_more_completions_than_its_minimum_says_how_many_succeeded() -> None:
    """A Job of 5 completions, 2 at a time: its gang (minMember 2) ends with 5 members
    succeeded, said so, not "5 of 2 members succeeded"."""
    done = [job_pod(f"train-{i}", node_name="n1", phase="Succeeded") for i in range(5)]
    body = job(2)
    body["spec"]["completions"] = 5
    body["status"] = {"conditions": [{"type": "Complete", "status": "True"}]}
    group = managed(2, phase="Running", scheduledAt="2026-01-01T00:00:00Z")
    api = run(done, [group], [body])
    assert ("job-train", "Succeeded", "5 members succeeded (minMember 2)") in api.events, api.events


def test_a_pytorchjobs_scheduling_policy_priority_and_timeout_reach_its_podgroup() -> None:
    """What the Training Operator gives Volcano's PodGroup from `schedulingPolicy`
    (`priorityClass`, `scheduleTimeoutSeconds`) is in the PodGroup made for it; the class
    named there wins over its pods' own."""
    ptj_ref, ptj = pytorchjob(
        "ptj",
        {
            "runPolicy": {
                "schedulingPolicy": {"priorityClass": "urgent", "scheduleTimeoutSeconds": 90}
            },
            "pytorchReplicaSpecs": {"Worker": {"replicas": 2}},
        },
    )
    pods = [pod(f"ptj-worker-{i}", gpus=4) for i in range(2)]
    for p in pods:
        p["metadata"]["ownerReferences"] = [ptj_ref]
        p["spec"]["priorityClassName"] = "low"
    api = run(pods, [], [], others=[ptj])
    (made,) = api.made
    assert made["spec"] == {
        "minMember": 2,
        "queue": "research",
        "scheduleTimeoutSeconds": 90,
        "priorityClassName": "urgent",
    }


def test_a_degraded_gang_that_runs_on_says_why_in_its_conditions_and_when_it_is_whole() -> None:
    """A gang of 2 with `memberFailure: keep` whose member failed runs on `Degraded`: its
    `Evicted` condition says `False`, reason `MemberFailed`, with the counts. Whole again (its
    replacement bound), it says `Running` again."""
    group = managed(2, phase="Running", scheduledAt="2026-01-01T00:00:00Z")
    group["spec"]["memberFailure"] = "keep"
    group["status"]["conditions"] = [
        {"type": "Evicted", "status": "False", "reason": "Running", "message": "not evicted"}
    ]
    pods = [
        job_pod("train-0", node_name="n1", phase="Running"),
        job_pod("train-1", node_name="n1", phase="Failed"),
    ]
    api = run(pods, [group], [job(2)])
    evicted = [c for s in api.statuses for c in s.get("conditions", []) if c["type"] == "Evicted"]
    assert [s["phase"] for s in api.statuses] == ["Degraded"], api.statuses
    assert [(c["status"], c["reason"], c["message"]) for c in evicted] == [
        (
            "False",
            "MemberFailed",
            "1 of 2 members left (1 failed, 0 lost, 0 deleted); kept running (memberFailure: "
            "keep), replacements placed as they fit",
        )
    ], evicted
    group["status"] = {**group["status"], **api.statuses[0]}
    whole = [*pods, job_pod("train-2", node_name="n2", phase="Running")]
    again = run(whole, [group], [job(2)])
    evicted = [c for s in again.statuses for c in s.get("conditions", []) if c["type"] == "Evicted"]
    assert [(c["status"], c["reason"]) for c in evicted] == [("False", "Running")], evicted
    assert evicted[0]["message"].startswith("whole again"), evicted


def test_a_jobs_gang_evicted_for_a_member_failure_is_planned_from_its_template() -> None:
    """While its Job makes its pods again, a gang evicted whole for a member failure (a drain
    among them) is planned as `need` pods of its Job's template — 2 × (4 GPUs, 8 CPUs, 1 pod)
    — so that it is planned and may hold its capacity; evicted for anything else, or with its
    pods back, it has no stand-in resources."""

    def pending(reason: str, pods: list[dict[str, Any]]) -> Any:
        group = {
            "metadata": {"name": "train", "namespace": "ns", "uid": "g-train"},
            "spec": {"minMember": 2},
            "status": {
                "phase": "Pending",
                "conditions": [
                    {
                        "type": "Evicted",
                        "status": "True",
                        "reason": reason,
                        "lastTransitionTime": "1970-01-01T00:16:00Z",
                    }
                ],
            },
        }
        body = job(2)
        container = {"name": "c", "resources": {"requests": {"nvidia.com/gpu": "4", "cpu": "8"}}}
        body["spec"]["template"] = {
            "metadata": {"labels": {"phalanx.dev/pod-group": "train"}},
            "spec": {"containers": [container]},
        }
        (gang,) = view(
            [node("n1")], pods, [group], jobs={"job-uid": job_record(body)}
        ).snapshot.pending
        return gang.min_resources

    assert pending("MemberFailed", []) == {"nvidia.com/gpu": 8, "cpu": 16_000, "pods": 2}
    assert pending("Reclaimed", []) is None
    back = [pod(n, group="train", gpus=4) for n in ("a", "b")]
    assert pending("MemberFailed", back) is None
