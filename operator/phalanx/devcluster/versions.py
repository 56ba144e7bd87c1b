"""Every version of the local control plane, pinned in this one place.

The local cluster is built from Go modules because this machine (and CI's) has the Go module proxy
but no Docker engine and no download sites. Changing a pin here changes the cache key, so a new
set of binaries is built next to the old one and nothing stale is reused.
"""

from __future__ import annotations

KUBERNETES = "v1.36.3"
"""k8s.io/kubernetes; its staging modules are the same release as v0.<minor>.<patch>."""

ETCD = "v3.6.14"
"""go.etcd.io/etcd/server/v3 (Kubernetes 1.36 supports etcd 3.5+; 3.6 is what it tests with)."""

KWOK = "v0.8.0"
"""sigs.k8s.io/kwok: the fake kubelet (kwok) and the cluster runner (kwokctl)."""

HELM = "v3.21.4"
"""helm.sh/helm/v3, for `helm lint|template|install` in tests of the chart."""

JOBSET = "v0.12.0"
"""sigs.k8s.io/jobset: the real JobSet controller (its CRD and webhooks too), for the tests of
automatic gangs (`controllers.py`)."""

LWS = "v0.9.0"
"""sigs.k8s.io/lws: the real LeaderWorkerSet controller. Issue 18 asked for v0.10.0, but the Go
module proxy refuses its source: `go mod download sigs.k8s.io/lws@v0.10.0` answers "reading
https://proxy.golang.org/sigs.k8s.io/lws/@v/v0.10.0.zip: 403 Forbidden / This module version is
not available." (its .info and .mod are served, not the .zip; v0.10.1, v0.9.1 and v0.9.2 are not
served at all). v0.9.0 is served, declares go 1.26.0 and has no replace directives either."""

TRAINER = "v2.0.0"
"""github.com/kubeflow/trainer/v2: the Kubeflow Trainer controller (TrainJob), the one version the
Go module proxy lists (`go list -m -versions`); it builds with the JobSet module it requires."""

TRAINING_OPERATOR = "v1.8.1"
"""github.com/kubeflow/training-operator: the Kubeflow Training Operator v1 (PyTorchJob, MPIJob),
the one version the Go module proxy lists (`go list -m -versions`), with its MPIJob v1."""

KUBERAY = "v1.5.0"
"""github.com/ray-project/kuberay/ray-operator: the KubeRay operator (RayCluster, RayJob). v1.5 is
the release whose RayJob does not make a provisioned cluster's head again (the RayJob controller
is left to fail it) and has `spec.activeDeadlineSeconds` and `spec.suspend`, which Phalanx uses
(`k8s/job_deadline.py`, `k8s/job_suspension.py`); it builds with no replace directives."""


def staging_version(kubernetes: str = KUBERNETES) -> str:
    """Return the staging-module version matching a Kubernetes release (v1.36.3 -> v0.36.3)."""
    major_minor_patch = kubernetes.lstrip("v").split(".")
    return "v0." + ".".join(major_minor_patch[1:])


def cache_key() -> str:
    """Name of the cache folder for this exact set of pins.

    The workload controllers (JOBSET, LWS, TRAINER, TRAINING_OPERATOR, KUBERAY) are not in it: their
    binaries carry their version in their names (`binaries.WorkloadController.binary`), so a new
    controller pin builds one new binary beside the others instead of a whole new control
    plane."""
    return f"k8s-{KUBERNETES}_etcd-{ETCD}_kwok-{KWOK}_helm-{HELM}"
