"""The CRDs refuse bad objects at the API server, with a message that names the field.

Run through the built `kubectl`, the way users meet these errors: `kubectl apply -f crds/`, the
examples accepted (server-side dry run, so their pods don't take capacity from other tests), and
each invalid PodGroup or Queue refused with its own message. `kubectl apply` validates fields
strictly by default, so an unknown field is an error, not a silently dropped key.

The bounds (issue 17: one object must not be able to stall the scheduler) and the transition rules
of a PodGroup's spec (what may change once it exists) are the API server's own refusals too: each
refused change asserts the message and that the stored spec did not move; each allowed one, that
the stored spec is the new one.
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
    # Bounds (issue 17): one object must not be able to stall every cycle.
    Bad("minMember above 10,000", _podgroup("pg-huge", {"minMember": 10001}),
        ("spec.minMember", "less than or equal to 10000")),
    Bad("minMember at int32 max", _podgroup("pg-max", {"minMember": 2147483647}),
        ("spec.minMember", "less than or equal to 10000")),
    Bad("GPUs above 100,000", _podgroup("pg-gpus", {"minMember": 1, "minResources": {GPU: 100001}}),
        ("spec.minResources", f'["{GPU}"] above 100000')),
    Bad("GPUs as a huge quantity string",
        _podgroup("pg-gpus2", {"minMember": 1, "minResources": {GPU: "1e9"}}),
        ("spec.minResources", f'["{GPU}"] above 100000')),
    Bad("another extended resource above 100,000",
        _podgroup("pg-ext", {"minMember": 1, "minResources": {"example.com/fpga": "200k"}}),
        ("spec.minResources", '["example.com/fpga"] above 100000')),
    Bad("cpu above 1,000,000",
        _podgroup("pg-cpu", {"minMember": 1, "minResources": {"cpu": "1000001"}}),
        ("spec.minResources", "cpu must be at most 1000000")),
    Bad("memory above 1Pi",
        _podgroup("pg-mem", {"minMember": 1, "minResources": {"memory": "1025Ti"}}),
        ("spec.minResources", '["memory"] above 1Pi')),
    Bad("hugepages above 1Pi",
        _podgroup("pg-huge-pages", {"minMember": 1, "minResources": {"hugepages-2Mi": "2Pi"}}),
        ("spec.minResources", '["hugepages-2Mi"] above 1Pi')),
    Bad("malformed priorityClassName",
        _podgroup("pg-pc", {"minMember": 1, "priorityClassName": "High Priority"}),
        ("spec.priorityClassName", "should match")),
    Bad("malformed Queue priorityClasses",
        _queue("q-pc", {"priorityClasses": ["team_a-high"]}),
        ("spec.priorityClasses[0]", "should match")),
    Bad("Queue priorityClasses twice the same",
        _queue("q-pc2", {"priorityClasses": ["high", "high"]}),
        ("spec.priorityClasses[1]", "Duplicate value")),
    Bad("Queue priorityClasses too many",
        _queue("q-pc3", {"priorityClasses": [f"class-{i}" for i in range(65)]}),
        ("spec.priorityClasses", "must have at most 64 items")),
]  # fmt: skip

GOOD_OBJECTS = [
    # At the bounds, not above them.
    _podgroup("pg-at-bounds", {
        "minMember": 10000,
        "minResources": {GPU: 100000, "example.com/fpga": "100k", "cpu": "1000000",
                         "memory": "1Pi", "ephemeral-storage": "1Pi", "pods": 10000},
    }),
    _queue("q-classes", {"priorityClasses": ["high", "team-a.batch"], "namespaces": ["team-a"]}),
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
    """The JobSet and LWS examples too, by the real controllers' CRDs and webhooks. The
    namespaces the examples create are made first (a dry run creates nothing, so the objects
    in them would be refused for a namespace that does not exist)."""
    namespaces = [
        d
        for f in sorted((REPO / "deploy" / "examples").glob("*.yaml"))
        for d in yaml.safe_load_all(f.read_text())
        if d and d.get("kind") == "Namespace"
    ]
    made = _kubectl(crds_applied, "apply", "-f", "-", stdin=yaml.safe_dump_all(namespaces))
    assert made.returncode == 0, made.stderr
    done = _kubectl(
        crds_applied, "apply", "--dry-run=server", "-f", str(REPO / "deploy" / "examples")
    )
    assert done.returncode == 0, f"the examples were refused:\n{done.stderr}"
    for kind in (
        *("podgroup.phalanx.dev/llm-pretrain", "queue.phalanx.dev/", "job.batch/sweep"),
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


@pytest.mark.parametrize("body", GOOD_OBJECTS, ids=[g["metadata"]["name"] for g in GOOD_OBJECTS])
def test_an_object_at_the_bounds_is_accepted(crds_applied: Cluster, body: dict[str, Any]) -> None:
    done = _kubectl(
        crds_applied, "apply", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump(body)
    )
    assert done.returncode == 0, f"refused:\n{done.stderr}"


@dataclass(frozen=True)
class Change:
    """A PodGroup created with `before`, then applied with `after` (a field left out of `after`
    is removed: `kubectl apply` removes what it applied before); `says` is None when the change
    must be accepted, else the words the refusal must contain."""

    what: str
    before: dict[str, Any]
    after: dict[str, Any]
    says: tuple[str, ...] | None


NEVER = "cannot be added, removed or changed once the PodGroup exists"
LOWER = "spec.timeLimitSeconds may only be lowered once set"
TOPO = {"required": "leaf"}
CHANGES = [
    Change("minMember changed", {"minMember": 2}, {"minMember": 4},
           ("spec.minMember", "spec.minMember cannot be changed once the PodGroup exists")),
    Change("queue changed", {"minMember": 2, "queue": "default"},
           {"minMember": 2, "queue": "other"}, ("spec.queue", f"spec.queue {NEVER}")),
    # A removed queue is defaulted again to `default`: a move all the same.
    Change("queue removed", {"minMember": 2, "queue": "research"}, {"minMember": 2},
           ("spec.queue", f"spec.queue {NEVER}")),
    Change("queue added (it was defaulted)", {"minMember": 2},
           {"minMember": 2, "queue": "research"}, ("spec.queue", f"spec.queue {NEVER}")),
    Change("priorityClassName added", {"minMember": 2},
           {"minMember": 2, "priorityClassName": "high"},
           ("spec.priorityClassName", f"spec.priorityClassName {NEVER}")),
    Change("priorityClassName changed", {"minMember": 2, "priorityClassName": "low"},
           {"minMember": 2, "priorityClassName": "system-node-critical"},
           ("spec.priorityClassName", f"spec.priorityClassName {NEVER}")),
    Change("priorityClassName removed", {"minMember": 2, "priorityClassName": "low"},
           {"minMember": 2}, ("spec.priorityClassName", f"spec.priorityClassName {NEVER}")),
    Change("topology added", {"minMember": 2}, {"minMember": 2, "topology": TOPO},
           ("spec.topology", f"spec.topology {NEVER}")),
    Change("topology changed", {"minMember": 2, "topology": TOPO},
           {"minMember": 2, "topology": {"preferred": "leaf"}},
           ("spec.topology", f"spec.topology {NEVER}")),
    Change("topology removed", {"minMember": 2, "topology": TOPO}, {"minMember": 2},
           ("spec.topology", f"spec.topology {NEVER}")),
    Change("timeLimitSeconds raised", {"minMember": 2, "timeLimitSeconds": 3600},
           {"minMember": 2, "timeLimitSeconds": 7200},
           ("spec.timeLimitSeconds", f"{LOWER} (it is 3600); it cannot be raised or removed")),
    Change("timeLimitSeconds removed", {"minMember": 2, "timeLimitSeconds": 3600}, {"minMember": 2},
           ("spec.timeLimitSeconds", f"{LOWER} (it is 3600); it cannot be raised or removed")),
    # Allowed: a shorter limit, a limit where there was none, the member-failure policy, and
    # anything else with every immutable field set (the rules look at their own fields only).
    Change("timeLimitSeconds lowered", {"minMember": 2, "timeLimitSeconds": 3600},
           {"minMember": 2, "timeLimitSeconds": 600}, None),
    Change("timeLimitSeconds added", {"minMember": 2}, {"minMember": 2, "timeLimitSeconds": 600},
           None),
    Change("memberFailure changed", {"minMember": 2, "memberFailure": "evict"},
           {"minMember": 2, "memberFailure": "keep"}, None),
    Change("memberFailure removed", {"minMember": 2, "memberFailure": "keep"}, {"minMember": 2},
           None),
    Change("memberFailure added, scheduleTimeoutSeconds removed, every immutable field set",
           {"minMember": 2, "queue": "q", "priorityClassName": "high", "topology": TOPO,
            "timeLimitSeconds": 60, "scheduleTimeoutSeconds": 60},
           {"minMember": 2, "queue": "q", "priorityClassName": "high", "topology": TOPO,
            "timeLimitSeconds": 60, "memberFailure": "keep"}, None),
]  # fmt: skip


def _spec(cluster: Cluster, name: str) -> dict[str, Any]:
    done = _kubectl(cluster, "get", "podgroups.phalanx.dev", name, "-n", "default", "-o", "json")
    assert done.returncode == 0, done.stderr
    spec: dict[str, Any] = yaml.safe_load(done.stdout)["spec"]
    return spec


@pytest.mark.parametrize("change", CHANGES, ids=[c.what for c in CHANGES])
def test_a_change_to_an_existing_podgroup_is_refused_or_accepted_as_the_contract_says(
    crds_applied: Cluster, change: Change
) -> None:
    name = f"pg-{uuid.uuid4().hex[:6]}"
    created = _kubectl(
        crds_applied, "apply", "-f", "-", stdin=yaml.safe_dump(_podgroup(name, change.before))
    )
    assert created.returncode == 0, created.stderr
    try:
        before = _spec(crds_applied, name)
        done = _kubectl(
            crds_applied, "apply", "-f", "-", stdin=yaml.safe_dump(_podgroup(name, change.after))
        )
        if change.says is None:
            assert done.returncode == 0, f"{change.what}: refused:\n{done.stderr}"
            assert _spec(crds_applied, name) == {"queue": "default", **change.after}
            return
        assert done.returncode != 0, f"{change.what}: accepted, but should be refused"
        for words in change.says:
            assert words in done.stderr, f"{change.what}: {words!r} not in:\n{done.stderr}"
        assert _spec(crds_applied, name) == before, "a refused change must leave the spec alone"
    finally:
        _kubectl(
            crds_applied, "delete", "podgroups.phalanx.dev", name, "-n", "default", "--wait=false"
        )
