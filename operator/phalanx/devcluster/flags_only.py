"""How the KubeRay operator starts on a dev cluster: by its flags alone, serving no webhooks.

RayJobs and RayClusters are how many teams run Ray training and batch inference, and a RayJob's
gang has a life of its own to get right: a time limit must end the RayJob (KubeRay v1.5 does not
make a head again for a RayJob's provisioned cluster, so deleting the pods alone leaves the
RayJob waiting for ever), and a preemption must suspend it rather than lose the run
(`k8s/job_deadline.py`, `k8s/job_suspension.py`). Those are tested against the real operator,
built from its Go module like the others (`binaries.WORKLOAD_CONTROLLERS`).

Unlike JobSet and LWS it reads no kubebuilder Configuration file (its own `--config` is another
schema, and flags are ignored once it is set), and unlike the Kubeflow controllers
(`self_certified.py`) it has no certificate rotator: its webhook server starts only with
`ENABLE_WEBHOOKS=true`, which is left unset, so there is nothing to register and nothing to wait
for but /readyz. Its defaults would clash with Phalanx on this machine — metrics on :8080 (ours)
and leader election on — so both are set.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class FlagsOnly:
    """A controller's own names for the flags every dev-cluster controller is given."""

    health_flag: str
    metrics_flag: str
    leader_flag: str
    flags: tuple[str, ...] = ()

    def arguments(self, kubeconfig: Path, health_port: int, webhook_port: int) -> list[str]:
        """Probes on loopback, metrics and leader election off; `webhook_port` is unused (no
        webhook server)."""
        del webhook_port
        return [
            f"--kubeconfig={kubeconfig}",
            f"{self.health_flag}=127.0.0.1:{health_port}",
            f"{self.metrics_flag}=0",
            f"{self.leader_flag}=false",
            *self.flags,
        ]


KUBERAY = FlagsOnly(
    "--health-probe-bind-address",
    "--metrics-addr",
    "--enable-leader-election",
    # Its JSON log lines are for machines; the dev cluster's log is read by people.
    flags=("--log-stdout-encoder=console",),
)
