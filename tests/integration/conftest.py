"""Integration tier: tests against a real kube-apiserver (the local control plane).

The session uses the cluster `KUBECONFIG` points at if it carries the dev-cluster marker (so a
real cluster is never touched by accident); otherwise it brings up a local cluster of its own
(`phalanx-test`, shape `small`) and takes it down at the end. Each test gets its own namespace,
whose pods are deleted (and waited out) afterwards so the next test starts with the capacity free.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from phalanx.devcluster import cluster as devcluster
from phalanx.devcluster.shapes import load_shape
from tests.integration.operator_fixture import OperatorProcess, apply_crds, exists
from tests.integration.waiting import wait_for
from tests.integration.workload_controllers import workload_controllers  # noqa: F401 (a fixture)

pytestmark = pytest.mark.integration


@dataclass
class Cluster:
    kubeconfig: Path
    api_client: Any

    @property
    def core(self) -> Any:
        return client.CoreV1Api(self.api_client)

    @property
    def batch(self) -> Any:
        return client.BatchV1Api(self.api_client)

    def is_disposable(self) -> bool:
        try:
            self.core.read_namespaced_config_map(
                devcluster.MARKER_NAME, devcluster.MARKER_NAMESPACE
            )
        except client.ApiException as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def require_disposable(self) -> None:
        """Tests call this before they create fake nodes or anything cluster-wide."""
        if not self.is_disposable():
            pytest.fail(
                f"refusing to change the cluster behind {self.kubeconfig}: it has no "
                f"{devcluster.MARKER_NAMESPACE}/{devcluster.MARKER_NAME} ConfigMap "
                "(made by `phalanx dev-cluster up`)"
            )


def _connect(kubeconfig: Path) -> Cluster:
    api_client = config.new_client_from_config(config_file=str(kubeconfig))
    return Cluster(kubeconfig, api_client)


TEST_CLUSTER = os.environ.get("PHALANX_TEST_CLUSTER", "phalanx-test")


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    explicit = os.environ.get("KUBECONFIG")
    if explicit:
        found = _connect(Path(explicit))
        found.require_disposable()
        yield found
        return
    # A cluster of its own, so a demo cluster that is up (with its gangs) is never disturbed.
    log = lambda m: print(f"[dev-cluster] {m}")  # noqa: E731
    if devcluster.status(TEST_CLUSTER).up:
        devcluster.down(log=log, name=TEST_CLUSTER)
    # kube-scheduler's native gang API on (Kubernetes 1.36 alpha), for the tests of native
    # PodGroups as input; it changes nothing for pods that name no scheduling group.
    kubeconfig = devcluster.up(
        load_shape("small"),
        log=log,
        name=TEST_CLUSTER,
        feature_gates=devcluster.NATIVE_GANG_FEATURE_GATES,
        runtime_config=devcluster.NATIVE_GANG_RUNTIME_CONFIG,
    )
    try:
        yield _connect(kubeconfig)
    finally:
        devcluster.down(log=log, name=TEST_CLUSTER)


@pytest.fixture
def namespace(cluster: Cluster) -> Iterator[str]:
    name = f"t-{uuid.uuid4().hex[:8]}"
    cluster.core.create_namespace({"metadata": {"name": name}})
    wait_for(
        lambda: _default_sa_exists(cluster, name),
        timeout=30,
        what=f"the default ServiceAccount in namespace {name}",
    )
    try:
        yield name
    finally:
        # Free the capacity before the next test starts: delete the pods and wait them out.
        cluster.batch.delete_collection_namespaced_job(name, propagation_policy="Background")
        cluster.core.delete_collection_namespaced_pod(name, grace_period_seconds=0)
        wait_for(
            lambda: not cluster.core.list_namespaced_pod(name).items,
            timeout=60,
            what=f"the pods of namespace {name} to be deleted",
            describe=lambda: _pods_left(cluster, name),
        )
        cluster.core.delete_namespace(name, propagation_policy="Background")


def _pods_left(cluster: Cluster, ns: str) -> str:
    """Each pod still there: phase, node, deletion timestamp, finalizers and owners."""
    pods = cluster.core.list_namespaced_pod(ns).items
    return "; ".join(
        f"{p.metadata.name} {p.status.phase} node={p.spec.node_name} "
        f"deleting={p.metadata.deletion_timestamp} finalizers={p.metadata.finalizers} "
        f"owners={[o.kind for o in p.metadata.owner_references or []]}"
        for p in pods
    )


def _default_sa_exists(cluster: Cluster, ns: str) -> bool:
    return exists(lambda: cluster.core.read_namespaced_service_account("default", ns))


@pytest.fixture(scope="session")
def custom(cluster: Cluster) -> Any:
    return client.CustomObjectsApi(cluster.api_client)


@pytest.fixture(scope="session")
def phalanx_api(cluster: Cluster, custom: Any) -> Any:
    """CRDs applied and a `default` Queue present."""
    cluster.require_disposable()
    apply_crds(custom, client.ApiextensionsV1Api(cluster.api_client))
    ensure_queue(custom, "default", {})
    return custom


def ensure_queue(custom: Any, name: str, spec: dict[str, Any]) -> None:
    body = {
        "apiVersion": "phalanx.dev/v1alpha1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
    }
    try:
        custom.create_cluster_custom_object("phalanx.dev", "v1alpha1", "queues", body)
    except client.ApiException as exc:
        if exc.status != 409:
            raise
        current = custom.get_cluster_custom_object("phalanx.dev", "v1alpha1", "queues", name)
        body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        custom.replace_cluster_custom_object("phalanx.dev", "v1alpha1", "queues", name, body)


class SessionOperator:
    """The shared operator: started on demand, stopped for tests that run their own."""

    def __init__(self, cluster: Cluster, log_dir: Path) -> None:
        self.cluster, self.log_dir = cluster, log_dir
        self.proc: OperatorProcess | None = None

    def running(self) -> OperatorProcess:
        if self.proc is None or self.proc.exited():
            self.proc = OperatorProcess(self.cluster.kubeconfig, self.log_dir, name="shared")
            self.proc.start()
        return self.proc

    def stopped(self) -> None:
        if self.proc is not None:
            self.proc.stop()
            self.proc = None


@pytest.fixture(scope="session")
def session_operator(
    cluster: Cluster, phalanx_api: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SessionOperator]:
    manager = SessionOperator(cluster, tmp_path_factory.mktemp("operator"))
    try:
        yield manager
    finally:
        manager.stopped()


@pytest.fixture
def operator(session_operator: SessionOperator) -> OperatorProcess:
    """The shared operator, running; tests keep to their own namespaces."""
    return session_operator.running()


@pytest.fixture
def no_shared_operator(session_operator: SessionOperator) -> None:
    """For tests that start their own operators: two schedulers of one name must never race."""
    session_operator.stopped()


@pytest.fixture(autouse=True)
def _show_operator_log_on_failure(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    rep = getattr(request.node, "rep_call", None)
    proc = getattr(request.node, "funcargs", {}).get("operator")
    if rep is not None and rep.failed and isinstance(proc, OperatorProcess):
        print(f"--- operator log ({proc.log_path}) ---\n{proc.tail(80)}")


@pytest.fixture(autouse=True)
def _operators_were_never_refused() -> Iterator[None]:
    """Operators run with exactly the chart's RBAC: any 403 one logged during a test fails it.

    (Some refusals would not fail a scenario on their own: an Event the operator could not post
    is best effort.) Checked on what every operator, the shared one too, logged during the test.
    """
    offsets = {id(p): p.log_size() for p in OperatorProcess.started}
    yield
    refused = {
        p.log_path: lines
        for p in OperatorProcess.started
        if (lines := p.forbidden(since=max(offsets.get(id(p), p.start_offset), p.excused_until)))
    }
    if refused:
        pytest.fail(
            "the API server refused the operator (running as the chart's ServiceAccount):\n"
            + "\n".join(f"{path}:\n{lines}" for path, lines in refused.items())
        )


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    rep = yield
    setattr(item, f"rep_{rep.when}", rep)
    return rep
