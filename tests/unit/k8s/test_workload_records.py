"""How many pods one gang of each workload kind has, read from its spec (issue 18's rules),
and what in a spec makes it impossible to place whole. Bodies as the API server returns them."""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.core.autogang import Workload
from phalanx.k8s.records import job_record, pod_record
from phalanx.k8s.workload_records import workload_record


def body(api: str, kind: str, spec: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": api,
        "kind": kind,
        "metadata": {"name": "w", "namespace": "ns", "uid": "u", **meta},
        "spec": spec,
    }


def job_spec(parallelism: int | None = None, completions: int | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"template": {"spec": {"containers": []}}}
    if parallelism is not None:
        spec["parallelism"] = parallelism
    if completions is not None:
        spec["completions"] = completions
    return spec


def rjob(name: str, replicas: int | None, **job: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "template": {"spec": job_spec(**job)}}
    if replicas is not None:
        out["replicas"] = replicas
    return out


MEMBERS: dict[str, tuple[dict[str, Any], int]] = {
    "Job: parallelism and completions unset → 1": (body("batch/v1", "Job", job_spec()), 1),
    "Job: min(parallelism 4, completions 8) = 4": (
        body("batch/v1", "Job", job_spec(4, 8)),
        4,
    ),
    "Job: min(parallelism 8, completions 3) = 3": (
        body("batch/v1", "Job", job_spec(8, 3)),
        3,
    ),
    "Job: completions unset → parallelism": (body("batch/v1", "Job", job_spec(6)), 6),
    "JobSet: Σ replicas × min(parallelism, completions)": (
        body(
            "jobset.x-k8s.io/v1alpha2",
            "JobSet",
            {
                "replicatedJobs": [
                    rjob("driver", 1),
                    rjob("workers", 2, parallelism=4, completions=4),
                ]
            },
        ),
        1 + 2 * 4,
    ),
    "JobSet: replicas unset → 1": (
        body(
            "jobset.x-k8s.io/v1alpha2",
            "JobSet",
            {"replicatedJobs": [rjob("w", None, parallelism=3)]},
        ),
        3,
    ),
    "LeaderWorkerSet: size per group": (
        body(
            "leaderworkerset.x-k8s.io/v1",
            "LeaderWorkerSet",
            {"replicas": 2, "leaderWorkerTemplate": {"size": 3}},
        ),
        3,
    ),
    "PyTorchJob: Σ replica specs": (
        body(
            "kubeflow.org/v1",
            "PyTorchJob",
            {"pytorchReplicaSpecs": {"Master": {"replicas": 1}, "Worker": {"replicas": 7}}},
        ),
        8,
    ),
    "MPIJob: Σ replica specs (launcher unset → 1)": (
        body(
            "kubeflow.org/v2beta1",
            "MPIJob",
            {"mpiReplicaSpecs": {"Launcher": {}, "Worker": {"replicas": 4}}},
        ),
        5,
    ),
    "TrainJob: trainer.numNodes": (
        body("trainer.kubeflow.org/v1alpha1", "TrainJob", {"trainer": {"numNodes": 4}}),
        4,
    ),
    "RayCluster: head + minReplicas × numOfHosts per group": (
        body(
            "ray.io/v1",
            "RayCluster",
            {
                "headGroupSpec": {},
                "workerGroupSpecs": [
                    {"minReplicas": 2, "replicas": 4, "numOfHosts": 2},
                    {"replicas": 3},
                ],
            },
        ),
        1 + 2 * 2 + 3,
    ),
    "RayJob: its cluster spec, the same way": (
        body("ray.io/v1", "RayJob", {"rayClusterSpec": {"workerGroupSpecs": [{"minReplicas": 1}]}}),
        2,
    ),
    "a field of the wrong type reads as its default, never raises": (
        body("batch/v1", "Job", {"parallelism": "four"}),
        1,
    ),
}


@pytest.mark.parametrize("name", list(MEMBERS))
def test_members(name: str) -> None:
    raw, members = MEMBERS[name]
    rec = workload_record(raw)
    assert rec is not None
    assert rec.members == members


UNSUPPORTED: dict[str, tuple[dict[str, Any], str]] = {
    "JobSet InOrder": (
        body(
            "jobset.x-k8s.io/v1alpha2",
            "JobSet",
            {"startupPolicy": {"startupPolicyOrder": "InOrder"}, "replicatedJobs": [rjob("a", 1)]},
        ),
        "spec.startupPolicy.startupPolicyOrder is InOrder",
    ),
    "JobSet exclusive placement": (
        body(
            "jobset.x-k8s.io/v1alpha2",
            "JobSet",
            {"replicatedJobs": [rjob("a", 1)]},
            annotations={"alpha.jobset.sigs.k8s.io/exclusive-topology": "rack"},
        ),
        "annotation alpha.jobset.sigs.k8s.io/exclusive-topology",
    ),
    "JobSet dependsOn": (
        body(
            "jobset.x-k8s.io/v1alpha2",
            "JobSet",
            {"replicatedJobs": [rjob("a", 1), {**rjob("b", 1), "dependsOn": [{"name": "a"}]}]},
        ),
        "replicatedJobs 'b': dependsOn",
    ),
    "LWS LeaderReady": (
        body(
            "leaderworkerset.x-k8s.io/v1",
            "LeaderWorkerSet",
            {"startupPolicy": "LeaderReady", "leaderWorkerTemplate": {"size": 2}},
        ),
        "spec.startupPolicy is LeaderReady",
    ),
    "LWS exclusive topology": (
        body(
            "leaderworkerset.x-k8s.io/v1",
            "LeaderWorkerSet",
            {"leaderWorkerTemplate": {"size": 2}},
            annotations={"leaderworkerset.sigs.k8s.io/exclusive-topology": "rack"},
        ),
        "annotation leaderworkerset.sigs.k8s.io/exclusive-topology",
    ),
}


@pytest.mark.parametrize("name", list(UNSUPPORTED))
def test_unsupported(name: str) -> None:
    raw, starts = UNSUPPORTED[name]
    rec = workload_record(raw)
    assert rec is not None
    assert rec.unsupported.startswith(starts), rec.unsupported


def test_supported_startup_policies_are_fine() -> None:
    js = workload_record(
        body(
            "jobset.x-k8s.io/v1alpha2",
            "JobSet",
            {"startupPolicy": {"startupPolicyOrder": "AnyOrder"}},
        )
    )
    lws = workload_record(
        body("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", {"startupPolicy": "LeaderCreated"})
    )
    assert js is not None and js.unsupported == ""
    assert lws is not None and lws.unsupported == ""


def test_owner_state_suspension_and_kept_metadata() -> None:
    raw = body(
        "batch/v1",
        "Job",
        {**job_spec(2), "suspend": True},
        labels={"phalanx.dev/queue": "q", "app": "x"},
        annotations={"phalanx.dev/min-member": "2", "note": "y"},
        ownerReferences=[
            {
                "apiVersion": "jobset.x-k8s.io/v1alpha2",
                "kind": "JobSet",
                "name": "js",
                "uid": "j",
                "controller": True,
            }
        ],
    )
    raw["status"] = {"conditions": [{"type": "Complete", "status": "True"}]}
    rec = job_record(raw)
    assert rec.state == "Complete"
    w = rec.workload
    assert w is not None
    assert (w.state, w.suspended) == ("Complete", True)
    assert w.owner is not None and (w.owner.kind, w.owner.uid, w.owner.group) == (
        "JobSet",
        "j",
        "jobset.x-k8s.io",
    )
    assert dict(w.labels) == {"phalanx.dev/queue": "q"}
    assert dict(w.annotations) == {"phalanx.dev/min-member": "2"}


def test_unknown_kind_is_not_a_workload() -> None:
    assert workload_record(body("apps/v1", "Deployment", {})) is None


def test_pod_keeps_owner_api_version_and_only_ganging_annotations() -> None:
    rec = pod_record(
        {
            "metadata": {
                "name": "p",
                "namespace": "ns",
                "uid": "pu",
                "annotations": {"phalanx.dev/min-member": "3", "other": "x"},
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "ReplicaSet",
                        "name": "rs",
                        "uid": "r",
                        "controller": True,
                    }
                ],
            },
            "spec": {"schedulerName": "phalanx", "containers": []},
        }
    )
    assert rec.owner_api == "apps/v1"
    assert dict(rec.annotations) == {"phalanx.dev/min-member": "3"}


def test_a_job_the_controller_has_decided_to_end_reads_as_ended() -> None:
    """`FailureTarget` / `SuccessCriteriaMet` (Kubernetes 1.31+) precede `Failed` / `Complete`
    while the pods terminate. Walked: a Job failed by its deadline read for those seconds
    "0 of 2 pods exist; the Job controller makes pods again only after its back-off"."""
    for condition, state in (("FailureTarget", "Failed"), ("SuccessCriteriaMet", "Complete")):
        raw = body("batch/v1", "Job", job_spec(2))
        raw["status"] = {
            "conditions": [{"type": condition, "status": "True", "reason": "DeadlineExceeded"}]
        }
        rec = job_record(raw)
        assert rec.state == state, condition
        assert rec.workload is not None and rec.workload.state == state, condition
        raw["status"]["conditions"][0]["status"] = "False"
        assert job_record(raw).state == "Active"


def test_a_failed_workload_says_why_in_its_own_words() -> None:
    """A Job's `Failed` (or, while its pods terminate, `FailureTarget`) condition gives why; a
    JobSet's the same way; an active Job has nothing to say."""
    for condition in ("Failed", "FailureTarget"):
        raw = body("batch/v1", "Job", job_spec(2))
        raw["status"] = {
            "conditions": [
                {
                    "type": condition,
                    "status": "True",
                    "reason": "BackoffLimitExceeded",
                    "message": "Job has reached the specified backoff limit",
                }
            ]
        }
        rec = job_record(raw)
        assert rec.workload is not None
        assert rec.workload.failure == (
            "BackoffLimitExceeded: Job has reached the specified backoff limit"
        ), condition
    active = job_record(body("batch/v1", "Job", job_spec(2)))
    assert active.workload is not None and active.workload.failure == ""
    jobset = body("jobset.x-k8s.io/v1alpha2", "JobSet", {"replicatedJobs": []})
    jobset["status"] = {
        "conditions": [
            {"type": "Failed", "status": "True", "reason": "FailedJobs", "message": "jobset failed"}
        ]
    }
    rec_js = workload_record(jobset)
    assert rec_js is not None and (rec_js.state, rec_js.failure) == (
        "Failed",
        "FailedJobs: jobset failed",
    )


RAYJOB_STATES: dict[str, tuple[dict[str, Any], str]] = {
    "running": ({"jobDeploymentStatus": "Running", "jobStatus": "RUNNING"}, "Active"),
    "past its activeDeadlineSeconds: no Ray job status at all": (
        {"jobDeploymentStatus": "Failed", "reason": "DeadlineExceeded"},
        "Failed",
    ),
    "its Ray job failed, retried under its backoffLimit": (
        {"jobDeploymentStatus": "Retrying", "jobStatus": "FAILED"},
        "Active",
    ),
    "succeeded": ({"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED"}, "Complete"),
    "its Ray job stopped": ({"jobDeploymentStatus": "Complete", "jobStatus": "STOPPED"}, "Failed"),
    "refused by KubeRay's validation": ({"jobDeploymentStatus": "ValidationFailed"}, "Failed"),
    "suspended (by us: resumed later)": ({"jobDeploymentStatus": "Suspended"}, "Active"),
    "new": ({}, "Active"),
}


@pytest.mark.parametrize("name", list(RAYJOB_STATES))
def test_a_rayjobs_state_is_what_its_deployment_status_says(name: str) -> None:
    """KubeRay's `jobDeploymentStatus`, not the Ray job's `jobStatus`: a RayJob failed by its
    deadline has no Ray job status, and a failed Ray job under `backoffLimit` runs again."""
    status, state = RAYJOB_STATES[name]
    raw = body("ray.io/v1", "RayJob", {"rayClusterSpec": {}})
    raw["status"] = status
    rec = workload_record(raw)
    assert rec is not None and rec.state == state


def test_only_a_rayjob_that_shuts_its_cluster_down_may_be_suspended() -> None:
    """KubeRay fails a RayJob suspended without `shutdownAfterJobFinishes` (ValidationFailed)."""
    kept = workload_record(body("ray.io/v1", "RayJob", {"rayClusterSpec": {}}))
    shut = workload_record(
        body("ray.io/v1", "RayJob", {"rayClusterSpec": {}, "shutdownAfterJobFinishes": True})
    )
    job = workload_record(body("batch/v1", "Job", job_spec(2)))
    assert kept is not None and "shutdownAfterJobFinishes" in kept.suspend_refused
    assert shut is not None and shut.suspend_refused == ""
    assert job is not None and job.suspend_refused == ""


def test_a_raycluster_held_suspended_at_its_time_limit_is_failed_and_otherwise_unknown() -> None:
    """A cluster never completes (its pods decide), but one this operator suspended at its
    time limit has ended: `Failed`, as a Job past its deadline is."""
    mark = {"phalanx.dev/suspended-for": "TimeLimitExceeded"}
    cases = {
        (False, False): "Unknown",
        (True, False): "Unknown",  # suspended by someone else (Kueue)
        (False, True): "Unknown",  # resumed by its user: a new run
        (True, True): "Failed",
    }
    for (suspended, marked), state in cases.items():
        raw = body(
            "ray.io/v1", "RayCluster", {"suspend": suspended}, annotations=mark if marked else {}
        )
        rec = workload_record(raw)
        assert rec is not None and rec.state == state, (suspended, marked)


def test_a_kubeflow_jobs_scheduling_policy_names_its_queue_and_min_member() -> None:
    """What Volcano users of the Training Operator write (`runPolicy.schedulingPolicy`), read
    as the field it came from; unset or of the wrong type: not read; other kinds: never."""
    policy = {"queue": "research", "minAvailable": 2}
    ptj = workload_record(
        body(
            "kubeflow.org/v1",
            "PyTorchJob",
            {"runPolicy": {"schedulingPolicy": policy}, "pytorchReplicaSpecs": {}},
        )
    )
    assert ptj is not None
    assert ptj.spec_queue == ("spec.runPolicy.schedulingPolicy.queue", "research")
    assert ptj.spec_min_member == ("spec.runPolicy.schedulingPolicy.minAvailable", 2)
    assert (ptj.spec_priority_class, ptj.spec_schedule_timeout) == (None, None)
    full = workload_record(
        body(
            "kubeflow.org/v1",
            "MPIJob",
            {
                "runPolicy": {
                    "schedulingPolicy": {"priorityClass": "urgent", "scheduleTimeoutSeconds": 90}
                }
            },
        )
    )
    assert full is not None
    assert (full.spec_priority_class, full.spec_schedule_timeout) == ("urgent", 90)
    odd = workload_record(
        body(
            "kubeflow.org/v1",
            "MPIJob",
            {"runPolicy": {"schedulingPolicy": {"queue": 3, "minAvailable": True}}},
        )
    )
    assert odd is not None and (odd.spec_queue, odd.spec_min_member) == (None, None)
    job = workload_record(
        body("batch/v1", "Job", {**job_spec(2), "runPolicy": {"schedulingPolicy": policy}})
    )
    assert job is not None and (job.spec_queue, job.spec_min_member) == (None, None)


def test_an_elastic_pytorchjob_is_a_gang_of_its_min_replicas_that_keeps_running() -> None:
    """`elasticPolicy.minReplicas` workers plus its other replicas (a Master) make its gang,
    with `memberFailure: keep`; `schedulingPolicy.minAvailable`, when set, is still what
    counts; a PyTorchJob that is not elastic keeps the operator's default."""

    def ptj(spec: dict[str, object]) -> Workload:
        rec = workload_record(body("kubeflow.org/v1", "PyTorchJob", spec))
        assert rec is not None
        return rec

    workers = {"Worker": {"replicas": 4}}
    elastic = ptj({"elasticPolicy": {"minReplicas": 2}, "pytorchReplicaSpecs": workers})
    assert (elastic.members, elastic.spec_min_member) == (4, ("spec.elasticPolicy.minReplicas", 2))
    assert elastic.member_failure == "keep"
    with_master = ptj(
        {
            "elasticPolicy": {"minReplicas": 2, "maxReplicas": 4},
            "pytorchReplicaSpecs": {**workers, "Master": {"replicas": 1}},
        }
    )
    assert with_master.spec_min_member == (
        "spec.elasticPolicy.minReplicas (+ 1 of its other replicas)",
        3,
    )
    policy = ptj(
        {
            "elasticPolicy": {"minReplicas": 2},
            "runPolicy": {"schedulingPolicy": {"minAvailable": 4}},
            "pytorchReplicaSpecs": workers,
        }
    )
    assert policy.spec_min_member == ("spec.runPolicy.schedulingPolicy.minAvailable", 4)
    assert policy.member_failure == "keep"
    plain = ptj({"elasticPolicy": {"maxReplicas": 4}, "pytorchReplicaSpecs": workers})
    assert (plain.spec_min_member, plain.member_failure) == (None, None)
