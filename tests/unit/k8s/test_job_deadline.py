"""A Job's, PyTorchJob's or MPIJob's gang past its time limit ends its workload by the
workload's own deadline (`k8s/job_deadline.py`): deleting the pods had the Job controller make
them again under its `backoffLimit`, and the Training Operator without end, each time for another
full limit."""

from __future__ import annotations

from typing import Any

from phalanx.k8s.job_deadline import runs_to_end
from phalanx.k8s.records import pod_record
from tests.unit.k8s.test_autogang_adapter import job, job_pod, managed, run
from tests.unit.k8s.test_job_suspension import PYTORCHJOB_REF, _owners, _ptj_pod, _pytorchjob
from tests.unit.k8s.test_scheduler_loop import FakeApi


def _timed_out(jobs: list[dict[str, Any]], api: FakeApi | None = None) -> FakeApi:
    """A running 2-pod Job gang past its 60 s limit (bound at 0 s, the clock at 1000 s)."""
    pods = [job_pod(f"train-{i}", node_name="n1", phase="Running") for i in range(2)]
    group = managed(2, phase="Running", scheduledAt="1970-01-01T00:00:00Z")
    group["spec"]["timeLimitSeconds"] = 60
    return run(pods, [group], jobs, api)


def test_a_time_limit_ends_the_job_by_its_deadline_and_deletes_no_pod_itself() -> None:
    """The run is over (Slurm's TIMEOUT): deleting the pods had a Job under its `backoffLimit`
    (6 by default) run again for another full limit (walked: 10 s limit, run again 10 s later).
    Its deadline is lowered to how long it has been active (started at 600 s, now 1000 s): the
    Job controller fails it `DeadlineExceeded` and deletes the pods."""
    body = job(2)
    body["status"] = {"startTime": "1970-01-01T00:10:00Z"}
    api = _timed_out([body])
    assert ("evicted", "TimeLimitExceeded") in api.calls, api.calls
    assert ("deadline-job", "train") in api.calls, api.calls
    assert not [c for c in api.calls if c[0] in ("evict", "delete", "suspend-job")], api.calls
    assert api.job_patches == [
        {"metadata": {"uid": "job-uid"}, "spec": {"activeDeadlineSeconds": 400}}
    ]


def test_a_time_limit_deletes_the_pods_when_the_job_cannot_be_ended_alone() -> None:
    refused = _timed_out([job(2)], FakeApi(failing={"patch-job"}))
    assert ("deadline-job", "train") in refused.calls
    assert sorted(c for c in refused.calls if c[0] == "delete") == [
        ("delete", "train-0"),
        ("delete", "train-1"),
    ], "the RBAC refused: its pods are deleted"
    other = job(2)
    other["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    managed_elsewhere = _timed_out([other])
    assert not [c for c in managed_elsewhere.calls if c[0].startswith("deadline")]
    assert ("delete", "train-0") in managed_elsewhere.calls
    # A third pod of the Job outside the gang (a hand-written PodGroup over two): ending the
    # Job would end it too.
    pods = [job_pod(f"train-{i}", node_name="n1", phase="Running") for i in range(3)]
    owners = _owners([job(3)], [], pods)
    records = [pod_record(p) for p in pods]
    assert runs_to_end(records[:2], records[:2], owners) is None
    (whole,) = runs_to_end(records[:2], records, owners) or []
    assert whole.name == "train"


def _ptj_timed_out(ptj: dict[str, Any], api: FakeApi | None = None) -> FakeApi:
    """A running 3-pod PyTorchJob gang past its 60 s limit (bound at 0 s, the clock at 1000 s)."""
    group = managed(3, PYTORCHJOB_REF, phase="Running", scheduledAt="1970-01-01T00:00:00Z")
    group["spec"]["timeLimitSeconds"] = 60
    return run([_ptj_pod(i) for i in range(3)], [group], [], api, others=[ptj])


def test_a_time_limit_ends_a_pytorchjob_by_its_run_policy_deadline() -> None:
    """The Training Operator makes deleted pods again at once, without end (walked: a 15 s
    limit, run again within 2 s, five runs in 83 s). Its `runPolicy.activeDeadlineSeconds` is
    lowered to how long it has been active (started at 300 s, now 1000 s): the operator fails
    it and deletes its pods."""
    api = _ptj_timed_out(_pytorchjob())
    assert ("evicted", "TimeLimitExceeded") in api.calls, api.calls
    assert ("deadline-pytorchjob", "ptj") in api.calls, api.calls
    assert not [c for c in api.calls if c[0] in ("evict", "delete")], api.calls
    assert api.job_patches == [
        {"metadata": {"uid": "ptj-uid"}, "spec": {"runPolicy": {"activeDeadlineSeconds": 700}}}
    ]
    assert api.patched_paths == ["kubeflow.org/v1/pytorchjobs"]


def test_a_pytorchjob_another_controller_runs_or_one_refused_has_its_pods_deleted() -> None:
    elsewhere = _ptj_timed_out(_pytorchjob(managedBy="kueue.x-k8s.io/multikueue"))
    assert not [c for c in elsewhere.calls if c[0].startswith("deadline")], elsewhere.calls
    assert ("delete", "ptj-0") in elsewhere.calls
    refused = _ptj_timed_out(_pytorchjob(), FakeApi(failing={"patch-pytorchjob"}))
    assert ("deadline-pytorchjob", "ptj") in refused.calls
    assert sorted(c for c in refused.calls if c[0] == "delete") == [
        ("delete", "ptj-0"),
        ("delete", "ptj-1"),
        ("delete", "ptj-2"),
    ], "the RBAC refused: its pods are deleted"
    # A fourth pod of it outside the gang (a hand-written PodGroup over three): ending the
    # PyTorchJob would end it too.
    pods = [_ptj_pod(i) for i in range(4)]
    owners = _owners([], [_pytorchjob()], pods)
    records = [pod_record(p) for p in pods]
    assert runs_to_end(records[:3], records[:3], owners) is None
    (whole,) = runs_to_end(records[:3], records, owners) or []
    assert (whole.kind, whole.name, whole.run_policy) == ("PyTorchJob", "ptj", True)
