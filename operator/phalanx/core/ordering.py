"""Order: which queue is served next, and which gang of a queue comes first.

Queues: higher `priority` first, then the lowest allocated/deserved (the queue furthest below
its share), then the larger effective weight (between two idle queues, the one with less recent
usage goes first), then name. This is re-evaluated after every gang, so queues interleave as they
fill up instead of one queue draining the cluster. Gangs within a queue: priority class value,
then the multifactor score, then creation time and id, so the order is total and the same on
every run. (Gangs past their starvation bound that cannot start are planned before this walk,
oldest first: `cycle.Scheduler.reserve_for_starving`; `starving` says which gangs those are.)

The multifactor score (Slurm's `priority/multifactor`, each factor normalised to [0, 1] over the
pending gangs of the cycle so the weights are comparable and need no unit):

- age: wait / the longest wait among them (`--priority-weight-age`; `Policy.age_max` caps it
  at an absolute wait instead, for measuring);
- size: GPUs / the most GPUs among them (`--priority-weight-size`; positive favours large gangs,
  as Slurm's `PriorityWeightJobSize` without `PriorityFavorSmall`);
- work: requested work = GPUs × time limit, on a log scale between the least and the most work
  among them, *subtracted* (`--priority-weight-work`; positive favours less work). This is
  shortest-expected-work-first from time limits only (a gang without a limit has the most work):
  under load, serving less work first minimises the mean wait (SRPT/SJF), and the age factor
  bounds how long the largest work is passed over. The log scale is because work spans six
  orders of magnitude (1 GPU × 30 min to 64 GPUs × 30 days): on a linear scale every job but
  the largest would sit at ~0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from phalanx.core.model import PendingGang


@dataclass(frozen=True, slots=True)
class GangKey:
    """What orders a gang within its queue; `work` is GPUs × time limit in GPU-seconds (`inf`
    without a limit)."""

    gang: PendingGang
    gpus: int
    work: float = 0.0


def gang_order(
    items: list[GangKey],
    now: float,
    age_weight: float,
    size_weight: float,
    work_weight: float = 0.0,
    age_max: float = 0.0,
    aged_first: bool = False,
) -> list[int]:
    """Indices of `items` in service order (priority, multifactor score, creation time, id).

    Age, size and work are normalised over the items so the weights are comparable; with the
    weights (age 1, size 0, work 0) this is plain FIFO. With `age_max` > 0 the age is
    wait / `age_max`, at most 1 (Slurm's `PriorityMaxAge`), instead of relative to the longest
    wait among the items. With `aged_first` (and `age_max`), gangs that have waited `age_max`
    or longer come before every gang that has not (`Policy.aged_first`).
    """
    if not items:
        return []
    if age_max > 0:
        age_scale = age_max
    else:
        age_scale = max(max(0.0, now - it.gang.creation_time) for it in items) or 1.0
    max_size = max(it.gpus for it in items) or 1
    lo = hi = 0.0
    if work_weight:
        logs = [_log_work(it.work) for it in items]
        lo, hi = min(logs), max(logs)
    span = hi - lo

    def key(i: int) -> tuple[int, int, float, float, str]:
        it = items[i]
        waited = max(0.0, now - it.gang.creation_time)
        age = min(1.0, waited / age_scale)
        aged = 1 if aged_first and age_max > 0 and waited >= age_max else 0
        size = it.gpus / max_size
        score = age_weight * age + size_weight * size
        if work_weight and span > 0:
            score -= work_weight * (_log_work(it.work) - lo) / span
        if not math.isfinite(score):
            score = 0.0
        return (-it.gang.priority, -aged, -score, it.gang.creation_time, it.gang.id)

    return sorted(range(len(items)), key=key)


_LOG_INF = math.log(1e18)
"""Where work without a time limit sits on the log scale: beyond any finite request."""


def _log_work(work: float) -> float:
    if work == math.inf:
        return _LOG_INF
    return math.log(max(1.0, work))


def starvation_bound(
    duration: float, after_limits: float, after_s: float, members: int = 1
) -> float:
    """How long a gang with time limit `duration` (`inf`: none) waits before it may hold a
    binding reservation: `after_limits × duration`, capped at `after_s` (either 0 switches its
    part off; both 0: 0, every gang at once, i.e. conservative backfill; no part applies: never,
    `inf`), divided by `members` when the bound is counted per member.

    Relative to the time limit because that is the bounded-slowdown rule of HPC scheduling: a
    gang may wait a multiple of its own run time before the others must make room for it, so a
    short job never holds the cluster for long, and a long one pays a wait in proportion.
    Capped by an absolute time (PBS Professional's `max_starve`, 24 h by default) so a gang with
    a week's limit (or none) is not left to greedy placement for a week."""
    if after_limits <= 0 and after_s <= 0:
        return 0.0
    bound = math.inf
    if after_limits > 0:
        bound = after_limits * duration
    if after_s > 0:
        bound = min(bound, after_s)
    return bound / max(1, members)


def starving(
    wait: float, duration: float, after_limits: float, after_s: float, members: int = 1
) -> bool:
    """Whether a gang that has waited `wait` seconds is past its `starvation_bound`."""
    return wait >= starvation_bound(duration, after_limits, after_s, members)


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
