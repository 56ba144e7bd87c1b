"""Priority preemption within a queue: a higher-priority gang may evict lower-priority gangs of
its own queue, whole, if that lets it start now.

It stays inside the queue so that priority classes never become a way around fair share between
teams (that is what reclaim and its guards are for). Victims: strictly lower priority, not
already being evicted; lowest priority first, then (at one priority) those no PodDisruptionBudget
protects, then least run time lost. A budget orders victims; it never vetoes a needed
preemption.
"""

from __future__ import annotations

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
