"""A namespace opted in with `phalanx.dev/queue` on a cluster where the admission policies do not
act: its pods go to kube-scheduler, and the operator says so on the workload (a Warning Event,
`BypassedPhalanx`), on the real API server with the real Job controller and kube-scheduler.

No policies are installed in this module (those of `test_admission_policy` are applied per
module and deleted after it), which is what a cluster older than 1.36, or a chart installed
with `admissionPolicy.enabled=false`, looks like.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.conftest import Cluster
from tests.integration.operator_fixture import OperatorProcess
from tests.integration.test_automatic_gangs import get_group, job, wait_bound, wait_cycles
from tests.integration.waiting import wait_for

pytestmark = pytest.mark.integration
QUEUE = "phalanx.dev/queue"


def bypass_events(cluster: Cluster, ns: str, name: str) -> list[Any]:
    events = cluster.core.list_namespaced_event(ns, field_selector=f"involvedObject.name={name}")
    return [e for e in events.items if e.reason == "BypassedPhalanx"]


def test_a_job_of_a_labelled_namespace_run_by_kube_scheduler_is_told_so_once(
    cluster: Cluster,
    custom: Any,
    namespace: str,
    operator: OperatorProcess,
) -> None:
    cluster.core.patch_namespace(namespace, {"metadata": {"labels": {QUEUE: "research"}}})
    # The operator dates an opt-in by the first cycle after it; pods older are left alone.
    wait_cycles(operator, 2)
    made = cluster.batch.create_namespaced_job(namespace, job("plain", 2, gpus=1))
    pods = wait_bound(cluster, namespace, "batch.kubernetes.io/job-name=plain", 2)
    assert {p.spec.scheduler_name for p in pods} == {"default-scheduler"}

    told = wait_for(
        lambda: bypass_events(cluster, namespace, "plain"),
        timeout=30,
        what="a BypassedPhalanx Event on Job plain",
    )
    event = told[0]
    assert event.type == "Warning"
    assert event.involved_object.kind == "Job"
    assert event.involved_object.uid == made.metadata.uid
    assert (
        f"pods of Job plain went to default-scheduler, not Phalanx, though namespace "
        f"{namespace} is labelled {QUEUE}=research"
    ) in event.message
    assert get_group(custom, namespace, "job-plain") is None

    # Once per workload: more cycles (each scan sees both pods again) add no Event.
    wait_cycles(operator, 5)
    assert len(bypass_events(cluster, namespace, "plain")) == 1
    assert sum(e.count or 1 for e in bypass_events(cluster, namespace, "plain")) == 1
