"""The CRDs refuse bad objects at the API server, with a message that names the field.

Run through the built `kubectl`, the way users meet these errors: `kubectl apply -f crds/`, the
examples accepted (server-side dry run, so their pods don't take capacity from other tests), and
each invalid PodGroup or Queue refused with its own message. `kubectl apply` validates fields
strictly by default, so an unknown field is an error, not a silently dropped key.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from phalanx.devcluster.binaries import ensure_binaries
from tests.integration.conftest import Cluster

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def _kubectl(
    cluster: Cluster, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    kubectl = ensure_binaries().path("kubectl")
    return subprocess.run(
        [str(kubectl), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "KUBECONFIG": str(cluster.kubeconfig)},
        check=False,
    )


def _podgroup(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "phalanx.dev/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def _queue(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "phalanx.dev/v1alpha1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
    }


@dataclass(frozen=True)
class Bad:
    """An object the API server must refuse, and the words its refusal must contain."""

    what: str
    body: dict[str, Any]
    says: tuple[str, ...]


GPU = "nvidia.com/gpu"
BAD_OBJECTS = [
    Bad("minMember below 1", _podgroup("pg-zero", {"minMember": 0}),
        ("spec.minMember", "greater than or equal to 1")),
    Bad("minMember not a number", _podgroup("pg-word", {"minMember": "four"}),
        ("spec.minMember", "integer")),
    Bad("minMember missing", _podgroup("pg-none", {"queue": "default"}),
        ("spec.minMember", "Required value")),
    Bad("timeLimitSeconds zero", _podgroup("pg-tl", {"minMember": 1, "timeLimitSeconds": 0}),
        ("spec.timeLimitSeconds", "greater than or equal to 1")),
    Bad("scheduleTimeoutSeconds negative",
        _podgroup("pg-st", {"minMember": 1, "scheduleTimeoutSeconds": -5}),
        ("spec.scheduleTimeoutSeconds", "greater than or equal to 1")),
    Bad("negative minResources", _podgroup("pg-neg", {"minMember": 1, "minResources": {GPU: "-8"}}),
        ("spec.minResources", "non-negative")),
    Bad("unknown PodGroup field", _podgroup("pg-typo", {"minMember": 1, "minMembers": 2}),
        ('unknown field "spec.minMembers"',)),
    Bad("empty topology", _podgroup("pg-topo", {"minMember": 1, "topology": {}}),
        ("spec.topology", "`required` or `preferred`")),
    Bad("malformed topology level",
        _podgroup("pg-lvl", {"minMember": 1, "topology": {"required": "Leaf_1"}}),
        ("spec.topology.required", "should match")),
    Bad("malformed queue name", _podgroup("pg-q", {"minMember": 1, "queue": "Team A"}),
        ("spec.queue", "should match")),
    Bad("Queue weight zero", _queue("q-weight", {"weight": 0}),
        ("spec.weight", "greater than or equal to 1")),
    Bad("Queue limit below guarantee",
        _queue("q-limit", {"guarantee": {GPU: 64}, "limit": {GPU: 32}}),
        ("spec.limit must be at least spec.guarantee",)),
    Bad("negative guarantee", _queue("q-neg", {"guarantee": {GPU: "-1"}}),
        ("spec.guarantee", "non-negative")),
    Bad("guarantee not a quantity", _queue("q-word", {"guarantee": {GPU: "lots"}}),
        ("spec.guarantee", "quantities")),
    Bad("default time limit above max",
        _queue("q-time", {"defaultTimeLimitSeconds": 7200, "maxTimeLimitSeconds": 3600}),
        ("spec.defaultTimeLimitSeconds must not exceed spec.maxTimeLimitSeconds",)),
    Bad("unknown Queue field", _queue("q-typo", {"weigth": 2}),
        ('unknown field "spec.weigth"',)),
]  # fmt: skip


@pytest.fixture(scope="module")
def crds_applied(cluster: Cluster) -> Cluster:
    cluster.require_disposable()
    done = _kubectl(cluster, "apply", "-f", str(REPO / "crds"))
    assert done.returncode == 0, f"kubectl apply -f crds/ failed:\n{done.stderr}"
    established = _kubectl(
        cluster, "wait", "--for=condition=Established", "--timeout=30s",
        "crd/podgroups.phalanx.dev", "crd/queues.phalanx.dev",
    )  # fmt: skip
    assert established.returncode == 0, f"CRDs not Established within 30 s:\n{established.stderr}"
    return cluster


def test_the_examples_are_accepted(crds_applied: Cluster, workload_controllers: object) -> None:
    """The JobSet and LWS examples too, by the real controllers' CRDs and webhooks."""
    done = _kubectl(
        crds_applied, "apply", "--dry-run=server", "-f", str(REPO / "deploy" / "examples")
    )
    assert done.returncode == 0, f"the examples were refused:\n{done.stderr}"
    for kind in (
        *("podgroup.phalanx.dev/llm-pretrain", "queue.phalanx.dev/", "job.batch/"),
        *(
            "jobset.jobset.x-k8s.io/multislice",
            "leaderworkerset.leaderworkerset.x-k8s.io/inference",
        ),
    ):
        assert kind in done.stdout, f"{kind} missing from:\n{done.stdout}"


@pytest.mark.parametrize("bad", BAD_OBJECTS, ids=[b.what for b in BAD_OBJECTS])
def test_an_invalid_object_is_refused_with_a_message_naming_the_field(
    crds_applied: Cluster, bad: Bad
) -> None:
    done = _kubectl(crds_applied, "apply", "-f", "-", stdin=yaml.safe_dump(bad.body))
    assert done.returncode != 0, f"{bad.what}: accepted, but should be refused"
    for words in bad.says:
        assert words in done.stderr, f"{bad.what}: {words!r} not in the refusal:\n{done.stderr}"


def test_min_member_cannot_change_once_the_podgroup_exists(crds_applied: Cluster) -> None:
    name = f"pg-{uuid.uuid4().hex[:6]}"
    body = _podgroup(name, {"minMember": 2})
    created = _kubectl(crds_applied, "apply", "-f", "-", stdin=yaml.safe_dump(body))
    assert created.returncode == 0, created.stderr
    try:
        body["spec"]["minMember"] = 4
        changed = _kubectl(crds_applied, "apply", "-f", "-", stdin=yaml.safe_dump(body))
        assert changed.returncode != 0, "minMember changed on an existing PodGroup"
        assert "spec.minMember cannot be changed" in changed.stderr, changed.stderr
    finally:
        _kubectl(crds_applied, "delete", "podgroup", name, "-n", "default", "--wait=false")
