"""Run `phalanx run` as a real subprocess against the test cluster, with the chart's RBAC.

A subprocess, not an in-process task: crash tests kill it with SIGKILL, the leader tests run two,
and what is tested is the command users run. Its log goes to a file that a failing test prints.

Every operator a test starts runs as the chart's ServiceAccount: the first start on a cluster
applies the chart's RBAC objects (from `deploy/manifests/phalanx.yaml`, which a test keeps equal
to `helm template` of the chart), asks the TokenRequest API for that ServiceAccount's token, and
writes a kubeconfig with it. So every operator scenario proves the chart's ClusterRole and Role
are enough; a refusal (403) is written to the operator's log and fails the test that saw it.
Tests still create their objects with the admin kubeconfig.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml

from phalanx.devcluster.chart import MANIFESTS
from tests.integration.waiting import wait_for

REPO = Path(__file__).resolve().parents[2]
CRDS = REPO / "crds"
RBAC_KINDS = (
    "Namespace",
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
)
USER_ROLES = ("phalanx-podgroup-editor", "phalanx-viewer")
"""The chart's ClusterRoles for users (aggregated into edit and view): not the operator's, so not
applied with its RBAC (test_user_rbac.py applies them; `helm install` in test_helm.py must not
find them made by another field manager)."""
FORBIDDEN = re.compile(r'is forbidden: User "|Not enough permissions')
"""What an authorization refusal looks like in the operator's log (the API server's RBAC message
in ours, and kopf's). Not every 403 is one: an Event posted into a namespace being deleted is
refused with 403 too ("unable to create new content in namespace ... being terminated")."""


def chart_manifests() -> list[dict[str, Any]]:
    """The chart's objects as the plain manifests hold them."""
    return [d for d in yaml.safe_load_all(MANIFESTS.read_text()) if d]


def _deployment_env() -> dict[str, str]:
    deploy = next(d for d in chart_manifests() if d["kind"] == "Deployment")
    container = deploy["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e.get("value", "") for e in container.get("env", [])}


def chart_service_account() -> tuple[str, str]:
    """(namespace, name) of the chart's ServiceAccount."""
    sa = next(d for d in chart_manifests() if d["kind"] == "ServiceAccount")
    return sa["metadata"]["namespace"], sa["metadata"]["name"]


CHART_NAMESPACE, CHART_SERVICE_ACCOUNT = chart_service_account()
LEASE_NAMESPACE = _deployment_env()["PHALANX_LEASE_NAMESPACE"]
LEASE_NAME = _deployment_env()["PHALANX_LEASE_NAME"]
"""The Lease the chart's Role allows (leader tests must use exactly this one)."""
CHART_USER = f"system:serviceaccount:{CHART_NAMESPACE}:{CHART_SERVICE_ACCOUNT}"

_credentials: dict[tuple[Path, float], Path] = {}


def chart_kubeconfig(admin_kubeconfig: Path) -> Path:
    """A kubeconfig for the cluster behind `admin_kubeconfig` that authenticates as the chart's
    ServiceAccount, with the chart's RBAC applied (once per cluster and session)."""
    key = (admin_kubeconfig, admin_kubeconfig.stat().st_mtime)
    if key not in _credentials:
        _credentials[key] = _make_chart_kubeconfig(admin_kubeconfig)
    return _credentials[key]


def _make_chart_kubeconfig(admin_kubeconfig: Path) -> Path:
    from kubernetes import client, config
    from kubernetes.dynamic import DynamicClient

    admin = config.new_client_from_config(config_file=str(admin_kubeconfig))
    dynamic = DynamicClient(admin)
    for doc in chart_manifests():
        if doc["kind"] in RBAC_KINDS and doc["metadata"]["name"] not in USER_ROLES:
            resource = dynamic.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
            resource.server_side_apply(
                body=doc,
                name=doc["metadata"]["name"],
                namespace=doc["metadata"].get("namespace"),
                field_manager="phalanx-tests",
                force_conflicts=True,
            )
    core = client.CoreV1Api(admin)
    wait_for(
        lambda: exists(
            lambda: core.read_namespaced_service_account(CHART_SERVICE_ACCOUNT, CHART_NAMESPACE)
        ),
        timeout=30,
        what=f"the chart's ServiceAccount {CHART_NAMESPACE}/{CHART_SERVICE_ACCOUNT}",
    )
    token = core.create_namespaced_service_account_token(
        CHART_SERVICE_ACCOUNT, CHART_NAMESPACE, {"spec": {"expirationSeconds": 24 * 3600}}
    ).status.token
    # It holds a live token (a day's expiry): removed when the test process exits, so runs do
    # not leave credentials behind in the temp folder.
    folder = tempfile.mkdtemp(prefix="phalanx-chart-sa-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    path = Path(folder) / "kubeconfig.yaml"
    path.write_text(yaml.safe_dump(_token_kubeconfig(admin_kubeconfig, token)))
    path.chmod(0o600)
    # The RBAC objects are live once the authorizer's cache has them: wait for one rule of each.
    as_chart = client.AuthorizationV1Api(config.new_client_from_config(config_file=str(path)))
    checks = (
        ("create", "", "pods", "binding", "default"),
        ("patch", "phalanx.dev", "queues", "status", None),
        ("create", "coordination.k8s.io", "leases", "", LEASE_NAMESPACE),
    )
    for check in checks:
        wait_for(
            lambda check=check: _allowed(as_chart, *check),
            timeout=30,
            what=f"the chart's RBAC to allow {check[0]} {check[2]}/{check[3]} as {CHART_USER}",
        )
    return path


def exists(read: Any) -> bool:
    """Whether `read()` finds its object (False on 404; any other error is raised)."""
    from kubernetes import client

    try:
        read()
    except client.ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return True


def _allowed(
    authz: Any, verb: str, group: str, resource: str, sub: str, namespace: str | None
) -> bool:
    attrs = {"verb": verb, "group": group, "resource": resource, "subresource": sub}
    if namespace:
        attrs["namespace"] = namespace
    review = authz.create_self_subject_access_review({"spec": {"resourceAttributes": attrs}})
    return bool(review.status.allowed)


def _token_kubeconfig(admin_kubeconfig: Path, token: str) -> dict[str, Any]:
    """The admin kubeconfig's current server and CA, with the token as the only credential."""
    admin = yaml.safe_load(admin_kubeconfig.read_text())
    context_name = admin["current-context"]
    context = next(c["context"] for c in admin["contexts"] if c["name"] == context_name)
    cluster = dict(next(c["cluster"] for c in admin["clusters"] if c["name"] == context["cluster"]))
    ca = cluster.get("certificate-authority")
    if ca and not Path(ca).is_absolute():
        cluster["certificate-authority"] = str((admin_kubeconfig.parent / ca).resolve())
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "test-cluster", "cluster": cluster}],
        "users": [{"name": CHART_USER, "user": {"token": token}}],
        "contexts": [
            {"name": "chart-sa", "context": {"cluster": "test-cluster", "user": CHART_USER}}
        ],
        "current-context": "chart-sa",
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class OperatorProcess:
    started: ClassVar[list[OperatorProcess]] = []
    """Every operator started in this session, so each test can check the ones it started."""

    def __init__(
        self,
        kubeconfig: Path,
        log_dir: Path,
        name: str = "op",
        extra_args: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
    ) -> None:
        self.kubeconfig = kubeconfig
        self.log_path = log_dir / f"{name}.log"
        self.extra_args = extra_args
        self.env = env or {}
        self.proc: subprocess.Popen[bytes] | None = None
        self.start_offset = 0
        self.excused_until = 0
        self.health_port = free_port()
        self.metrics_port = free_port()

    def start(self) -> OperatorProcess:
        credentials = chart_kubeconfig(self.kubeconfig)
        env = {**os.environ, "KUBECONFIG": str(credentials), **self.env}
        cmd = [
            sys.executable,
            "-m",
            "phalanx",
            "run",
            "--metrics-port",
            str(self.metrics_port),
            "--health-port",
            str(self.health_port),
            "--cycle-interval",
            "1",
            *self.extra_args,
        ]
        self.start_offset = self.log_size()
        log = self.log_path.open("ab")
        log.write(
            f"[test harness] phalanx run as {CHART_USER} (the chart's RBAC, "
            f"{MANIFESTS.relative_to(REPO)}), KUBECONFIG={credentials}\n".encode()
        )
        log.flush()
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        OperatorProcess.started.append(self)
        wait_for(
            lambda: (
                "view synced" in self.log_since(self.start_offset)
                or self.exited()
                or self.forbidden(since=self.start_offset)
            ),
            timeout=60,
            what=f"operator {self.log_path.stem} to sync its view",
        )
        if refused := self.forbidden(since=self.start_offset):
            self.stop()
            pytest.fail(f"the chart's RBAC refused the operator:\n{refused}")
        # Exited after syncing is not a failed start: a fault-injected operator may bind and die
        # within one poll of this wait (the crash test's kills); the caller checks how it ended.
        if self.exited() and "view synced" not in self.log_since(self.start_offset):
            pytest.fail(f"operator exited at start:\n{self.tail()}")
        return self

    def forbidden(self, since: int = 0) -> str:
        """Lines of its log (from byte `since` on) where the API server refused it (403)."""
        lines = self.log_since(since).splitlines()
        return "\n".join(line for line in lines if FORBIDDEN.search(line))

    def excuse_refusals(self, why: str) -> None:
        """The refusals logged so far were expected (later ones still fail the test).

        Only for a known window: a restarted kube-apiserver serves requests before its RBAC
        authorizer has loaded the bindings, so for a moment it refuses every ServiceAccount.
        """
        with self.log_path.open("ab") as f:
            f.write(f"[test harness] the refusals above were expected: {why}\n".encode())
        self.excused_until = self.log_size()

    def log_since(self, offset: int) -> str:
        if not self.log_path.exists():
            return ""
        with self.log_path.open("rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")

    def log_size(self) -> int:
        return self.log_path.stat().st_size if self.log_path.exists() else 0

    def exited(self) -> bool:
        return self.proc is not None and self.proc.poll() is not None

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()

    def tail(self, lines: int = 40) -> str:
        if not self.log_path.exists():
            return "(no log)"
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def metrics(self) -> str:
        import urllib.request

        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics") as r:
            text: str = r.read().decode()
        return text


def apply_crds(custom: Any, ext: Any) -> None:
    """Apply the CRDs from crds/ (create or replace) and wait until they are served."""
    import yaml

    for path in sorted(CRDS.glob("*.yaml")):
        body = yaml.safe_load(path.read_text())
        name = body["metadata"]["name"]
        try:
            current = ext.read_custom_resource_definition(name)
            body["metadata"]["resourceVersion"] = current.metadata.resource_version
            ext.replace_custom_resource_definition(name, body)
        except Exception as exc:
            if getattr(exc, "status", None) != 404:
                raise
            ext.create_custom_resource_definition(body)
        wait_for(
            lambda name=name: any(
                c.type == "Established" and c.status == "True"
                for c in (ext.read_custom_resource_definition(name).status.conditions or [])
            ),
            timeout=30,
            what=f"CRD {name} to be established",
        )
    # Served right after Established can still 404 for a moment: probe the list endpoint.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            custom.list_cluster_custom_object("phalanx.dev", "v1alpha1", "queues")
            return
        except Exception:
            time.sleep(0.3)
    pytest.fail("the phalanx.dev API did not become servable within 30s")
