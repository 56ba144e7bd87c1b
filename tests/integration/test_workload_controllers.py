"""The real JobSet and LeaderWorkerSet controllers work against our control plane.

Groundwork of automatic gangs (issue 18): built from their Go modules, run as local processes
with their webhooks on 127.0.0.1 (`phalanx.devcluster.controllers`), they create what they
create on a real cluster. Their pods name kube-scheduler here (`default-scheduler`), so these
tests need no Phalanx operator: kube-scheduler binds them to the fake nodes and kwok runs them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from phalanx.devcluster.controllers import WorkloadControllers
from tests.integration.conftest import Cluster
from tests.integration.waiting import wait_for
from tests.integration.workload_controllers import (
    JOBSET_API,
    LWS_API,
    create_workload,
    delete_workloads,
    jobset,
    leader_worker_set,
)

pytestmark = pytest.mark.integration

JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB = "jobset.sigs.k8s.io/replicatedjob-name"
JOB_INDEX = "jobset.sigs.k8s.io/job-index"
LWS_NAME = "leaderworkerset.sigs.k8s.io/name"
GROUP_INDEX = "leaderworkerset.sigs.k8s.io/group-index"
WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"


@pytest.fixture
def workloads(
    cluster: Cluster,
    custom: Any,
    namespace: str,
    workload_controllers: WorkloadControllers,
) -> Iterator[str]:
    """A namespace for JobSets and LWSs, emptied of them (and their pods) afterwards."""
    yield namespace
    delete_workloads(cluster, custom, namespace)


def running_pods(cluster: Cluster, namespace: str, selector: str, count: int) -> list[Any]:
    def probe() -> list[Any] | None:
        pods = cluster.core.list_namespaced_pod(namespace, label_selector=selector).items
        running = [p for p in pods if p.status.phase == "Running" and p.spec.node_name]
        return pods if len(pods) == len(running) == count else None

    found: list[Any] = wait_for(
        probe, timeout=120, what=f"{count} pods ({selector}) in {namespace} bound and Running"
    )
    return found


def controller_of(obj: Any) -> tuple[str, str]:
    (owner,) = [r for r in obj.metadata.owner_references or [] if r.controller]
    return owner.kind, owner.name


def test_a_jobset_of_two_jobs_of_two_pods_creates_its_jobs_and_pods(
    cluster: Cluster, custom: Any, workloads: str
) -> None:
    create_workload(custom, JOBSET_API, workloads, jobset("train", jobs=2, pods_per_job=2))
    jobs = wait_for(
        lambda: (
            items
            if len(
                items := cluster.batch.list_namespaced_job(
                    workloads, label_selector=f"{JOBSET_NAME}=train"
                ).items
            )
            == 2
            else None
        ),
        timeout=60,
        what="the JobSet controller to create 2 Jobs for JobSet train",
    )
    assert sorted(j.metadata.name for j in jobs) == ["train-workers-0", "train-workers-1"]
    for job in jobs:
        assert controller_of(job) == ("JobSet", "train")
        assert (job.spec.parallelism, job.spec.completions) == (2, 2)
        assert job.metadata.labels[REPLICATED_JOB] == "workers"

    pods = running_pods(cluster, workloads, f"{JOBSET_NAME}=train", 4)
    assert Counter(controller_of(p) for p in pods) == {
        ("Job", "train-workers-0"): 2,
        ("Job", "train-workers-1"): 2,
    }
    assert Counter(p.metadata.labels[JOB_INDEX] for p in pods) == {"0": 2, "1": 2}
    assert {p.spec.scheduler_name for p in pods} == {"default-scheduler"}
    # The JobSet's status is the controller's too: both Jobs counted as active.
    status = wait_for(
        lambda: (
            s
            if (
                s := custom.get_namespaced_custom_object(
                    *JOBSET_API[:2], workloads, JOBSET_API[2], "train"
                ).get("status")
            )
            and any(r.get("active") == 2 for r in s.get("replicatedJobsStatus", []))
            else None
        ),
        timeout=60,
        what="JobSet train's status to count 2 active Jobs",
    )
    assert status["replicatedJobsStatus"][0]["name"] == "workers"


def test_a_leader_worker_set_of_two_groups_of_three_labels_its_pods_by_group_and_worker(
    cluster: Cluster, custom: Any, workloads: str
) -> None:
    create_workload(custom, LWS_API, workloads, leader_worker_set("serve", groups=2, size=3))
    pods = running_pods(cluster, workloads, f"{LWS_NAME}=serve", 6)
    by_name = {p.metadata.name: p.metadata.labels for p in pods}
    # Leaders serve-0 and serve-1 (a StatefulSet of the LWS), each with a StatefulSet of two
    # workers serve-<group>-1, serve-<group>-2; the group and worker indexes are set by LWS's
    # pod webhook, which the API server called on 127.0.0.1.
    expected = {
        "serve-0": ("0", "0"),
        "serve-0-1": ("0", "1"),
        "serve-0-2": ("0", "2"),
        "serve-1": ("1", "0"),
        "serve-1-1": ("1", "1"),
        "serve-1-2": ("1", "2"),
    }
    assert {n: (lb.get(GROUP_INDEX), lb.get(WORKER_INDEX)) for n, lb in by_name.items()} == (
        expected
    )
    owners = {p.metadata.name: controller_of(p) for p in pods}
    assert owners["serve-0"] == owners["serve-1"] == ("StatefulSet", "serve")
    assert owners["serve-0-1"] == owners["serve-0-2"] == ("StatefulSet", "serve-0")
    assert owners["serve-1-1"] == owners["serve-1-2"] == ("StatefulSet", "serve-1")
    assert {p.spec.scheduler_name for p in pods} == {"default-scheduler"}
