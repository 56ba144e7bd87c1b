"""Order: which queue is served next, and which gang of a queue comes first.

Queues: higher `priority` first, then the lowest allocated/deserved (the queue furthest below
its share), then the larger effective weight (between two idle queues, the one with less recent
usage goes first), then name. This is re-evaluated after every gang, so queues interleave as they
fill up instead of one queue draining the cluster. Gangs within a queue: priority class value,
then the multifactor score, then creation time and id, so the order is total and the same on
every run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from phalanx.core.model import PendingGang


@dataclass(frozen=True, slots=True)
class GangKey:
    """What orders a gang within its queue."""

    gang: PendingGang
    gpus: int


def gang_order(
    items: list[GangKey], now: float, age_weight: float, size_weight: float
) -> list[int]:
    """Indices of `items` in service order (priority, multifactor score, creation time, id).

    Age and size are normalised by their maximum among the items so the weights are comparable;
    with the default weights (age 1, size 0) this is plain FIFO.
    """
    if not items:
        return []
    max_age = max(max(0.0, now - it.gang.creation_time) for it in items) or 1.0
    max_size = max(it.gpus for it in items) or 1

    def key(i: int) -> tuple[float, float, float, str]:
        it = items[i]
        age = max(0.0, now - it.gang.creation_time) / max_age
        size = it.gpus / max_size
        score = age_weight * age + size_weight * size
        if not math.isfinite(score):
            score = 0.0
        return (-it.gang.priority, -score, it.gang.creation_time, it.gang.id)

    return sorted(range(len(items)), key=key)


def share_ratio(allocated: int, deserved: int) -> float:
    """allocated/deserved, with an idle queue at 0 and a queue owed nothing at +inf."""
    if deserved <= 0:
        return 0.0 if allocated <= 0 else math.inf
    return allocated / deserved


def queue_key(
    priority: int, allocated: int, deserved: int, effective_weight: float, name: str
) -> tuple[int, float, float, str]:
    """Sort key of a queue when choosing which one to serve next (smallest first)."""
    return (-priority, share_ratio(allocated, deserved), -effective_weight, name)
