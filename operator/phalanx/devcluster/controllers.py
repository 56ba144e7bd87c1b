"""The real JobSet, LeaderWorkerSet, Kubeflow Trainer, Kubeflow Training Operator and KubeRay
controllers, run as local processes against a dev cluster.

Automatic gangs (issue 18) are tested against the controllers people run, not stand-ins. Each is
built from their Go modules (`binaries.ensure_workload_controllers`, pinned in `versions.py`);
everything else they need is read at run time from the module's own copy in the Go module cache
(`go mod download -json` names the folder) and never committed:

- their CRDs (`config/**/crd/bases/*.yaml`; the Kubeflow ones' `manifests/base/crds`), applied
  server-side and awaited until Established (without the conversion webhook their
  kustomizations patch in: each CRD serves one version);
- their webhooks (`config/**/webhook/manifests.yaml`, with the JSON patches their kustomization
  applies, e.g. the objectSelector that limits the pod webhooks to their own pods), rewritten
  from an in-cluster Service to `clientConfig.url: https://127.0.0.1:<port>/<path>` with the CA
  bundle of a certificate made here for 127.0.0.1. Their webhooks matter: LWS's pod webhook
  sets the group-index and worker-index labels its controller depends on.

Each controller runs with its webhook server on 127.0.0.1 and a free port, its health probe on
127.0.0.1 and a free port (both default to :8081, Phalanx's health port), its metrics server off
(`0`), leader election off and its own certificate management off. `start` returns once every
process answers /readyz and the API server routes admission to its mutating webhooks (probed
with dry-run requests); `stop` deletes the webhook configurations first (they match every pod
create with `failurePolicy: Fail`; left behind without a server, they would refuse pods), then
stops the processes. The CRDs stay: deleting them would delete every object of their kinds.

The Kubeflow controllers' webhooks are not registered (they manage their own certificates, for a
Service name the API server cannot reach here): what they need to start is in
`self_certified.py`. KubeRay serves no webhooks unless told to and starts by its flags
(`flags_only.py`).
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import ipaddress
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from phalanx.devcluster.binaries import (
    WORKLOAD_CONTROLLERS,
    WorkloadController,
    ensure_workload_controllers,
    go_env,
    require_go,
)
from phalanx.devcluster.errors import DevClusterError
from phalanx.devcluster.self_certified import SelfCertified
from phalanx.devcluster.self_certified import environment as self_certified_environment

Log = Callable[[str], None]
LOOPBACK = "127.0.0.1"
RESERVED_PORTS = frozenset({8080, 8081})
"""Phalanx's metrics and health ports: never given to a controller."""
FIELD_MANAGER = "phalanx-devcluster"


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def module_dir(controller: WorkloadController) -> Path:
    """The controller's module source in the Go module cache (downloaded if missing)."""
    go = require_go()
    out = subprocess.run(
        [go, "mod", "download", "-json", f"{controller.module}@{controller.version}"],
        capture_output=True,
        text=True,
        env=go_env(),
        timeout=600,
        check=False,
    )
    try:
        info = json.loads(out.stdout)
    except json.JSONDecodeError:
        info = {}
    if out.returncode != 0 or "Dir" not in info or info.get("Error"):
        detail = info.get("Error") or (out.stdout + out.stderr).strip()
        raise DevClusterError(
            f"the Go module proxy did not serve {controller.module}@{controller.version}: {detail}"
        )
    return Path(info["Dir"])


def crd_files(controller: WorkloadController, source: Path) -> list[Path]:
    """The CRD manifests of a controller's module (kubebuilder layout: `crd/bases`)."""
    found = sorted(p for p in source.glob(controller.crds))
    if not found:
        raise DevClusterError(f"no CRDs at {source}/{controller.crds}")
    return found


def webhook_dir(source: Path) -> Path:
    found = sorted(p.parent for p in source.glob("config/**/webhook/manifests.yaml"))
    if len(found) != 1:
        raise DevClusterError(f"expected one config/**/webhook/manifests.yaml under {source}")
    return found[0]


def _apply_json_patch(doc: dict[str, Any], ops: list[dict[str, Any]], origin: Path) -> None:
    """The JSON-patch operations kubebuilder kustomizations use on webhook configurations:
    `replace` or `add` of a whole element of `/webhooks/<index>` (anything else is refused, so a
    new upstream layout fails loudly instead of being half applied)."""
    for op in ops:
        parts = op.get("path", "").strip("/").split("/")
        if op.get("op") not in ("replace", "add") or len(parts) != 2 or parts[0] != "webhooks":
            raise DevClusterError(f"unsupported webhook patch in {origin}: {op}")
        hooks = doc["webhooks"]
        index = len(hooks) if parts[1] == "-" else int(parts[1])
        if op["op"] == "replace":
            hooks[index] = op["value"]
        else:
            hooks.insert(index, op["value"])


def webhook_configurations(
    controller: WorkloadController, source: Path, port: int, ca_pem: bytes
) -> list[dict[str, Any]]:
    """The controller's webhook configurations as its kustomization renders them, served at
    https://127.0.0.1:<port> instead of an in-cluster Service."""
    folder = webhook_dir(source)
    docs = [d for d in yaml.safe_load_all((folder / "manifests.yaml").read_text()) if d]
    kustomization = folder / "kustomization.yaml"
    patches = (
        yaml.safe_load(kustomization.read_text()).get("patches", [])
        if (kustomization.exists())
        else []
    )
    for patch in patches:
        target = patch.get("target", {})
        path = folder / patch["path"]
        for doc in docs:
            if doc["kind"] == target.get("kind") and doc["metadata"]["name"] == target.get("name"):
                _apply_json_patch(doc, yaml.safe_load(path.read_text()), path)
    bundle = base64.b64encode(ca_pem).decode()
    for doc in docs:
        # The name kustomize gives it upstream (namePrefix `<controller>-`).
        doc["metadata"] = {
            "name": f"{controller.name}-{doc['metadata']['name']}",
            "labels": {"app.kubernetes.io/managed-by": FIELD_MANAGER},
        }
        for hook in doc["webhooks"]:
            service = hook["clientConfig"]["service"]
            hook["clientConfig"] = {
                "url": f"https://{LOOPBACK}:{port}{service.get('path', '/')}",
                "caBundle": bundle,
            }
    return docs


@dataclass(frozen=True)
class Certificate:
    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes


def loopback_certificate(days: int = 7) -> Certificate:
    """A throwaway CA and a serving certificate for IP 127.0.0.1 signed by it (P-256)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "phalanx dev-cluster webhook CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, LOOPBACK)]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(LOOPBACK))]),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    return Certificate(
        ca_pem=ca.public_bytes(pem),
        cert_pem=cert.public_bytes(pem),
        key_pem=key.private_bytes(
            pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ),
    )


def free_port(taken: set[int]) -> int:
    """A free port on 127.0.0.1, never Phalanx's 8080/8081 nor one handed out already."""
    while True:
        with socket.socket() as s:
            s.bind((LOOPBACK, 0))
            port = int(s.getsockname()[1])
        if port not in RESERVED_PORTS and port not in taken:
            taken.add(port)
            return port


def _config(controller: WorkloadController, webhook_port: int, cert_dir: Path) -> dict[str, Any]:
    """The controller's own Configuration file (both use the kubebuilder component config)."""
    return {
        "apiVersion": f"config.{controller.name}.x-k8s.io/v1alpha1",
        "kind": "Configuration",
        "webhook": {"host": LOOPBACK, "port": webhook_port, "certDir": str(cert_dir)},
        "metrics": {"bindAddress": "0"},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
    }


@dataclass
class Running:
    controller: WorkloadController
    process: subprocess.Popen[bytes]
    log_path: Path
    webhook_port: int
    health_port: int
    webhooks: list[dict[str, Any]] = field(default_factory=list)

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


# What proves that the API server routes admission to a controller's mutating webhooks:
# a dry-run request whose answer only the webhook can give.
def _jobset_mutating_live(api: Any, namespace: str) -> bool:
    """JobSet's webhook defaults spec.startupPolicy (its CRD has no default for it)."""
    body = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "phalanx-webhook-probe"},
        "spec": {
            "replicatedJobs": [
                {
                    "name": "w",
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "template": {
                                "spec": {
                                    "restartPolicy": "Never",
                                    "containers": [{"name": "c", "image": "busybox"}],
                                }
                            }
                        }
                    },
                }
            ]
        },
    }
    made = api.create_namespaced_custom_object(
        "jobset.x-k8s.io", "v1alpha2", namespace, "jobsets", body, dry_run="All"
    )
    return "startupPolicy" in made.get("spec", {})


def _served(api_client: Any, crd: dict[str, Any]) -> bool:
    """Whether the API server lists objects of this CRD's storage version yet."""
    from kubernetes import client

    spec = crd.get("spec") or {}
    version = next((v["name"] for v in spec.get("versions") or [] if v.get("storage")), None)
    if version is None:
        return False
    try:
        client.CustomObjectsApi(api_client).list_cluster_custom_object(
            spec["group"], version, spec["names"]["plural"], limit=1
        )
    except client.ApiException:
        return False
    return True


def _lws_mutating_live(api: Any, namespace: str) -> bool:
    """LWS's pod webhook refuses a pod of a LeaderWorkerSet without its size annotation."""
    from kubernetes import client

    body: Any = {
        "metadata": {
            "name": "phalanx-webhook-probe",
            "labels": {"leaderworkerset.sigs.k8s.io/name": "phalanx-webhook-probe"},
        },
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }
    try:
        client.CoreV1Api(api.api_client).create_namespaced_pod(namespace, body, dry_run="All")
    except client.ApiException as exc:
        return "size annotation is unexpectedly missing" in str(exc.body)
    return False


PROBES: dict[str, Callable[[Any, str], bool]] = {
    "jobset": _jobset_mutating_live,
    "lws": _lws_mutating_live,
}


class WorkloadControllers:
    """The JobSet, LWS, Trainer, Training Operator and KubeRay controllers against the cluster
    behind `kubeconfig`."""

    def __init__(self, kubeconfig: Path, workdir: Path, log: Log = _stderr) -> None:
        self.kubeconfig, self.workdir, self.log = kubeconfig, workdir, log
        self.running: list[Running] = []

    def __enter__(self) -> WorkloadControllers:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def _clients(self) -> tuple[Any, Any]:
        from kubernetes import client, config
        from kubernetes.dynamic import DynamicClient

        api_client = config.new_client_from_config(config_file=str(self.kubeconfig))  # type: ignore[no-untyped-call]
        return DynamicClient(api_client), client.CustomObjectsApi(api_client)  # type: ignore[no-untyped-call]

    def _prepare(self, dynamic: Any, c: WorkloadController, cert: Certificate) -> list[Any]:
        """What a controller without registered webhooks needs first (the Trainer's rotator:
        `self_certified.py`): the webhook configurations made for it, deleted again by `stop`."""
        rotator = c.started_by
        if not isinstance(rotator, SelfCertified):
            return []
        from kubernetes import client

        rotator.prepare(client.CoreV1Api(dynamic.client), cert.cert_pem, cert.key_pem, cert.ca_pem)
        target = rotator.rotator_target(FIELD_MANAGER)
        self._apply(dynamic, target)
        return [target]

    def start(self, deadline_s: float = 120) -> None:
        """Build if needed, apply the CRDs, start the controllers, register their webhooks, and
        return once they serve (or stop everything and raise, with the controller's log)."""
        binaries = ensure_workload_controllers(self.log)
        dynamic, custom = self._clients()
        self.workdir.mkdir(parents=True, exist_ok=True)
        cert = loopback_certificate()
        cert_dir = self.workdir / "certs"
        cert_dir.mkdir(exist_ok=True)
        (cert_dir / "tls.crt").write_bytes(cert.cert_pem)
        (cert_dir / "tls.key").write_bytes(cert.key_pem)
        (cert_dir / "tls.key").chmod(0o600)
        (cert_dir / "ca.crt").write_bytes(cert.ca_pem)
        taken: set[int] = set()
        deadline = time.monotonic() + deadline_s
        try:
            sources = {c.name: module_dir(c) for c in WORKLOAD_CONTROLLERS}
            for c in WORKLOAD_CONTROLLERS:
                self._apply_crds(dynamic, c, sources[c.name], deadline)
            for c in WORKLOAD_CONTROLLERS:
                made = self._prepare(dynamic, c, cert)
                run = self._launch(
                    c, binaries[c.name], cert_dir, free_port(taken), free_port(taken)
                )
                run.webhooks = made
                self.running.append(run)
            for run in self.running:
                self._wait_ready(run, cert.ca_pem, deadline)
                if not run.controller.admission:
                    continue
                run.webhooks = webhook_configurations(
                    run.controller, sources[run.controller.name], run.webhook_port, cert.ca_pem
                )
                for doc in run.webhooks:
                    self._apply(dynamic, doc)
            for run in self.running:
                if run.controller.name in PROBES:
                    self._wait_webhooks(run, custom, deadline)
        except BaseException:
            self.stop()
            raise
        self.log(
            "workload controllers up: "
            + ", ".join(
                f"{r.controller.name} {r.controller.version} (webhooks 127.0.0.1:{r.webhook_port}, "
                f"health 127.0.0.1:{r.health_port}, log {r.log_path})"
                for r in self.running
            )
        )

    def _apply(self, dynamic: Any, doc: dict[str, Any]) -> None:
        resource = dynamic.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
        resource.server_side_apply(
            body=doc,
            name=doc["metadata"]["name"],
            field_manager=FIELD_MANAGER,
            force_conflicts=True,
        )

    def _apply_crds(
        self, dynamic: Any, c: WorkloadController, source: Path, deadline: float
    ) -> None:
        names = []
        for path in crd_files(c, source):
            for doc in yaml.safe_load_all(path.read_text()):
                if doc:
                    self._apply(dynamic, doc)
                    names.append(doc["metadata"]["name"])
        crds = dynamic.resources.get(
            api_version="apiextensions.k8s.io/v1", kind="CustomResourceDefinition"
        )
        for name in names:
            while True:
                crd = crds.get(name=name).to_dict()
                status = crd.get("status") or {}
                conditions = status.get("conditions") or []
                established = any(
                    c["type"] == "Established" and c["status"] == "True" for c in conditions
                )
                # Established is not yet served: the API server can answer 503 "kind not found"
                # for a moment after it. A list that succeeds is the proof.
                if established and _served(dynamic.client, crd):
                    break
                if time.monotonic() > deadline:
                    raise DevClusterError(f"the CRD {name} was not Established and served in time")
                time.sleep(0.2)

    def _launch(
        self,
        c: WorkloadController,
        binary: Path,
        cert_dir: Path,
        webhook_port: int,
        health_port: int,
    ) -> Running:
        log_path = self.workdir / f"{c.name}.log"
        env = dict(os.environ)
        env["KUBECONFIG"] = str(self.kubeconfig)
        started_by = c.started_by
        if started_by is None:
            config_file = self.workdir / f"{c.name}-config.yaml"
            config_file.write_text(yaml.safe_dump(_config(c, webhook_port, cert_dir)))
            cmd = [
                str(binary),
                f"--config={config_file}",
                f"--kubeconfig={self.kubeconfig}",
                f"--health-probe-bind-address={LOOPBACK}:{health_port}",
                "--metrics-bind-address=0",
                "--leader-elect=false",
            ]
        else:
            cmd = [str(binary), *started_by.arguments(self.kubeconfig, health_port, webhook_port)]
            if isinstance(started_by, SelfCertified):
                env = self_certified_environment(env)
        with log_path.open("ab") as out:
            out.write(f"$ {' '.join(cmd)}\n".encode())
            out.flush()
            process = subprocess.Popen(
                cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        return Running(c, process, log_path, webhook_port, health_port)

    def _wait_ready(self, run: Running, ca_pem: bytes, deadline: float) -> None:
        """/readyz answers 200 and the webhook port serves TLS with our certificate (the
        Trainer's /readyz checks its webhook server itself, whose certificate file it shares
        with any other such controller on this machine: `self_certified.py`)."""
        context = ssl.create_default_context(cadata=ca_pem.decode())
        url = f"http://{LOOPBACK}:{run.health_port}/readyz"
        while True:
            if run.process.poll() is not None:
                raise DevClusterError(
                    f"the {run.controller.name} controller exited with code "
                    f"{run.process.returncode}; its log ({run.log_path}) ends:\n{run.tail()}"
                )
            try:
                with urllib.request.urlopen(url, timeout=2) as resp:
                    ready = resp.status == 200
                if ready and not run.controller.admission:
                    return
                with (
                    socket.create_connection((LOOPBACK, run.webhook_port), timeout=2) as raw,
                    context.wrap_socket(raw, server_hostname=LOOPBACK),
                ):
                    pass
            except OSError:
                ready = False
            if ready:
                return
            if time.monotonic() > deadline:
                raise DevClusterError(
                    f"the {run.controller.name} controller did not become ready (/readyz on "
                    f"{LOOPBACK}:{run.health_port}, TLS on {LOOPBACK}:{run.webhook_port}); "
                    f"its log ({run.log_path}) ends:\n{run.tail()}"
                )
            time.sleep(0.3)

    def _wait_webhooks(self, run: Running, custom: Any, deadline: float) -> None:
        from kubernetes import client

        probe = PROBES[run.controller.name]
        while True:
            try:
                if probe(custom, "default"):
                    return
            except client.ApiException:
                pass
            if time.monotonic() > deadline:
                raise DevClusterError(
                    f"the API server did not route admission to the {run.controller.name} "
                    f"webhooks at https://{LOOPBACK}:{run.webhook_port}; its log "
                    f"({run.log_path}) ends:\n{run.tail()}"
                )
            time.sleep(0.3)

    def stop(self, grace_s: float = 15) -> None:
        """Webhook configurations first (so no pod create is refused), then the processes."""
        if self.running:
            dynamic, _ = self._clients()
            for run in self.running:
                for doc in run.webhooks:
                    resource = dynamic.resources.get(
                        api_version=doc["apiVersion"], kind=doc["kind"]
                    )
                    with contextlib.suppress(Exception):
                        resource.delete(name=doc["metadata"]["name"])
        for run in self.running:
            if run.process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(run.process.pid, signal.SIGTERM)
        for run in self.running:
            try:
                run.process.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(run.process.pid, signal.SIGKILL)
                run.process.wait(timeout=5)
        self.running = []


def main() -> None:
    """`python -m phalanx.devcluster.controllers`: build the controllers (no-op when cached)."""
    try:
        paths = ensure_workload_controllers()
    except DevClusterError as exc:
        print(f"phalanx: error: {exc}", file=sys.stderr)
        sys.exit(1)
    for name, path in paths.items():
        print(f"{name}: {path}")


if __name__ == "__main__":
    main()
