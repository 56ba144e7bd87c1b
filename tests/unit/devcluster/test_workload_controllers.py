"""The workload controllers' plumbing without a cluster: webhook manifests rewritten to loopback
URLs (with their kustomization's patches), the certificate, ports, binary names."""

from __future__ import annotations

import base64
import ipaddress
from pathlib import Path

import pytest
import yaml
from cryptography import x509

from phalanx.devcluster import versions
from phalanx.devcluster.binaries import WORKLOAD_CONTROLLERS
from phalanx.devcluster.controllers import (
    RESERVED_PORTS,
    free_port,
    loopback_certificate,
    webhook_configurations,
)
from phalanx.devcluster.errors import DevClusterError
from phalanx.devcluster.flags_only import KUBERAY
from phalanx.devcluster.self_certified import TRAINER, TRAINING_OPERATOR

MANIFESTS = """\
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: mutating-webhook-configuration}
webhooks:
- name: mthing.kb.io
  clientConfig: {service: {name: webhook-service, namespace: system, path: /mutate-thing}}
  rules: [{apiGroups: [x.io], apiVersions: [v1], operations: [CREATE], resources: [things]}]
- name: mpod.kb.io
  clientConfig: {service: {name: webhook-service, namespace: system, path: /mutate--v1-pod}}
  rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: validating-webhook-configuration}
webhooks:
- name: vthing.kb.io
  clientConfig: {service: {name: webhook-service, namespace: system, path: /validate-thing}}
"""
PATCH = """\
- op: replace
  path: /webhooks/1
  value:
    name: mpod.kb.io
    clientConfig: {service: {name: webhook-service, namespace: system, path: /mutate--v1-pod}}
    objectSelector: {matchExpressions: [{key: x.io/name, operator: Exists}]}
    rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
"""
KUSTOMIZATION = """\
resources: [manifests.yaml]
patches:
- path: patches/mutating-patch.yaml
  target: {kind: MutatingWebhookConfiguration, name: mutating-webhook-configuration}
"""


def module(tmp_path: Path, patch: str = PATCH) -> Path:
    folder = tmp_path / "config" / "components" / "webhook"
    (folder / "patches").mkdir(parents=True)
    (folder / "manifests.yaml").write_text(MANIFESTS)
    (folder / "kustomization.yaml").write_text(KUSTOMIZATION)
    (folder / "patches" / "mutating-patch.yaml").write_text(patch)
    return tmp_path


def test_webhooks_are_served_from_loopback_with_the_ca_and_the_upstream_patches(
    tmp_path: Path,
) -> None:
    jobset = WORKLOAD_CONTROLLERS[0]
    docs = webhook_configurations(jobset, module(tmp_path), 40123, b"CA PEM")
    names = [d["metadata"]["name"] for d in docs]
    assert names == [
        "jobset-mutating-webhook-configuration",
        "jobset-validating-webhook-configuration",
    ]
    urls = [h["clientConfig"]["url"] for d in docs for h in d["webhooks"]]
    assert urls == [
        "https://127.0.0.1:40123/mutate-thing",
        "https://127.0.0.1:40123/mutate--v1-pod",
        "https://127.0.0.1:40123/validate-thing",
    ]
    bundles = {h["clientConfig"]["caBundle"] for d in docs for h in d["webhooks"]}
    assert bundles == {base64.b64encode(b"CA PEM").decode()}
    assert not any("service" in h["clientConfig"] for d in docs for h in d["webhooks"])
    # The kustomization's patch limits the pod webhook to the controller's own pods.
    pod_hook = docs[0]["webhooks"][1]
    assert pod_hook["objectSelector"] == {
        "matchExpressions": [{"key": "x.io/name", "operator": "Exists"}]
    }


def test_a_webhook_patch_of_another_shape_is_refused(tmp_path: Path) -> None:
    odd = yaml.safe_dump([{"op": "remove", "path": "/webhooks/0/rules"}])
    with pytest.raises(DevClusterError, match="unsupported webhook patch"):
        webhook_configurations(WORKLOAD_CONTROLLERS[0], module(tmp_path, odd), 1, b"x")


def test_the_certificate_is_for_127_0_0_1_and_signed_by_its_ca() -> None:
    cert = loopback_certificate()
    leaf = x509.load_pem_x509_certificate(cert.cert_pem)
    ca = x509.load_pem_x509_certificate(cert.ca_pem)
    san = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    assert leaf.issuer == ca.subject
    leaf.verify_directly_issued_by(ca)
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca


def test_free_ports_are_distinct_and_never_phalanx_ports() -> None:
    taken: set[int] = set()
    ports = [free_port(taken) for _ in range(20)]
    assert len(set(ports)) == 20
    assert not set(ports) & RESERVED_PORTS


def test_binaries_carry_their_pinned_versions() -> None:
    assert {c.name: c.binary for c in WORKLOAD_CONTROLLERS} == {
        "jobset": f"jobset-controller-{versions.JOBSET}",
        "lws": f"lws-controller-{versions.LWS}",
        "trainer": f"trainer-controller-{versions.TRAINER}",
        "training-operator": f"training-operator-controller-{versions.TRAINING_OPERATOR}",
        "kuberay": f"kuberay-controller-{versions.KUBERAY}",
    }
    assert versions.JOBSET not in versions.cache_key()


def test_the_trainer_starts_by_its_flags_on_loopback_with_a_webhook_target_matching_nothing() -> (
    None
):
    """Its rotator needs a webhook configuration of that name to call itself ready; one that
    matched TrainJobs would send them to a server whose certificate the API server cannot
    verify (`devcluster/self_certified.py`)."""
    trainer = next(c for c in WORKLOAD_CONTROLLERS if c.name == "trainer")
    assert not trainer.admission and trainer.started_by is TRAINER
    assert [c.name for c in WORKLOAD_CONTROLLERS].index("jobset") < list(
        WORKLOAD_CONTROLLERS
    ).index(trainer), "the JobSet CRD first"
    args = TRAINER.arguments(Path("/k/config"), 41000, 41001)
    assert "--health-probe-bind-address=127.0.0.1:41000" in args
    assert "--webhook-server-port=41001" in args
    assert "--metrics-bind-address=0" in args and "--leader-elect=false" in args
    target = TRAINER.rotator_target("phalanx-devcluster")
    assert target["metadata"]["name"] == "validator.trainer.kubeflow.org"
    (hook,) = target["webhooks"]
    assert hook["failurePolicy"] == "Ignore"
    assert [r["apiGroups"] for r in hook["rules"]] == [["devcluster.phalanx.dev"]]


def test_the_training_operator_starts_like_the_trainer_with_only_the_kinds_phalanx_gangs() -> None:
    """Its rotator waits in its own namespace for its own Secret and webhook configuration
    (`pkg/cert` of v1.8.1); only PyTorchJob and MPIJob are watched."""
    operator = next(c for c in WORKLOAD_CONTROLLERS if c.name == "training-operator")
    assert not operator.admission and operator.started_by is TRAINING_OPERATOR
    assert (TRAINING_OPERATOR.namespace, TRAINING_OPERATOR.secret) == (
        "kubeflow",
        "training-operator-webhook-cert",
    )
    target = TRAINING_OPERATOR.rotator_target("phalanx-devcluster")
    assert target["metadata"]["name"] == "validator.training-operator.kubeflow.org"
    args = TRAINING_OPERATOR.arguments(Path("/k/config"), 41000, 41001)
    assert args[-2:] == ["--enable-scheme=pytorchjob", "--enable-scheme=mpijob"]
    assert "--webhook-server-port=41001" in args


def test_kuberay_starts_by_its_own_flags_off_phalanx_ports_with_no_webhooks() -> None:
    """KubeRay's defaults would take :8080 (Phalanx's metrics) and elect a leader; its webhook
    server is off unless ENABLE_WEBHOOKS is set, so nothing is registered (`flags_only.py`)."""
    kuberay = next(c for c in WORKLOAD_CONTROLLERS if c.name == "kuberay")
    assert not kuberay.admission and kuberay.started_by is KUBERAY
    args = KUBERAY.arguments(Path("/k/config"), 41000, 41001)
    assert args[:4] == [
        "--kubeconfig=/k/config",
        "--health-probe-bind-address=127.0.0.1:41000",
        "--metrics-addr=0",
        "--enable-leader-election=false",
    ]
    assert not any("41001" in a for a in args), "no webhook server to give a port"
