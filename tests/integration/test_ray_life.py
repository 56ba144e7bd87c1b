"""A RayJob's and a RayCluster's gangs through their life against the real KubeRay operator
(v1.5.0): a time limit ends the RayJob, or suspends a RayCluster of its own, and a preemption
suspends a RayJob and runs it again on a new cluster.

KubeRay v1.5 does not make the head of a RayJob's provisioned cluster again ("skipping head
creation to let RayJob controller handle the failure"), so evicting a RayJob's pods, as for a
gang of bare pods, left a cluster that never came back: walked on the demo cluster, the gang
sat `Pending` "0 of 3 pods exist" after its time limit, and "6 of 8 pods exist" after a
preemption (KubeRay made 5 workers again, no head), for as long as it was watched. A RayCluster
of its own had the opposite fault: its pods deleted at its time limit, KubeRay made them again,
and it ran another full limit every time (four runs in 65 s with a 15 s limit).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.conftest import Cluster
from tests.integration.operator_fixture import OperatorProcess
from tests.integration.test_admission_policy import label_namespace, policies  # noqa: F401
from tests.integration.test_automatic_gangs import (  # noqa: F401
    failed_at_time_limit,
    gone_for_good,
    high_priority,
    ns,
    pods_by,
    preempt_for_urgent,
    wait_bound,
)
from tests.integration.waiting import wait_for
from tests.integration.workload_controllers import (
    RAY_NODES,
    RAYCLUSTER_API,
    RAYJOB_API,
    create_workload,
    raycluster,
    rayjob,
)

pytestmark = pytest.mark.integration


def _get(custom: Any, api: tuple[str, str, str], namespace: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = custom.get_namespaced_custom_object(
        api[0], api[1], namespace, api[2], name
    )
    return found


def test_a_rayjob_past_its_time_limit_fails_and_its_cluster_runs_no_more(
    cluster: Cluster,
    custom: Any,
    ns: str,  # noqa: F811
    operator: OperatorProcess,
    policies: Any,  # noqa: F811
) -> None:
    """A RayJob of a head and 2 workers of one GPU, its cluster kept after the job
    (`shutdownAfterJobFinishes: false`), with a 6 s limit (its annotation). Its
    `spec.activeDeadlineSeconds` is lowered to how long it has run: KubeRay fails it
    `DeadlineExceeded` (never retried), and its RayCluster is suspended, so KubeRay deletes the
    pods and makes none; the gang is `Failed` with the RayJob, and no pod of the cluster is made
    again over the next operator cycles."""
    label_namespace(cluster, ns, "default")
    body = rayjob(
        "rl",
        workers=2,
        gpus=1,
        shutdown_after_job_finishes=False,
        annotations={"phalanx.dev/time-limit-seconds": "6"},
    )
    create_workload(custom, RAYJOB_API, ns, body)
    first = wait_bound(cluster, ns, RAY_NODES, 3)
    failed_at_time_limit(custom, ns, "rayjob-rl", 6)
    made = _get(custom, RAYJOB_API, ns, "rl")
    assert (made["status"]["jobDeploymentStatus"], made["status"]["reason"]) == (
        "Failed",
        "DeadlineExceeded",
    ), made["status"]
    ray_cluster = _get(custom, RAYCLUSTER_API, ns, made["status"]["rayClusterName"])
    assert ray_cluster["spec"].get("suspend") is True, "its kept cluster suspended"
    gone_for_good(cluster, operator, ns, RAY_NODES, "KubeRay (cluster suspended)", first)


def test_a_preempted_rayjob_is_suspended_and_runs_again_on_a_new_cluster(
    cluster: Cluster,
    custom: Any,
    ns: str,  # noqa: F811
    policies: Any,  # noqa: F811
) -> None:
    """A RayJob of a head and 15 workers of 8 GPUs (the whole cluster) is preempted for a
    higher-priority Job of one pod. Evicted pod by pod, its cluster never came back (no head;
    walked). The operator suspends the RayJob instead — KubeRay deletes its cluster and
    submitter and waits `Suspended` — and resumes it once no pod of it is left: a new cluster of
    16 pods is bound once the Job's pod has run its 5 s, and the RayJob is running, resumed,
    unmarked and never `Failed`."""
    label_namespace(cluster, ns, "default")
    body = rayjob("rp", workers=15, gpus=8, shutdown_after_job_finishes=True)
    with high_priority(cluster, ns) as high:
        create_workload(custom, RAYJOB_API, ns, body)
        first = wait_bound(cluster, ns, RAY_NODES, 16)
        (old_cluster,) = {p.metadata.labels["ray.io/cluster"] for p in first}
        preempt_for_urgent(cluster, custom, ns, "rayjob-rp", high)
        fresh = wait_for(
            lambda: (
                len(
                    pods := [
                        p
                        for p in pods_by(cluster, ns, RAY_NODES)
                        if p.metadata.labels["ray.io/cluster"] != old_cluster
                    ]
                )
                == 16
                and all(p.spec.node_name for p in pods)
                and pods
            ),
            timeout=90,
            what="16 pods of a new cluster of RayJob rp bound (suspended, then resumed once its "
            "pods were gone and Job urgent had run)",
        )
        assert not {p.metadata.uid for p in fresh} & {p.metadata.uid for p in first}
        made = _get(custom, RAYJOB_API, ns, "rp")
        assert not made["spec"].get("suspend"), "rp resumed"
        assert "phalanx.dev/suspended-for" not in (made["metadata"].get("annotations") or {})
        assert made["status"]["jobDeploymentStatus"] not in ("Failed", "ValidationFailed"), made[
            "status"
        ]
        assert not made["status"].get("failed"), made["status"]


def test_a_rayclusters_own_gang_past_its_time_limit_is_suspended_and_runs_no_more(
    cluster: Cluster,
    custom: Any,
    ns: str,  # noqa: F811
    operator: OperatorProcess,
    policies: Any,  # noqa: F811
) -> None:
    """A RayCluster of a head and 2 workers of one GPU with a 6 s limit (its annotation). It has
    no deadline, and KubeRay makes a cluster's deleted pods again: it is suspended, marked
    `TimeLimitExceeded`, so KubeRay deletes its pods and makes none; its gang is `Failed`, and
    no pod of it is made again over the next operator cycles."""
    label_namespace(cluster, ns, "default")
    body = raycluster("rc", workers=2, gpus=1, annotations={"phalanx.dev/time-limit-seconds": "6"})
    create_workload(custom, RAYCLUSTER_API, ns, body)
    first = wait_bound(cluster, ns, RAY_NODES, 3)
    failed_at_time_limit(custom, ns, "raycluster-rc", 6)
    made = _get(custom, RAYCLUSTER_API, ns, "rc")
    assert made["spec"].get("suspend") is True, "suspended"
    assert made["metadata"]["annotations"].get("phalanx.dev/suspended-for") == "TimeLimitExceeded"
    gone_for_good(cluster, operator, ns, RAY_NODES, "KubeRay (RayCluster rc suspended)", first)
