"""Opt-in with one label: the chart's MutatingAdmissionPolicies on the real API server (1.36).

The policies are taken from `deploy/manifests/phalanx.yaml` (what `helm template` of the chart
renders; a test of test_helm.py keeps the two equal) and applied to the test cluster for this
module, then deleted. No operator runs here: what is tested is what the API server writes into
the objects it admits — a pod's `schedulerName`, a workload's pod templates — and so into the
pods the real Job, JobSet and LWS controllers create from them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.dynamic import DynamicClient

from phalanx.devcluster.chart import template
from phalanx.devcluster.controllers import WorkloadControllers
from phalanx.devcluster.shapes import SHAPE_LABEL
from tests.integration.conftest import Cluster, _default_sa_exists
from tests.integration.objects import TOLERATE_KWOK
from tests.integration.operator_fixture import chart_manifests
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

QUEUE = "phalanx.dev/queue"
POLICY_KINDS = ("MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding")


def policy_docs() -> list[dict[str, Any]]:
    return [d for d in chart_manifests() if d["kind"] in POLICY_KINDS]


def pod(
    name: str,
    *,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    scheduler: str | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "tolerations": TOLERATE_KWOK,
        "containers": [{"name": "main", "image": "busybox"}],
    }
    if scheduler is not None:
        spec["schedulerName"] = scheduler
    meta = {"name": name, "labels": labels or {}, "annotations": annotations or {}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def job(name: str, *, labels: dict[str, str], template_labels: dict[str, str] | None = None) -> Any:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "parallelism": 2,
            "completions": 2,
            "template": {
                "metadata": {"labels": template_labels or {}},
                "spec": {
                    "restartPolicy": "Never",
                    "tolerations": TOLERATE_KWOK,
                    "containers": [{"name": "main", "image": "busybox"}],
                },
            },
        },
    }


def dry_run_scheduler(cluster: Cluster, namespace: str, body: dict[str, Any]) -> str:
    made = cluster.core.create_namespaced_pod(namespace, body, dry_run="All")
    return str(made.spec.scheduler_name)


@pytest.fixture(scope="module")
def policies(cluster: Cluster) -> Iterator[list[dict[str, Any]]]:
    """The chart's policies and bindings applied, and in effect, for this module."""
    cluster.require_disposable()
    docs = policy_docs()
    dynamic = DynamicClient(cluster.api_client)
    for doc in docs:
        dynamic.resources.get(api_version=doc["apiVersion"], kind=doc["kind"]).server_side_apply(
            body=doc,
            name=doc["metadata"]["name"],
            field_manager="phalanx-tests",
            force_conflicts=True,
        )
    # A fresh cluster's controller-manager makes namespace default's ServiceAccount a moment
    # after the API server is up (slower on busy cores); a pod, even a dry-run one, needs it.
    wait_for(
        lambda: _default_sa_exists(cluster, "default"),
        timeout=60,
        what="the ServiceAccount default/default (made by the controller-manager)",
    )
    # The API server loads policies from its informers: wait until both act.
    wait_for(
        lambda: (
            dry_run_scheduler(cluster, "default", pod("probe", labels={QUEUE: "q"})) == "phalanx"
        ),
        timeout=60,
        what="the pod policy to set schedulerName phalanx on a dry-run pod labelled with a queue",
    )
    wait_for(
        lambda: (
            QUEUE
            in (
                cluster.batch.create_namespaced_job(
                    "default", job("probe", labels={QUEUE: "q"}), dry_run="All"
                ).spec.template.metadata.labels
                or {}
            )
        ),
        timeout=60,
        what="the workload policy to copy the queue label into a dry-run Job's pod template",
    )
    try:
        yield docs
    finally:
        for doc in reversed(docs):
            resource = dynamic.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
            resource.delete(name=doc["metadata"]["name"])


def label_namespace(cluster: Cluster, namespace: str, queue: str) -> None:
    cluster.core.patch_namespace(namespace, {"metadata": {"labels": {QUEUE: queue}}})
    # Admission reads namespaces from the API server's informer: wait until it has the label.
    wait_for(
        lambda: dry_run_scheduler(cluster, namespace, pod("probe")) == "phalanx",
        timeout=30,
        what=f"admission to see the label {QUEUE}={queue} on namespace {namespace}",
    )


def created_scheduler(cluster: Cluster, namespace: str, body: dict[str, Any]) -> str:
    return str(cluster.core.create_namespaced_pod(namespace, body).spec.scheduler_name)


def test_the_chart_renders_two_policies_with_their_bindings_and_none_when_disabled() -> None:
    docs = policy_docs()
    policies = {d["metadata"]["name"]: d for d in docs if d["kind"] == POLICY_KINDS[0]}
    bindings = [d for d in docs if d["kind"] == POLICY_KINDS[1]]
    assert sorted(policies) == ["phalanx-pod-scheduler", "phalanx-workload-queue"]
    assert sorted(b["spec"]["policyName"] for b in bindings) == sorted(policies)
    assert {d["apiVersion"] for d in docs} == {"admissionregistration.k8s.io/v1"}
    rendered = [
        d for d in yaml.safe_load_all(template(values=("admissionPolicy.enabled=false",))) if d
    ]
    assert not [d for d in rendered if d["kind"] in POLICY_KINDS]
    # The scheduler name is the chart's scheduler.name.
    renamed = [d for d in yaml.safe_load_all(template(values=("scheduler.name=gangs",))) if d]
    (pod_policy,) = [
        d
        for d in renamed
        if d["kind"] == POLICY_KINDS[0] and d["metadata"]["name"] == "phalanx-pod-scheduler"
    ]
    assert '"gangs"' in pod_policy["spec"]["mutations"][0]["jsonPatch"]["expression"]


def test_a_pod_in_a_namespace_labelled_with_a_queue_gets_the_phalanx_scheduler(
    cluster: Cluster, namespace: str, policies: Any
) -> None:
    label_namespace(cluster, namespace, "default")
    assert created_scheduler(cluster, namespace, pod("plain")) == "phalanx"
    assert (
        created_scheduler(cluster, namespace, pod("explicit", scheduler="default-scheduler"))
        == "phalanx"
    )
    # Another scheduler named on purpose is kept, even in an opted-in namespace, labelled too.
    other = pod("other", labels={QUEUE: "default"}, scheduler="other-scheduler")
    assert created_scheduler(cluster, namespace, other) == "other-scheduler"


def test_a_pod_labelled_with_a_queue_gets_the_phalanx_scheduler_anywhere(
    cluster: Cluster, namespace: str, policies: Any
) -> None:
    assert created_scheduler(cluster, namespace, pod("ours", labels={QUEUE: "research"})) == (
        "phalanx"
    )
    kueue = pod("kueue", labels={"kueue.x-k8s.io/queue-name": "research"})
    assert created_scheduler(cluster, namespace, kueue) == "phalanx"
    volcano = pod("volcano", annotations={"scheduling.volcano.sh/queue-name": "research"})
    assert created_scheduler(cluster, namespace, volcano) == "phalanx"


def test_a_pod_in_an_unlabelled_namespace_stays_with_kube_scheduler(
    cluster: Cluster, namespace: str, policies: Any
) -> None:
    assert created_scheduler(cluster, namespace, pod("theirs")) == "default-scheduler"
    unrelated = pod("unrelated", labels={"app": "web"}, scheduler="other-scheduler")
    assert created_scheduler(cluster, namespace, unrelated) == "other-scheduler"


def test_a_job_labelled_with_a_queue_passes_it_to_its_pods_which_get_phalanx(
    cluster: Cluster, namespace: str, policies: Any
) -> None:
    made = cluster.batch.create_namespaced_job(namespace, job("train", labels={QUEUE: "x"}))
    assert made.spec.template.metadata.labels[QUEUE] == "x"
    # A template that names its own queue keeps it.
    own = job("own", labels={QUEUE: "x"}, template_labels={QUEUE: "mine", "app": "a"})
    kept = cluster.batch.create_namespaced_job(namespace, own).spec.template.metadata.labels
    assert (kept[QUEUE], kept["app"]) == ("mine", "a")

    def pods_of(name: str) -> list[Any] | None:
        found = cluster.core.list_namespaced_pod(
            namespace, label_selector=f"batch.kubernetes.io/job-name={name}"
        ).items
        return found if len(found) == 2 else None

    train = wait_for(lambda: pods_of("train"), timeout=60, what="the 2 pods of Job train")
    assert {(p.metadata.labels[QUEUE], p.spec.scheduler_name) for p in train} == {("x", "phalanx")}
    mine = wait_for(lambda: pods_of("own"), timeout=60, what="the 2 pods of Job own")
    assert {(p.metadata.labels[QUEUE], p.spec.scheduler_name) for p in mine} == {
        ("mine", "phalanx")
    }


def test_daemonset_pods_are_never_given_the_phalanx_scheduler(
    cluster: Cluster, namespace: str, policies: Any
) -> None:
    label_namespace(cluster, namespace, "default")
    node = cluster.core.list_node(label_selector=SHAPE_LABEL).items[0].metadata.name
    apps = client.AppsV1Api(cluster.api_client)
    labels = {"app": "agent", QUEUE: "default"}
    body = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "labels": {QUEUE: "default"}},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "nodeSelector": {"kubernetes.io/hostname": node},
                    "tolerations": TOLERATE_KWOK,
                    "containers": [{"name": "main", "image": "busybox"}],
                },
            },
        },
    }
    apps.create_namespaced_daemon_set(namespace, body)
    try:
        (agent,) = wait_for(
            lambda: cluster.core.list_namespaced_pod(namespace, label_selector="app=agent").items,
            timeout=60,
            what=f"the DaemonSet agent's pod on node {node}",
        )
        assert agent.metadata.owner_references[0].kind == "DaemonSet"
        assert agent.spec.scheduler_name == "default-scheduler"
    finally:
        apps.delete_namespaced_daemon_set("agent", namespace)
        wait_for(
            lambda: not apps.list_namespaced_daemon_set(namespace).items,
            timeout=30,
            what="the DaemonSet agent to be deleted",
        )


def test_a_jobset_and_an_lws_labelled_with_a_queue_get_it_into_every_pod_template(
    cluster: Cluster,
    custom: Any,
    namespace: str,
    policies: Any,
    workload_controllers: WorkloadControllers,
) -> None:
    """The same policy on the CRDs of the real controllers: the label reaches the pods they
    create, and those pods get schedulerName phalanx (no operator runs: they stay pending)."""
    try:
        js = jobset("train", jobs=2, pods_per_job=2, scheduler=None, labels={QUEUE: "x"})
        made = create_workload(custom, JOBSET_API, namespace, js)
        template_labels = made["spec"]["replicatedJobs"][0]["template"]["spec"]["template"][
            "metadata"
        ]["labels"]
        assert template_labels[QUEUE] == "x"
        lws = leader_worker_set("serve", groups=2, size=3, scheduler=None, labels={QUEUE: "y"})
        made = create_workload(custom, LWS_API, namespace, lws)
        assert (
            made["spec"]["leaderWorkerTemplate"]["workerTemplate"]["metadata"]["labels"][QUEUE]
            == "y"
        )

        def pods(selector: str, count: int) -> list[Any] | None:
            found = cluster.core.list_namespaced_pod(namespace, label_selector=selector).items
            return found if len(found) == count else None

        train = wait_for(
            lambda: pods("jobset.sigs.k8s.io/jobset-name=train", 4),
            timeout=90,
            what="the 4 pods of JobSet train",
        )
        assert {(p.metadata.labels[QUEUE], p.spec.scheduler_name) for p in train} == {
            ("x", "phalanx")
        }
        serve = wait_for(
            lambda: pods("leaderworkerset.sigs.k8s.io/name=serve", 6),
            timeout=90,
            what="the 6 pods of LeaderWorkerSet serve (leaders and workers)",
        )
        assert {(p.metadata.labels[QUEUE], p.spec.scheduler_name) for p in serve} == {
            ("y", "phalanx")
        }
        assert not [p for p in [*train, *serve] if p.spec.node_name]
    finally:
        delete_workloads(cluster, custom, namespace)
