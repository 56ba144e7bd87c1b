"""A Job's gang is evicted by suspending the Job, and the Job is resumed once its pods are gone
(`k8s/job_suspension.py`): the Job controller's back-off, which counts even the pods its
`podFailurePolicy` ignores, then never holds the gang's restart (an 8-pod Job evicted pod by
pod waited 600.3 s on the dev cluster, suspended 10.6 s)."""

from __future__ import annotations

from typing import Any

from phalanx.k8s.job_suspension import job_of, to_resume
from phalanx.k8s.records import job_record, pod_record
from tests.unit.k8s.test_autogang_adapter import job, job_pod, managed, run
from tests.unit.k8s.test_records_and_view import pod
from tests.unit.k8s.test_scheduler_loop import FakeApi


def _member_failed() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A running 2-pod Job gang, one member failed: evicted whole (`MemberFailed`)."""
    pods = [
        job_pod("train-0", node_name="n1", phase="Running"),
        job_pod("train-1", node_name="n1", phase="Failed"),
    ]
    return pods, [managed(2, phase="Running", scheduledAt="1970-01-01T00:16:00Z")]


def test_a_job_gangs_eviction_suspends_the_job_and_evicts_no_pod_itself() -> None:
    pods, groups = _member_failed()
    api = run(pods, groups, [job(2)])
    assert ("evicted", "MemberFailed") in api.calls, api.calls
    assert ("suspend-job", "train") in api.calls, api.calls
    assert not [c for c in api.calls if c[0] in ("evict", "delete")], api.calls
    (patch,) = api.job_patches
    assert patch == {
        "metadata": {
            "uid": "job-uid",
            "annotations": {"phalanx.dev/suspended-for": "MemberFailed"},
        },
        "spec": {"suspend": True},
    }


def test_a_time_limit_still_deletes_the_pods() -> None:
    """The run is over: the Job counts the failure (Slurm's TIMEOUT), it is not restarted."""
    pods = [job_pod(f"train-{i}", node_name="n1", phase="Running") for i in range(2)]
    group = managed(2, phase="Running", scheduledAt="1970-01-01T00:00:00Z")
    group["spec"]["timeLimitSeconds"] = 60
    api = run(pods, [group], [job(2)])
    assert ("evicted", "TimeLimitExceeded") in api.calls, api.calls
    assert sorted(c for c in api.calls if c[0] == "delete") == [
        ("delete", "train-0"),
        ("delete", "train-1"),
    ]
    assert not [c for c in api.calls if c[0] == "suspend-job"]


def test_a_job_that_may_not_be_patched_has_its_pods_evicted_instead() -> None:
    pods, groups = _member_failed()
    api = run(pods, groups, [job(2)], FakeApi(failing={"patch-job"}))
    assert ("suspend-job", "train") in api.calls
    assert ("evict", "train-0") in api.calls, api.calls


def _job(**spec: Any) -> dict[str, Any]:
    body = job(2)
    body["spec"].update(spec)
    return body


def test_only_a_job_the_job_controller_runs_and_no_user_suspended_is_suspended() -> None:
    members = [pod_record(job_pod("train-0", node_name="n1", phase="Running"))]
    by_uid = {"job-uid": job_record(_job())}
    assert job_of(members, by_uid) is not None
    for spec in ({"managedBy": "kueue.x-k8s.io/multikueue"}, {"suspend": True}):
        assert job_of(members, {"job-uid": job_record(_job(**spec))}) is None, spec
    ours = _job(suspend=True)
    ours["metadata"]["annotations"] = {"phalanx.dev/suspended-for": "Reclaimed"}
    assert job_of(members, {"job-uid": job_record(ours)}) is not None, "ours: issued again"
    bare = [pod_record(pod("x", node_name="n1", phase="Running"))]
    assert job_of(bare, by_uid) is None
    assert job_of([*members, *bare], by_uid) is None, "members of two owners"


def test_a_job_we_suspended_is_resumed_once_none_of_its_pods_is_left() -> None:
    ours = _job(suspend=True)
    ours["metadata"]["annotations"] = {"phalanx.dev/suspended-for": "Reclaimed"}
    jobs = {"job-uid": job_record(ours)}
    running = pod_record(job_pod("train-0", node_name="n1", phase="Running"))
    assert to_resume(jobs, [running]) == [], "a pod still running (or terminating)"
    failed = pod_record(job_pod("train-1", node_name="n1", phase="Failed"))
    assert [j.name for j in to_resume(jobs, [])] == ["train"]
    assert [j.name for j in to_resume(jobs, [failed])] == ["train"], (
        "the failed member stays: the controller deletes only active pods"
    )
    users = {"job-uid": job_record(_job(suspend=True))}
    assert to_resume(users, []) == [], "a user's suspension is theirs"
    api = run([], [managed(2, phase="Pending")], [ours])
    assert ("resume-job", "train") in api.calls, api.calls
    assert api.job_patches == [
        {
            "metadata": {"uid": "job-uid", "annotations": {"phalanx.dev/suspended-for": None}},
            "spec": {"suspend": False},
        }
    ]
