"""`WaitingForPods` of a gang whose one workload runs fewer pods at once than it needs
(`PendingGang.workload`). Fabric: 1 spine × 1 leaf × 2 nodes × 8 GPUs, `now` = 1000."""

from __future__ import annotations

from dataclasses import replace

from core_builders import DEFAULT_POLICY, fabric, gang, snapshot

from phalanx.core import Reason, WorkloadCap, schedule


def _message(pods: int, min_member: int, cap: WorkloadCap | None) -> str:
    pending = replace(gang("train").pods(pods, gpu=1).min(min_member).build(), workload=cap)
    result = schedule(snapshot(fabric(1, 1, 2), pending=[pending]), DEFAULT_POLICY, 1000.0)
    decision = result.gangs["ns/train"]
    assert decision.reason is Reason.WAITING_FOR_PODS, decision
    return decision.message


def test_a_workload_smaller_than_the_gang_is_named_with_the_fix() -> None:
    assert _message(1, 3, WorkloadCap("Job", "train", 1)) == (
        "1 of 3 pods exist; its Job train runs at most 1 pod at once, fewer than the 3 it needs "
        "together: it starts only if other pods join its PodGroup (lower spec.minMember to 1, or "
        "let the Job run 3 at once)"
    )


def test_a_workload_as_large_as_the_gang_adds_nothing() -> None:
    assert _message(1, 3, WorkloadCap("Job", "train", 3)) == "1 of 3 pods exist"
    assert _message(1, 3, None) == "1 of 3 pods exist"
