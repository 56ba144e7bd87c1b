"""Integration tier: tests against a real kube-apiserver (the local control plane).

The session uses, in this order: the cluster `KUBECONFIG` points at, if it carries the
dev-cluster marker (so a real cluster is never touched by accident); the local dev cluster if it
is already up (left running afterwards); else it brings the local cluster up with the `small`
shape and takes it down at the end. Each test gets its own namespace, deleted afterwards.
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
from tests.integration.waiting import wait_for

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


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    explicit = os.environ.get("KUBECONFIG")
    if explicit:
        found = _connect(Path(explicit))
        found.require_disposable()
        yield found
        return
    if devcluster.status().up:
        yield _connect(devcluster.kubeconfig_path())
        return
    kubeconfig = devcluster.up(load_shape("small"), log=lambda m: print(f"[dev-cluster] {m}"))
    try:
        yield _connect(kubeconfig)
    finally:
        devcluster.down(log=lambda m: print(f"[dev-cluster] {m}"))


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
        cluster.core.delete_namespace(name, propagation_policy="Background")


def _default_sa_exists(cluster: Cluster, ns: str) -> bool:
    try:
        cluster.core.read_namespaced_service_account("default", ns)
    except client.ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return True
