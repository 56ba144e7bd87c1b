"""What the Kubeflow controllers that manage their own certificates need to start on a dev
cluster, where they have no pod: the Trainer v2 (TrainJob) and the Training Operator v1
(PyTorchJob, MPIJob).

TrainJobs are the kind ML platform teams now run for PyTorch training, PyTorchJobs and MPIJobs
the kinds most of them still run, and their gangs' lives (eviction and time limits above all:
`k8s/job_suspension.py`, `k8s/job_deadline.py`) are tested against those controllers, built from
their Go modules like JobSet's and LWS's (`binaries.WORKLOAD_CONTROLLERS`). Unlike those two,
neither can turn its certificate management off: each starts a cert-controller rotator (read in
the Trainer's `pkg/util/cert`, the Training Operator's `pkg/cert`) and sets up its controllers
only once the rotator says ready, which takes

- its namespace (the fallback when no service-account token is mounted) and its Secret there,
  which the rotator fills but does not create;
- the serving certificate on disk in `/tmp/k8s-webhook-server/serving-certs` (hard-coded in
  both), where the kubelet would mount that Secret: the rotator only waits for `tls.crt` to exist
  there and the webhook server serves what it finds, so our own loopback certificate is written
  (whatever another such controller on this machine left there serves as well: nothing dials it
  but /readyz);
- the ValidatingWebhookConfiguration of its name to inject its CA into.

That last one is registered matching nothing (`failurePolicy: Ignore`): the rotator's certificate
is for `<service>.<namespace>.svc`, a name the API server cannot reach here, and their webhooks
only validate. So the dev cluster runs their controllers, not their admission checks; an object
they would refuse is the test's mistake, not Phalanx's.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from phalanx.devcluster.errors import DevClusterError

CERT_DIR = Path("/tmp/k8s-webhook-server/serving-certs")
"""The rotators' `certDir`; the webhook server's default (os.TempDir()-based) is the same folder
with TMPDIR=/tmp, which `environment` sets."""


@dataclass(frozen=True)
class SelfCertified:
    """One controller's rotator: where it looks, and the flags it starts with besides ours."""

    namespace: str
    secret: str
    webhook_configuration: str
    flags: tuple[str, ...] = ()

    def rotator_target(self, field_manager: str) -> dict[str, Any]:
        """The webhook configuration the rotator injects its CA into, matching no request."""
        return {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {
                "name": self.webhook_configuration,
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

    def prepare(self, core: Any, cert_pem: bytes, key_pem: bytes, ca_pem: bytes) -> None:
        """The namespace and the empty Secret (kept when they exist), and the certificate on
        disk (written whole, then renamed: a half-written key is never served)."""
        from kubernetes import client

        for make, body in (
            (core.create_namespace, {"metadata": {"name": self.namespace}}),
            (
                lambda b: core.create_namespaced_secret(self.namespace, b),
                {"metadata": {"name": self.secret}},
            ),
        ):
            try:
                make(body)
            except client.ApiException as exc:
                if exc.status != 409:
                    raise DevClusterError(
                        f"preparing the controller of {self.webhook_configuration}: {exc}"
                    ) from exc
        CERT_DIR.mkdir(parents=True, exist_ok=True)
        for name, data in (("ca.crt", ca_pem), ("tls.key", key_pem), ("tls.crt", cert_pem)):
            tmp = CERT_DIR / f".{name}.{os.getpid()}"
            tmp.write_bytes(data)
            tmp.chmod(0o600)
            tmp.replace(CERT_DIR / name)

    def arguments(self, kubeconfig: Path, health_port: int, webhook_port: int) -> list[str]:
        """Its flags (neither reads a configuration file): probes on loopback, metrics and
        leader election off, the webhook server on a free port (it binds every interface;
        nothing is sent to it but our readiness probe)."""
        return [
            f"--kubeconfig={kubeconfig}",
            f"--health-probe-bind-address=127.0.0.1:{health_port}",
            "--metrics-bind-address=0",
            "--leader-elect=false",
            f"--webhook-server-port={webhook_port}",
            *self.flags,
        ]


TRAINER = SelfCertified(
    "kubeflow-system", "kubeflow-trainer-webhook-cert", "validator.trainer.kubeflow.org"
)
TRAINING_OPERATOR = SelfCertified(
    "kubeflow",
    "training-operator-webhook-cert",
    "validator.training-operator.kubeflow.org",
    # The two kinds Phalanx gangs (`autogang.KNOWN_KINDS`); the others' controllers would only
    # watch, and their CRDs are applied all the same (the module's set, as upstream installs).
    flags=("--enable-scheme=pytorchjob", "--enable-scheme=mpijob"),
)


def environment(env: dict[str, str]) -> dict[str, str]:
    """TMPDIR=/tmp, so the webhook server reads the folder the rotator waits on."""
    return {**env, "TMPDIR": "/tmp"}
