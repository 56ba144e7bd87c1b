"""Priority preemption within a queue: a higher-priority gang may evict lower-priority gangs of
its own queue, whole, if that lets it start now.

It stays inside the queue so that priority classes never become a way around fair share between
teams (that is what reclaim and its guards are for). Victims: strictly lower priority, not
already being evicted; lowest priority first, then (at one priority) those no PodDisruptionBudget
protects, then least run time lost. A budget orders victims; it never vetoes a needed
preemption.

Selective preemption (`Policy.preempt_starving`, off by default) lets a starving gang evict gangs
of its own queue at its own priority that waited much less than it for their time limits and ran
little (`starving_candidates`); the walk adds its other guards.
"""

from __future__ import annotations

import math

from phalanx.core.work import GangWork, RunState


def preemption_candidates(work: GangWork, running: list[RunState], now: float) -> list[RunState]:
    """Running gangs of the same queue that `work` may preempt, in eviction-preference order."""
    prio = work.gang.priority
    out = [
        r
        for r in running
        if r.gang.queue == work.queue.name
        and r.gang.priority < prio
        and not (r.evicted or r.gang.evicting)
    ]
    out.sort(
        key=lambda r: (
            r.gang.priority,
            r.gang.protected,
            max(0.0, now - r.gang.start_time),
            r.gang.id,
        )
    )
    return out


def preemption_order(running: list[RunState], now: float) -> dict[str, list[RunState]]:
    """Per queue, the gangs preemption may ever pick, in eviction-preference order.

    The order is fixed for the cycle (priority first), so the candidates of a gang are the prefix
    of its queue's list below its priority, minus gangs evicted since: computed once instead of
    filtering and sorting every running gang for each gang that asks."""
    out: dict[str, list[RunState]] = {}
    for r in running:
        if not r.gang.evicting:
            out.setdefault(r.gang.queue, []).append(r)
    for items in out.values():
        items.sort(
            key=lambda r: (
                r.gang.priority,
                r.gang.protected,
                max(0.0, now - r.gang.start_time),
                r.gang.id,
            )
        )
    return out


def candidates_from(order: dict[str, list[RunState]], work: GangWork) -> list[RunState]:
    """`preemption_candidates(work, …)` read off `preemption_order`."""
    prio = work.gang.priority
    out: list[RunState] = []
    for r in order.get(work.queue.name, ()):
        if r.gang.priority >= prio:
            break
        if not r.evicted:
            out.append(r)
    return out


def expansion(wait: float, limit: float) -> float:
    """Expansion factor (wait + time limit) / time limit: the slowdown a gang that runs to its
    limit sees. A gang without a limit: 1 (no wait is long beside a run without end)."""
    if limit == math.inf or limit <= 0:
        return 1.0
    return (max(0.0, wait) + limit) / limit


def starving_candidates(
    running: list[RunState], work: GangWork, now: float, factor: float
) -> list[RunState]:
    """Running gangs of `work`'s queue that the starving `work` may evict under
    `Policy.preempt_starving` (suspension factor `factor`), fewest GPU-seconds lost first.

    A candidate has a priority no higher than `work`'s, a known creation time, an expansion
    factor (at its start) at most 1/`factor` of `work`'s now, and has run no longer than
    `factor` × `work`'s time limit. `work` must have a time limit (without one its expansion
    factor never grows)."""
    limit = work.duration
    if limit == math.inf:
        return []
    mine = expansion(now - work.gang.creation_time, limit)
    most_run = factor * limit
    out: list[tuple[float, str, RunState]] = []
    for r in running:
        g = r.gang
        if (
            g.queue != work.queue.name
            or g.priority > work.gang.priority
            or r.evicted
            or g.evicting
            or g.creation_time is None
        ):
            continue
        ran = max(0.0, now - g.start_time)
        if ran > most_run:
            continue
        theirs = expansion(
            g.start_time - g.creation_time, math.inf if g.time_limit is None else g.time_limit
        )
        if mine < factor * theirs:
            continue
        out.append((r.fair * ran, g.id, r))
    out.sort(key=lambda x: (x[0], x[1]))
    return [r for _, _, r in out]
