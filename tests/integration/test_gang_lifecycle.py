"""A gang's whole life on the real API server: members finishing at different times, a Job to
Complete, a schedule timeout, extras placed later, a member failing under `keep`, pending pods
telling the cluster why, and a time limit that survives an operator restart.

Every wait has a deadline and says what it waited for; what a test asserts never happened (an
eviction, a pod deleted) is read from a watch of every pod change over the whole test, not from
one look at the end.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from phalanx.devcluster.stages import STUCK_ANNOTATION
from tests.integration.conftest import Cluster
from tests.integration.objects import gang_job, gang_pod, pod_group
from tests.integration.operator_fixture import OperatorProcess
from tests.integration.test_operator_gangs import PodWatch, group_status, nodes_of
from tests.integration.test_views import phalanx_json
from tests.integration.waiting import wait_for

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
LEAF = "network.topology.nvidia.com/block"


class PodLog(PodWatch):
    """What became of every pod in a namespace."""

    def deleted_before_finishing(self) -> list[str]:
        """Pods deleted while not Succeeded (an eviction or rollback would do that)."""
        last_phase: dict[str, str] = {}
        out = []
        for _t, kind, name, uid, phase, _group, _node in self.events:
            if kind == "DELETED" and last_phase.get(uid) not in ("Succeeded",):
                out.append(name)
            last_phase[uid] = phase
        return out

    def uids(self) -> set[str]:
        return {e[3] for e in self.events}


@pytest.fixture
def ns(namespace: str, operator: OperatorProcess) -> Iterator[str]:
    yield namespace


def _create_group(custom: Any, ns: str, body: dict[str, Any]) -> None:
    custom.create_namespaced_custom_object("phalanx.dev", "v1alpha1", ns, "podgroups", body)


def _evicted(status: dict[str, Any]) -> dict[str, Any] | None:
    cond = next((c for c in status.get("conditions", []) if c["type"] == "Evicted"), None)
    return cond if cond and cond["status"] == "True" else None


def _run_gang(cluster: Cluster, custom: Any, ns: str, body: dict[str, Any], pods: int) -> None:
    """Create the PodGroup `body` and its `pods` members (8 GPUs each); wait until it runs."""
    name = body["metadata"]["name"]
    _create_group(custom, ns, body)
    for i in range(pods):
        cluster.core.create_namespaced_pod(ns, gang_pod(f"{name}-{i}", name, 8))
    wait_for(
        lambda: group_status(custom, ns, name).get("phase") == "Running",
        timeout=60,
        what=f"the gang {name} of {pods} to be Running",
    )


def _pods(cluster: Cluster, ns: str, group: str) -> list[Any]:
    return list(
        cluster.core.list_namespaced_pod(ns, label_selector=f"phalanx.dev/pod-group={group}").items
    )


def test_members_finishing_seconds_apart_keep_the_rest_running_and_the_gang_succeeds(
    cluster: Cluster, phalanx_api: Any, ns: str
) -> None:
    custom = phalanx_api
    _create_group(custom, ns, pod_group("train", 4))
    with PodLog(cluster, ns) as log:
        for i, run_for in enumerate(("3s", "6s", "9s", "12s")):
            cluster.core.create_namespaced_pod(
                ns, gang_pod(f"train-{i}", "train", 8, run_for=run_for)
            )
        wait_for(
            lambda: group_status(custom, ns, "train").get("phase") == "Succeeded",
            timeout=90,
            what="the gang to end Succeeded once its last member (12 s) finished",
        )
        status = group_status(custom, ns, "train")
    assert log.deleted_before_finishing() == [], "no member was evicted or rolled back"
    assert _evicted(status) is None, status
    assert status["succeeded"] == 4 and status.get("bound", 0) in (0, 4), status
    phases = {p.metadata.name: p.status.phase for p in _pods(cluster, ns, "train")}
    assert phases == {f"train-{i}": "Succeeded" for i in range(4)}, phases


def test_the_finetune_example_job_completes_with_exactly_its_pods_and_its_gang_succeeds(
    cluster: Cluster, phalanx_api: Any, ns: str
) -> None:
    """deploy/examples/finetune-job.yaml as shipped (its pods run 90 s), queue `default`
    instead of `prod` (the examples' queues are the demo's, not this test's)."""
    custom = phalanx_api
    docs = list(yaml.safe_load_all((REPO / "deploy/examples/finetune-job.yaml").read_text()))
    group = next(d for d in docs if d["kind"] == "PodGroup")
    job = next(d for d in docs if d["kind"] == "Job")
    for d in (group, job):
        d["metadata"]["namespace"] = ns
    group["spec"]["queue"] = "default"
    completions = job["spec"]["completions"]
    with PodLog(cluster, ns) as log:
        _create_group(custom, ns, group)
        cluster.batch.create_namespaced_job(ns, job)

        def complete() -> bool:
            conds = cluster.batch.read_namespaced_job(job["metadata"]["name"], ns).status
            return any(c.type == "Complete" and c.status == "True" for c in conds.conditions or [])

        wait_for(complete, timeout=240, what="the finetune Job to be Complete (pods run 90 s)")
        wait_for(
            lambda: group_status(custom, ns, "finetune").get("phase") == "Succeeded",
            timeout=30,
            what="its PodGroup to be Succeeded",
        )
    assert len(log.uids()) == completions, "exactly `completions` pods were ever created"
    assert log.deleted_before_finishing() == []
    assert _evicted(group_status(custom, ns, "finetune")) is None


def test_a_gang_short_of_pods_past_its_schedule_timeout_is_failed(
    cluster: Cluster, phalanx_api: Any, ns: str
) -> None:
    custom = phalanx_api
    body = pod_group("short", 4)
    body["spec"]["scheduleTimeoutSeconds"] = 5
    _create_group(custom, ns, body)
    for i in range(2):
        cluster.core.create_namespaced_pod(ns, gang_pod(f"short-{i}", "short", 8))
    status = wait_for(
        lambda: (s := group_status(custom, ns, "short")).get("phase") == "Failed" and s,
        timeout=45,
        what="the gang with 2 of 4 pods to be Failed after its 5 s schedule timeout",
    )
    cond = next(c for c in status["conditions"] if c["type"] == "Scheduled")
    assert cond["status"] == "False" and cond["reason"] == "WaitingForPods"
    assert "scheduleTimeoutSeconds" in cond["message"], cond
    assert not any(nodes_of(cluster, ns, "short").values()), "nothing was bound"


def test_a_job_smaller_than_its_podgroup_is_named_in_its_wait(
    cluster: Cluster, phalanx_api: Any, ns: str
) -> None:
    """A hand-written PodGroup of minMember 4 over a Job of parallelism 2: it can never start,
    and its `WaitingForPods` says why and what to change, not just "2 of 4 pods exist"."""
    _create_group(phalanx_api, ns, pod_group("narrow", 4))
    cluster.batch.create_namespaced_job(ns, gang_job("narrow", "narrow", 2, 8))

    def said() -> str | None:
        cond = next(
            (
                c
                for c in group_status(phalanx_api, ns, "narrow").get("conditions", [])
                if c["type"] == "Scheduled"
            ),
            None,
        )
        return cond["message"] if cond and cond["message"].startswith("2 of 4") else None

    message = wait_for(said, timeout=30, what="narrow's WaitingForPods to count its Job's 2 pods")
    assert message == (
        "2 of 4 pods exist; its Job narrow runs at most 2 pods at once, fewer than the 4 it needs "
        "together: it starts only if other pods join its PodGroup (lower spec.minMember to 2, "
        "or let the Job run 4 at once)"
    ), message
    assert not any(nodes_of(cluster, ns, "narrow").values()), "nothing was bound"


def _one_leaf(cluster: Cluster) -> tuple[str, list[str]]:
    nodes = cluster.core.list_node().items
    by_leaf: dict[str, list[str]] = {}
    for n in nodes:
        leaf = (n.metadata.labels or {}).get(LEAF)
        if leaf:
            by_leaf.setdefault(leaf, []).append(n.metadata.name)
    leaf = sorted(by_leaf)[0]
    return leaf, sorted(by_leaf[leaf])


def test_an_elastic_gang_runs_its_minimum_then_its_extras_when_room_appears(
    cluster: Cluster, phalanx_api: Any, ns: str
) -> None:
    """minMember 2 of 4 pods, all held to one leaf of 4 nodes, 2 of which a blocker fills:
    the 2 bind, then, when the blocker goes, the 2 extras bind beside them; nobody evicted."""
    custom = phalanx_api
    leaf, leaf_nodes = _one_leaf(cluster)
    sel = {LEAF: leaf}
    _create_group(custom, ns, pod_group("block", 2))
    for i in range(2):
        cluster.core.create_namespaced_pod(
            ns, gang_pod(f"block-{i}", "block", 8, node_selector=sel)
        )
    wait_for(
        lambda: (n := nodes_of(cluster, ns, "block")) and all(n.values()) and len(n) == 2,
        timeout=60,
        what="the blocker to hold 2 of the leaf's 4 nodes",
    )
    with PodLog(cluster, ns) as log:
        _create_group(custom, ns, pod_group("elastic", 2))
        for i in range(4):
            cluster.core.create_namespaced_pod(
                ns, gang_pod(f"elastic-{i}", "elastic", 8, node_selector=sel)
            )
        wait_for(
            lambda: (
                sum(1 for v in nodes_of(cluster, ns, "elastic").values() if v) == 2
                and group_status(custom, ns, "elastic").get("phase") == "Running"
            ),
            timeout=60,
            what="the elastic gang's minimum (2) bound and Running",
        )
        for i in range(2):
            cluster.core.delete_namespaced_pod(f"block-{i}", ns, grace_period_seconds=0)
        placed = wait_for(
            lambda: (n := nodes_of(cluster, ns, "elastic")) and all(n.values()) and n,
            timeout=60,
            what="the 2 extras to be bound once the blocker's nodes are free",
        )
    assert set(placed.values()) <= set(leaf_nodes)
    deleted = [p for p in log.deleted_before_finishing() if p.startswith("elastic-")]
    assert deleted == [], "no elastic member was evicted or rolled back (the blocker was ours)"
    status = group_status(custom, ns, "elastic")
    assert status["phase"] == "Running" and _evicted(status) is None, status


def test_a_required_leaf_jobs_next_wave_of_members_is_bound_under_one_leaf(
    cluster: Cluster, phalanx_api: Any, ns: str
) -> None:
    """A Job of 6 completions, 3 at a time, in a PodGroup with `required: leaf`; a blocker holds
    2 of the first leaf's 4 nodes. The first 3 pods run under one leaf and succeed together
    (3 s), none of the gang is then bound, and the Job makes its next 3: they too go under one
    leaf, not 2 to the first leaf's free nodes and 1 elsewhere (walked on the demo cluster: the
    second wave was bound across two leaves)."""
    custom = phalanx_api
    leaf, _ = _one_leaf(cluster)
    _create_group(custom, ns, pod_group("block", 2))
    for i in range(2):
        cluster.core.create_namespaced_pod(
            ns, gang_pod(f"block-{i}", "block", 8, node_selector={LEAF: leaf})
        )
    wait_for(
        lambda: (n := nodes_of(cluster, ns, "block")) and all(n.values()) and len(n) == 2,
        timeout=60,
        what="the blocker to hold 2 of the first leaf's 4 nodes",
    )
    _create_group(custom, ns, pod_group("waves", 3, topology={"required": "leaf"}))
    job = gang_job("waves", "waves", 3, 8)
    job["spec"]["completions"] = 6
    job["spec"]["template"]["metadata"]["annotations"] = {"phalanx.dev/run-for": "3s"}
    cluster.batch.create_namespaced_job(ns, job)

    def complete() -> bool:
        conds = cluster.batch.read_namespaced_job("waves", ns).status.conditions or []
        return any(c.type == "Complete" and c.status == "True" for c in conds)

    wait_for(complete, timeout=120, what="the Job of 6 completions, 3 at a time, to be Complete")
    leaf_of = {
        n.metadata.name: (n.metadata.labels or {}).get(LEAF) for n in cluster.core.list_node().items
    }
    pods = sorted(
        _pods(cluster, ns, "waves"), key=lambda p: (p.metadata.creation_timestamp, p.metadata.name)
    )
    assert len(pods) == 6, [p.metadata.name for p in pods]
    waves = [pods[:3], pods[3:]]
    leaves = [{leaf_of[p.spec.node_name] for p in wave} for wave in waves]
    where = [[(p.metadata.name, p.spec.node_name) for p in w] for w in waves]
    assert all(len(w) == 1 for w in leaves), f"each wave under one leaf: {where}"
    wait_for(
        lambda: group_status(custom, ns, "waves").get("phase") == "Succeeded",
        timeout=30,
        what="the gang to be Succeeded with its Job",
    )


def _fail_pod(cluster: Cluster, ns: str, name: str) -> None:
    cluster.core.patch_namespaced_pod_status(name, ns, {"status": {"phase": "Failed"}})


def test_member_failure_keep_runs_degraded_and_places_the_replacement(
    cluster: Cluster, phalanx_api: Any, ns: str
) -> None:
    custom = phalanx_api
    body = pod_group("keeper", 3)
    body["spec"]["memberFailure"] = "keep"
    with PodLog(cluster, ns) as log:
        _run_gang(cluster, custom, ns, body, 3)
        _fail_pod(cluster, ns, "keeper-0")
        wait_for(
            lambda: group_status(custom, ns, "keeper").get("phase") == "Degraded",
            timeout=30,
            what="the gang to be Degraded after a member failed (memberFailure: keep)",
        )
        kept = wait_for(
            lambda: _condition(group_status(custom, ns, "keeper"), "Evicted", "MemberFailed"),
            timeout=30,
            what="keeper's Evicted condition to say MemberFailed while it runs Degraded",
        )
        assert kept["status"] == "False", kept
        assert kept["message"].startswith("2 of 3 members left (1 failed, 0 lost, 0 deleted)")
        cluster.core.create_namespaced_pod(ns, gang_pod("keeper-3", "keeper", 8))
        wait_for(
            lambda: nodes_of(cluster, ns, "keeper").get("keeper-3"),
            timeout=30,
            what="the replacement to be bound to the running gang",
        )
        wait_for(
            lambda: group_status(custom, ns, "keeper").get("phase") == "Running",
            timeout=30,
            what="the gang to be Running again, whole with its replacement",
        )
        whole = wait_for(
            lambda: _condition(group_status(custom, ns, "keeper"), "Evicted", "Running"),
            timeout=30,
            what="keeper's Evicted condition to say Running again once whole",
        )
        assert whole["message"].startswith("whole again"), whole
    assert log.deleted_before_finishing() == [], "nothing was evicted"
    assert _evicted(group_status(custom, ns, "keeper")) is None


def _condition(status: dict[str, Any], ctype: str, reason: str) -> dict[str, Any] | None:
    """The status's condition of `ctype`, if its reason is `reason`."""
    found = [c for c in status.get("conditions") or [] if c.get("type") == ctype]
    return found[0] if found and found[0].get("reason") == reason else None


def test_member_failure_evict_restarts_the_gang_whole_and_counts_the_failure(
    cluster: Cluster, phalanx_api: Any, ns: str
) -> None:
    custom = phalanx_api
    _create_group(custom, ns, pod_group("crashy", 2))
    for i in range(2):
        cluster.core.create_namespaced_pod(ns, gang_pod(f"crashy-{i}", "crashy", 8))
    wait_for(
        lambda: group_status(custom, ns, "crashy").get("phase") == "Running",
        timeout=60,
        what="the gang of 2 to be Running",
    )
    _fail_pod(cluster, ns, "crashy-0")
    status = wait_for(
        lambda: (s := group_status(custom, ns, "crashy")) and _evicted(s) and s,
        timeout=30,
        what="the gang to be evicted whole after a member failed (memberFailure: evict)",
    )
    assert _evicted(status)["reason"] == "MemberFailed"  # type: ignore[index]
    assert status["memberFailures"] == 1
    wait_for(
        lambda: (
            "crashy-1" not in nodes_of(cluster, ns, "crashy")
            or cluster.core.read_namespaced_pod("crashy-1", ns).metadata.deletion_timestamp
        ),
        timeout=30,
        what="the surviving member to be evicted with its gang",
    )


def test_a_pending_member_says_why_in_its_pod_scheduled_condition(
    cluster: Cluster, phalanx_api: Any, ns: str
) -> None:
    """nowhere-0 waits first for its peer ("1 of 2 pods exist"), then, once nowhere-1 exists,
    because no node matches: the message turns, and `lastTransitionTime` stays when the pod
    first waited (the condition stayed False), as kube-scheduler keeps it."""
    custom = phalanx_api
    _create_group(custom, ns, pod_group("nowhere", 2))

    def member(i: int) -> dict[str, Any]:
        return gang_pod(f"nowhere-{i}", "nowhere", 8, node_selector={"no-such-label": "x"})

    def condition() -> Any:
        pod = cluster.core.read_namespaced_pod("nowhere-0", ns)
        return next((c for c in pod.status.conditions or [] if c.type == "PodScheduled"), None)

    cluster.core.create_namespaced_pod(ns, member(0))
    alone = wait_for(
        lambda: (c := condition()) is not None and c.status == "False" and c,
        timeout=30,
        what="PodScheduled=False on the first member, its peer not created yet",
    )
    assert "1 of 2 pods exist" in alone.message, alone.message
    since = alone.last_transition_time
    # The time has a resolution of a second: let one pass, so a rewritten one would differ.
    wait_for(
        lambda: datetime.now(UTC) > since + timedelta(seconds=1.5),
        timeout=5,
        what="a second to pass after the condition was first written",
    )
    cluster.core.create_namespaced_pod(ns, member(1))
    cond = wait_for(
        lambda: (c := condition()) is not None and "GPU" in c.message and c,
        timeout=30,
        what="the first member's PodScheduled message to say why the whole gang cannot fit",
    )
    assert (cond.status, cond.reason) == ("False", "Unschedulable"), cond
    assert "nowhere" in cond.message, cond.message
    assert cond.last_transition_time == since, (cond.last_transition_time, since)


def test_pods_created_before_their_podgroup_say_so_then_bind_once_it_exists(
    cluster: Cluster, phalanx_api: Any, ns: str
) -> None:
    """Pods applied before their PodGroup (a chart's order): each says in its `PodScheduled`
    condition that its PodGroup does not exist (reason `PodGroupNotFound`, not `Unschedulable`,
    which an autoscaler would add nodes for), kept on the pod where an Event expires; once the
    PodGroup is created, the gang is bound whole and the condition turns `True`."""
    custom = phalanx_api
    for i in range(2):
        cluster.core.create_namespaced_pod(ns, gang_pod(f"late-{i}", "late", 8))

    def condition(name: str) -> Any:
        pod = cluster.core.read_namespaced_pod(name, ns)
        return next((c for c in pod.status.conditions or [] if c.type == "PodScheduled"), None)

    for i in range(2):
        told = wait_for(
            lambda i=i: (c := condition(f"late-{i}")) is not None and c.status == "False" and c,
            timeout=30,
            what=f"PodScheduled=False on late-{i}, whose PodGroup does not exist yet",
        )
        assert told.reason == "PodGroupNotFound", told
        assert told.message == f"waiting for PodGroup {ns}/late: it does not exist", told
    _create_group(custom, ns, pod_group("late", 2))
    wait_for(
        lambda: all(
            (c := condition(f"late-{i}")) is not None and c.status == "True" for i in (0, 1)
        ),
        timeout=30,
        what="both members bound (PodScheduled=True) once their PodGroup exists",
    )
    assert all(nodes_of(cluster, ns, "late").values()), nodes_of(cluster, ns, "late")


def test_a_gang_past_its_time_limit_after_an_operator_restart_is_evicted(
    cluster: Cluster,
    phalanx_api: Any,
    namespace: str,
    no_shared_operator: None,
    tmp_path: Path,
) -> None:
    """The start time is durable (`scheduledAt`, written before the first bind): an operator
    killed while the gang runs and started again after its 10 s limit has passed evicts it."""
    custom, ns = phalanx_api, namespace
    op = OperatorProcess(cluster.kubeconfig, tmp_path, name="first").start()
    try:
        _create_group(custom, ns, pod_group("limited", 2, time_limit=10))
        for i in range(2):
            cluster.core.create_namespaced_pod(ns, gang_pod(f"limited-{i}", "limited", 8))
        started = wait_for(
            lambda: group_status(custom, ns, "limited").get("scheduledAt"),
            timeout=60,
            what="the gang's durable start (scheduledAt)",
        )
        wait_for(
            lambda: all(nodes_of(cluster, ns, "limited").values()),
            timeout=30,
            what="the gang to be bound whole",
        )
        op.kill()
        wait_for(
            lambda: (
                group_status(custom, ns, "limited").get("scheduledAt") == started
                and time.time() > _epoch(started) + 11
            ),
            timeout=30,
            what="the time limit (10 s from scheduledAt) to pass with no operator running",
        )
        assert _evicted(group_status(custom, ns, "limited")) is None, "not evicted while down"
        op = OperatorProcess(cluster.kubeconfig, tmp_path, name="second").start()
        status = wait_for(
            lambda: (s := group_status(custom, ns, "limited")) and _evicted(s) and s,
            timeout=20,
            what="the restarted operator to evict the gang past its time limit",
        )
        assert _evicted(status)["reason"] == "TimeLimitExceeded"  # type: ignore[index]
    finally:
        op.stop()


def test_a_podgroup_applied_again_while_its_pods_run_keeps_their_start(
    cluster: Cluster, phalanx_api: Any, ns: str
) -> None:
    """Deleting a running gang's PodGroup and applying it again (to change an immutable field,
    or by accident) must not restart its time limit: the new object has no `scheduledAt`, and
    the run started when its first member was bound (its `PodScheduled` transition). It is
    Running with a `Scheduled` condition saying so, and its pods were never touched."""
    custom = phalanx_api
    with PodLog(cluster, ns) as log:
        _run_gang(cluster, custom, ns, pod_group("again", 2, time_limit=3600), 2)
        bound = min(
            _epoch_of(c.last_transition_time)
            for p in _pods(cluster, ns, "again")
            for c in p.status.conditions or []
            if c.type == "PodScheduled" and c.status == "True"
        )
        custom.delete_namespaced_custom_object("phalanx.dev", "v1alpha1", ns, "podgroups", "again")
        wait_for(
            lambda: any(
                e.reason == "PodGroupNotFound" and "bound to" in (e.message or "")
                for e in cluster.core.list_namespaced_event(ns).items
            ),
            timeout=30,
            what="a PodGroupNotFound Event on a pod still bound, once its PodGroup is gone",
        )
        wait_for(
            lambda: time.time() > bound + 2,
            timeout=10,
            what="2 s since the first bind, so that a start counted from now would differ",
        )
        _create_group(custom, ns, pod_group("again", 2, time_limit=3600))
        status = wait_for(
            lambda: (s := group_status(custom, ns, "again")).get("scheduledAt") and s,
            timeout=30,
            what="the PodGroup applied again to get a scheduledAt",
        )
    assert _epoch(status["scheduledAt"]) == bound, (status["scheduledAt"], bound)
    assert status["phase"] == "Running", status
    cond = next(c for c in status["conditions"] if c["type"] == "Scheduled")
    assert (cond["status"], cond["reason"]) == ("True", "Scheduled"), cond
    assert "found 2 members already bound" in cond["message"], cond
    assert log.deleted_before_finishing() == [], "no member was evicted or rolled back"


def _epoch_of(when: Any) -> float:
    """A timestamp as the client gives it (a datetime) in epoch seconds."""
    return float(when.timestamp())


def _epoch(rfc3339: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(rfc3339.replace("Z", "+00:00")).timestamp()


def test_a_running_gang_names_the_member_whose_image_cannot_be_pulled(
    cluster: Cluster, phalanx_api: Any, ns: str
) -> None:
    """A gang of 2 bound whole, one of whose pods never starts: its containers wait
    `ImagePullBackOff` (the fake cluster's `phalanx.dev/stuck` stage, as a kubelet reports an
    image it cannot pull). The gang is `Running` — both members hold their nodes — and
    `Started=False` names the pod and the kubelet's reason, which `phalanx explain` shows."""
    custom = phalanx_api
    _create_group(custom, ns, pod_group("pull", 2))
    cluster.core.create_namespaced_pod(ns, gang_pod("pull-0", "pull", 8))
    stuck = gang_pod("pull-1", "pull", 8)
    stuck["metadata"]["annotations"][STUCK_ANNOTATION] = "ImagePullBackOff"
    cluster.core.create_namespaced_pod(ns, stuck)

    def not_started() -> dict[str, Any] | None:
        status = group_status(custom, ns, "pull")
        return (
            _condition(status, "Started", "ImagePullBackOff")
            if status.get("phase") == "Running"
            else None
        )

    said = wait_for(not_started, timeout=60, what="pull Running with Started=False naming pull-1")
    assert said["status"] == "False", said
    assert said["message"].startswith(
        "1 of 2 bound members not running: pull-1 ImagePullBackOff: Back-off pulling image "
    ), said
    explained = phalanx_json(cluster, "explain", "pull", "-n", ns)
    assert explained["notStarted"] == f"ImagePullBackOff: {said['message']}", explained
    assert cluster.core.read_namespaced_pod("pull-1", ns).status.phase == "Pending"


def test_with_a_start_timeout_a_gang_whose_member_never_starts_is_evicted_whole(
    cluster: Cluster,
    phalanx_api: Any,
    namespace: str,
    no_shared_operator: None,
    tmp_path: Path,
) -> None:
    """`--start-timeout-seconds 5` (Kueue's `waitForPodsReady`): a gang of 2 bare pods, one of
    which never starts (`ImagePullBackOff`), holds both nodes for 5 s and is then evicted whole
    as a member failure that names the pod; bare pods are not made again, and the gang says so."""
    custom, ns = phalanx_api, namespace
    op = OperatorProcess(
        cluster.kubeconfig, tmp_path, extra_args=("--start-timeout-seconds", "5")
    ).start()
    try:
        _create_group(custom, ns, pod_group("late", 2))
        cluster.core.create_namespaced_pod(ns, gang_pod("late-0", "late", 8))
        stuck = gang_pod("late-1", "late", 8)
        stuck["metadata"]["annotations"][STUCK_ANNOTATION] = "ImagePullBackOff"
        cluster.core.create_namespaced_pod(ns, stuck)
        status = wait_for(
            lambda: (s := group_status(custom, ns, "late")) and _evicted(s) and s,
            timeout=60,
            what="late evicted whole once late-1 had not started for 5 s",
        )
        mark = _evicted(status)
        assert mark is not None and mark["reason"] == "MemberFailed", mark
        assert mark["message"].startswith("late-1 not started "), mark
        assert "after its bind (ImagePullBackOff), past the start timeout of 5s" in mark["message"]
        assert status["memberFailures"] == 1
        message = wait_for(
            lambda: (
                (c := _condition(group_status(custom, ns, "late"), "Scheduled", "WaitingForPods"))
                and "no controller makes again" in c["message"]
                and c["message"]
            ),
            timeout=60,
            what="late to say its bare pods are gone for good",
        )
        assert message.startswith("0 of 2 pods exist; its eviction (MemberFailed) "), message
    finally:
        op.stop()


def test_with_a_member_failure_limit_a_job_that_never_starts_ends_failed_with_its_gang(
    cluster: Cluster,
    phalanx_api: Any,
    namespace: str,
    no_shared_operator: None,
    tmp_path: Path,
) -> None:
    """`--start-timeout-seconds 3 --member-failure-limit 2` (Kueue's `backoffLimitCount`): a
    Job of 2 pods whose image cannot be pulled is evicted at its start timeout (suspended: the
    Job counts nothing, so its `backoffLimit` of 0 never ends it) and made again; the second
    such eviction is the last. The gang is `Failed` `MemberFailuresExceeded` and the Job is
    ended by its deadline (`Failed`), instead of looping for ever: placed, timed out, backed off,
    resumed."""
    custom, ns = phalanx_api, namespace
    op = OperatorProcess(
        cluster.kubeconfig,
        tmp_path,
        extra_args=(
            "--start-timeout-seconds",
            "3",
            "--member-failure-limit",
            "2",
            "--member-failure-backoff-max-seconds",
            "1",
        ),
    ).start()
    try:
        _create_group(custom, ns, pod_group("never", 2))
        body = gang_job("never", "never", 2, 8)
        body["spec"]["template"]["metadata"]["annotations"] = {STUCK_ANNOTATION: "ErrImagePull"}
        cluster.batch.create_namespaced_job(ns, body)
        status = wait_for(
            lambda: (
                (s := group_status(custom, ns, "never")).get("phase") == "Failed"
                and s.get("memberFailures") == 2
                and s
            ),
            timeout=120,
            what="never Failed after its second start timeout (memberFailures 2)",
        )
        (ended,) = [c for c in status["conditions"] if c["type"] == "Finished"]
        assert ended["reason"] == "MemberFailuresExceeded", ended
        assert ended["message"].startswith("evicted for member failures 2 times, at most 2"), ended
        # Its last eviction is over and it will not run again: `Evicted` says so.
        mark = _condition(status, "Evicted", "Failed")
        assert mark is not None and mark["status"] == "False", status
        assert mark["message"] == (
            "ended Failed (MemberFailuresExceeded) while its eviction (MemberFailed) was under "
            "way: not placed again"
        ), mark
        job = wait_for(
            lambda: (
                (j := cluster.batch.read_namespaced_job("never", ns)).status.conditions
                and any(c.type == "Failed" and c.status == "True" for c in j.status.conditions)
                and j
            ),
            timeout=60,
            what="Job never Failed by the deadline its last eviction gave it",
        )
        assert not job.spec.suspend, "ended, not left suspended to run again"
    finally:
        op.stop()
