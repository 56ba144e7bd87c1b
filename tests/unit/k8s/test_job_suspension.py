"""A Job's, JobSet's, TrainJob's, PyTorchJob's or MPIJob's gang is evicted by suspending it, and
it is resumed once its pods are gone (`k8s/job_suspension.py`): the Job controller's back-off,
which counts even the pods its `podFailurePolicy` ignores, then never holds the gang's restart
(an 8-pod Job evicted pod by pod waited 600.3 s on the dev cluster, suspended 10.6 s; a JobSet
of two 4-pod Jobs 80.3 s pod by pod), and the Training Operator does not fail a PyTorchJob for
the pods a kubelet turns `Failed` as it stops them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from phalanx.k8s.job_suspension import Owners, target_of, to_resume
from phalanx.k8s.records import job_record, pod_record
from phalanx.k8s.workload_records import workload_record
from tests.unit.k8s.test_autogang_adapter import job, job_pod, managed, run
from tests.unit.k8s.test_records_and_view import pod
from tests.unit.k8s.test_scheduler_loop import FakeApi

MARK = {"phalanx.dev/suspended-for": "Reclaimed"}


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
    assert api.patched_paths == ["batch/v1/jobs"]


def test_a_job_that_may_not_be_patched_has_its_pods_evicted_instead() -> None:
    pods, groups = _member_failed()
    api = run(pods, groups, [job(2)], FakeApi(failing={"patch-job"}))
    assert ("suspend-job", "train") in api.calls
    assert ("evict", "train-0") in api.calls, api.calls


def _job(**spec: Any) -> dict[str, Any]:
    body = job(2)
    body["spec"].update(spec)
    return body


def _owners(
    jobs: list[dict[str, Any]],
    others: Sequence[dict[str, Any]] = (),
    pods: Sequence[dict[str, Any]] = (),
) -> Owners:
    workloads = [w for w in map(workload_record, others) if w is not None]
    return Owners(
        {j.uid: j for j in map(job_record, jobs)},
        {w.ref.uid: w for w in workloads},
        [pod_record(p) for p in pods],
    )


def test_only_a_job_the_job_controller_runs_and_no_user_suspended_is_suspended() -> None:
    members = [pod_record(job_pod("train-0", node_name="n1", phase="Running"))]
    assert target_of(members, members, _owners([_job()])) is not None
    for spec in ({"managedBy": "kueue.x-k8s.io/multikueue"}, {"suspend": True}):
        assert target_of(members, members, _owners([_job(**spec)])) is None, spec
    ours = _job(suspend=True)
    ours["metadata"]["annotations"] = MARK
    assert target_of(members, members, _owners([ours])) is not None, "ours: issued again"
    for kind, expected in (("CronJob", True), ("SomeOperator", False)):
        owned = _job()
        owned["metadata"]["ownerReferences"] = [
            {"apiVersion": "x/v1", "kind": kind, "name": "o", "uid": "o-uid", "controller": True}
        ]
        assert (target_of(members, members, _owners([owned])) is not None) is expected, kind
    kueued = _job()
    kueued["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "team-a"}
    assert target_of(members, members, _owners([kueued])) is None, "Kueue would resume it"
    bare = [pod_record(pod("x", node_name="n1", phase="Running"))]
    assert target_of(bare, bare, _owners([_job()])) is None
    assert target_of([*members, *bare], [*members, *bare], _owners([_job()])) is None, (
        "members of two owners"
    )


def test_a_job_with_a_live_pod_outside_the_gang_is_not_suspended() -> None:
    """Suspending it would evict that pod too, which no decision chose."""
    members = [job_pod("train-0", node_name="n1", phase="Running")]
    other = job_pod("train-1", node_name="n2", phase="Running")
    gone = job_pod("train-2", node_name="n2", phase="Succeeded")
    recs = [pod_record(p) for p in members]
    assert target_of(recs, recs, _owners([_job()], pods=[*members, gone])) is not None
    assert target_of(recs, recs, _owners([_job()], pods=[*members, other])) is None


def test_a_job_we_suspended_is_resumed_once_none_of_its_pods_is_left() -> None:
    ours = _job(suspend=True)
    ours["metadata"]["annotations"] = MARK
    running = job_pod("train-0", node_name="n1", phase="Running")
    assert to_resume(_owners([ours], pods=[running])) == [], "a pod still running (or terminating)"
    failed = job_pod("train-1", node_name="n1", phase="Failed")
    assert [t.name for t in to_resume(_owners([ours]))] == ["train"]
    assert [t.name for t in to_resume(_owners([ours], pods=[failed]))] == ["train"], (
        "the failed member stays: the controller deletes only active pods"
    )
    assert to_resume(_owners([_job(suspend=True)])) == [], "a user's suspension is theirs"
    api = run([], [managed(2, phase="Pending")], [ours])
    assert ("resume-job", "train") in api.calls, api.calls
    assert api.job_patches == [
        {
            "metadata": {"uid": "job-uid", "annotations": {"phalanx.dev/suspended-for": None}},
            "spec": {"suspend": False},
        }
    ]


# A JobSet `js` of two child Jobs of two pods each: one gang of four.
JOBSET_REF = {
    "apiVersion": "jobset.x-k8s.io/v1alpha2",
    "kind": "JobSet",
    "name": "js",
    "uid": "js-uid",
    "controller": True,
}


def _jobset(**spec: Any) -> dict[str, Any]:
    job_spec = {"parallelism": 2, "completions": 2, "template": {"spec": {}}}
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js", "namespace": "ns", "uid": "js-uid"},
        "spec": {
            "replicatedJobs": [{"name": "w", "replicas": 2, "template": {"spec": job_spec}}],
            **spec,
        },
    }


def _child(i: int) -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"js-w-{i}",
            "namespace": "ns",
            "uid": f"child-{i}",
            "ownerReferences": [JOBSET_REF],
        },
        "spec": {"parallelism": 2, "completions": 2},
    }


def _child_pod(i: int, k: int, phase: str = "Running") -> dict[str, Any]:
    body = pod(f"js-w-{i}-{k}", gpus=4, node_name=f"n{i + 1}", phase=phase)
    body["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": f"js-w-{i}",
            "uid": f"child-{i}",
            "controller": True,
        }
    ]
    return body


def _jobset_group(**status: Any) -> dict[str, Any]:
    return managed(4, JOBSET_REF, **status)


def _jobset_member_failed(jobset: dict[str, Any], api: FakeApi | None = None) -> FakeApi:
    pods = [_child_pod(i, k) for i in range(2) for k in range(2)]
    pods[3]["status"]["phase"] = "Failed"
    group = _jobset_group(phase="Running", scheduledAt="1970-01-01T00:16:00Z")
    return run(pods, [group], [_child(0), _child(1)], api, others=[jobset])


def test_a_jobsets_gang_is_evicted_by_suspending_the_jobset_not_its_jobs() -> None:
    """Each child Job would back off for its own evicted pods (80.3 s for two 4-pod Jobs on the
    dev cluster); a child Job suspended alone is resumed at once by the JobSet controller."""
    api = _jobset_member_failed(_jobset())
    assert ("evicted", "MemberFailed") in api.calls, api.calls
    assert ("suspend-jobset", "js") in api.calls, api.calls
    assert not [c for c in api.calls if c[0] in ("evict", "delete", "suspend-job")], api.calls
    assert api.patched_paths == ["jobset.x-k8s.io/v1alpha2/jobsets"]
    assert api.job_patches[0]["metadata"]["uid"] == "js-uid"


def test_a_jobset_another_controller_runs_or_a_user_suspended_has_its_pods_evicted() -> None:
    api = _jobset_member_failed(_jobset(managedBy="kueue.x-k8s.io/multikueue"))
    assert not [c for c in api.calls if c[0].startswith("suspend")], api.calls
    assert ("evict", "js-w-0-0") in api.calls, api.calls
    pods = [_child_pod(i, k) for i in range(2) for k in range(2)]
    every = [pod_record(p) for p in pods]
    users = _owners([_child(0), _child(1)], [_jobset(suspend=True)], pods)
    assert target_of(every, every, users) is None, "the user's suspension is theirs to lift"
    ours = _jobset(suspend=True)
    ours["metadata"]["annotations"] = MARK
    again = _owners([_child(0), _child(1)], [ours], pods)
    assert target_of(every, every, again) is not None, "ours: issued again"
    trained = _jobset()
    trained["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "name": "t",
            "uid": "t-uid",
            "controller": True,
        }
    ]
    owned = _owners([_child(0), _child(1)], [trained], pods)
    assert target_of(every, every, owned) is None, "its TrainJob would set suspend back"
    api = _jobset_member_failed(_jobset(), FakeApi(failing={"patch-jobset"}))
    assert ("suspend-jobset", "js") in api.calls
    assert ("evict", "js-w-0-0") in api.calls, "the RBAC refused: its pods are evicted"


def test_a_jobset_is_suspended_only_for_a_gang_holding_all_its_pods() -> None:
    """A hand-written PodGroup over one child Job's pods: suspending the JobSet would evict the
    other Job's pods too."""
    pods = [_child_pod(i, k) for i in range(2) for k in range(2)]
    owners = _owners([_child(0), _child(1)], [_jobset()], pods)
    first = [pod_record(p) for p in pods[:2]]
    assert target_of(first, first, owners) is None
    every = [pod_record(p) for p in pods]
    target = target_of(every[:3], every, owners)
    assert target is not None and (target.kind, target.name) == ("JobSet", "js")


def test_a_jobset_we_suspended_is_resumed_once_its_jobs_pods_are_gone() -> None:
    ours = _jobset(suspend=True)
    ours["metadata"]["annotations"] = MARK
    children = [_child(0), _child(1)]
    alive = [_child_pod(1, 0)]
    assert to_resume(_owners(children, [ours], alive)) == [], "a child Job's pod still runs"
    failed = [_child_pod(1, 0, phase="Failed")]
    (target,) = to_resume(_owners(children, [ours], failed))
    assert (target.kind, target.name, target.api_version) == (
        "JobSet",
        "js",
        "jobset.x-k8s.io/v1alpha2",
    )
    assert to_resume(_owners(children, [_jobset(suspend=True)])) == [], "the user's"
    api = run([], [_jobset_group(phase="Pending")], children, others=[ours])
    assert ("resume-jobset", "js") in api.calls, api.calls
    assert not [c for c in api.calls if c[0] == "resume-job"], "its controller resumes its Jobs"


# A TrainJob `t` (Kubeflow Trainer v2) owning the JobSet `js`: one gang of its four pods.
TRAINJOB_REF = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainJob",
    "name": "t",
    "uid": "t-uid",
    "controller": True,
}


def _trainjob(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "t", "namespace": "ns", "uid": "t-uid"},
        "spec": {"runtimeRef": {"name": "torch"}, "trainer": {"numNodes": 4}, **spec},
    }


def _trained_jobset(**spec: Any) -> dict[str, Any]:
    body = _jobset(**spec)
    body["metadata"]["ownerReferences"] = [TRAINJOB_REF]
    return body


def test_a_trainjobs_gang_is_evicted_by_suspending_the_trainjob() -> None:
    """Walked: a TrainJob of 8 nodes lost a pod to `kubectl drain`; evicted pod by pod its one Job
    counted 8 failures (backoffLimit 6) and the TrainJob was `Failed` 1.6 s later. Its JobSet is
    not suspended itself: the Trainer applies the JobSet's `spec.suspend` from the TrainJob's."""
    pods = [_child_pod(i, k) for i in range(2) for k in range(2)]
    pods[3]["status"]["phase"] = "Failed"
    group = managed(4, TRAINJOB_REF, phase="Running", scheduledAt="1970-01-01T00:16:00Z")
    api = run(pods, [group], [_child(0), _child(1)], others=[_trained_jobset(), _trainjob()])
    assert ("evicted", "MemberFailed") in api.calls, api.calls
    assert ("suspend-trainjob", "t") in api.calls, api.calls
    assert not [c for c in api.calls if c[0] in ("evict", "delete", "suspend-jobset")], api.calls
    assert api.patched_paths == ["trainer.kubeflow.org/v1alpha1/trainjobs"]
    assert api.job_patches[0]["metadata"]["uid"] == "t-uid"


def test_a_trainjob_another_controller_runs_kueue_admits_or_a_user_suspended_is_left_alone() -> (
    None
):
    pods = [_child_pod(i, k) for i in range(2) for k in range(2)]
    every = [pod_record(p) for p in pods]
    children = [_child(0), _child(1)]

    def target(trainjob: dict[str, Any]) -> Any:
        return target_of(every, every, _owners(children, [_trained_jobset(), trainjob], pods))

    assert target(_trainjob()) is not None
    assert target(_trainjob(managedBy="trainer.kubeflow.org/trainjob-controller")) is not None
    assert target(_trainjob(managedBy="kueue.x-k8s.io/multikueue")) is None, "MultiKueue's"
    queued = _trainjob()
    queued["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "q"}
    assert target(queued) is None, "Kueue resumes what it admitted"
    assert target(_trainjob(suspend=True)) is None, "the user's suspension is theirs to lift"
    ours = _trainjob(suspend=True)
    ours["metadata"]["annotations"] = MARK
    assert target(ours) is not None, "ours: issued again"
    done = _trainjob()
    done["status"] = {"conditions": [{"type": "Complete", "status": "True"}]}
    assert target(done) is None


def test_a_trainjob_we_suspended_is_resumed_once_its_jobsets_pods_are_gone() -> None:
    ours = _trainjob(suspend=True)
    ours["metadata"]["annotations"] = MARK
    children = [_child(0), _child(1)]
    jobset = _trained_jobset(suspend=True)  # the Trainer's doing: not marked, not ours
    alive = [_child_pod(1, 0)]
    assert to_resume(_owners(children, [jobset, ours], alive)) == [], "a pod still runs"
    (target,) = to_resume(_owners(children, [jobset, ours], []))
    assert (target.kind, target.name, target.api_version) == (
        "TrainJob",
        "t",
        "trainer.kubeflow.org/v1alpha1",
    )
    group = managed(4, TRAINJOB_REF, phase="Pending")
    api = run([], [group], children, others=[jobset, ours])
    assert ("resume-trainjob", "t") in api.calls, api.calls
    assert not [c for c in api.calls if c[0] in ("resume-job", "resume-jobset")], api.calls


# A PyTorchJob `ptj` (Kubeflow Training Operator v1) of a master and 2 workers: one gang.
PYTORCHJOB_REF = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "PyTorchJob",
    "name": "ptj",
    "uid": "ptj-uid",
    "controller": True,
}


def _pytorchjob(**run_policy: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "ptj", "namespace": "ns", "uid": "ptj-uid"},
        "spec": {
            "runPolicy": run_policy,
            "pytorchReplicaSpecs": {"Master": {"replicas": 1}, "Worker": {"replicas": 2}},
        },
        "status": {"startTime": "1970-01-01T00:05:00Z"},
    }


def _ptj_pod(i: int) -> dict[str, Any]:
    body = pod(f"ptj-{i}", gpus=4, node_name="n1", phase="Running")
    body["metadata"]["ownerReferences"] = [PYTORCHJOB_REF]
    return body


def _ptj_preempted(ptj: dict[str, Any], api: FakeApi | None = None) -> FakeApi:
    """Its gang running, one member failed: evicted whole (`MemberFailed`)."""
    pods = [_ptj_pod(i) for i in range(3)]
    pods[2]["status"]["phase"] = "Failed"
    group = managed(3, PYTORCHJOB_REF, phase="Running", scheduledAt="1970-01-01T00:16:00Z")
    return run(pods, [group], [], api, others=[ptj])


def test_a_pytorchjobs_gang_is_evicted_by_suspending_it_through_its_run_policy() -> None:
    """Walked: a PyTorchJob of 8 pods (`restartPolicy: Never`) preempted pod by pod, each pod
    turned `Failed` as a kubelet stops it, was `Failed` 0.3 s later ("4 Worker replica(s)
    failed"): the preemption lost its run. Suspended, the Training Operator deletes its pods and
    counts nothing."""
    api = _ptj_preempted(_pytorchjob())
    assert ("evicted", "MemberFailed") in api.calls, api.calls
    assert ("suspend-pytorchjob", "ptj") in api.calls, api.calls
    assert not [c for c in api.calls if c[0] in ("evict", "delete")], api.calls
    assert api.job_patches == [
        {
            "metadata": {
                "uid": "ptj-uid",
                "annotations": {"phalanx.dev/suspended-for": "MemberFailed"},
            },
            "spec": {"runPolicy": {"suspend": True}},
        }
    ]
    assert api.patched_paths == ["kubeflow.org/v1/pytorchjobs"]
    refused = _ptj_preempted(_pytorchjob(), FakeApi(failing={"patch-pytorchjob"}))
    assert ("evict", "ptj-0") in refused.calls, "the RBAC refused: its pods are evicted"


def test_a_pytorchjob_another_controller_runs_kueue_admits_or_a_user_suspended_is_left_alone() -> (
    None
):
    pods = [_ptj_pod(i) for i in range(3)]
    every = [pod_record(p) for p in pods]

    def target(ptj: dict[str, Any], gang: int = 3) -> Any:
        return target_of(every[:gang], every[:gang], _owners([], [ptj], pods))

    assert target(_pytorchjob()) is not None
    assert target(_pytorchjob(managedBy="kubeflow.org/training-operator")) is not None
    assert target(_pytorchjob(managedBy="kueue.x-k8s.io/multikueue")) is None, "MultiKueue's"
    queued = _pytorchjob()
    queued["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "q"}
    assert target(queued) is None, "Kueue resumes what it admitted"
    assert target(_pytorchjob(suspend=True)) is None, "the user's suspension is theirs to lift"
    assert target(_pytorchjob(), gang=2) is None, "a pod of it outside the gang"


def test_a_pytorchjob_we_suspended_is_resumed_only_once_no_pod_of_it_is_left() -> None:
    """Resumed with a `Failed` pod still there (a kubelet finishing its deletion), the Training
    Operator would count it and fail a `Never` job: ended pods count too, unlike a Job's."""
    ours = _pytorchjob(suspend=True)
    ours["metadata"]["annotations"] = MARK
    failed = _ptj_pod(0)
    failed["status"]["phase"] = "Failed"
    assert to_resume(_owners([], [ours], [failed])) == [], "a Failed pod still there"
    (target,) = to_resume(_owners([], [ours], []))
    assert (target.kind, target.name, target.run_policy) == ("PyTorchJob", "ptj", True)
    api = run([], [managed(3, PYTORCHJOB_REF, phase="Pending")], [], others=[ours])
    assert ("resume-pytorchjob", "ptj") in api.calls, api.calls
    assert api.job_patches == [
        {
            "metadata": {"uid": "ptj-uid", "annotations": {"phalanx.dev/suspended-for": None}},
            "spec": {"runPolicy": {"suspend": False}},
        }
    ]
