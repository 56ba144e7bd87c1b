"""PodGroup and Queue objects as the API returns them, status built by the operator's own writers.

The status bodies come from `phalanx.k8s.status` (conditions, queue figures) and the core's
`PendingDetail.to_status`, so a change in what the operator writes breaks these tests instead of
silently leaving the views behind. Fields written as null are dropped, as a merge patch does.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from phalanx.core import PendingDetail, QueueStatus
from phalanx.k8s.status import condition, queue_status_body, rfc3339

GPU = "nvidia.com/gpu"
NOW = datetime(2026, 11, 30, 5, 0, 0, tzinfo=UTC)
T = NOW.timestamp()


def stored(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if v is not None}


def podgroup(
    name: str,
    min_member: int,
    *,
    namespace: str = "ml",
    queue: str | None = "default",
    status: dict[str, Any] | None = None,
    topology: dict[str, str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": min_member}
    if queue is not None:
        spec["queue"] = queue
    if topology:
        spec["topology"] = topology
    obj: dict[str, Any] = {
        "apiVersion": "phalanx.dev/v1alpha1",
        "kind": "PodGroup",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "creationTimestamp": rfc3339(T - 600),
        },
        "spec": spec,
    }
    if status is not None:
        obj["status"] = status
    return obj


def pending(
    reason: str,
    message: str,
    *,
    requested: int,
    free: int,
    deserved: int,
    allocated: int,
    position: int,
    eta_in: float | None,
    members: int,
    best: tuple[str, int] | None = None,
) -> dict[str, Any]:
    """What `k8s.status.pending_status` writes for a waiting gang."""
    detail = PendingDetail(
        requested_gpus=requested,
        free_gpus=free,
        best_domain=best[0] if best else None,
        best_domain_free_gpus=best[1] if best else None,
        queue_deserved_gpus=deserved,
        queue_allocated_gpus=allocated,
    )
    return stored(
        {
            "phase": "Pending",
            "members": members,
            "bound": 0,
            "running": 0,
            "succeeded": 0,
            "failed": 0,
            "conditions": [condition({}, "Scheduled", "False", reason, message, T - 60)],
            "pendingDetail": detail.to_status(),
            "queuePosition": position,
            "estimatedStartTime": rfc3339(T + eta_in) if eta_in is not None else None,
            "queuedAt": rfc3339(T - 600),
        }
    )


def running(reason: str, message: str, *, pods: int, nodes: list[str]) -> dict[str, Any]:
    """What the scheduler writes once a gang is bound whole."""
    return {
        "phase": "Running",
        "members": pods,
        "bound": pods,
        "running": pods,
        "succeeded": 0,
        "failed": 0,
        "conditions": [
            condition({}, "Evicted", "False", "Running", "", T - 120),
            condition({}, "Scheduled", "True", reason, message, T - 120),
        ],
        "placement": {"domains": {"leaf": ["leaf-0"], "spine": ["spine-0"]}, "nodes": nodes},
        "queuedAt": rfc3339(T - 300),
        "scheduledAt": rfc3339(T - 120),
    }


def queue(
    name: str,
    *,
    weight: int | None = 1,
    guarantee: dict[str, Any] | None = None,
    deserved: int | None = None,
    allocated: int = 0,
    borrowed: int = 0,
    usage: float = 0.0,
    fair_share: float = 1.0,
    pending_gangs: int = 0,
    running_gangs: int = 0,
    message: str = "",
) -> dict[str, Any]:
    """A Queue; with `deserved` set, the status `k8s.status.queue_status_body` writes."""
    spec: dict[str, Any] = {"reclaimable": True, "priority": 0}
    if weight is not None:
        spec["weight"] = weight
    if guarantee is not None:
        spec["guarantee"] = guarantee
    obj: dict[str, Any] = {
        "apiVersion": "phalanx.dev/v1alpha1",
        "kind": "Queue",
        "metadata": {"name": name, "uid": f"uid-{name}"},
        "spec": spec,
    }
    if deserved is not None:
        qs = QueueStatus(
            deserved={GPU: deserved},
            allocated={GPU: allocated, "cpu": 1500 * running_gangs, "memory": 64 * 2**30}
            if allocated
            else {},
            borrowed={GPU: borrowed},
            pending_gangs=pending_gangs,
            running_gangs=running_gangs,
            fair_share=fair_share,
            message=message,
        )
        obj["status"] = stored(queue_status_body(qs, usage, T))
    return obj


# -- the situation of the integration test: 128 GPUs, a borrowing queue, a backfilled gang ------


def situation() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """PodGroups and Queues: `lender` waits for `big` (112 GPUs) while `borrower` runs 96."""
    groups = [
        podgroup(
            "big",
            14,
            queue="lender",
            status=pending(
                "InsufficientCapacity",
                "needs 112 GPUs; 16 free; expected start in 9m when 1 running gang ends",
                requested=112,
                free=16,
                deserved=96,
                allocated=16,
                position=1,
                eta_in=540,
                members=14,
            ),
        ),
        podgroup(
            "long",
            2,
            queue="lender",
            status=pending(
                "WaitingForReservation",
                "needs 16 GPUs; 16 free, but that capacity is reserved for ml/big; "
                "expected start in 9m when 1 running gang ends",
                requested=16,
                free=16,
                deserved=96,
                allocated=16,
                position=2,
                eta_in=540,
                members=2,
            ),
        ),
        podgroup(
            "short",
            2,
            queue="lender",
            status=running(
                "Backfilled",
                "bound 2 pods (16 GPUs) on 2 nodes under 1 leaf (leaf-3); backfilled ahead of "
                "ml/big (ends by its time limit, delays no reservation)",
                pods=2,
                nodes=["node-3-0", "node-3-1"],
            ),
        ),
        podgroup(
            "wide",
            12,
            namespace="research",
            queue="borrower",
            status=running(
                "Scheduled",
                "bound 12 pods (96 GPUs) on 12 nodes under 3 leaves",
                pods=12,
                nodes=[f"node-{i}" for i in range(12)],
            ),
        ),
        podgroup("fresh", 4, namespace="research", queue=None),  # not seen by the operator yet
    ]
    queues = [
        queue(
            "borrower",
            guarantee={GPU: "32", "cpu": "64", "memory": "512Gi"},
            deserved=32,
            allocated=96,
            borrowed=64,
            usage=57600.0,
            fair_share=0.25,
            running_gangs=1,
        ),
        queue(
            "lender",
            weight=2,
            guarantee={GPU: 96},
            deserved=96,
            allocated=16,
            usage=1920.0,
            fair_share=0.93,
            pending_gangs=2,
            running_gangs=1,
        ),
        queue("default", weight=None, deserved=0),
        queue("new", guarantee={GPU: "8"}),  # not reported on yet
    ]
    return groups, queues
