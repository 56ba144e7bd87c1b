"""Reclaim: take lent capacity back, by evicting whole gangs of queues above their share.

The guards of PRODUCT.md §4, and why each exists:

* only a queue below its deserved share reclaims, and only for a gang that keeps it at or below
  that share — so a queue over its share can never reclaim;
* victims come only from other, reclaimable queues above their deserved share, and a victim queue
  is never taken below its deserved share — together with the previous guard this makes ping-pong
  impossible: after a reclaim the reclaimer is at or below its share and the victim at or above,
  so the victim cannot reclaim back;
* gangs already being evicted are skipped; gangs a PodDisruptionBudget protects right now come
  last (a budget orders victims, it never vetoes a needed reclaim: kube-scheduler treats budgets
  in preemption the same way);
* victims are ordered unprotected first, then lower queue priority, lower gang priority, least
  run time lost, and the search keeps the fewest gangs that let the waiting gang start now, or
  evicts nothing.
"""

from __future__ import annotations

from collections.abc import Callable

from phalanx.core.work import GangWork, QueueState, RunState


def can_reclaim(work: GangWork) -> bool:
    """Whether `work`'s queue is entitled to reclaim for it."""
    q = work.queue
    return q.alloc_fair < q.deserved and q.alloc_fair + work.fair <= q.deserved


def reclaim_candidates(
    work: GangWork, running: list[RunState], queues: dict[str, QueueState], now: float
) -> list[RunState]:
    """Running gangs that reclaim may consider, in eviction-preference order."""
    out: list[RunState] = []
    for r in running:
        g = r.gang
        q = queues.get(g.queue)
        if (
            r.evicted
            or g.evicting
            or q is None
            or q.name == work.queue.name
            or not q.queue.reclaimable
            or not q.over_share
        ):
            continue
        out.append(r)
    out.sort(
        key=lambda r: (
            r.gang.protected,
            queues[r.gang.queue].queue.priority,
            r.gang.priority,
            max(0.0, now - r.gang.start_time),
            r.gang.id,
        )
    )
    return out


def keeps_victim_share(
    queues: dict[str, QueueState],
) -> Callable[[RunState, list[RunState]], bool]:
    """Guard: a victim queue is never taken below its deserved share.

    `choose_victims` calls it with a list of chosen victims that only grows, so what each queue
    has given up is summed incrementally (a scan of `chosen` per candidate made long candidate
    lists quadratic).
    """
    taken: dict[str, int] = {}
    seen = 0

    def allowed(cand: RunState, chosen: list[RunState]) -> bool:
        nonlocal seen
        if len(chosen) < seen:
            taken.clear()
            seen = 0
        for c in chosen[seen:]:
            taken[c.gang.queue] = taken.get(c.gang.queue, 0) + c.fair
        seen = len(chosen)
        q = queues[cand.gang.queue]
        return q.alloc_fair - taken.get(q.name, 0) - cand.fair >= q.deserved

    return allowed


def reclaim_order(
    running: list[RunState], queues: dict[str, QueueState], now: float
) -> list[RunState]:
    """The running gangs reclaim may ever pick, in eviction-preference order (fixed for the
    cycle); `candidates_from` applies what changes during the walk."""
    out = [
        r
        for r in running
        if not r.gang.evicting
        and (q := queues.get(r.gang.queue)) is not None
        and q.queue.reclaimable
    ]
    out.sort(
        key=lambda r: (
            r.gang.protected,
            queues[r.gang.queue].queue.priority,
            r.gang.priority,
            max(0.0, now - r.gang.start_time),
            r.gang.id,
        )
    )
    return out


def candidates_from(
    order: list[RunState], work: GangWork, queues: dict[str, QueueState]
) -> list[RunState]:
    """`reclaim_candidates(work, …)` read off `reclaim_order`."""
    own = work.queue.name
    lenders = {name for name, q in queues.items() if q.over_share and name != own}
    return [r for r in order if not r.evicted and r.gang.queue in lenders]
