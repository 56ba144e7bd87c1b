"""A RayJob's gang (KubeRay): evicted by suspending the RayJob and resumed once no pod of it is
left (`k8s/job_suspension.py`), and ended at its time limit by the RayJob's own deadline with
its cluster suspended (`k8s/job_deadline.py`); a RayCluster of its own is ended at its time
limit by its suspension, and evicted pod by pod (KubeRay makes them again: a new run).

KubeRay v1.5 does not make the head of a RayJob's provisioned cluster again, so evicting its
pods left a cluster that never came back (walked: "0 of 3 pods exist" after a time limit, "6 of
8 pods exist" after a preemption, for ever)."""

from __future__ import annotations

from typing import Any

from phalanx.k8s.job_suspension import target_of, to_resume
from phalanx.k8s.records import pod_record
from tests.unit.k8s.test_autogang_adapter import managed, run
from tests.unit.k8s.test_job_suspension import MARK, _owners
from tests.unit.k8s.test_records_and_view import pod
from tests.unit.k8s.test_scheduler_loop import FakeApi

RAYJOB_REF = {
    "apiVersion": "ray.io/v1",
    "kind": "RayJob",
    "name": "rj",
    "uid": "rj-uid",
    "controller": True,
}
CLUSTER_REF = {
    "apiVersion": "ray.io/v1",
    "kind": "RayCluster",
    "name": "rj-abcde",
    "uid": "rc-uid",
    "controller": True,
}


def _rayjob(shutdown: bool = True, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "rj", "namespace": "ns", "uid": "rj-uid"},
        "spec": {
            "shutdownAfterJobFinishes": shutdown,
            "rayClusterSpec": {"workerGroupSpecs": [{"minReplicas": 2}]},
            **spec,
        },
        "status": {"jobDeploymentStatus": "Running", "startTime": "1970-01-01T00:05:00Z"},
    }


def _cluster() -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {
            "name": "rj-abcde",
            "namespace": "ns",
            "uid": "rc-uid",
            "ownerReferences": [RAYJOB_REF],
        },
        "spec": {"workerGroupSpecs": [{"minReplicas": 2}]},
    }


def _submitter() -> dict[str, Any]:
    """KubeRay's submitter Job (`K8sJobMode`), owned by the RayJob."""
    return {
        "metadata": {
            "name": "rj",
            "namespace": "ns",
            "uid": "sub-uid",
            "ownerReferences": [RAYJOB_REF],
        },
        "spec": {"parallelism": 1, "completions": 1},
    }


def _ray_pod(name: str, phase: str = "Running") -> dict[str, Any]:
    body = pod(name, gpus=4, node_name="n1", phase=phase)
    body["metadata"]["ownerReferences"] = [CLUSTER_REF]
    return body


def _submitter_pod(phase: str = "Running") -> dict[str, Any]:
    body = pod("rj-xyz", gpus=0, node_name="n1", phase=phase)
    body["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": "rj",
            "uid": "sub-uid",
            "controller": True,
        }
    ]
    return body


def _pods() -> list[dict[str, Any]]:
    """The cluster's head and 2 workers, and the submitter's pod: the RayJob's gang."""
    return [_ray_pod("rj-head"), _ray_pod("rj-w-0"), _ray_pod("rj-w-1"), _submitter_pod()]


def _member_failed(rayjob: dict[str, Any], api: FakeApi | None = None) -> FakeApi:
    """Its gang running, its head and a worker failed: evicted whole (`MemberFailed`; the
    submitter's pod, in the gang as in Volcano's but not in its `minMember`, still runs)."""
    pods = _pods()
    for failed in pods[:2]:
        failed["status"]["phase"] = "Failed"
    group = managed(3, RAYJOB_REF, phase="Running", scheduledAt="1970-01-01T00:16:00Z")
    return run(pods, [group], [_submitter()], api, others=[rayjob, _cluster()])


def test_a_rayjobs_gang_is_evicted_by_suspending_the_rayjob() -> None:
    """Suspended, KubeRay deletes the cluster and the submitter and waits `Suspended`; resumed,
    it makes a new cluster (walked: preempted, back on a new cluster 20 s later once the
    preemptor had run)."""
    api = _member_failed(_rayjob())
    assert ("evicted", "MemberFailed") in api.calls, api.calls
    assert ("suspend-rayjob", "rj") in api.calls, api.calls
    assert not [c for c in api.calls if c[0] in ("evict", "delete")], api.calls
    assert api.job_patches == [
        {
            "metadata": {
                "uid": "rj-uid",
                "annotations": {"phalanx.dev/suspended-for": "MemberFailed"},
            },
            "spec": {"suspend": True},
        }
    ]
    assert api.patched_paths == ["ray.io/v1/rayjobs"]
    refused = _member_failed(_rayjob(), FakeApi(failing={"patch-rayjob"}))
    assert ("evict", "rj-w-1") in refused.calls, "the RBAC refused: its pods are evicted"


def test_a_rayjob_that_would_fail_if_suspended_or_is_not_ours_to_suspend_is_left_alone() -> None:
    """KubeRay fails a RayJob suspended without `shutdownAfterJobFinishes` (`ValidationFailed`,
    for good): its pods are evicted instead, as are those of one another controller manages,
    Kueue admits or a user suspended, or one with a pod outside the gang."""
    pods = _pods()
    every = [pod_record(p) for p in pods]

    def target(rayjob: dict[str, Any], gang: int = 4) -> Any:
        members = every[:gang]
        return target_of(members, members, _owners([_submitter()], [rayjob, _cluster()], pods))

    assert target(_rayjob()) is not None
    assert target(_rayjob(managedBy="ray.io/kuberay-operator")) is not None
    assert target(_rayjob(shutdown=False)) is None, "KubeRay would fail it"
    assert target(_rayjob(managedBy="kueue.x-k8s.io/multikueue")) is None, "MultiKueue's"
    queued = _rayjob()
    queued["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "q"}
    assert target(queued) is None, "Kueue resumes what it admitted"
    assert target(_rayjob(suspend=True)) is None, "the user's suspension is theirs to lift"
    assert target(_rayjob(), gang=2) is None, "a worker of its cluster outside the gang"
    api = _member_failed(_rayjob(shutdown=False))
    assert not [c for c in api.calls if c[0] == "suspend-rayjob"], api.calls
    assert ("evict", "rj-w-1") in api.calls, api.calls


def test_a_rayjob_we_suspended_is_resumed_only_once_no_pod_of_it_is_left() -> None:
    """Not while a pod of its cluster (in any phase) or its submitter's running pod is left:
    KubeRay is still deleting them. A RayJob resumed while `Suspending` finishes that first."""
    ours = _rayjob(suspend=True)
    ours["metadata"]["annotations"] = MARK
    ours["status"]["jobDeploymentStatus"] = "Suspending"
    workloads = [ours, _cluster()]
    failed = _ray_pod("rj-head", phase="Failed")
    assert to_resume(_owners([_submitter()], workloads, [failed])) == [], "a head still there"
    running = [_submitter_pod()]
    assert to_resume(_owners([_submitter()], workloads, running)) == [], "its submitter runs"
    (target,) = to_resume(_owners([_submitter()], workloads, [_submitter_pod("Succeeded")]))
    assert (target.kind, target.name, target.run_policy) == ("RayJob", "rj", False)
    api = run([], [managed(3, RAYJOB_REF, phase="Pending")], [], others=[ours])
    assert ("resume-rayjob", "rj") in api.calls, api.calls
    assert api.job_patches == [
        {
            "metadata": {"uid": "rj-uid", "annotations": {"phalanx.dev/suspended-for": None}},
            "spec": {"suspend": False},
        }
    ]


def _timed_out(rayjob: dict[str, Any], api: FakeApi | None = None) -> FakeApi:
    """Its gang running past its 60 s limit (bound at 0 s, the clock at 1000 s)."""
    group = managed(3, RAYJOB_REF, phase="Running", scheduledAt="1970-01-01T00:00:00Z")
    group["spec"]["timeLimitSeconds"] = 60
    return run(_pods(), [group], [_submitter()], api, others=[rayjob, _cluster()])


def test_a_time_limit_ends_the_rayjob_by_its_deadline_and_suspends_its_cluster() -> None:
    """The RayJob's `spec.activeDeadlineSeconds` is lowered to how long it has been active
    (started at 300 s, now 1000 s): KubeRay fails it `DeadlineExceeded`, which its
    `backoffLimit` never retries. Its cluster is suspended too, so KubeRay deletes the pods now
    and makes none — it deletes the cluster only with `shutdownAfterJobFinishes`, after a TTL,
    and deleting the pods here raced its worker reconcile (walked: a worker made again, Pending
    for ever)."""
    api = _timed_out(_rayjob(shutdown=False))
    assert ("evicted", "TimeLimitExceeded") in api.calls, api.calls
    assert [c for c in api.calls if c[1] in ("rj", "rj-abcde")] == [
        ("deadline-rayjob", "rj"),
        ("suspend-raycluster", "rj-abcde"),
    ], api.calls
    assert not [c for c in api.calls if c[0] in ("evict", "delete")], api.calls
    assert api.job_patches == [
        {"metadata": {"uid": "rj-uid"}, "spec": {"activeDeadlineSeconds": 700}},
        {
            "metadata": {
                "uid": "rc-uid",
                "annotations": {"phalanx.dev/suspended-for": "TimeLimitExceeded"},
            },
            "spec": {"suspend": True},
        },
    ]
    assert api.patched_paths == ["ray.io/v1/rayjobs", "ray.io/v1/rayclusters"]


def test_a_rayjob_refused_or_run_by_another_controller_has_its_pods_deleted_at_its_limit() -> None:
    refused = _timed_out(_rayjob(), FakeApi(failing={"patch-rayjob"}))
    assert ("delete", "rj-head") in refused.calls, refused.calls
    cluster_refused = _timed_out(_rayjob(), FakeApi(failing={"patch-raycluster"}))
    assert ("deadline-rayjob", "rj") in cluster_refused.calls
    assert ("delete", "rj-head") in cluster_refused.calls, "its pods go at the limit all the same"
    elsewhere = _timed_out(_rayjob(managedBy="kueue.x-k8s.io/multikueue"))
    assert not [c for c in elsewhere.calls if c[0].startswith("deadline")], elsewhere.calls
    assert ("delete", "rj-head") in elsewhere.calls


def _own_cluster(**meta: Any) -> dict[str, Any]:
    body = _cluster()
    del body["metadata"]["ownerReferences"]
    body["metadata"].update(meta)
    return body


def _own_cluster_gang(**group_status: Any) -> dict[str, Any]:
    return managed(3, CLUSTER_REF, **group_status)


def test_a_rayclusters_own_gang_past_its_limit_is_ended_by_suspending_the_cluster() -> None:
    """Walked: a RayCluster of a head and 2 workers with a 15 s limit, its pods deleted at the
    limit, was made again by KubeRay every 16 s — four runs in 65 s, each another limit of its
    GPUs. It has no deadline: it is suspended, marked `TimeLimitExceeded` (KubeRay deletes the
    pods and makes none), and never resumed here."""
    group = _own_cluster_gang(phase="Running", scheduledAt="1970-01-01T00:00:00Z")
    group["spec"]["timeLimitSeconds"] = 60
    pods = [_ray_pod("rj-head"), _ray_pod("rj-w-0"), _ray_pod("rj-w-1")]
    api = run(pods, [group], [], others=[_own_cluster()])
    assert ("evicted", "TimeLimitExceeded") in api.calls, api.calls
    assert ("suspend-raycluster", "rj-abcde") in api.calls, api.calls
    assert not [c for c in api.calls if c[0] in ("evict", "delete")], api.calls
    assert api.job_patches == [
        {
            "metadata": {
                "uid": "rc-uid",
                "annotations": {"phalanx.dev/suspended-for": "TimeLimitExceeded"},
            },
            "spec": {"suspend": True},
        }
    ]
    ended = _own_cluster(annotations={"phalanx.dev/suspended-for": "TimeLimitExceeded"})
    ended["spec"]["suspend"] = True
    assert to_resume(_owners([], [ended], [])) == [], "a time limit is not a suspension"
    after = run([], [_own_cluster_gang(phase="Running")], [], others=[ended])
    assert ("status", "Failed") in after.calls, "its gang ended with it"


def test_a_rayclusters_own_gang_is_evicted_pod_by_pod_and_made_again_by_kuberay() -> None:
    """Preempted or reclaimed, a cluster of its own is not suspended: KubeRay makes its pods
    again at once, and they queue as the gang's next run."""
    pods = [_ray_pod("rj-head", phase="Failed"), _ray_pod("rj-w-0", phase="Failed")]
    pods.append(_ray_pod("rj-w-1"))
    group = _own_cluster_gang(phase="Running", scheduledAt="1970-01-01T00:16:00Z")
    api = run(pods, [group], [], others=[_own_cluster()])
    assert ("evicted", "MemberFailed") in api.calls, api.calls
    assert ("evict", "rj-w-1") in api.calls, api.calls
    assert not [c for c in api.calls if c[0].startswith("suspend")], api.calls
