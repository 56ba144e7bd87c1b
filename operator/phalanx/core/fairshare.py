"""Fair share: decayed usage, the fair-share factor, and deserved shares by water-filling.

Shares are computed on one resource (GPUs by default): the others are constraints that placement
checks. The factor is Slurm's classic 2^(−U/S) — U the queue's part of all decayed usage, S its
part of all weights — so a queue that used more than its weight entitles it to gets less of the
*spare* capacity, never less than its guarantee. The operator persists decayed usage in Queue
status; `decay_usage`/`accrue_usage` are the two steps it needs between cycles.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


def decay_usage(usage: float, elapsed: float, half_life: float) -> float:
    """Usage after `elapsed` seconds of decay with the given half-life (no decay if ≤ 0)."""
    if half_life <= 0 or elapsed <= 0:
        return max(0.0, usage)
    return max(0.0, usage) * math.pow(2.0, -elapsed / half_life)


def accrue_usage(usage: float, elapsed: float, in_use: float, half_life: float) -> float:
    """Decay `usage` over `elapsed` seconds while `in_use` units (GPUs) were held throughout.

    The integral of a constant rate under exponential decay: what was added early in the interval
    has decayed more by its end than what was added late.
    """
    if elapsed <= 0:
        return max(0.0, usage)
    decayed = decay_usage(usage, elapsed, half_life)
    if half_life <= 0:
        return decayed + in_use * elapsed
    rate = math.log(2.0) / half_life
    return decayed + in_use * (1.0 - math.exp(-rate * elapsed)) / rate


def fair_share_factor(usage_part: float, share_part: float) -> float:
    """2^(−U/S): 1 when unused, 0.5 when usage matches the share, smaller beyond."""
    if share_part <= 0:
        return 0.0
    return math.pow(2.0, -max(0.0, usage_part) / share_part)


@dataclass(frozen=True, slots=True)
class ShareInput:
    """One queue's inputs to water-filling (all in units of the fair-share resource)."""

    name: str
    weight: float
    guarantee: int
    limit: int
    demand: int


@dataclass(frozen=True, slots=True)
class ShareOutput:
    """Deserved shares, and whether the guarantees had to be scaled down to fit."""

    deserved: dict[str, int]
    scaled: bool
    scale: float


def water_fill(capacity: int, queues: list[ShareInput]) -> ShareOutput:
    """Deserved = guarantee (capped by demand and limit) + spare water-filled by weight.

    Spare capacity is poured level by level: every queue still below its cap gets spare in
    proportion to its weight; queues that reach their cap (min of limit and demand) drop out and
    what they would have got is poured over the rest. The real-valued result is rounded down and
    the leftover units go to the largest remainders (then by name), so the output is integer,
    never exceeds capacity or a cap, and does not depend on input order.
    """
    capacity = max(0, capacity)
    total_guarantee = sum(max(0, q.guarantee) for q in queues)
    scaled = total_guarantee > capacity
    scale = capacity / total_guarantee if scaled and total_guarantee else 1.0
    caps = {q.name: max(0, min(q.limit, q.demand)) for q in queues}
    give: dict[str, float] = {
        q.name: min(max(0, q.guarantee) * scale, caps[q.name]) for q in queues
    }
    spare = capacity - sum(give.values(), 0.0)
    active = sorted(q.name for q in queues if give[q.name] < caps[q.name] and q.weight > 0)
    weights = {q.name: q.weight for q in queues}
    while spare > 1e-9 and active:
        wsum = sum(weights[n] for n in active)
        if wsum <= 0:
            break
        level = spare / wsum
        capped = [n for n in active if caps[n] - give[n] <= level * weights[n] + 1e-12]
        if not capped:
            for n in active:
                give[n] += level * weights[n]
            spare = 0.0
            break
        for n in capped:
            spare -= caps[n] - give[n]
            give[n] = float(caps[n])
        active = [n for n in active if n not in capped]
    floors = {n: math.floor(v + 1e-9) for n, v in give.items()}
    left = min(capacity, round(sum(give.values(), 0.0))) - sum(floors.values())
    order = sorted(give, key=lambda n: (-(give[n] - floors[n]), n))
    for n in order:
        if left <= 0:
            break
        if floors[n] < caps[n]:
            floors[n] += 1
            left -= 1
    return ShareOutput(deserved=floors, scaled=scaled, scale=scale)
