"""A hand-written PodGroup whose one Job runs fewer pods at once than its minMember: the gang can
never start, and its `WaitingForPods` says so with what to change (Volcano's users meet a
`minAvailable` above a Job's parallelism as a gang that waits for ever, saying only "2/4")."""

from __future__ import annotations

from typing import Any

from tests.unit.k8s.test_autogang_adapter import JOB_REF, job, job_pod, last_waiting_message, run
from tests.unit.k8s.test_records_and_view import group


def _said(pods: list[dict[str, Any]], groups: list[dict[str, Any]], jobs: list[Any]) -> str:
    return last_waiting_message(run(pods, groups, jobs))


def _labelled(name: str) -> dict[str, Any]:
    body = job_pod(name)
    body["metadata"]["labels"]["phalanx.dev/pod-group"] = "train"
    return body


def test_a_job_that_runs_fewer_pods_than_minmember_is_named_with_the_fix() -> None:
    """`train` (minMember 4) over the Job `train` of parallelism 2: 2 of 4 exist, for good."""
    message = _said([_labelled("train-0"), _labelled("train-1")], [group("train", 4)], [job(2)])
    assert message == (
        "2 of 4 pods exist; its Job train runs at most 2 pods at once, fewer than the 4 it needs "
        "together: it starts only if other pods join its PodGroup (lower spec.minMember to 2, "
        "or let the Job run 4 at once)"
    ), message


def test_a_job_large_enough_or_one_under_another_owner_says_only_the_count() -> None:
    """Parallelism 4: its other pods are on their way. A Job under a JobSet: its siblings' pods
    join the same PodGroup, so its own size says nothing."""
    pods = [_labelled("train-0"), _labelled("train-1")]
    assert _said(pods, [group("train", 4)], [job(4)]) == "2 of 4 pods exist"
    child = job(2)
    child["metadata"]["ownerReferences"] = [
        {**JOB_REF, "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "uid": "js"}
    ]
    assert _said(pods, [group("train", 4)], [child]) == "2 of 4 pods exist"
