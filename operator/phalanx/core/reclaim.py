"""Reclaim: take lent capacity back, by evicting whole gangs of queues above their share.

The guards of PRODUCT.md §4, and why each exists:

* only a queue below its deserved share reclaims, and only for a gang that keeps it at or below
  that share — so a queue over its share can never reclaim;
* victims come only from other, reclaimable queues above their deserved share, and a victim queue
  is never taken below its deserved share — together with the previous guard this makes ping-pong
  impossible: after a reclaim the reclaimer is at or below its share and the victim at or above,
  so the victim cannot reclaim back;
* never from a queue of higher priority than the reclaimer's: it is served first (PRODUCT.md §4,
  "Order"), so its evicted gang, pending again and fitting exactly where it ran, takes back the
  next cycle what was freed, and the reclaimer evicts again, for ever (found replaying Philly with
  one queue served first: one queue reclaimed the same two gangs 25 times in four minutes, each
  restart throwing the run away, and the victims never finished). Slurm's partition
  `PriorityTier` is the same rule: a lower tier never preempts a higher one;
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
            or q.queue.priority > work.queue.queue.priority
        ):
            continue
        out.append(r)
    out.sort(key=_victim_key(queues, now))
    return out


def _victim_key(
    queues: dict[str, QueueState],
    now: float,
    by_gpu_time: bool = False,
    newest_first: bool = False,
) -> Callable[[RunState], tuple[bool, int, int, float, str]]:
    """Reclaim's eviction preference: unprotected first, then lower queue priority, lower gang
    priority, least run lost (time run, or GPUs × time run with `by_gpu_time`), then id. With
    `newest_first` (`Policy.reclaim_newest_first`) the least time since the gang was created
    instead of the least run: a gang evicted before restarts with the least run of all and, by
    run, would be the first victim again and again."""

    def key(r: RunState) -> tuple[bool, int, int, float, str]:
        if newest_first and r.gang.creation_time is not None:
            lost = max(0.0, now - r.gang.creation_time)
        else:
            lost = max(0.0, now - r.gang.start_time) * (r.fair if by_gpu_time else 1)
        return (
            r.gang.protected,
            queues[r.gang.queue].queue.priority,
            r.gang.priority,
            lost,
            r.gang.id,
        )

    return key


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
    running: list[RunState],
    queues: dict[str, QueueState],
    now: float,
    by_gpu_time: bool = False,
    newest_first: bool = False,
) -> list[RunState]:
    """The running gangs reclaim may ever pick, in eviction-preference order (fixed for the
    cycle); `candidates_from` applies what changes during the walk. `by_gpu_time`
    (`Policy.reclaim_by_gpu_time`): the run lost is weighed by the gang's fair-share amount;
    `newest_first` (`Policy.reclaim_newest_first`): the newest gangs go first."""
    out = [
        r
        for r in running
        if not r.gang.evicting
        and (q := queues.get(r.gang.queue)) is not None
        and q.queue.reclaimable
    ]
    out.sort(key=_victim_key(queues, now, by_gpu_time, newest_first))
    return out


def lends(q: QueueState, tolerance: float = 0.0) -> bool:
    """Whether reclaim may take from queue `q`: it holds more than its deserved share, by more
    than `tolerance` × that share (`Policy.reclaim_tolerance`; at 0 this is `over_share`)."""
    return q.alloc_fair > q.deserved * (1.0 + tolerance)


def candidates_from(
    order: list[RunState],
    work: GangWork,
    queues: dict[str, QueueState],
    tolerance: float = 0.0,
) -> list[RunState]:
    """`reclaim_candidates(work, …)` read off `reclaim_order`, from `lenders`."""
    open_ = set(lenders(queues, work.queue, tolerance))
    return [r for r in order if not r.evicted and r.gang.queue in open_]


def lenders(
    queues: dict[str, QueueState], own: QueueState, tolerance: float = 0.0
) -> tuple[str, ...]:
    """The queues other than `own` that reclaim for a gang of `own` may take from (`lends`),
    in `queues`' order: none of higher priority than `own`'s (see the module docstring)."""
    top = own.queue.priority
    return tuple(
        name
        for name, q in queues.items()
        if name != own.name and q.queue.priority <= top and lends(q, tolerance)
    )


def smallest_gangs(running: list[RunState]) -> dict[str, int]:
    """Per queue, the fair-share amount its smallest running gang holds (gangs not already
    being evicted): the least that reclaim could take from it."""
    out: dict[str, int] = {}
    for r in running:
        if r.evicted or r.gang.evicting:
            continue
        q = r.gang.queue
        out[q] = min(out.get(q, r.fair), r.fair)
    return out


def why_not_reclaimed(
    work: GangWork,
    queues: dict[str, QueueState],
    smallest: dict[str, int],
    tolerance: float = 0.0,
) -> str:
    """Why reclaim did not start `work`, whose queue is entitled to reclaim (`can_reclaim`), in
    numbers: what a user who reads "within its share" asks next is why nothing was evicted.
    `smallest` is `smallest_gangs` of the running gangs.

    In the guards' order: no queue borrows beyond its share; those that borrow are all of
    higher priority (served first, they would take back what reclaim freed); they are not
    reclaimable; each reclaimable lender's every running gang is larger than what it borrows,
    so evicting any would take it below its deserved share (a whole gang or nothing); else the
    gangs that may be taken do not free room where `work` fits (their nodes, its topology).
    """
    own = work.queue.name
    over = [q for name, q in queues.items() if q.over_share and name != own]
    if not over:
        return "reclaim has nothing to take back: no other queue borrows beyond its share"
    top = work.queue.queue.priority
    above = [q for q in over if q.queue.priority > top]
    if len(above) == len(over):
        return (
            f"reclaim leaves what {_borrow(above)} alone: of higher priority than this queue's "
            f"{top}, served first, {'it' if len(above) == 1 else 'they'} would take back what "
            "it freed"
        )
    over = [q for q in over if q.queue.priority <= top]
    lenders = [q for q in over if lends(q, tolerance)]
    if not lenders:
        return (
            f"reclaim leaves what {_borrow(over)} alone: within {tolerance:.0%} of "
            f"{'its' if len(over) == 1 else 'their'} deserved share{'' if len(over) == 1 else 's'}"
        )
    open_ = [q for q in lenders if q.queue.reclaimable]
    if not open_:
        return f"reclaim cannot take back what {_borrow(lenders)}: not reclaimable"
    if all(smallest.get(q.name, 0) > q.alloc_fair - q.deserved for q in open_):
        # Every lender is in `smallest` here: one without a gang to evict has 0, not more.
        parts = ", ".join(
            f"{q.name} borrows {q.alloc_fair - q.deserved} beyond its deserved {q.deserved} "
            f"and its smallest running gang holds {smallest[q.name]}"
            for q in open_
        )
        return (
            f"reclaim cannot make room: {parts} "
            "(it evicts whole gangs and never takes a queue below its deserved share)"
        )
    return (
        f"reclaim cannot make room: evicting the gangs it may take of what {_borrow(open_)} "
        "frees no place where it fits"
    )


def _borrow(queues: list[QueueState]) -> str:
    """What the lenders hold beyond their shares: "b borrows (8 beyond its share)", "b (8) and
    c (4) borrow beyond their shares"."""
    if len(queues) == 1:
        q = queues[0]
        return f"{q.name} borrows ({q.alloc_fair - q.deserved} beyond its share)"
    names = [f"{q.name} ({q.alloc_fair - q.deserved})" for q in queues]
    return ", ".join(names[:-1]) + f" and {names[-1]} borrow beyond their shares"
