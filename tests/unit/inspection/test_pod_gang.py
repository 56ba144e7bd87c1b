"""`phalanx explain <pod>`: which gang a pod is a member of, and what a gang of one (no
PodGroup) says, from the pod and its Events (`inspection.pod_gang`)."""

from __future__ import annotations

import dataclasses
from typing import Any

from phalanx.inspection import render
from phalanx.inspection.pod_gang import (
    alone_note,
    gang_of_one,
    gang_of_pod,
    queue_of_pod,
    waiting_alone,
)
from phalanx.inspection.rows import explanation
from tests.unit.inspection.objects import NOW, podgroup, running

WAITS = (
    "gang default/web-1: needs 1 GPU; 48 free, but that capacity is reserved for default/giant; "
    "expected start in 2h50m when 2 running gangs end (not binding)"
)


def pod(
    name: str,
    *,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    scheduled: tuple[str, str, str] | None = None,
    node: str | None = None,
    owners: list[dict[str, Any]] | None = None,
    scheduler: str = "phalanx",
) -> dict[str, Any]:
    """A pod of namespace `default` (uid `uid-<name>`); `scheduled`: its PodScheduled
    condition (status, reason, message)."""
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": f"uid-{name}"}
    if labels:
        meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    if owners:
        meta["ownerReferences"] = owners
    spec: dict[str, Any] = {"schedulerName": scheduler, "containers": []}
    if node:
        spec["nodeName"] = node
    status: dict[str, Any] = {"phase": "Running" if node else "Pending"}
    if scheduled:
        status["conditions"] = [
            dict(zip(("status", "reason", "message"), scheduled, strict=True), type="PodScheduled")
        ]
    return {"metadata": meta, "spec": spec, "status": status}


def event(reason: str, message: str, at: str, kind: str = "Warning") -> dict[str, Any]:
    return {"type": kind, "reason": reason, "message": message, "lastTimestamp": at}


def test_a_pod_names_its_podgroup_by_any_of_the_three_keys() -> None:
    assert gang_of_pod(pod("a", labels={"phalanx.dev/pod-group": "g"})) == "g"
    assert gang_of_pod(pod("a", labels={"scheduling.x-k8s.io/pod-group": "g"})) == "g"
    assert gang_of_pod(pod("a", annotations={"scheduling.k8s.io/group-name": "g"})) == "g"


def test_a_waiting_member_of_an_automatic_gang_is_found_by_its_condition() -> None:
    """The operator writes "gang NS/NAME: …" on every waiting member; a Job's pod carries no
    label naming its managed PodGroup."""
    waiting = pod("sweep-x", scheduled=("False", "Unschedulable", "gang default/job-sweep: 0 of 2"))
    assert gang_of_pod(waiting) == "job-sweep"
    # Its own name (a gang of one) or another namespace's gang is no PodGroup of it.
    assert gang_of_pod(pod("web-1", scheduled=("False", "Unschedulable", WAITS))) is None
    other = pod("x", scheduled=("False", "Unschedulable", "gang research/job-sweep: 0 of 2"))
    assert gang_of_pod(other) is None


def test_a_bound_member_of_an_automatic_gang_is_found_by_the_decision_record() -> None:
    status = running("Scheduled", "bound 2 pods", pods=2, nodes=["n0", "n1"])
    status["placement"]["pods"] = {"uid-sweep-x": "n0", "uid-sweep-y": "n1"}
    groups = [podgroup("job-sweep", 2, status=status), podgroup("other", 1)]
    bound = pod("sweep-x", node="n0", scheduled=("True", "", ""))
    assert gang_of_pod(bound, groups) == "job-sweep"
    assert gang_of_pod(pod("lone", node="n0"), groups) is None


def test_a_gang_of_one_says_the_reason_its_events_give_and_the_operators_message() -> None:
    """The pod's condition says `Unschedulable` (kube-scheduler's word, for autoscalers); the
    reason the operator reported is its last waiting Event's."""
    waiting = pod("web-1", scheduled=("False", "Unschedulable", WAITS), owners=[{"kind": "X"}])
    events = [
        event(
            "NotGanged",
            "pods of ReplicaSet default/web are scheduled one at a time",
            "2026-11-30T04:58:00Z",
        ),
        event("WaitingForReservation", WAITS.split(": ", 1)[1], "2026-11-30T04:58:01Z"),
    ]
    e = gang_of_one(waiting, events, None)
    assert (e.kind, e.name, e.phase, e.reason) == (
        "Pod",
        "web-1",
        "Pending",
        "WaitingForReservation",
    )
    assert e.message == WAITS.split(": ", 1)[1]
    assert e.queue is None and e.position is None and e.detail is None
    assert len(e.would_start) == 2, e.would_start
    assert "activeDeadlineSeconds" in e.would_start[0]  # no time limit: it cannot backfill
    assert "phalanx.dev/min-member" in e.would_start[1]
    waiting["spec"]["activeDeadlineSeconds"] = 600
    assert len(gang_of_one(waiting, events, None).would_start) == 1
    text = render.explanation_text(e, NOW).plain
    assert text.startswith(
        "Pod       default/web-1 (a gang of one, no PodGroup; queue: its workload's or "
        "namespace's label)\n"
    ), text
    assert "Reason    WaitingForReservation\n" in text
    assert e.to_json()["kind"] == "Pod"


def test_a_gang_of_one_that_runs_says_so_and_gives_no_hint() -> None:
    """Its reason and message are the operator's Event on its bind, when it is still there
    (Events expire)."""
    bound = pod("web-1", node="n0", scheduled=("True", "", ""))
    e = gang_of_one(bound, [], "default")
    assert (e.phase, e.reason, e.message, e.would_start) == ("Running", None, None, ())
    events = [
        event("WaitingForReservation", "needs 1 GPU; 0 free", "2026-11-30T04:58:00Z"),
        event("Backfilled", "bound to n0", "2026-11-30T04:59:00Z", kind="Normal"),
    ]
    e = gang_of_one(bound, events, "default")
    assert (e.reason, e.message) == ("Backfilled", "bound to n0")


def test_a_pod_of_another_scheduler_is_said_to_be_one() -> None:
    e = gang_of_one(pod("p", scheduler="default-scheduler"), [], None)
    assert e.message == "not scheduled by phalanx: its schedulerName is default-scheduler"
    assert e.reason is None and e.would_start == ()


def test_a_gang_of_ones_queue_as_far_as_the_pod_and_namespace_say() -> None:
    assert queue_of_pod(pod("p", labels={"phalanx.dev/queue": "q"}), None) == "q"
    assert queue_of_pod(pod("p", labels={"kueue.x-k8s.io/queue-name": "k"}), None) == "k"
    assert (
        queue_of_pod(pod("p", annotations={"scheduling.volcano.sh/queue-name": "v"}), None) == "v"
    )
    assert queue_of_pod(pod("p"), {"phalanx.dev/queue": "ns-q"}) == "ns-q"
    assert queue_of_pod(pod("p"), {}) == "default"
    assert queue_of_pod(pod("p"), None) is None  # the namespace could not be read
    # A workload's label would win over the namespace's, and is not read here.
    assert queue_of_pod(pod("p", owners=[{"kind": "ReplicaSet"}]), {}) is None


def test_a_podgroup_explained_for_its_member_pod_says_which_pod() -> None:
    e = dataclasses.replace(explanation(podgroup("job-sweep", 2), NOW), member_of="sweep-x")
    text = render.explanation_text(e, NOW).plain
    assert text.startswith(
        "Pod       ml/sweep-x, a member of this PodGroup\nPodGroup  ml/job-sweep (queue default)\n"
    ), text
    assert e.to_json()["memberOf"] == "sweep-x"


def test_queue_lists_as_gangs_of_one_only_the_pods_the_operator_said_wait_alone() -> None:
    """A Job's pod not yet reported on (no condition) could be a member of the gang being made
    for it; a member says its gang's name; a bound or labelled pod is none."""
    pods = [
        pod("web-1", scheduled=("False", "Unschedulable", WAITS)),
        pod("web-2", scheduled=("False", "Unschedulable", WAITS.replace("web-1", "web-2"))),
        pod("job-pod"),  # not reported on yet
        pod("sweep-x", scheduled=("False", "Unschedulable", "gang default/job-sweep: 0 of 2")),
        pod("pair-0", labels={"phalanx.dev/pod-group": "pair"}, scheduled=("False", "U", WAITS)),
        pod("web-3", node="n0", scheduled=("False", "Unschedulable", WAITS.replace("1:", "3:"))),
    ]
    assert waiting_alone(pods) == ["default/web-1", "default/web-2"]
    assert alone_note(["default/web-1", "default/web-2"], namespaced=True) == (
        "2 pods with no PodGroup wait as a gang of one each: web-1, web-2 "
        "(phalanx explain POD says why)"
    )
    many = [f"ns/p{i}" for i in range(7)]
    assert alone_note(many, namespaced=False) == (
        "7 pods with no PodGroup wait as a gang of one each: ns/p0, ns/p1, ns/p2, ns/p3, ns/p4 "
        "and 2 more (phalanx explain POD says why)"
    )
    assert alone_note(["ns/p"], namespaced=True).startswith(
        "1 pod with no PodGroup waits as a gang of one: p "
    )
