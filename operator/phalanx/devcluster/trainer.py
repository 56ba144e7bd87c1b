"""What the Kubeflow Trainer v2 controller needs to start on a dev cluster, where it has no pod.

TrainJobs are the kind ML platform teams now run for PyTorch training, and their gang's life
(eviction above all: `k8s/job_suspension.py`) is tested against the Trainer's own controller,
built from its Go module like JobSet's and LWS's (`binaries.WORKLOAD_CONTROLLERS`). Unlike those
two it cannot turn its certificate management off: it starts a cert-controller rotator (read in
its `pkg/util/cert`) and sets up its controllers only once the rotator says ready, which takes

- its namespace `kubeflow-system` (the fallback when no service-account token is mounted) and
  the Secret `kubeflow-trainer-webhook-cert` there, which the rotator fills but does not create;
- the serving certificate on disk in `/tmp/k8s-webhook-server/serving-certs` (hard-coded), where
  the kubelet would mount that Secret: the rotator only waits for `tls.crt` to exist there and
  the webhook server serves what it finds, so our own loopback certificate is written (whatever
  another Trainer on this machine left there serves as well: nothing dials it but /readyz);
- the ValidatingWebhookConfiguration `validator.trainer.kubeflow.org` to inject its CA into.

That last one is registered matching nothing (`failurePolicy: Ignore`): the rotator's certificate
is for `<service>.kubeflow-system.svc`, a name the API server cannot reach here, and the
Trainer's webhooks only validate. So the dev cluster runs the Trainer's controller, not its
admission checks; a TrainJob it would refuse is the test's mistake, not Phalanx's.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from phalanx.devcluster.errors import DevClusterError

NAMESPACE = "kubeflow-system"
SECRET = "kubeflow-trainer-webhook-cert"
WEBHOOK_CONFIGURATION = "validator.trainer.kubeflow.org"
CERT_DIR = Path("/tmp/k8s-webhook-server/serving-certs")
"""The rotator's `certDir`; the webhook server's default (os.TempDir()-based) is the same folder
with TMPDIR=/tmp, which `environment` sets."""


def rotator_target(field_manager: str) -> dict[str, Any]:
    """The webhook configuration the rotator injects its CA into, matching no request."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {
            "name": WEBHOOK_CONFIGURATION,
            "labels": {"app.kubernetes.io/managed-by": field_manager},
        },
        "webhooks": [
            {
                "name": "nothing.devcluster.phalanx.dev",
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "failurePolicy": "Ignore",
                "clientConfig": {"url": "https://127.0.0.1:1/never"},
                "rules": [
                    {
                        "apiGroups": ["devcluster.phalanx.dev"],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["nothing"],
                    }
                ],
            }
        ],
    }


def prepare(core: Any, cert_pem: bytes, key_pem: bytes, ca_pem: bytes) -> None:
    """The namespace and the empty Secret (kept when they exist), and the certificate on disk
    (written whole, then renamed: a half-written key is never served)."""
    from kubernetes import client

    for make, body in (
        (core.create_namespace, {"metadata": {"name": NAMESPACE}}),
        (lambda b: core.create_namespaced_secret(NAMESPACE, b), {"metadata": {"name": SECRET}}),
    ):
        try:
            make(body)
        except client.ApiException as exc:
            if exc.status != 409:
                raise DevClusterError(f"preparing the Trainer controller: {exc}") from exc
    CERT_DIR.mkdir(parents=True, exist_ok=True)
    for name, data in (("ca.crt", ca_pem), ("tls.key", key_pem), ("tls.crt", cert_pem)):
        tmp = CERT_DIR / f".{name}.{os.getpid()}"
        tmp.write_bytes(data)
        tmp.chmod(0o600)
        tmp.replace(CERT_DIR / name)


def arguments(kubeconfig: Path, health_port: int, webhook_port: int) -> list[str]:
    """Its flags (it reads no configuration file): probes on loopback, metrics and leader
    election off, the webhook server on a free port (it binds every interface; nothing is sent
    to it but our readiness probe)."""
    return [
        f"--kubeconfig={kubeconfig}",
        f"--health-probe-bind-address=127.0.0.1:{health_port}",
        "--metrics-bind-address=0",
        "--leader-elect=false",
        f"--webhook-server-port={webhook_port}",
    ]


def environment(env: dict[str, str]) -> dict[str, str]:
    """TMPDIR=/tmp, so the webhook server reads the folder the rotator waits on."""
    return {**env, "TMPDIR": "/tmp"}
