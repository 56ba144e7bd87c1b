"""The real JobSet, LeaderWorkerSet, Kubeflow Trainer, Training Operator and KubeRay controllers
for the tests that ask for them.

Started once per session, on the session's cluster, the first time a test names the fixture
`workload_controllers` (the build, a few minutes when their binaries are not cached yet, happens
then too, with progress on stderr); stopped, their webhook configurations deleted first, at the
end of the session. How they are run: `phalanx.devcluster.controllers`. Builders of their workloads
below (`jobset`, `leader_worker_set`, `trainjob` with its runtime `training_runtime`,
`pytorchjob`, `mpijob`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from phalanx.devcluster.controllers import WorkloadControllers
from tests.integration.objects import GPU, TOLERATE_KWOK, container
from tests.integration.waiting import wait_for

if TYPE_CHECKING:  # conftest imports this module: no import cycle at run time
    from tests.integration.conftest import Cluster


@pytest.fixture(scope="session")
def workload_controllers(
    cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WorkloadControllers]:
    cluster.require_disposable()
    controllers = WorkloadControllers(
        cluster.kubeconfig,
        tmp_path_factory.mktemp("workload-controllers"),
        log=lambda m: print(f"[workload-controllers] {m}"),
    )
    controllers.start()
    try:
        yield controllers
    finally:
        controllers.stop()


JOBSET_API = ("jobset.x-k8s.io", "v1alpha2", "jobsets")
LWS_API = ("leaderworkerset.x-k8s.io", "v1", "leaderworkersets")
TRAINJOB_API = ("trainer.kubeflow.org", "v1alpha1", "trainjobs")
PYTORCHJOB_API = ("kubeflow.org", "v1", "pytorchjobs")
MPIJOB_API = ("kubeflow.org", "v1", "mpijobs")
RAYJOB_API = ("ray.io", "v1", "rayjobs")
RAYCLUSTER_API = ("ray.io", "v1", "rayclusters")
RAY_NODES = "ray.io/is-ray-node=yes"
"""The label KubeRay puts on every pod of a cluster (head and workers), not on a submitter."""
RUNTIME_API = ("trainer.kubeflow.org", "v1alpha1", "clustertrainingruntimes")
TRAINING_RUNTIME = "phalanx-kwok-torch"
"""The ClusterTrainingRuntime of the tests' TrainJobs (`training_runtime`)."""


def pod_template(
    gpus: int,
    *,
    scheduler: str | None,
    labels: dict[str, str] | None = None,
    restart_policy: str | None = None,
) -> dict[str, Any]:
    """A PodTemplateSpec for fake GPU nodes; `scheduler=None` leaves schedulerName unset."""
    spec: dict[str, Any] = {"tolerations": TOLERATE_KWOK, "containers": [container(gpus)]}
    if scheduler is not None:
        spec["schedulerName"] = scheduler
    if restart_policy is not None:
        spec["restartPolicy"] = restart_policy
    return {"metadata": {"labels": labels or {}}, "spec": spec}


def jobset(
    name: str,
    *,
    jobs: int,
    pods_per_job: int,
    gpus: int = 8,
    scheduler: str | None = "default-scheduler",
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A JobSet of one replicated Job `workers` run `jobs` times, `pods_per_job` pods each."""
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {
            "replicatedJobs": [
                {
                    "name": "workers",
                    "replicas": jobs,
                    "template": {
                        "spec": {
                            "parallelism": pods_per_job,
                            "completions": pods_per_job,
                            "backoffLimit": 0,
                            "template": pod_template(
                                gpus, scheduler=scheduler, restart_policy="Never"
                            ),
                        }
                    },
                }
            ]
        },
    }


def leader_worker_set(
    name: str,
    *,
    groups: int,
    size: int,
    gpus: int = 8,
    scheduler: str | None = "default-scheduler",
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """An LWS of `groups` groups, each a leader and `size - 1` workers from one template."""
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {
            "replicas": groups,
            "leaderWorkerTemplate": {
                "size": size,
                "workerTemplate": pod_template(gpus, scheduler=scheduler),
            },
        },
    }


def training_runtime(custom: Any) -> str:
    """A ClusterTrainingRuntime for fake GPU nodes (the Trainer's `torch-distributed` with the
    kwok toleration and `schedulerName: phalanx`), made once; its name."""
    from kubernetes.client.exceptions import ApiException

    spec = {"tolerations": TOLERATE_KWOK, "schedulerName": "phalanx"}
    spec["containers"] = [{"name": "node", "image": "busybox", "command": ["torchrun"]}]
    body = {
        "apiVersion": f"{RUNTIME_API[0]}/{RUNTIME_API[1]}",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": TRAINING_RUNTIME},
        "spec": {
            "mlPolicy": {"numNodes": 1, "torch": {"numProcPerNode": "auto"}},
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {
                                "metadata": {
                                    "labels": {
                                        "trainer.kubeflow.org/trainjob-ancestor-step": "trainer"
                                    }
                                },
                                "spec": {"template": {"spec": spec}},
                            },
                        }
                    ]
                }
            },
        },
    }
    try:
        custom.create_cluster_custom_object(*RUNTIME_API, body)
    except ApiException as exc:
        if exc.status != 409:
            raise
    return TRAINING_RUNTIME


def trainjob(name: str, *, nodes: int, gpus: int, runtime: str) -> dict[str, Any]:
    """A TrainJob of `nodes` pods of `gpus` GPUs on `runtime` (`training_runtime`)."""
    return {
        "apiVersion": f"{TRAINJOB_API[0]}/{TRAINJOB_API[1]}",
        "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": {
            "runtimeRef": {"name": runtime},
            "trainer": {
                "numNodes": nodes,
                "resourcesPerNode": {"requests": {GPU: str(gpus)}, "limits": {GPU: str(gpus)}},
            },
        },
    }


def pytorchjob(
    name: str,
    *,
    workers: int,
    gpus: int,
    restart_policy: str = "OnFailure",
    annotations: dict[str, str] | None = None,
    finalizers: list[str] | None = None,
) -> dict[str, Any]:
    """A PyTorchJob of a master and `workers` workers of `gpus` GPUs, no schedulerName (the
    admission policy of a labelled namespace sets it); `finalizers` on its pods."""

    def replica(count: int) -> dict[str, Any]:
        template = pod_template(gpus, scheduler=None)
        template["spec"]["containers"][0]["name"] = "pytorch"
        if finalizers:
            template["metadata"]["finalizers"] = list(finalizers)
        return {"replicas": count, "restartPolicy": restart_policy, "template": template}

    return {
        "apiVersion": f"{PYTORCHJOB_API[0]}/{PYTORCHJOB_API[1]}",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "annotations": annotations or {}},
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": replica(1),
                "Worker": replica(workers),
            }
        },
    }


def mpijob(
    name: str, *, workers: int, gpus: int, annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    """An MPIJob (Training Operator v1) of a launcher (no GPU: its Training Operator adds an
    init container asking 5Gi of ephemeral storage) and `workers` workers of `gpus` GPUs."""
    launcher = pod_template(0, scheduler=None)
    launcher["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    return {
        "apiVersion": f"{MPIJOB_API[0]}/{MPIJOB_API[1]}",
        "kind": "MPIJob",
        "metadata": {"name": name, "annotations": annotations or {}},
        "spec": {
            "slotsPerWorker": 1,
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "template": launcher},
                "Worker": {"replicas": workers, "template": pod_template(gpus, scheduler=None)},
            },
        },
    }


def ray_cluster_spec(workers: int, gpus: int) -> dict[str, Any]:
    """A RayCluster spec of a head and `workers` workers of `gpus` GPUs each, no schedulerName
    (the admission policy of a labelled namespace sets it)."""

    def group(container_name: str) -> dict[str, Any]:
        template = pod_template(gpus, scheduler=None)
        template["spec"]["containers"][0]["name"] = container_name
        return {"rayStartParams": {}, "template": template}

    return {
        "headGroupSpec": group("ray-head"),
        "workerGroupSpecs": [
            {
                "groupName": "gpu",
                "replicas": workers,
                "minReplicas": workers,
                "maxReplicas": workers,
                **group("ray-worker"),
            }
        ],
    }


def raycluster(
    name: str, *, workers: int, gpus: int, annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    """A RayCluster of its own (`ray_cluster_spec`)."""
    return {
        "apiVersion": f"{RAYCLUSTER_API[0]}/{RAYCLUSTER_API[1]}",
        "kind": "RayCluster",
        "metadata": {"name": name, "annotations": annotations or {}},
        "spec": ray_cluster_spec(workers, gpus),
    }


def rayjob(
    name: str,
    *,
    workers: int,
    gpus: int,
    shutdown_after_job_finishes: bool,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A RayJob (KubeRay's default `K8sJobMode`: a submitter Job once the cluster is ready) of
    the cluster `ray_cluster_spec` makes."""
    return {
        "apiVersion": f"{RAYJOB_API[0]}/{RAYJOB_API[1]}",
        "kind": "RayJob",
        "metadata": {"name": name, "annotations": annotations or {}},
        "spec": {
            "entrypoint": "python -c 'print(1)'",
            "shutdownAfterJobFinishes": shutdown_after_job_finishes,
            "rayClusterSpec": ray_cluster_spec(workers, gpus),
        },
    }


def delete_workloads(cluster: Cluster, custom: Any, namespace: str) -> None:
    """Delete every TrainJob, PyTorchJob, MPIJob, RayJob, RayCluster, JobSet and LWS of the
    namespace and wait their pods out (their controllers would recreate what the namespace
    fixture deletes)."""
    apis = (
        TRAINJOB_API,
        PYTORCHJOB_API,
        MPIJOB_API,
        RAYJOB_API,
        RAYCLUSTER_API,
        JOBSET_API,
        LWS_API,
    )
    for group, version, plural in apis:
        custom.delete_collection_namespaced_custom_object(
            group, version, namespace, plural, propagation_policy="Background"
        )
    wait_for(
        lambda: (
            not any(
                custom.list_namespaced_custom_object(g, v, namespace, p)["items"]
                for g, v, p in apis
            )
        ),
        timeout=60,
        what=f"the TrainJobs, PyTorchJobs, MPIJobs, RayJobs, RayClusters, JobSets and "
        f"LeaderWorkerSets of {namespace} to be deleted",
    )
    cluster.core.delete_collection_namespaced_pod(namespace, grace_period_seconds=0)
    wait_for(
        lambda: not cluster.core.list_namespaced_pod(namespace).items,
        timeout=60,
        what=f"the pods of the workloads of {namespace} to be deleted",
    )


def create_workload(
    custom: Any, api: tuple[str, str, str], namespace: str, body: dict[str, Any]
) -> dict[str, Any]:
    """Create an object of a custom kind, waiting (60 s at most) while the API server answers
    503 "kind ... not found. There can be a delay between when CustomResourceDefinitions are
    created and when they are available" — its own words for a CRD its admission chain has not
    caught up with yet (seen with the admission policies matching these kinds right after they
    appear) — or 404 (a CRD just applied, not served yet)."""
    from kubernetes.client.exceptions import ApiException

    from tests.integration.waiting import wait_for

    made: dict[str, Any] = {}

    def attempt() -> bool:
        try:
            made.update(
                custom.create_namespaced_custom_object(api[0], api[1], namespace, api[2], body)
            )
        except ApiException as exc:
            if exc.status == 404 or (exc.status == 503 and "There can be a delay" in str(exc.body)):
                return False
            raise
        return True

    wait_for(attempt, timeout=60, what=f"the API server to serve {api[2]} (404 or 503 until then)")
    return made
