"""Gangs without a PodGroup (issue 18), on the real API server with the real Job, CronJob, JobSet
and LeaderWorkerSet controllers and the chart's admission policies.

The operator walks each pod's owners to the highest kind it knows and makes one PodGroup per
workload (`job-<name>`, `jobset-<name>`, `leaderworkerset-<name>-<group>`), owned by it. The
`small` shape: 2 spines × 2 leaves × 4 nodes × 8 GPUs. What a test asserts did not happen (a
pod bound early) is checked after a known number of operator cycles, read from its metrics.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from phalanx.devcluster.controllers import WorkloadControllers
from phalanx.devcluster.stages import RUN_FOR_ANNOTATION
from phalanx.inspection.rows import members_of
from tests.integration.conftest import Cluster, ensure_queue
from tests.integration.kubelet_stand_in import FINALIZER, KubeletStandIn
from tests.integration.objects import TOLERATE_KWOK, container, gang_pod
from tests.integration.operator_fixture import OperatorProcess
from tests.integration.test_admission_policy import label_namespace, policies  # noqa: F401
from tests.integration.test_operator_gangs import group_status, scheduled
from tests.integration.test_tenancy import _cycles
from tests.integration.waiting import wait_for
from tests.integration.workload_controllers import (
    JOBSET_API,
    LWS_API,
    MPIJOB_API,
    PYTORCHJOB_API,
    TRAINJOB_API,
    create_workload,
    delete_workloads,
    jobset,
    leader_worker_set,
    mpijob,
    pod_template,
    pytorchjob,
    training_runtime,
    trainjob,
)

pytestmark = pytest.mark.integration
LEAF = "network.topology.nvidia.com/block"
MANAGED = "phalanx.dev/managed"
LWS_NAME = "leaderworkerset.sigs.k8s.io/name"
LWS_GROUP = "leaderworkerset.sigs.k8s.io/group-index"
CYCLES = 3
"""Operator cycles a negative check waits: each cycle saw the gang and decided again."""


@pytest.fixture
def ns(
    cluster: Cluster,
    custom: Any,
    namespace: str,
    operator: OperatorProcess,
    workload_controllers: WorkloadControllers,
) -> Iterator[str]:
    yield namespace
    delete_workloads(cluster, custom, namespace)


def job(name: str, pods: int, gpus: int = 8, **meta: Any) -> dict[str, Any]:
    """An unmodified batch/v1 Job: no PodGroup, no label on its pods, no schedulerName."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, **meta},
        "spec": {
            "parallelism": pods,
            "completions": pods,
            "backoffLimit": 0,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "tolerations": TOLERATE_KWOK,
                    "containers": [container(gpus)],
                }
            },
        },
    }


def get_group(custom: Any, ns: str, name: str) -> dict[str, Any] | None:
    try:
        found: dict[str, Any] = custom.get_namespaced_custom_object(
            "phalanx.dev", "v1alpha1", ns, "podgroups", name
        )
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return found


def wait_group(custom: Any, ns: str, name: str, min_member: int) -> dict[str, Any]:
    def probe() -> dict[str, Any] | None:
        g = get_group(custom, ns, name)
        return g if g is not None and g["spec"]["minMember"] == min_member else None

    found: dict[str, Any] = wait_for(
        probe, timeout=30, what=f"managed PodGroup {ns}/{name} with minMember {min_member}"
    )
    return found


def pods_by(cluster: Cluster, ns: str, selector: str) -> list[Any]:
    return list(cluster.core.list_namespaced_pod(ns, label_selector=selector).items)


def wait_bound(cluster: Cluster, ns: str, selector: str, count: int) -> list[Any]:
    def probe() -> list[Any] | None:
        pods = [p for p in pods_by(cluster, ns, selector) if not p.metadata.deletion_timestamp]
        return pods if len(pods) == count and all(p.spec.node_name for p in pods) else None

    found: list[Any] = wait_for(probe, timeout=90, what=f"{count} pods ({selector}) bound")
    return found


def eviction_mark(status: dict[str, Any], reason: str) -> dict[str, Any] | None:
    """The `Evicted` condition if it names an eviction for `reason`: under way (`True`), or
    closed by the gang's end while under way (`False`, reason the phase it ended in: it does
    not wait to run again)."""
    c = next((c for c in status.get("conditions", []) if c["type"] == "Evicted"), None)
    if c is None:
        return None
    if c["status"] == "True" and c["reason"] == reason:
        return c
    closed = c["status"] == "False" and c["reason"] in ("Failed", "Succeeded")
    return c if closed and f"while its eviction ({reason}) was under way" in c["message"] else None


def failed_at_time_limit(custom: Any, ns: str, group: str, limit_s: int) -> dict[str, Any]:
    """The status of `group` once `Failed`, its `Evicted` condition closed: ended while its
    `TimeLimitExceeded` eviction was under way."""
    status: dict[str, Any] = wait_for(
        lambda: (s := group_status(custom, ns, group)).get("phase") == "Failed" and s,
        timeout=40,
        what=f"{group} Failed past its {limit_s} s limit",
    )
    evicted = eviction_mark(status, "TimeLimitExceeded")
    assert evicted is not None and (evicted["status"], evicted["reason"]) == ("False", "Failed"), (
        status
    )
    return status


def gone_for_good(
    cluster: Cluster, op: OperatorProcess, ns: str, selector: str, what: str, first: list[Any]
) -> None:
    """The pods of `selector` deleted (by `what`), and none made again `CYCLES` operator
    cycles later: the run is over, not started again."""
    wait_for(
        lambda: not pods_by(cluster, ns, selector), timeout=30, what=f"the pods deleted by {what}"
    )
    wait_cycles(op, CYCLES)
    again = pods_by(cluster, ns, selector)
    assert not again, f"run again: {[p.metadata.name for p in again]} (first run {len(first)})"


@contextlib.contextmanager
def high_priority(cluster: Cluster, ns: str) -> Iterator[str]:
    """A PriorityClass of value 1000 for the test's preemptor (deleted afterwards)."""
    scheduling = client.SchedulingV1Api(cluster.api_client)
    name = f"high-{ns}"
    scheduling.create_priority_class({"metadata": {"name": name}, "value": 1000})
    try:
        yield name
    finally:
        scheduling.delete_priority_class(name)


def preempt_for_urgent(cluster: Cluster, custom: Any, ns: str, group: str, high: str) -> None:
    """A Job `urgent` of one 8-GPU pod at priority `high` (it runs 5 s), and `group` evicted
    `Preempted` for it."""
    urgent = job("urgent", 1)
    urgent["spec"]["template"]["spec"]["priorityClassName"] = high
    urgent["spec"]["template"]["metadata"] = {"annotations": {RUN_FOR_ANNOTATION: "5s"}}
    cluster.batch.create_namespaced_job(ns, urgent)
    wait_evicted(custom, ns, group, "Preempted", "for Job urgent")


def wait_evicted(custom: Any, ns: str, group: str, reason: str, why: str) -> dict[str, Any]:
    """`group` marked `Evicted=True` with `reason` (30 s at most): its status then."""

    def marked() -> dict[str, Any] | None:
        status = group_status(custom, ns, group)
        conditions = status.get("conditions", [])
        return (
            status
            if any(
                c["type"] == "Evicted" and c["status"] == "True" and c["reason"] == reason
                for c in conditions
            )
            else None
        )

    status: dict[str, Any] = wait_for(
        marked,
        timeout=30,
        what=f"{group} evicted ({reason}) {why}",
    )
    return status


def running_on_new_pods(
    cluster: Cluster,
    custom: Any,
    ns: str,
    group: str,
    selector: str,
    old: set[str],
    *,
    timeout: float,
    after: str,
) -> dict[str, Any]:
    """`group`'s status once it is `Running` again and none of the pods `old` (by name) is left
    among `selector`'s: its workload made them again and they were bound."""
    found: dict[str, Any] = wait_for(
        lambda: (
            (s := group_status(custom, ns, group)).get("phase") == "Running"
            and not old & {p.metadata.name for p in pods_by(cluster, ns, selector)}
            and s
        ),
        timeout=timeout,
        what=f"{group} Running again on new pods {after}",
    )
    return found


def wait_message(custom: Any, ns: str, group: str, text: str, *, timeout: float, what: str) -> str:
    """`group`'s `Scheduled` message once it contains `text`."""

    def said() -> str | None:
        c = scheduled(group_status(custom, ns, group))
        message = str(c.get("message", "")) if c else ""
        return message if text in message else None

    found: str = wait_for(said, timeout=timeout, what=what)
    return found


def wait_cycles(op: OperatorProcess, cycles: int) -> None:
    start = _cycles(op)
    wait_for(
        lambda: _cycles(op) >= start + cycles,
        timeout=60,
        what=f"{cycles} more operator cycles",
    )


def run_job(cluster: Cluster, custom: Any, ns: str, body: dict[str, Any]) -> list[Any]:
    """Create the Job and wait for its gang to be bound whole and `Running`: its pods."""
    name = body["metadata"]["name"]
    cluster.batch.create_namespaced_job(ns, body)
    pods = wait_bound(
        cluster, ns, f"batch.kubernetes.io/job-name={name}", body["spec"]["parallelism"]
    )
    wait_for(
        lambda: group_status(custom, ns, f"job-{name}").get("phase") == "Running",
        timeout=30,
        what=f"job-{name} to be Running",
    )
    return pods


def evict_one_and_wait_back(
    cluster: Cluster,
    custom: Any,
    ns: str,
    first: list[Any],
    group: str,
    selector: str,
    *,
    timeout: float,
    what: str,
) -> list[Any]:
    """Evict the first of a running gang's pods through the Eviction API (as `kubectl drain`
    does), see the gang evicted whole for it, and wait for as many new pods bound."""
    victim = first[0].metadata.name
    cluster.core.create_namespaced_pod_eviction(
        victim, ns, {"metadata": {"name": victim, "namespace": ns}}
    )
    status = wait_evicted(custom, ns, group, "MemberFailed", "whole after one member was evicted")
    # A drain is not the workload's failure: said apart, not counted, no back-off of ours.
    (mark,) = [c for c in status["conditions"] if c["type"] == "Evicted"]
    assert "1 evicted from outside (EvictionByEvictionAPI)" in mark["message"], mark
    assert not status.get("memberFailures"), status
    old = {p.metadata.name for p in first}
    again: list[Any] = wait_for(
        lambda: (
            len(fresh := [p for p in pods_by(cluster, ns, selector) if p.metadata.name not in old])
            == len(first)
            and all(p.spec.node_name for p in fresh)
            and fresh
        ),
        timeout=timeout,
        what=what,
    )
    return again


def resumed_and_unmarked(
    custom: Any, api: tuple[str, str, str], ns: str, name: str
) -> dict[str, Any]:
    """The workload the operator suspended to evict its gang, read back: resumed, its mark gone."""
    made: dict[str, Any] = custom.get_namespaced_custom_object(api[0], api[1], ns, api[2], name)
    assert not made["spec"].get("suspend"), f"{name} resumed"
    annotations = made["metadata"].get("annotations") or {}
    assert "phalanx.dev/suspended-for" not in annotations, f"{name} unmarked"
    return made


def _epoch(rfc3339: str) -> float:
    return datetime.fromisoformat(rfc3339.replace("Z", "+00:00")).timestamp()


def owned_by(group: dict[str, Any], kind: str, uid: str) -> bool:
    refs = group["metadata"].get("ownerReferences") or []
    return any(r["kind"] == kind and r["uid"] == uid and r.get("controller") for r in refs)


def test_an_unmodified_job_in_a_labelled_namespace_binds_nothing_then_all_four(
    cluster: Cluster,
    custom: Any,
    ns: str,
    operator: OperatorProcess,
    policies: Any,  # noqa: F811
) -> None:
    label_namespace(cluster, ns, "default")
    for i in range(13):  # 13 of 16 nodes taken, one gang of one each: 3 nodes free
        cluster.core.create_namespaced_pod(ns, gang_pod(f"hog-{i}", None, 8))
    wait_bound(cluster, ns, "!batch.kubernetes.io/job-name", 13)

    made = cluster.batch.create_namespaced_job(ns, job("train", 4))
    group = wait_group(custom, ns, "job-train", 4)
    assert group["metadata"]["labels"][MANAGED] == "true"
    assert owned_by(group, "Job", made.metadata.uid)
    assert group["spec"]["queue"] == "default"  # the namespace's label
    selector = "batch.kubernetes.io/job-name=train"
    wait_for(
        lambda: len(pods_by(cluster, ns, selector)) == 4,
        timeout=30,
        what="the Job controller to create its 4 pods",
    )
    assert all(p.spec.scheduler_name == "phalanx" for p in pods_by(cluster, ns, selector))
    wait_for(
        lambda: (
            (c := scheduled(group_status(custom, ns, "job-train")))
            and c["reason"] == "InsufficientCapacity"
        ),
        timeout=30,
        what="job-train to report InsufficientCapacity",
    )
    wait_cycles(operator, CYCLES)
    assert not [p.metadata.name for p in pods_by(cluster, ns, selector) if p.spec.node_name]

    cluster.core.delete_namespaced_pod("hog-0", ns, grace_period_seconds=0)
    wait_bound(cluster, ns, selector, 4)
    wait_for(
        lambda: group_status(custom, ns, "job-train").get("phase") == "Running",
        timeout=30,
        what="job-train to be Running",
    )


def test_a_jobset_of_two_jobs_of_two_is_one_gang_of_four_removed_with_it(
    cluster: Cluster, custom: Any, ns: str
) -> None:
    made = create_workload(
        custom, JOBSET_API, ns, jobset("js", jobs=2, pods_per_job=2, scheduler="phalanx")
    )
    group = wait_group(custom, ns, "jobset-js", 4)
    assert owned_by(group, "JobSet", made["metadata"]["uid"])
    pods = wait_bound(cluster, ns, "jobset.sigs.k8s.io/jobset-name=js", 4)
    assert len({p.metadata.owner_references[0].name for p in pods}) == 2  # two Jobs, one gang
    wait_for(
        lambda: group_status(custom, ns, "jobset-js").get("phase") == "Running",
        timeout=30,
        what="jobset-js to be Running",
    )
    custom.delete_namespaced_custom_object(
        *JOBSET_API[:2], ns, JOBSET_API[2], "js", propagation_policy="Background"
    )
    wait_for(
        lambda: get_group(custom, ns, "jobset-js") is None,
        timeout=60,
        what="the garbage collector to remove jobset-js with its JobSet",
    )


def test_a_jobset_its_user_suspends_is_held_saying_so_and_runs_again_when_resumed(
    cluster: Cluster, custom: Any, ns: str
) -> None:
    """The JobSet controller suspends every child Job of a JobSet its user suspends and deletes
    their pods: the gang waits naming the JobSet, outside the order (no queue position);
    resumed, it runs whole again on new pods."""
    create_workload(
        custom, JOBSET_API, ns, jobset("hold", jobs=2, pods_per_job=1, scheduler="phalanx")
    )
    wait_group(custom, ns, "jobset-hold", 2)
    selector = "jobset.sigs.k8s.io/jobset-name=hold"
    first = {p.metadata.name for p in wait_bound(cluster, ns, selector, 2)}
    custom.patch_namespaced_custom_object(
        *JOBSET_API[:2], ns, JOBSET_API[2], "hold", {"spec": {"suspend": True}}
    )
    message = wait_message(
        custom,
        ns,
        "jobset-hold",
        "its JobSet hold is suspended (spec.suspend): it makes no pods until resumed",
        timeout=60,
        what="jobset-hold's WaitingForPods to say its JobSet is suspended",
    )
    assert message.startswith("0 of 2 pods exist"), message
    assert group_status(custom, ns, "jobset-hold").get("queuePosition") is None
    custom.patch_namespaced_custom_object(
        *JOBSET_API[:2], ns, JOBSET_API[2], "hold", {"spec": {"suspend": False}}
    )
    running_on_new_pods(
        cluster, custom, ns, "jobset-hold", selector, first, timeout=90, after="once resumed"
    )


def test_an_lws_of_two_groups_of_three_is_two_gangs_each_under_one_leaf(
    cluster: Cluster, custom: Any, ns: str
) -> None:
    body = leader_worker_set("serve", groups=2, size=3, scheduler="phalanx")
    body["metadata"]["annotations"] = {"phalanx.dev/topology-required": "leaf"}
    create_workload(custom, LWS_API, ns, body)
    for index in ("0", "1"):
        group = wait_group(custom, ns, f"leaderworkerset-serve-{index}", 3)
        assert group["spec"]["topology"] == {"required": "leaf"}
    for index in ("0", "1"):
        selector = f"{LWS_NAME}=serve,{LWS_GROUP}={index}"
        pods = wait_bound(cluster, ns, selector, 3)
        leaves = {cluster.core.read_node(p.spec.node_name).metadata.labels[LEAF] for p in pods}
        assert len(leaves) == 1, f"group {index} spans leaves {leaves}"


def test_a_pending_job_scaled_gets_a_gang_with_the_new_min_member(
    cluster: Cluster, custom: Any, ns: str
) -> None:
    body = job("grow", 3, gpus=8)
    body["spec"]["template"]["spec"]["schedulerName"] = "phalanx"
    body["spec"]["template"]["spec"]["nodeSelector"] = {"no-such-node": "x"}  # stays pending
    body["spec"]["completions"] = 8
    made = cluster.batch.create_namespaced_job(ns, body)
    first = wait_group(custom, ns, "job-grow", 3)
    cluster.batch.patch_namespaced_job("grow", ns, {"spec": {"parallelism": 5}})
    second = wait_group(custom, ns, "job-grow", 5)
    assert second["metadata"]["uid"] != first["metadata"]["uid"]
    assert owned_by(second, "Job", made.metadata.uid)


def test_a_cronjobs_two_runs_are_two_gangs(cluster: Cluster, custom: Any, ns: str) -> None:
    template = job("x", 2)["spec"]
    template["template"]["spec"]["schedulerName"] = "phalanx"
    cron = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "nightly"},
        "spec": {"schedule": "0 0 1 1 *", "jobTemplate": {"spec": template}},
    }
    cluster.batch.create_namespaced_cron_job(ns, cron)
    owner = cluster.batch.read_namespaced_cron_job("nightly", ns)
    ref = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "name": "nightly",
        "uid": owner.metadata.uid,
        "controller": True,
    }
    for run in ("nightly-1", "nightly-2"):  # what `kubectl create job --from=cronjob/…` makes
        cluster.batch.create_namespaced_job(
            ns,
            {**job(run, 2), "spec": template, "metadata": {"name": run, "ownerReferences": [ref]}},
        )
    for run in ("nightly-1", "nightly-2"):
        wait_group(custom, ns, f"job-{run}", 2)
        wait_bound(cluster, ns, f"batch.kubernetes.io/job-name={run}", 2)
    assert get_group(custom, ns, "cronjob-nightly") is None


def test_a_jobset_started_in_order_waits_invalid_naming_the_field(
    cluster: Cluster, custom: Any, ns: str
) -> None:
    body = jobset("ordered", jobs=1, pods_per_job=2, scheduler="phalanx")
    body["spec"]["replicatedJobs"].append(
        {
            "name": "second",
            "replicas": 1,
            "template": {
                "spec": {
                    "parallelism": 1,
                    "completions": 1,
                    "template": pod_template(8, scheduler="phalanx", restart_policy="Never"),
                }
            },
        }
    )
    body["spec"]["startupPolicy"] = {"startupPolicyOrder": "InOrder"}
    create_workload(custom, JOBSET_API, ns, body)
    wait_group(custom, ns, "jobset-ordered", 3)
    status = wait_for(
        lambda: (
            (c := scheduled(group_status(custom, ns, "jobset-ordered")))
            and c["reason"] == "Invalid"
            and c
        ),
        timeout=30,
        what="jobset-ordered to wait Invalid",
    )
    assert "startupPolicyOrder is InOrder" in status["message"]
    assert not any(
        p.spec.node_name for p in pods_by(cluster, ns, "jobset.sigs.k8s.io/jobset-name=ordered")
    )


def test_a_bad_min_member_annotation_makes_the_gang_invalid_and_others_still_run(
    cluster: Cluster, custom: Any, ns: str
) -> None:
    bad = job("bad", 2)
    bad["metadata"]["annotations"] = {"phalanx.dev/min-member": "lots"}
    bad["spec"]["template"]["spec"]["schedulerName"] = "phalanx"
    good = job("good", 2)
    good["spec"]["template"]["spec"]["schedulerName"] = "phalanx"
    cluster.batch.create_namespaced_job(ns, bad)
    cluster.batch.create_namespaced_job(ns, good)
    wait_group(custom, ns, "job-bad", 2)  # made, with the inferred minMember
    status = wait_for(
        lambda: (
            (c := scheduled(group_status(custom, ns, "job-bad"))) and c["reason"] == "Invalid" and c
        ),
        timeout=30,
        what="job-bad to wait Invalid",
    )
    assert "phalanx.dev/min-member" in status["message"] and "'lots'" in status["message"]
    wait_bound(cluster, ns, "batch.kubernetes.io/job-name=good", 2)


def test_a_pod_in_an_unlabelled_namespace_stays_with_kube_scheduler(
    cluster: Cluster,
    custom: Any,
    ns: str,
    policies: Any,  # noqa: F811
) -> None:
    cluster.batch.create_namespaced_job(ns, job("theirs", 2, gpus=1))
    pods = wait_bound(cluster, ns, "batch.kubernetes.io/job-name=theirs", 2)
    assert {p.spec.scheduler_name for p in pods} == {"default-scheduler"}
    assert get_group(custom, ns, "job-theirs") is None


def test_a_member_failure_restarts_the_job_whole_and_the_wait_names_the_jobs_back_off(
    cluster: Cluster,
    custom: Any,
    ns: str,
    policies: Any,  # noqa: F811
) -> None:
    """A Job of 2 pods (backoffLimit 3) runs as a gang; one pod deleted is a member failure:
    the gang is evicted whole, and while the real Job controller backs off before making pods
    again, the gang's `WaitingForPods` says so with the back-off; then it runs whole again."""
    label_namespace(cluster, ns, "default")
    body = job("retry", 2)
    body["spec"]["backoffLimit"] = 3
    selector = "batch.kubernetes.io/job-name=retry"
    first = run_job(cluster, custom, ns, body)
    cluster.core.delete_namespaced_pod(first[0].metadata.name, ns)

    message = wait_message(
        custom,
        ns,
        "job-retry",
        "the Job controller makes pods again",
        timeout=60,
        what="job-retry's WaitingForPods to name the Job's back-off",
    )
    assert "its Job retry has " in message and "failed pod" in message, message
    assert "after its back-off, up to " in message, message
    old = {p.metadata.name for p in first}
    running_on_new_pods(
        cluster, custom, ns, "job-retry", selector, old, timeout=120, after="the Job's back-off"
    )


def test_a_job_its_user_suspends_says_so_and_runs_again_when_resumed(
    cluster: Cluster,
    custom: Any,
    ns: str,
    policies: Any,  # noqa: F811
) -> None:
    """A running Job suspended by its user (`spec.suspend`, as Kueue does): the Job controller
    deletes its pods and the gang waits saying the Job is suspended — no eviction of ours, no
    failure counted, the Job left unmarked, no queue position (held outside the order);
    resumed, it runs whole again, its time limit counted from the new start (`scheduledAt`)."""
    label_namespace(cluster, ns, "default")
    body = job("held", 2, annotations={"phalanx.dev/time-limit-seconds": "600"})
    selector = "batch.kubernetes.io/job-name=held"
    first = run_job(cluster, custom, ns, body)
    started = group_status(custom, ns, "job-held")["scheduledAt"]
    cluster.batch.patch_namespaced_job("held", ns, {"spec": {"suspend": True}})
    message = wait_message(
        custom,
        ns,
        "job-held",
        "its Job held is suspended (spec.suspend): it makes no pods until resumed",
        timeout=60,
        what="job-held's WaitingForPods to say its Job is suspended",
    )
    assert message.startswith("0 of 2 pods exist"), message
    status = group_status(custom, ns, "job-held")
    assert status.get("queuePosition") is None, status  # held outside the order
    evicted = [c for c in status.get("conditions", []) if c["type"] == "Evicted"]
    assert all(c["status"] == "False" for c in evicted), evicted  # not evicted by the operator
    assert not status.get("memberFailures"), status
    made = cluster.batch.read_namespaced_job("held", ns)
    assert "phalanx.dev/suspended-for" not in (made.metadata.annotations or {}), made.metadata
    wait_for(
        lambda: time.time() >= _epoch(started) + 1.5,
        timeout=5,
        what="a second to pass since the first start (scheduledAt has a resolution of 1 s)",
    )
    cluster.batch.patch_namespaced_job("held", ns, {"spec": {"suspend": False}})
    old = {p.metadata.name for p in first}
    again = running_on_new_pods(
        cluster, custom, ns, "job-held", selector, old, timeout=60, after="once resumed"
    )
    assert _epoch(again["scheduledAt"]) > _epoch(started), (again["scheduledAt"], started)


def test_a_drained_jobs_gang_is_no_failure_of_its_own_and_names_the_jobs_hidden_back_off(
    cluster: Cluster,
    custom: Any,
    ns: str,
    policies: Any,  # noqa: F811
) -> None:
    """A Job of 2 pods whose podFailurePolicy ignores DisruptionTarget loses a member to the
    Eviction API (`kubectl drain`): its gang is evicted whole, saying the member was evicted
    from outside, with no failure counted. The Job's status shows no failure, but its controller
    backs off for the drained pod all the same (10 s) before making pods again: meanwhile the
    gang's `WaitingForPods` says so instead of only "0 of 2 pods exist"; then it runs whole."""
    label_namespace(cluster, ns, "default")
    body = job("drained", 2)
    body["spec"]["podFailurePolicy"] = {
        "rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]
    }
    selector = "batch.kubernetes.io/job-name=drained"
    first = run_job(cluster, custom, ns, body)
    victim = first[0].metadata.name
    cluster.core.create_namespaced_pod_eviction(
        victim, ns, {"metadata": {"name": victim, "namespace": ns}}
    )
    status = wait_evicted(custom, ns, "job-drained", "MemberFailed", "after a member's drain")
    (mark,) = [c for c in status["conditions"] if c["type"] == "Evicted"]
    assert mark["message"].startswith(
        "1 of 2 members left (0 failed, 0 lost, 0 deleted, 1 evicted from outside "
        "(EvictionByEvictionAPI)); evicting the gang whole"
    ), mark
    assert mark["message"].endswith("(no failure of its own: memberFailures stays 0)"), mark

    message = wait_message(
        custom,
        ns,
        "job-drained",
        "makes pods again only after its back-off",
        timeout=30,
        what="job-drained's WaitingForPods to name the Job's back-off for the ignored pod",
    )
    assert "counts the pods its podFailurePolicy ignores" in message, message
    old = {p.metadata.name for p in first}
    running_on_new_pods(
        cluster, custom, ns, "job-drained", selector, old, timeout=60, after="the Job's back-off"
    )
    assert not group_status(custom, ns, "job-drained").get("memberFailures")
    assert not cluster.batch.read_namespaced_job("drained", ns).status.failed, "ignored"


def test_a_job_past_its_time_limit_fails_and_its_gang_fails_with_it(
    cluster: Cluster,
    custom: Any,
    ns: str,
    policies: Any,  # noqa: F811
) -> None:
    """Slurm's TIMEOUT, with an unmodified Job: a 6 s limit (the Job's annotation) and the
    default `backoffLimit` (6). The gang is evicted `TimeLimitExceeded` and the Job ended by its
    own deadline (`DeadlineExceeded`): with its pods deleted instead, the Job controller made
    them again and the gang ran another full limit, and another (walked: a 10 s limit run three
    times). With no pod left, the gang must learn the end from its Job and be `Failed` too, not
    wait "0 of 2 pods exist" for ever."""
    label_namespace(cluster, ns, "default")
    body = job("timeout", 2, annotations={"phalanx.dev/time-limit-seconds": "6"})
    del body["spec"]["backoffLimit"]
    cluster.batch.create_namespaced_job(ns, body)
    wait_bound(cluster, ns, "batch.kubernetes.io/job-name=timeout", 2)

    wait_for(
        lambda: eviction_mark(group_status(custom, ns, "job-timeout"), "TimeLimitExceeded"),
        timeout=30,
        what="job-timeout evicted past its 6 s limit (the eviction under way, or ended by it)",
    )
    failed = wait_for(
        lambda: next(
            (
                c
                for c in cluster.batch.read_namespaced_job("timeout", ns).status.conditions or []
                if c.type == "Failed" and c.status == "True"
            ),
            None,
        ),
        timeout=30,
        what="the Job controller to mark Job timeout Failed (its deadline lowered)",
    )
    assert failed.reason == "DeadlineExceeded", failed
    status = wait_for(
        lambda: (s := group_status(custom, ns, "job-timeout")).get("phase") == "Failed" and s,
        timeout=30,
        what="job-timeout Failed with its Job (it has no pod left to say so)",
    )
    wait_for(
        lambda: not pods_by(cluster, ns, "batch.kubernetes.io/job-name=timeout"),
        timeout=30,
        what="the pods of Job timeout deleted by its controller",
    )
    assert status.get("queuePosition") is None, status
    # Failed as the Job's controller decides (`FailureTarget`), its Scheduled condition still
    # the bind; or, when the pods were seen gone first, a wait that says it is over.
    said = scheduled(status)
    assert said is not None, status
    ended = "its workload reports Failed (DeadlineExceeded: "  # the Job's own words follow
    if said["reason"] == "WaitingForPods":
        assert said["message"].startswith(ended), said
        assert "): it no longer waits (it was: " in said["message"], said
    else:
        assert said["reason"] == "Scheduled", said
    finished = next(c for c in status["conditions"] if c["type"] == "Finished")
    assert (finished["status"], finished["reason"]) == ("True", "WorkloadFailed"), finished
    assert finished["message"].startswith(ended), finished


def test_a_pytorchjob_past_its_time_limit_fails_and_runs_no_more(
    cluster: Cluster,
    custom: Any,
    ns: str,
    operator: OperatorProcess,
    policies: Any,  # noqa: F811
) -> None:
    """A PyTorchJob of a master and 2 workers (the real Training Operator v1.8.1) with a 6 s
    limit (its annotation). With its pods deleted, the Training Operator made them again at
    once, without end (walked: a 15 s limit, five runs in 83 s). Its
    `runPolicy.activeDeadlineSeconds` is lowered instead: the operator fails it and deletes its
    pods, the gang is `Failed` with it, and no pod is made again over the next operator
    cycles."""
    label_namespace(cluster, ns, "default")
    body = pytorchjob("ptl", workers=2, gpus=1, annotations={"phalanx.dev/time-limit-seconds": "6"})
    create_workload(custom, PYTORCHJOB_API, ns, body)
    selector = "training.kubeflow.org/job-name=ptl"
    first = wait_bound(cluster, ns, selector, 3)
    status = failed_at_time_limit(custom, ns, "pytorchjob-ptl", 6)
    made = custom.get_namespaced_custom_object(*PYTORCHJOB_API[:2], ns, PYTORCHJOB_API[2], "ptl")
    failed = next(
        c for c in made["status"]["conditions"] if c["type"] == "Failed" and c["status"] == "True"
    )
    assert "active longer than specified deadline" in failed["message"], failed
    # The gang keeps why it ended, in the PyTorchJob's own words.
    finished = next(c for c in status["conditions"] if c["type"] == "Finished")
    assert finished["reason"] == "WorkloadFailed", finished
    assert finished["message"].startswith("its workload reports Failed ("), finished
    assert "active longer than specified deadline" in finished["message"], finished
    gone_for_good(cluster, operator, ns, selector, "the Training Operator", first)


def test_a_pytorchjobs_scheduling_policy_names_its_queue_and_min_member(
    cluster: Cluster,
    custom: Any,
    ns: str,
    policies: Any,  # noqa: F811
) -> None:
    """What Volcano users of the Training Operator write, `runPolicy.schedulingPolicy` (queue,
    minAvailable, priorityClass, scheduleTimeoutSeconds), is read (the real Training Operator
    v1.8.1 keeps it): the PodGroup of a PyTorchJob of a master and 3 workers names that queue
    (before the namespace's label), that PriorityClass and timeout, and needs 2 members; its 4
    pods are bound. Before, the gang was all 4 in the namespace's
    queue, whatever the job said."""
    label_namespace(cluster, ns, "default")
    queue = f"q-{ns}"
    ensure_queue(custom, queue, {})
    try:
        with high_priority(cluster, ns) as high:
            body = pytorchjob("ptq", workers=3, gpus=1)
            body["spec"]["runPolicy"] = {
                "schedulingPolicy": {
                    "queue": queue,
                    "minAvailable": 2,
                    "priorityClass": high,
                    "scheduleTimeoutSeconds": 600,
                }
            }
            create_workload(custom, PYTORCHJOB_API, ns, body)
            group = wait_group(custom, ns, "pytorchjob-ptq", 2)
            assert group["spec"]["queue"] == queue, group["spec"]
            assert group["spec"].get("priorityClassName") == high, group["spec"]
            assert group["spec"].get("scheduleTimeoutSeconds") == 600, group["spec"]
            wait_bound(cluster, ns, "training.kubeflow.org/job-name=ptq", 4)
    finally:
        custom.delete_cluster_custom_object("phalanx.dev", "v1alpha1", "queues", queue)


def test_an_evicted_jobs_gang_is_back_in_seconds_not_after_the_jobs_back_off(
    cluster: Cluster,
    custom: Any,
    ns: str,
    policies: Any,  # noqa: F811
) -> None:
    """A Job of 8 pods (backoffLimit 0, podFailurePolicy Ignore on DisruptionTarget) loses a
    member to the Eviction API (as `kubectl drain` does): the gang is evicted whole. Evicting
    the other 7 pods would have put 8 failures in the Job controller's back-off (10 s × 2⁷,
    capped at 10 min); the operator suspends the Job instead, its
    controller deletes them uncounted, and once they are gone the Job is resumed: 8 new pods
    run within a minute, and the Job has no failure on record."""
    label_namespace(cluster, ns, "default")
    body = job("eight", 8, gpus=1)
    body["spec"]["podFailurePolicy"] = {
        "rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]
    }
    first = run_job(cluster, custom, ns, body)
    again = evict_one_and_wait_back(
        cluster,
        custom,
        ns,
        first,
        "job-eight",
        "batch.kubernetes.io/job-name=eight",
        timeout=60,
        what="8 new pods of Job eight bound (the Job suspended, then resumed once its pods left)",
    )
    assert len(again) == 8
    status = cluster.batch.read_namespaced_job("eight", ns)
    assert not status.spec.suspend, "resumed"
    assert "phalanx.dev/suspended-for" not in (status.metadata.annotations or {}), "unmarked"
    assert not status.status.failed, f"no failure on record: {status.status}"


def test_an_evicted_jobsets_gang_is_back_in_seconds_by_suspending_the_jobset(
    cluster: Cluster, custom: Any, ns: str
) -> None:
    """A JobSet of two Jobs of 4 pods (podFailurePolicy Ignore on DisruptionTarget) loses a
    member to the Eviction API. Evicted pod by pod, each child Job backed off for its own 4
    pods: 80.3 s until its pods ran again on the dev cluster. The operator suspends the JobSet
    (its controller suspends both Jobs, whose controller deletes the pods uncounted) and resumes
    it once they are gone: 8 new pods bound within 45 s, the JobSet unmarked and running."""
    body = jobset("js", jobs=2, pods_per_job=4, gpus=1, scheduler="phalanx")
    job_spec = body["spec"]["replicatedJobs"][0]["template"]["spec"]
    job_spec["podFailurePolicy"] = {
        "rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]
    }
    create_workload(custom, JOBSET_API, ns, body)
    selector = "jobset.sigs.k8s.io/jobset-name=js"
    first = wait_bound(cluster, ns, selector, 8)
    evict_one_and_wait_back(
        cluster,
        custom,
        ns,
        first,
        "jobset-js",
        selector,
        timeout=45,
        what="8 new pods of JobSet js bound (the JobSet suspended, then resumed once its pods "
        "left)",
    )
    resumed_and_unmarked(custom, JOBSET_API, ns, "js")
    jobs = cluster.batch.list_namespaced_job(ns, label_selector=selector).items
    assert len(jobs) == 2 and not any(j.spec.suspend for j in jobs), "both Jobs resumed"


def test_an_evicted_trainjobs_gang_is_back_by_suspending_the_trainjob_and_it_does_not_fail(
    cluster: Cluster, custom: Any, ns: str
) -> None:
    """A TrainJob of 8 nodes (the real Kubeflow Trainer v2.0.0 controller; its JobSet's one Job
    has the default `backoffLimit` 6 and no `podFailurePolicy`) loses one pod to the Eviction API,
    as `kubectl drain` does. Evicted pod by pod, the Job counted 8 failures and the JobSet and
    the TrainJob were `Failed` 1.6 s later on the dev cluster. The operator suspends the
    TrainJob (the Trainer suspends its JobSet, the JobSet controller its Job, whose controller
    deletes the pods uncounted) and resumes it once they are gone: 8 new pods bound within 45 s,
    the TrainJob unmarked and not failed, its Job with the drained pod's one failure."""
    body = trainjob("tj", nodes=8, gpus=1, runtime=training_runtime(custom))
    create_workload(custom, TRAINJOB_API, ns, body)
    selector = "jobset.sigs.k8s.io/jobset-name=tj"
    first = wait_bound(cluster, ns, selector, 8)
    evict_one_and_wait_back(
        cluster,
        custom,
        ns,
        first,
        "trainjob-tj",
        selector,
        timeout=45,
        what="8 new pods of TrainJob tj bound (the TrainJob suspended, then resumed once its "
        "pods left)",
    )
    made = resumed_and_unmarked(custom, TRAINJOB_API, ns, "tj")
    failed = [
        c for c in (made.get("status") or {}).get("conditions") or [] if c["type"] == "Failed"
    ]
    assert not any(c["status"] == "True" for c in failed), made.get("status")
    (job_now,) = cluster.batch.list_namespaced_job(ns, label_selector=selector).items
    assert not job_now.spec.suspend and (job_now.status.failed or 0) <= 1, job_now.status


def test_an_mpijobs_launcher_and_workers_run_as_one_gang_ended_by_its_time_limit(
    cluster: Cluster,
    custom: Any,
    ns: str,
    policies: Any,  # noqa: F811
) -> None:
    """An MPIJob (the real Training Operator v1.8.1) of a launcher and 2 workers of 1 GPU is one
    gang of 3, bound whole — its launcher's init container asks 5Gi of ephemeral storage, which
    fake nodes without it could never hold (walked: "no node can ever hold one of its pods") —
    and past its 6 s limit it is ended by its run policy's deadline, as a PyTorchJob is."""
    label_namespace(cluster, ns, "default")
    body = mpijob("mpi", workers=2, gpus=1, annotations={"phalanx.dev/time-limit-seconds": "6"})
    create_workload(custom, MPIJOB_API, ns, body)
    group = wait_group(custom, ns, "mpijob-mpi", 3)
    assert group["spec"].get("timeLimitSeconds") == 6, group["spec"]
    wait_bound(cluster, ns, "training.kubeflow.org/job-name=mpi", 3)
    wait_for(
        lambda: group_status(custom, ns, "mpijob-mpi").get("phase") == "Failed",
        timeout=40,
        what="mpijob-mpi Failed past its 6 s limit",
    )
    made = custom.get_namespaced_custom_object(*MPIJOB_API[:2], ns, MPIJOB_API[2], "mpi")
    assert made["spec"]["runPolicy"]["activeDeadlineSeconds"] >= 6, made["spec"]["runPolicy"]
    failed = next(c for c in made["status"]["conditions"] if c["type"] == "Failed")
    assert "active longer than specified deadline" in failed["message"], failed


def test_a_preempted_pytorchjob_is_suspended_and_runs_again_instead_of_failing(
    cluster: Cluster,
    custom: Any,
    ns: str,
    policies: Any,  # noqa: F811
) -> None:
    """A PyTorchJob of 16 pods of 8 GPUs (the whole cluster; the real Training Operator v1.8.1,
    `restartPolicy: Never`) is preempted for a higher-priority Job of one pod. Its pods turn
    `Failed` as they stop, as a kubelet makes them (`KubeletStandIn`). Evicted pod by pod, the
    Training Operator failed it for its failed replicas 0.3 s later (walked on the demo cluster:
    "PyTorchJob ptw is failed because 4 Worker replica(s) failed"). The operator suspends it
    through `runPolicy.suspend` instead (the Training Operator deletes its pods and counts
    nothing) and resumes it once no pod of it is left: 16 new pods bound once the Job's pod
    has run its 5 s, the PyTorchJob never `Failed`, resumed and unmarked."""
    label_namespace(cluster, ns, "default")
    selector = "training.kubeflow.org/job-name=ptp"
    body = pytorchjob("ptp", workers=15, gpus=8, restart_policy="Never", finalizers=[FINALIZER])
    with high_priority(cluster, ns) as high, KubeletStandIn(cluster.core, ns, selector) as kubelet:
        create_workload(custom, PYTORCHJOB_API, ns, body)
        first = wait_bound(cluster, ns, selector, 16)
        preempt_for_urgent(cluster, custom, ns, "pytorchjob-ptp", high)
        old = {p.metadata.uid for p in first}
        wait_for(
            lambda: (
                len(
                    fresh := [
                        p for p in pods_by(cluster, ns, selector) if p.metadata.uid not in old
                    ]
                )
                == 16
                and all(p.spec.node_name for p in fresh)
            ),
            timeout=60,
            what="16 new pods of PyTorchJob ptp bound (suspended, then resumed once its pods "
            "were gone and Job urgent had run)",
        )
        assert kubelet.released >= 16, "its pods stopped as a kubelet stops them"
        made = custom.get_namespaced_custom_object(
            *PYTORCHJOB_API[:2], ns, PYTORCHJOB_API[2], "ptp"
        )
        failed = [c for c in made["status"]["conditions"] if c["type"] == "Failed"]
        assert not any(c["status"] == "True" for c in failed), made["status"]
        assert not made["spec"]["runPolicy"].get("suspend"), "ptp resumed"
        assert "phalanx.dev/suspended-for" not in (made["metadata"].get("annotations") or {})
        custom.delete_namespaced_custom_object(*PYTORCHJOB_API[:2], ns, PYTORCHJOB_API[2], "ptp")
        wait_for(
            lambda: not pods_by(cluster, ns, selector),
            timeout=60,
            what="the pods of PyTorchJob ptp gone (the stand-in lets them go)",
        )


def test_a_member_that_fails_stays_failed_and_its_job_is_resumed_all_the_same(
    cluster: Cluster,
    custom: Any,
    ns: str,
    policies: Any,  # noqa: F811
) -> None:
    """A member whose container fails stays a `Failed` pod (the Job keeps it), and a suspended
    Job's controller deletes only its active pods: the Job suspended to evict the gang is
    resumed once the rest are gone, whatever finished pods remain, and runs whole again."""
    label_namespace(cluster, ns, "default")
    body = job("fails", 2, gpus=2)
    body["spec"]["backoffLimit"] = 3
    selector = "batch.kubernetes.io/job-name=fails"
    first = run_job(cluster, custom, ns, body)
    failed = first[0].metadata.name
    cluster.core.patch_namespaced_pod_status(failed, ns, {"status": {"phase": "Failed"}})
    old = {p.metadata.name for p in first}
    wait_for(
        lambda: (
            group_status(custom, ns, "job-fails").get("phase") == "Running"
            and len(
                [
                    p
                    for p in pods_by(cluster, ns, selector)
                    if p.metadata.name not in old and p.spec.node_name
                ]
            )
            == 2
        ),
        timeout=90,
        what="job-fails Running again on 2 new pods (its Job resumed beside the Failed pod)",
    )
    names = {p.metadata.name: p.status.phase for p in pods_by(cluster, ns, selector)}
    assert names.get(failed) == "Failed", names
    job_now = cluster.batch.read_namespaced_job("fails", ns)
    assert not job_now.spec.suspend and job_now.status.failed == 1, job_now.status


def test_an_elastic_pytorchjob_starts_with_its_min_replicas_and_the_rest_join_as_they_fit(
    cluster: Cluster,
    custom: Any,
    ns: str,
    operator: OperatorProcess,
    policies: Any,  # noqa: F811
) -> None:
    """An elastic PyTorchJob (`elasticPolicy` minReplicas 2, maxReplicas 4) of 4 workers of 8
    GPUs on a leaf of 4 nodes, 2 of them taken: its gang needs 2 (`memberFailure: keep`), so 2
    workers run at once and the other 2 are bound once the nodes free up. Before, its gang was
    all 4 and none ran while any node of the leaf was taken."""
    label_namespace(cluster, ns, "default")
    leaf = str(cluster.core.list_node().items[0].metadata.labels[LEAF])
    on_leaf = {LEAF: leaf}
    for i in range(2):
        cluster.core.create_namespaced_pod(
            ns,
            gang_pod(f"blocker-{i}", None, 8, scheduler="default-scheduler", node_selector=on_leaf),
        )
    wait_bound(cluster, ns, "!training.kubeflow.org/job-name", 2)
    template = pod_template(8, scheduler=None)
    template["spec"]["containers"][0]["name"] = "pytorch"
    template["spec"]["nodeSelector"] = on_leaf
    body = {
        "apiVersion": f"{PYTORCHJOB_API[0]}/{PYTORCHJOB_API[1]}",
        "kind": "PyTorchJob",
        "metadata": {"name": "el"},
        "spec": {
            "elasticPolicy": {"minReplicas": 2, "maxReplicas": 4, "rdzvBackend": "c10d"},
            "pytorchReplicaSpecs": {
                "Worker": {"replicas": 4, "restartPolicy": "OnFailure", "template": template}
            },
        },
    }
    create_workload(custom, PYTORCHJOB_API, ns, body)
    group = wait_group(custom, ns, "pytorchjob-el", 2)
    assert group["spec"].get("memberFailure") == "keep", group["spec"]
    selector = "training.kubeflow.org/job-name=el"

    def bound() -> list[Any]:
        return [p for p in pods_by(cluster, ns, selector) if p.spec.node_name]

    wait_for(
        lambda: (
            len(bound()) == 2
            and group_status(custom, ns, "pytorchjob-el").get("phase") == "Running"
        ),
        timeout=60,
        what="2 workers of the elastic PyTorchJob el bound and its gang Running",
    )
    wait_cycles(operator, CYCLES)
    assert len(bound()) == 2, "more workers bound than nodes were free"
    said = (
        f"gang {ns}/pytorchjob-el: waits to join its running gang (2 pods bound, minMember 2): "
        "needs 8 GPUs on one node; the most free on a node it may use is 0"
    )

    def told() -> bool:
        waiting = [p for p in pods_by(cluster, ns, selector) if not p.spec.node_name]
        conds = [c for p in waiting for c in p.status.conditions or [] if c.type == "PodScheduled"]
        return len(conds) == 2 and all(
            (c.status, c.reason, c.message) == ("False", "Unschedulable", said) for c in conds
        )

    wait_for(told, timeout=60, what=f"the 2 waiting workers' PodScheduled to say: {said}")

    # `phalanx explain` counts them from the status the operator wrote (not a whole gang).
    def counted() -> tuple[int, int, int] | None:
        group = get_group(custom, ns, "pytorchjob-el")
        members = members_of(group) if group is not None else None
        return (members.exist, members.bound, members.waiting) if members else None

    wait_for(
        lambda: counted() == (4, 2, 2),
        timeout=30,
        what="explain to count the elastic job's 4 workers: 2 bound, 2 waiting",
    )
    for i in range(2):
        cluster.core.delete_namespaced_pod(f"blocker-{i}", ns, grace_period_seconds=0)
    wait_bound(cluster, ns, selector, 4)
    status = group_status(custom, ns, "pytorchjob-el")
    assert status.get("phase") == "Running", status
