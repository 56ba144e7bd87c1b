"""One scheduling cycle: `schedule(snapshot, policy, now) -> CycleResult`.

The pipeline, in order:

1. prepare — index resources, build the topology tree, occupy nodes with running gangs, validate
   queues and gangs (bad input becomes a typed reason on that gang only);
2. fair share — each queue's demand, fair-share factor and deserved share (water-filling);
3. order — gangs within each queue; queues are re-picked after every gang (priority, then the one
   furthest below its share), so the walk interleaves queues as they fill;
4. for each gang in that walk: refuse it if its queue would go over its limit; else try to start it
   now (all or nothing, never delaying a reservation); else, if capacity already being freed would
   do, hold it; else reclaim from over-share queues, else preempt lower priority in its queue; else
   give it a reservation (within the backfill depth) that later gangs must not delay;
5. members beyond `minMember` of the gangs bound now, where they fit;
6. results: bindings, evictions, reservations, a decision per pending gang, queue figures.

Nothing here reads a clock, talks to an API or depends on set or dict iteration order beyond
insertion order of sorted inputs, so the same snapshot always gives the same result.
"""

from __future__ import annotations

import gc
import math
import statistics
from dataclasses import dataclass, field, replace
from typing import Any

from phalanx.core import preemption, reclaim
from phalanx.core.backfill import Plan, earliest_start, start_on_due
from phalanx.core.capacity import BORROWED, KEPT, ClusterState
from phalanx.core.capacity_views import LeafCache, NodeCache, NowView, PlanCache, PlanNodeCache
from phalanx.core.fairshare import ShareInput, fair_share_factor, water_fill
from phalanx.core.futuremin import FutureMinCache
from phalanx.core.model import (
    CycleResult,
    Eviction,
    GangDecision,
    Member,
    PendingDetail,
    Placement,
    Policy,
    QueueStatus,
    Reservation,
    Snapshot,
)
from phalanx.core.never_fits import MORE_THAN_THE_CLUSTER, never_fits
from phalanx.core.ordering import GangKey, gang_order, queue_key, starvation_bound
from phalanx.core.placement import Outcome, Shape, place
from phalanx.core.prepare import Prepared, prepare
from phalanx.core.reasons import (
    YIELDS_WHEN_DUE,
    EvictionReason,
    Reason,
    eta_phrase,
    format_duration,
    too_few_phrase,
    units,
)
from phalanx.core.reclaim import can_reclaim, keeps_victim_share
from phalanx.core.resources import UNLIMITED, count_fit
from phalanx.core.shapecaps import ShapeCapsCache
from phalanx.core.victims import choose_victims
from phalanx.core.work import GangWork, QueueState, RunningExtras, RunState


@dataclass(slots=True)
class _Cycle:
    """Mutable bookkeeping of the walk."""

    prep: Prepared
    policy: Policy
    now: float
    cache: LeafCache = field(default_factory=dict)
    bound: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    bind_order: list[GangWork] = field(default_factory=list)
    bound_leaves: dict[str, list[int]] = field(default_factory=dict)
    #: Waiting members of running gangs placed this cycle (`CycleResult.extra_bindings`).
    extra_bound: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    #: Why waiting members of running gangs were not placed (`CycleResult.extras_waiting`).
    extras_waiting: dict[str, str] = field(default_factory=dict)
    #: Running gangs whose waiting members this walk has tried to place.
    extras_walked: set[str] = field(default_factory=set)
    reasons: dict[str, GangDecision] = field(default_factory=dict)
    evictions: list[Eviction] = field(default_factory=list)
    reservations: dict[str, Reservation] = field(default_factory=dict)
    #: (shape id, required, preferred) → [(end, pods)] that failed to start now: capacity now
    #: only shrinks during the walk, so a gang as large and as long fails too.
    failed: dict[tuple[int, int | None, int | None], list[tuple[float, int]]] = field(
        default_factory=dict
    )
    #: Leaf capacities at future times, shared by the backfill sweeps (see `SweepMemo`).
    plan_cache: PlanCache = field(default_factory=dict)
    #: Per-node answers: now (shared by every view of the present) and at sweep times.
    node_cache: NodeCache = field(default_factory=dict)
    plan_nodes: PlanNodeCache = field(default_factory=dict)
    #: Per (shape, window end): leaves with room now, kept current (see `ShapeCaps`).
    shape_caps: ShapeCapsCache = field(default_factory=dict)
    #: The same ignoring holds (for `loose_cache`).
    loose_index: ShapeCapsCache = field(default_factory=dict)
    #: Per-node least-future-GPU lists for sweeps of gangs that never end (see `ForeverBound`).
    future: FutureMinCache = field(default_factory=dict)
    #: Leaf capacities ignoring holds (to tell "reserved" from "too small" in messages).
    loose_cache: LeafCache = field(default_factory=dict)
    #: Eviction searches that found nothing: key → [(pods, duration)].
    no_victims: dict[tuple[object, ...], list[tuple[int, float]]] = field(default_factory=dict)
    depth_used: int = 0
    first_reserved: str | None = None
    #: Binding reservations made this cycle per queue (for `backfill_depth_per_queue`).
    reserved_in: dict[str, int] = field(default_factory=dict)
    #: Fair-share units (GPUs) of those reservations per queue (`Policy.charge_reservations`).
    reserved_fair: dict[str, int] = field(default_factory=dict)
    #: Why a gang within the depth holds no binding reservation (for its message).
    unreserved: dict[str, str] = field(default_factory=dict)
    #: Those gangs, explained after the walk: their non-binding ETA is planned on what the
    #: whole walk bound and reserved, so it is not made stale by the gangs walked after them.
    deferred: list[tuple[GangWork, float, Outcome]] = field(default_factory=list)
    #: `Policy.owed_slip`: gangs of queues below their share that fit now only on held
    #: capacity, in walk order (at most `_SLIP_TRIES`), each with how many gangs were bound
    #: before it in the walk; and the shapes found not to fit even so.
    slippers: list[tuple[str, int]] = field(default_factory=list)
    no_slip: set[tuple[int, int | None, int | None]] = field(default_factory=set)
    #: `Policy.speculate`: gangs started on held capacity, with when they yield it.
    speculative: dict[str, float] = field(default_factory=dict)


def _queue_shares(prep: Prepared, policy: Policy) -> tuple[bool, float]:
    """Fill in demand, fair-share factor and deserved share of every queue."""
    fair_pos = prep.fair_pos
    for w in prep.works:
        if not w.waiting_for_pods or w.phantom:
            w.queue.demand += w.fair
    valid = [q for q in prep.queues.values() if not q.invalid]
    total_usage = sum(max(0.0, q.queue.usage) for q in valid)
    total_weight = sum(q.queue.weight for q in valid)
    inputs: list[ShareInput] = []
    for q in valid:
        u = max(0.0, q.queue.usage) / total_usage if total_usage > 0 else 0.0
        s = q.queue.weight / total_weight if total_weight > 0 else 0.0
        q.fair_share = fair_share_factor(u, s)
        limit = q.limit[fair_pos] if q.limit is not None else UNLIMITED
        demand = q.alloc_fair + q.demand
        q.demand = demand
        inputs.append(
            ShareInput(
                name=q.name,
                weight=q.queue.weight * q.fair_share,
                guarantee=max(0, q.queue.guarantee.get(policy.fair_share_resource, 0)),
                limit=limit,
                demand=demand,
            )
        )
    out = water_fill(prep.capacity_fair, inputs)
    for q in valid:
        q.deserved = out.deserved.get(q.name, 0)
    return out.scaled, out.scale


def _over_limit(w: GangWork, pos: dict[str, int]) -> str:
    """Why starting `w` would take its queue over its limit ('' when it would not)."""
    q = w.queue
    limit = q.queue.limit
    if not limit:
        return ""
    for name, cap in sorted(limit.items()):
        i = pos.get(name)
        if i is None:
            continue
        have, want = q.alloc[i], w.total[i]
        if want and have + want > cap:
            return (
                f"queue {q.name} would hold {have + want} {name}, over its limit of {cap} "
                f"(it holds {have}, this gang needs {want})"
            )
    return ""


class Walk:
    """The walk of one cycle (a class only to share its bookkeeping between steps)."""

    def __init__(
        self, prep: Prepared, policy: Policy, now: float, first: str | None = None
    ) -> None:
        self.c = _Cycle(prep, policy, now)
        #: `Policy.owed_slip`: a gang started before anything is planned (the second walk).
        self.first = first
        self.prep = prep
        self.policy = policy
        self.now = now
        self.state = prep.state
        self.state.align_ends = policy.align_ends
        self.state.pack_marks = self._pack_marks() if policy.pack_borrowed else None
        self.state.whole_gpu = (
            [a[0] if a else 0 for a in prep.allocatable] if policy.keep_whole_nodes else None
        )
        #: Eviction candidates in preference order, sorted once when first needed.
        self._reclaim_order: list[RunState] | None = None
        self._preempt_order: dict[str, list[RunState]] | None = None
        #: Candidate lists read off those orders, by what they depend on (see try_evictions).
        self._candidates: dict[tuple[object, ...], list[RunState]] = {}
        #: Earliest starts swept by `_worth_preempting` for gangs that then evicted nothing:
        #: nothing changed since, so `plan` takes them instead of sweeping again.
        self._swept: dict[str, Plan | None] = {}
        #: `_queue_of`: each pending gang's queue by gang id (`Policy.share_over_holds`).
        self._queue_by_gang: dict[str, QueueState] | None = None
        #: `reclaim.smallest_gangs` for the reclaim clause of messages, by evictions made so far.
        self._smallest: tuple[int, dict[str, int]] | None = None
        #: `Policy.owed_whole_nodes`: pending gangs that could be owed their queue's share
        #: (`_owed_waiting`), listed when first asked.
        self._owed_cands: list[GangWork] | None = None
        #: Nodes that take no pods (cordoned or not ready), counted once when a message asks.
        self._off: int | None = None
        #: Lowest priority among running gangs of each queue (preemption is possible above it).
        self.lowest: dict[str, int] = {}
        for r in prep.running:
            if not r.gang.evicting:
                q = r.gang.queue
                self.lowest[q] = min(self.lowest.get(q, r.gang.priority), r.gang.priority)
        #: Speculative gangs whose capacity is held for a reservation by now (`Policy.speculate`):
        #: a gang whose start is due on that capacity evicts them.
        self.yielding = [
            r
            for r in prep.running
            if r.gang.yield_by is not None
            and r.gang.yield_by <= now
            and not r.gang.evicting
            and not r.evicted
        ]
        #: The fewest pods of a gang whose reservation is honoured (policy and topology are
        #: fixed for the walk; `_honoured_size_of` asks for every starving gang).
        self.honoured_from = self._honoured_from()
        #: `Policy.reserve_after_peers`: the least starvation bound the recent starts' waits
        #: set (k × their median slowdown with `peers_by_slowdown`), per queue
        #: (`peers_per_queue`) or for every queue (key "").
        self.peer_bound = self._peer_bounds()
        #: `Policy.peers_below_leaves`: the fewest pods of a gang that keeps its own bound.
        self.peers_from = self._pods_of_leaves(policy.peers_below_leaves)

    def _pack_marks(self) -> list[int]:
        """`Policy.pack_borrowed`: per node, whether it holds work of queues at or within their
        deserved shares (`KEPT`) or above (`BORROWED`), from the running gangs not being
        evicted (gangs the walk evicts keep their marks until the next cycle)."""
        marks = [0] * len(self.state.free)
        queues = self.prep.queues
        for r in self.prep.running:
            if r.evicted or r.gang.evicting:
                continue
            q = queues.get(r.gang.queue)
            bit = BORROWED if q is not None and q.over_share else KEPT
            for n, _ in r.nodes:
                marks[n] |= bit
        return marks

    def _pack_side(self, w: GangWork) -> int:
        """`Policy.pack_borrowed`: `BORROWED` when `w` would take its queue beyond its deserved
        share, else `KEPT`; 0 when the setting is off."""
        if self.state.pack_marks is None:
            return 0
        q = w.queue
        return BORROWED if q.alloc_fair + w.fair > q.deserved else KEPT

    # -- start now ---------------------------------------------------------------------------

    def try_now(self, w: GangWork, end: float) -> Outcome:
        """Place `w` on capacity usable now until `end`, with a memo of hopeless shapes."""
        key = _shape_key(w)
        k = 0
        if key is not None:
            k = len(w.shapes[0].pods)
            for f_end, f_k in self.c.failed.get(key, ()):
                if f_end <= end and f_k <= k:
                    return Outcome(None)
        if w.gpus > self.state.total_gpu:
            out = Outcome(None)
        else:
            out = place(
                NowView(
                    self.state,
                    self.now,
                    end,
                    self.c.cache,
                    node_cache=self.c.node_cache,
                    index=self.c.shape_caps,
                    side=self._pack_side(w),
                    whole=self.policy.keep_whole_nodes,
                ),
                w.shapes,
                w.required_level,
                w.preferred_level,
            )
        if out.assignment is None and key is not None:
            self.c.failed.setdefault(key, []).append((end, k))
        return out

    def commit_now(self, w: GangWork, out: Outcome, end: float) -> None:
        """Bind `w` where `out` placed it: take the capacity, record when it comes back (`end`),
        and record the binding (`CycleResult.bindings`, in bind order)."""
        assert out.assignment is not None
        c, gid = self.c, w.gang.id
        c.bound[gid] = out.assignment
        c.bind_order.append(w)
        c.bound_leaves[gid] = out.leaves
        vec_of = {p: s.vec for s in w.shapes for p in s.pods}
        per_node: dict[int, list[int]] = {}
        for pod, n in out.assignment:
            acc = per_node.setdefault(n, [0] * len(w.total))
            for i, v in enumerate(vec_of[pod]):
                acc[i] += v
        marks = self.state.pack_marks
        if marks is not None:
            side = self._pack_side(w)
            for n in per_node:
                marks[n] |= side
        for n, vec in sorted(per_node.items()):
            self.state.change(n, vec, -1)
            if end < math.inf:
                self.state.add_release(end, n, vec, w.gang.id)
            else:
                self.state.unlimited_gpu[n] += vec[0]
        self._charge(w.queue, w.total, w.fair)

    def _charge(self, q: QueueState, total: list[int], fair: int) -> None:
        for i, v in enumerate(total):
            q.alloc[i] += v
        q.alloc_fair += fair

    def hold(self, w: GangWork, assignment: list[tuple[str, int]], start: float) -> Reservation:
        """Promise capacity to `w` from `start` for its duration; later gangs must respect it."""
        vec_of = {p: s.vec for s in w.shapes for p in s.pods}
        per_node: dict[int, list[int]] = {}
        for pod, n in assignment:
            acc = per_node.setdefault(n, [0] * len(w.total))
            for i, v in enumerate(vec_of[pod]):
                acc[i] += v
        end = start + w.duration
        for n, vec in sorted(per_node.items()):
            self.state.add_hold(n, start, end, vec, w.gang.id)
        names = self.prep.topo.node_names
        res = Reservation(
            gang=w.gang.id,
            start=start,
            nodes=tuple(sorted({names[n] for n in per_node})),
            pods={pod: names[n] for pod, n in sorted(assignment)},
        )
        self.c.reservations[w.gang.id] = res
        if self.c.first_reserved is None:
            self.c.first_reserved = w.gang.id
        return res

    def _promise(self, w: GangWork) -> None:
        """Charge `w`'s queue for capacity held for it *now* (freed by evictions it caused, or
        by gangs already stopping): it starts there as soon as they have stopped, so for the rest
        of the cycle the queue's share counts it (`QueueState.alloc`: "promised to
        reclaimers"). Without this, every gang of a queue below its share passed the reclaim
        guard against the same allocation, and together they reclaimed past the share, which
        the next cycles reclaimed back (bench/SIM.md, "reclaim churn")."""
        if self.policy.charge_promised:
            self._charge(w.queue, w.total, w.fair)

    # -- evictions -----------------------------------------------------------------------------

    def evict(self, victims: list[RunState], reason: EvictionReason, w: GangWork) -> None:
        """Record whole-gang evictions; their capacity returns 'now' for plans, not for binds."""
        for v in sorted(victims, key=lambda v: v.gang.id):
            v.evicted = True
            q = self.prep.queues.get(v.gang.queue)
            total = [0] * len(w.total)
            self.state.drop_releases(v.gang.id, [n for n, _ in v.nodes])
            for n, vec in v.nodes:
                self.state.add_release(self.now, n, vec, v.gang.id)
                if v.end == math.inf:
                    self.state.unlimited_gpu[n] -= vec[0]
                for i, x in enumerate(vec):
                    total[i] += x
            if q is not None:
                for i, x in enumerate(total):
                    q.alloc[i] -= x
                q.alloc_fair -= v.fair
                q.running -= 1
            if reason is EvictionReason.RESERVATION_DUE:
                message = (
                    f"started speculatively on capacity held for a reservation; the start of "
                    f"{w.gang.id} (queue {w.queue.name}) is due on it now"
                )
            else:
                verb = "reclaim" if reason is EvictionReason.RECLAIMED else "preempt"
                message = (
                    f"evicted to {verb} capacity for {w.gang.id} "
                    f"(queue {w.queue.name}, priority {w.gang.priority})"
                )
            self.c.evictions.append(
                Eviction(gang=v.gang.id, reason=reason, for_gang=w.gang.id, message=message)
            )

    def _hopeless(self, kind: str, w: GangWork) -> bool:
        """Whether a gang like `w` (same queue, shape, priority; no smaller, no shorter) already
        found no victims this cycle. Free capacity and candidates mostly only shrink during the
        walk, so it would fail again; in the rare case it would not (a victim queue grew this
        cycle), the next cycle finds it."""
        if len(w.shapes) != 1:
            return False
        key = (
            kind,
            w.queue.name,
            w.gang.priority,
            w.shapes[0].id,
            w.required_level,
            w.preferred_level,
        )
        k, end = len(w.shapes[0].pods), w.duration
        return any(fk <= k and fe <= end for fk, fe in self.c.no_victims.get(key, ()))

    def _no_victims(self, kind: str, w: GangWork) -> None:
        if len(w.shapes) == 1:
            key = (
                kind,
                w.queue.name,
                w.gang.priority,
                w.shapes[0].id,
                w.required_level,
                w.preferred_level,
            )
            self.c.no_victims.setdefault(key, []).append((len(w.shapes[0].pods), w.duration))

    def try_evictions(self, w: GangWork) -> tuple[str, Outcome] | None:
        """Reclaim, then preemption; returns the description and the placement it allows."""
        prep, now = self.prep, self.now
        if self.policy.reclaim and can_reclaim(w) and not self._hopeless("reclaim", w):
            if self._reclaim_order is None:
                self._reclaim_order = reclaim.reclaim_order(
                    prep.running,
                    prep.queues,
                    now,
                    self.policy.reclaim_by_gpu_time,
                    self.policy.reclaim_newest_first,
                )
            tol = self.policy.reclaim_tolerance
            lenders = reclaim.lenders(prep.queues, w.queue, tol)
            # Candidates change only with the lenders and with evictions (`evicted` flags).
            ckey: tuple[object, ...] = ("reclaim", lenders, len(self.c.evictions))
            cands = self._candidates.get(ckey)
            if cands is None:
                cands = self._candidates[ckey] = [
                    r
                    for r in reclaim.candidates_from(self._reclaim_order, w, prep.queues, tol)
                    if not self._spared_by_reclaim(r)
                ]
            if cands:
                guard = keeps_victim_share(prep.queues)
                got = choose_victims(
                    self.state,
                    w,
                    cands,
                    guard,
                    now,
                    self.c.cache,
                    self.c.node_cache,
                    index=self.c.shape_caps,
                )
                if got is not None:
                    victims, out = got
                    self.evict(victims, EvictionReason.RECLAIMED, w)
                    return "reclaiming from " + _victim_list(victims), out
            self._no_victims("reclaim", w)
        if self.policy.preemption and not self._hopeless("preempt", w):
            if self._preempt_order is None:
                self._preempt_order = preemption.preemption_order(prep.running, now)
            ckey = ("preempt", w.queue.name, w.gang.priority, len(self.c.evictions))
            cands = self._candidates.get(ckey)
            if cands is None:
                cands = self._candidates[ckey] = preemption.candidates_from(self._preempt_order, w)
            if cands:
                got = self._within_queue(w, cands)
                if got is not None:
                    victims, out = got
                    self.evict(victims, EvictionReason.PREEMPTED, w)
                    return "preempting lower priority " + _victim_list(victims), out
            self._no_victims("preempt", w)
        if self._may_preempt_starving(w):
            # No `_hopeless` memo: the candidates depend on the gang's age, not only its shape.
            factor = self.policy.preempt_starving
            cands = [
                r
                for r in preemption.starving_candidates(prep.running, w, now, factor)
                if not self._would_start_first(r)
            ]
            if cands:
                got = self._within_queue(w, cands)
                if got is not None and self._worth_preempting(w, got[0]):
                    victims, out = got
                    self.evict(victims, EvictionReason.PREEMPTED, w)
                    return (
                        f"starving, preempting {_victim_list(victims)} that waited less for "
                        "their time limits and ran little"
                    ), out
        return None

    def _within_queue(
        self, w: GangWork, cands: list[RunState]
    ) -> tuple[list[RunState], Outcome] | None:
        """`choose_victims` among gangs of `w`'s own queue (preemption: no share guard)."""
        c = self.c
        return choose_victims(
            self.state, w, cands, _any, self.now, c.cache, c.node_cache, index=c.shape_caps
        )

    def _worth_preempting(self, w: GangWork, victims: list[RunState]) -> bool:
        """Selective preemption throws away the victims' run so far (they restart from zero):
        only when that is no more GPU-time than `w` would otherwise wait — its GPUs × the time to
        its earliest start without evicting (a gang that starts within hours anyway does not
        evict dozens of gangs for it)."""
        now, q = self.now, w.queue
        if q.alloc_fair - sum(v.fair for v in victims) + w.fair > q.deserved:
            # Beyond its queue's share once they are gone, it would not start first (rule 4's
            # share guard): the walk would hand what they freed to other gangs, and it would
            # evict again the next cycle.
            return False
        lost = sum(v.fair * max(0.0, now - v.gang.start_time) for v in victims)
        plan = earliest_start(self.state, w, now, future=self.c.future, **self._caches())
        if plan is None or lost <= w.fair * (plan.start - now):
            return True
        self._swept[w.gang.id] = plan
        return False

    # -- the walk ------------------------------------------------------------------------------

    def run(self) -> None:
        prep, policy, now = self.prep, self.policy, self.now
        by_queue: dict[str, list[GangWork]] = {}
        for w in prep.works:
            by_queue.setdefault(w.queue.name, []).append(w)
        extras_of: dict[str, list[RunningExtras]] = {}
        for rx in prep.running_extras:
            if rx.queue is not None and rx.extras:
                extras_of.setdefault(rx.queue.name, []).append(rx)
        ordered: dict[str, list[GangWork]] = {}
        walk: dict[str, list[GangWork | RunningExtras]] = {}
        for name in sorted(by_queue.keys() | extras_of.keys()):
            items = by_queue.get(name, [])
            running = extras_of.get(name, [])
            keys = [self._key(w) for w in items] + [self._extras_key(rx) for rx in running]
            order = gang_order(
                keys,
                now,
                policy.age_weight,
                policy.size_weight,
                policy.work_weight,
                policy.age_max,
                policy.aged_first,
            )
            walk[name] = [items[i] if i < len(items) else running[i - len(items)] for i in order]
            ordered[name] = [w for w in walk[name] if isinstance(w, GangWork)]
            for pos, w in enumerate(ordered[name], start=1):
                w.position = pos
        first: set[str] = set()
        w1 = next((w for w in prep.works if w.gang.id == self.first), None)
        if w1 is not None and self.step(w1):
            first.add(w1.gang.id)
        decided = self.reserve_for_starving(ordered, first)
        cursor = dict.fromkeys(walk, 0)
        while True:
            best: tuple[tuple[int, float, float, str], str] | None = None
            for name, entries in walk.items():
                while cursor[name] < len(entries) and _walked(entries[cursor[name]], decided):
                    cursor[name] += 1
                if cursor[name] < len(entries):
                    q = prep.queues[name]
                    weight = q.queue.weight * q.fair_share
                    alloc = q.alloc_fair
                    if policy.reservations_in_walk_order:
                        alloc += self.c.reserved_fair.get(name, 0)
                    key = queue_key(q.queue.priority, alloc, q.deserved, weight, name)
                    if best is None or key < best[0]:
                        best = (key, name)
            if best is None:
                break
            name = best[1]
            entry = walk[name][cursor[name]]
            cursor[name] += 1
            if isinstance(entry, GangWork):
                self.step(entry)
            else:
                self.place_running_extras(entry)
        self.explain_deferred()
        self.rank_without_never_fitting(ordered)

    def rank_without_never_fitting(self, ordered: dict[str, list[GangWork]]) -> None:
        """Number each queue's gangs again without those the walk found nothing could ever
        hold: they are walked and told so, but ranked nowhere, as Kueue keeps a workload no
        flavor can ever admit out of its queue's positions. Walked: a 16-GPU pod on 8-GPU nodes
        said position 1, and every gang behind it one more than true, though it delays none of
        them. Done after the walk (which finds them anyway) and only in a queue that has one,
        so the common cycle pays nothing."""
        reasons = self.c.reasons
        for gangs in ordered.values():
            if not any(w.never_fits for w in gangs):
                continue
            pos = 0
            for w in gangs:
                ranked: int | None = None
                if not w.never_fits:
                    pos += 1
                    ranked = pos
                d = reasons.get(w.gang.id)
                if d is not None and d.queue_position is not None and d.queue_position != ranked:
                    reasons[w.gang.id] = replace(d, queue_position=ranked)

    def reserve_for_starving(
        self, ordered: dict[str, list[GangWork]], first: set[str] | None = None
    ) -> set[str]:
        """Before the walk: binding reservations for gangs past their starvation bound (or owed
        their queue's share) that cannot start now, oldest first, queues in service order, at
        most `backfill_depth_per_queue` per queue. Decided here, they are planned before any
        other gang can take the capacity they wait for; every other gang (starving ones that
        fit now included) is then walked in the multifactor order and may start only where it
        delays none of these reservations. Returns the ids of the gangs decided, with `first`
        (those decided before it)."""
        policy, prep = self.policy, self.prep
        decided: set[str] = set(first or ())
        if not policy.backfill or not (self._bounded() or policy.reserve_under_share):
            return decided
        if policy.keep_reservations and prep.kept and not self._keep(ordered, decided):
            return decided
        queues = sorted(
            ordered,
            key=lambda n: queue_key(
                prep.queues[n].queue.priority,
                prep.queues[n].alloc_fair,
                prep.queues[n].deserved,
                prep.queues[n].queue.weight * prep.queues[n].fair_share,
                n,
            ),
        )
        for name in queues:
            hungry = [
                w
                for w in ordered[name]
                if w.gang.id not in decided and (self._starving(w) or self._owed_reserve(w))
            ]
            if policy.reserve_by_deadline:
                # Earliest deadline first, the deadline being when the gang starves.
                hungry.sort(
                    key=lambda w: (
                        -w.gang.priority,
                        w.gang.creation_time + self._bound(w),
                        w.gang.creation_time,
                        w.gang.id,
                    )
                )
            else:
                hungry.sort(key=lambda w: (-w.gang.priority, w.gang.creation_time, w.gang.id))
            q = prep.queues[name]
            for w in hungry:
                if self._capped(w):
                    continue
                if (
                    policy.reserve_borrowing_last
                    and q.alloc_fair >= q.deserved
                    and self._others_short(name)
                ):
                    continue
                if not self._may_plan(w):
                    return decided
                if policy.owed_first and not policy.evict_before_walk and self._could_evict(w):
                    # Left to the walk (it may reclaim there): the queues after this one in
                    # fair-share order reserve in the walk too, after it, not before it.
                    return decided
                if self.step(w, promoted=True):
                    decided.add(w.gang.id)
            if policy.owed_start_first:
                self.start_owed(ordered[name], decided)
        return decided

    def _keep(self, ordered: dict[str, list[GangWork]], decided: set[str]) -> bool:
        """`Policy.keep_reservations`: plan again, first, the gangs that held a binding
        reservation at the last cycle and still starve (or are owed their queue's share),
        the longest held first, so what was drained for them stays theirs. Adds them to
        `decided`; False when the backfill depth ran out (nothing more is planned)."""
        kept = self.prep.kept
        again = [
            w
            for items in ordered.values()
            for w in items
            if w.gang.id in kept
            and w.gang.id not in decided
            and (self._starving(w) or self._owed_reserve(w))
        ]
        again.sort(key=lambda w: (kept[w.gang.id], w.gang.creation_time, w.gang.id))
        for w in again:
            if self._capped(w):
                continue
            if not self._may_plan(w):
                return False
            if self.step(w, promoted=True):
                decided.add(w.gang.id)
        return True

    def start_owed(self, items: list[GangWork], decided: set[str]) -> None:
        """`owed_start_first`: the gangs of a queue below its deserved share that fit now and
        within that share start, in the queue's order, before the queues after it plan their
        starving gangs (see `Policy.owed_start_first`). A lone queue is owed nothing."""
        if not items:
            return
        q = items[0].queue
        if q.alloc_fair >= q.deserved or not self._others_want(q.name):
            return
        now, prep = self.now, self.prep
        for w in items:
            if q.alloc_fair >= q.deserved:
                return
            gid = w.gang.id
            if gid in decided or q.alloc_fair + w.fair > q.deserved or w.waiting_for_pods:
                continue
            nb = w.gang.not_before
            if (nb is not None and nb > now) or w.gpus > prep.capacity_gpu:
                continue
            if _over_limit(w, prep.index.pos):
                continue
            if self.try_now(w, now + w.duration).assignment is None:
                continue
            if self.step(w):
                decided.add(gid)

    def _others_short(self, me: str) -> bool:
        """Whether a queue other than `me` holds less than its deserved share."""
        return any(
            q.alloc_fair < q.deserved
            for name, q in self.prep.queues.items()
            if name != me and not q.invalid
        )

    def _borrows_too_long(self, w: GangWork) -> str:
        """Why `w` may not start beyond its queue's deserved share ('' when it may):
        `Policy.borrow_max_limit` — its time limit is longer than idle capacity is lent for,
        while another queue has demand that may reclaim it."""
        cap = self.policy.borrow_max_limit
        q = w.queue
        if cap <= 0 or w.duration <= cap or q.alloc_fair + w.fair <= q.deserved:
            return ""
        if not self._others_want(q.name):
            return ""
        limit = format_duration(w.duration) if math.isfinite(w.duration) else "none"
        return (
            f"queue {q.name} would hold {q.alloc_fair + w.fair} of its deserved {q.deserved}: "
            f"beyond its share only gangs with time limits up to {format_duration(cap)} start "
            f"(its limit {limit}), as reclaim would throw a longer run away"
        )

    def _others_want(self, me: str) -> bool:
        """Whether a queue other than `me` has demand (a share to compete with)."""
        return any(q.demand > 0 for name, q in self.prep.queues.items() if name != me)

    def step(self, w: GangWork, promoted: bool = False) -> bool:
        """Decide one gang (see the module docstring, step 4); returns whether it was decided.

        `promoted` (a starving gang before the walk, see `reserve_for_starving`): a gang that
        could start now, or that is not an ordinary waiting gang, is left undecided for the
        walk, which starts it in its turn."""
        c, now = self.c, self.now
        gid = w.gang.id
        end = now + w.duration
        if promoted and (
            w.waiting_for_pods
            or _over_limit(w, self.prep.index.pos)
            or w.gpus > self.prep.capacity_gpu
            or (not self.policy.evict_before_walk and self._could_evict(w))
            or (self.try_now(w, end).assignment is not None and not self._starts_first(w))
        ):
            return False
        if w.waiting_for_pods:
            eta: float | None = None
            ending = 0
            held_now: bool | None = None  # fits now: whether its capacity is held for it
            if w.phantom and w.shapes and self._may_plan(w):
                # Its reservation, as any waiting gang's: now if the stand-ins fit now (it is
                # due: the grace starts), else the earliest start of the plan.
                # Binding only where the reservation policy lets this gang reserve.
                binding = self._may_reserve(w)
                now_fit = self.try_now(w, end) if w.gpus <= self.prep.capacity_gpu else None
                if now_fit is not None and now_fit.assignment is not None:
                    self.c.depth_used += 1
                    if binding:
                        self.hold(w, now_fit.assignment, now)
                    eta, held_now = now, binding
                else:
                    plan = self.plan(w)
                    if plan is not None:
                        eta, ending = plan.start, plan.ending
                        if binding and plan.outcome.assignment is not None:
                            self.hold(w, plan.outcome.assignment, plan.start)
            have = len(w.gang.members)
            note = f"; {w.gang.pods_note}" if w.gang.pods_note else ""
            cap = w.gang.workload
            if cap is not None and cap.pods < w.gang.min_member:
                note += "; " + too_few_phrase(cap.kind, cap.name, cap.pods, w.gang.min_member)
            message = f"{have} of {w.gang.min_member} pods exist{note}" + (
                eta_phrase(eta, now, ending)
                if held_now is None
                else "; it fits now and starts once they exist"
                + (", its capacity held for it" if held_now else "")
            )
            due = w.gang.due_since
            if w.gang.min_resources is not None and not w.phantom and due is not None:
                message += (
                    f"; its reservation came due {format_duration(now - due)} ago without its "
                    f"pods, so it holds none (grace {format_duration(self.policy.phantom_grace)}) "
                    "until they exist"
                )
            decision = self.decision(w, Reason.WAITING_FOR_PODS, message, eta=eta)
            if w.phantom and eta is not None and eta <= now:
                decision = replace(decision, due_without_pods=True)
            c.reasons[gid] = decision
            return True
        not_before = w.gang.not_before
        if not_before is not None and not_before > now:
            c.reasons[gid] = self.decision(
                w,
                Reason.BACKING_OFF,
                f"members failed in earlier runs; backing off, placed again in "
                f"{format_duration(not_before - now)}",
                eta=not_before,
            )
            return True
        over = _over_limit(w, self.prep.index.pos) or self._borrows_too_long(w)
        if over:
            c.reasons[gid] = self.decision(w, Reason.QUEUE_OVER_LIMIT, over)
            return True
        if w.gpus > self.prep.capacity_gpu:
            c.reasons[gid] = self.decision(
                w,
                Reason.INSUFFICIENT_CAPACITY,
                f"needs {units(w.gpus, True)}, {MORE_THAN_THE_CLUSTER} "
                f"({self.prep.capacity_gpu} schedulable in total"
                + (f"; {off})" if (off := self._off_nodes()) else ")"),
            )
            return True
        out = self.try_now(w, end)
        if out.assignment is not None:
            self.commit_now(w, out, end)
            backfilled = c.first_reserved is not None
            reason = Reason.BACKFILLED if backfilled else Reason.SCHEDULED
            msg = self._bound_message(w, out, backfilled)
            c.reasons[gid] = self.decision(w, reason, msg, placement=self._placement(out))
            return True
        # Capacity already on its way back (gangs being evicted, past their limit)?
        soon = None
        if (
            (self.yielding or self._may_evict(w))
            and self.state.events
            and self.state.events[0].time <= now
        ):
            soon = start_on_due(self.state, w, now, **self._caches())
        if soon is not None:
            self.hold(w, soon.outcome.assignment or [], now)
            self._promise(w)
            self._take_yielded(w, soon.outcome.assignment or [])
            c.reasons[gid] = self.decision(
                w,
                Reason.WAITING_FOR_RESERVATION,
                f"needs {self._need(w)}; capacity being freed now is reserved for it",
                eta=now,
                placement=self._placement(soon.outcome),
            )
            return True
        if self.policy.share_over_holds and self._over_holds(w, end):
            return True
        evicted = self.try_evictions(w)
        if evicted is not None:
            what, got = evicted
            self.hold(w, got.assignment or [], now)
            self._promise(w)
            c.reasons[gid] = self.decision(
                w,
                Reason.WAITING_FOR_RESERVATION,
                f"needs {self._need(w)}; {what}; starts when they have stopped",
                eta=now,
                placement=self._placement(got),
            )
            return True
        if self.policy.speculate > 0 and self._speculate(w, end):
            return True
        if self.policy.owed_slip > 0:
            self._note_slipper(w)
        chosen: Plan | None = None
        if self._may_plan(w):
            why = self._not_binding(w)
            if not why:
                chosen = self._plan_binding(w)
                if chosen is not None and chosen.outcome.assignment is not None:
                    self.hold(w, chosen.outcome.assignment, chosen.start)
                    if not self._cap_exempt(w):
                        c.reserved_in[w.queue.name] = c.reserved_in.get(w.queue.name, 0) + 1
                    if self.policy.charge_reservations:
                        name = w.queue.name
                        c.reserved_fair[name] = c.reserved_fair.get(name, 0) + w.fair
            else:
                c.unreserved[gid] = why
                c.depth_used += 1
                c.deferred.append((w, end, out))
                return True
        self.explain(w, end, out, chosen)
        return True

    def _over_holds(self, w: GangWork, end: float) -> bool:
        """`Policy.share_over_holds`: start `w` now on capacity held for reservations of gangs
        whose queues hold a larger part of their deserved share than `w`'s does, if `w` fits
        within what its queue is owed. Reservations bind across queues in fair-share order, as
        the walk itself serves queues: the queue further below its share goes first."""
        q, st = w.queue, self.state
        if not st.hold_count or q.deserved <= 0 or q.alloc_fair + w.fair > q.deserved:
            return False
        mine = q.alloc_fair / q.deserved
        bar = (q.alloc_fair + w.fair) / q.deserved if self.policy.share_over_holds_after else mine
        queue_of = self._queue_of()
        skip: set[str] = set()
        for gid in self.c.reservations:
            hq = queue_of.get(gid)
            if hq is None or hq is q:
                continue
            if hq.deserved <= 0 or hq.alloc_fair / hq.deserved > bar:
                skip.add(gid)
        if not skip:
            return False
        out = place(
            _OverHolds(st, self.now, end, frozenset(skip)),
            w.shapes,
            w.required_level,
            w.preferred_level,
        )
        if out.assignment is None:
            return False
        nodes = sorted({n for _, n in out.assignment})
        overrun = [g for g in st.held_gangs(nodes, end) if g in skip]
        self.commit_now(w, out, end)
        msg = self._bound_message(w, out, backfilled=False)
        if overrun:
            msg += (
                f"; started on capacity held for {', '.join(overrun[:3])}"
                f"{' …' if len(overrun) > 3 else ''}: queue {q.name} holds {mine:.0%} of its "
                "deserved share, less than theirs, and reservations bind in fair-share order"
            )
        reason = Reason.BACKFILLED if self.c.first_reserved is not None else Reason.SCHEDULED
        self.c.reasons[w.gang.id] = self.decision(w, reason, msg, placement=self._placement(out))
        return True

    def _queue_of(self) -> dict[str, QueueState]:
        """Each pending gang's queue, by gang id (built once a walk)."""
        if self._queue_by_gang is None:
            self._queue_by_gang = {w.gang.id: w.queue for w in self.prep.works}
        return self._queue_by_gang

    def _speculate(self, w: GangWork, end: float) -> bool:
        """`Policy.speculate`: start `w` on capacity held for reservations whose holds there
        begin at least f × its time limit from now, if it holds no binding reservation itself
        (its promise is that one). Its capacity is released, in this walk's plans and in every
        later cycle's (`RunningGang.yield_by`), at the first hold's start on its nodes, so no
        reservation planned around it moves."""
        if w.duration == math.inf or not self.state.hold_count:
            return False
        if self._may_plan(w) and not self._not_binding(w):
            return False
        now = self.now
        out = self.try_now(w, now + self.policy.speculate * w.duration)
        if out.assignment is None:
            return False
        nodes = sorted({n for _, n in out.assignment})
        holds = self.state.holds
        yield_by = min(
            (h.start for n in nodes for h in holds[n] if h.start > now and h.end > now),
            default=math.inf,
        )
        c, gid = self.c, w.gang.id
        self.commit_now(w, out, min(end, yield_by))
        msg = self._bound_message(w, out, backfilled=False)
        if yield_by < end:
            c.speculative[gid] = yield_by
            held = ", ".join(self.state.held_gangs(nodes, end)[:3])
            msg += (
                f"; started speculatively on capacity held for {held} from "
                f"{format_duration(yield_by - now)} on: its time limit "
                f"({format_duration(w.duration)}) runs past that, so it is evicted whole "
                f"({EvictionReason.RESERVATION_DUE.value}) if it still runs when their start "
                "is due"
            )
        c.reasons[gid] = self.decision(w, Reason.BACKFILLED, msg, placement=self._placement(out))
        return True

    def _take_yielded(self, w: GangWork, assignment: list[tuple[str, int]]) -> None:
        """Evict the speculative gangs past their `yield_by` on the nodes `w` starts on now
        (`w`'s start is due on the capacity they were lent)."""
        if not self.yielding:
            return
        nodes = {n for _, n in assignment}
        victims = [
            r for r in self.yielding if not r.evicted and any(n in nodes for n, _ in r.nodes)
        ]
        if victims:
            self.evict(victims, EvictionReason.RESERVATION_DUE, w)

    def _note_slipper(self, w: GangWork) -> None:
        """`Policy.owed_slip`: note `w` for a second walk that starts it first if its queue is
        below its deserved share (while another queue has demand), it fits within that share
        (any gang with `Policy.slip_any`), and it would fit now but for the binding
        reservations. Only the first `_SLIP_TRIES` in the walk, each a whole second walk; a
        shape that does not fit on the free capacity itself is not tried again this cycle
        (free capacity only shrinks during the walk)."""
        c, q = self.c, w.queue
        if self.first is not None or len(c.slippers) >= _SLIP_TRIES or not self.state.hold_count:
            return
        if not self.policy.slip_any and (
            q.alloc_fair >= q.deserved
            or q.alloc_fair + w.fair > q.deserved
            or not self._others_want(q.name)
        ):
            return
        key = _shape_key(w)
        if key is not None and key in c.no_slip:
            return
        if self._place_ignoring_holds(w).assignment is not None:
            c.slippers.append((w.gang.id, len(c.bind_order)))
        elif key is not None:
            c.no_slip.add(key)

    def _place_ignoring_holds(self, w: GangWork) -> Outcome:
        """Where `w` would start now if nothing were reserved (to tell 'reserved' from 'too
        small', and which gangs could slip onto held capacity)."""
        c = self.c
        return place(
            _IgnoreHolds(self.state, c.loose_cache, c.loose_index),
            w.shapes,
            w.required_level,
            w.preferred_level,
        )

    def pushed_within_slack(self, other: Walk, bound_before: int) -> list[str] | None:
        """The binding reservations of this walk that `other` (this cycle walked again with
        `other.first` started first) pushed back, or None if it did not start that gang, did
        not start one of the `bound_before` gangs this walk started before reaching it (ahead
        of it in the order, or starving and honoured), or pushed a reservation past what
        `Policy.owed_slip` allows: later than both its start here and its gang's creation + k ×
        its starvation bound (or lost it)."""
        assert other.first is not None
        if other.first not in other.c.bound:
            return None
        if any(w.gang.id not in other.c.bound for w in self.c.bind_order[:bound_before]):
            return None
        works = {w.gang.id: w for w in self.prep.works}
        k = self.policy.owed_slip
        pushed: list[str] = []
        for gid, mine in self.c.reservations.items():
            if gid in other.c.bound:
                continue
            theirs = other.c.reservations.get(gid)
            if theirs is None:
                return None
            if theirs.start <= mine.start:
                continue
            w = works[gid]
            if theirs.start > w.gang.creation_time + k * self._bound(w):
                return None
            pushed.append(gid)
        return pushed

    def say_slipped(self, pushed: list[str]) -> None:
        """Tell the gang started first (`Policy.owed_slip`) why it started where it did."""
        assert self.first is not None
        d = self.c.reasons.get(self.first)
        if d is None or not pushed:
            return
        who = ", ".join(pushed[:3]) + (" …" if len(pushed) > 3 else "")
        self.c.reasons[self.first] = replace(
            d,
            message=f"{d.message}; its queue is below its deserved share, so it started on "
            f"capacity reserved for {who}, whose start moves back within its slack "
            f"(by its creation + {self.policy.owed_slip:g} × its starvation bound)",
        )

    def explain_deferred(self) -> None:
        """After the walk: gangs within the depth without a binding reservation get their
        non-binding ETA (the sweep every reservation uses, holding nothing) and message."""
        for w, end, out in self.c.deferred:
            plan = None
            if self.policy.estimate_unreserved:
                plan = earliest_start(
                    self.state, w, self.now, future=self.c.future, **self._caches()
                )
            self.explain(w, end, out, plan)

    # -- which gangs hold binding reservations (issue 19) --------------------------------------

    def _bounded(self) -> bool:
        p = self.policy
        return p.reserve_after_limits > 0 or p.reserve_after_s > 0

    def _key(self, w: GangWork) -> GangKey:
        work = w.fair * w.duration if w.fair else 0.0
        return GangKey(w.gang, w.fair, work)

    def _extras_key(self, rx: RunningExtras) -> GangKey:
        """A running gang's waiting members, ordered as a gang of them would be: its priority
        and age, their size, and their work until the gang's end (its time limit)."""
        work = rx.fair * max(0.0, rx.end - self.now) if rx.fair else 0.0
        return GangKey(rx.order_as, rx.fair, work)

    def _peer_bounds(self) -> dict[str, float]:
        """`reserve_after_peers` × the median wait of the gangs that started within the last
        `peer_window_s` (the wait each had when it started), or × their median slowdown by
        their limits (`peers_by_slowdown`; `_bound_for` scales it by the waiting gang's limit),
        over every queue (key "") or per queue (`peers_per_queue`); empty when off. Read off
        the running gangs: a gang that started and already ended is not seen, so under
        overload, where the short gangs that start early end early too, the sample leans
        towards the long gangs."""
        p = self.policy
        if p.reserve_after_peers <= 0:
            return {}
        since = self.now - p.peer_window_s
        waits: dict[str, list[float]] = {}
        for r in self.prep.running:
            g = r.gang
            if g.creation_time is None or g.evicting or g.start_time < since:
                continue
            wait = max(0.0, g.start_time - g.creation_time)
            if p.peers_by_slowdown:
                if g.time_limit is None or g.time_limit <= 0:
                    continue
                wait = (wait + g.time_limit) / g.time_limit
            waits.setdefault(self._peer_key(g.queue), []).append(wait)
        return {q: p.reserve_after_peers * statistics.median(ws) for q, ws in waits.items()}

    def _peer_key(self, queue: str) -> str:
        """The key of `peer_bound` a gang of `queue` reads: its queue with `peers_per_queue`,
        else "" (every queue's starts)."""
        return queue if self.policy.peers_per_queue else ""

    def _starving(self, w: GangWork) -> bool:
        return self._starved(_waiter(w))

    def _starved(self, g: _Waiter, at: float | None = None) -> bool:
        """Whether gang `g` is past its starvation bound (now, or `at`) and large enough to
        reserve (`_may_reserve`, `_bound`): `_starving` for waiting gangs, and for running ones
        if they were evicted now."""
        bound = self._starving_after(g.members, g.duration, g.queue)
        if bound is None:
            return False
        when = self.now if at is None else at
        return when - g.created >= bound

    def _starving_after(self, members: int, duration: float, queue: str) -> float | None:
        """The wait after which a gang of `members` pods and time limit `duration` starves
        (`_bound_for`, possibly infinite), or None when no wait does: the bound is off, or the
        gang is too small to reserve (`reserve_min_members`)."""
        if not self._bounded() or members < self.policy.reserve_min_members:
            return None
        return self._bound_for(duration, members, queue)

    def _starts_first(self, w: GangWork) -> bool:
        """Whether starving `w`, which fits now, starts before the walk: its binding
        reservation is honoured. The capacity that reservation gathered over the last cycles is
        free at last, and the walk would hand it to whichever gang comes first in the order
        (small gangs of less work), so the gang would drain the nodes again, and again.

        Only for gangs of at least `start_starving_leaves` leaves' worth of nodes (pods ≥ that
        × the nodes under the largest leaf, and never a gang of one pod) or
        `start_starving_min_members` pods: a gang within a leaf re-gathers its nodes as the
        leaf's nodes free one by one, a gang of a whole leaf or more needs a drain, which is
        what its reservation bought; honouring every starving gang is FIFO under overload
        (bench/SIM.md). Without topology labels every node is a leaf of its own, and every
        starving gang of two or more pods is honoured. `honour_after` honours any starving
        gang once it has waited that many times the absolute bound."""
        p = self.policy
        if not self._honoured(_waiter(w)):
            return False
        # Only within its queue's share: a gang started beyond it borrows, another queue may
        # reclaim it at once, and it would start first again the next cycle (a livelock) —
        # unless reclaim spares it (`_spared_by_reclaim`).
        q = w.queue
        if not p.honour_within_share or q.alloc_fair + w.fair <= q.deserved:
            return True
        if (
            p.honour_below_share
            and q.alloc_fair < q.deserved
            and (not p.honour_below_share_oversize or w.fair > q.deserved)
        ):
            # Started from below its share: reclaim may take it only while its queue would
            # keep its share without it (`keeps_victim_share`), which it would not.
            return True
        return p.honour_after_beyond_share and self._long_starved(_waiter(w))

    def _spared_by_reclaim(self, r: RunState) -> bool:
        """Whether reclaim leaves running `r` alone (`Policy.honour_after_beyond_share`): evicted
        now, it would be past `honour_after` and start first again, beyond its queue's share."""
        if not self.policy.honour_after_beyond_share:
            return False
        waiter = _running_waiter(r)
        return waiter is not None and self._honoured(waiter) and self._long_starved(waiter)

    def _would_start_first(self, r: RunState) -> bool:
        """Whether running `r`, evicted now, would wait as a starving gang that starts before
        the walk (`_starts_first`): it would take back at once what it was evicted for, ahead of
        the gang that evicted it (older, it is planned first), which would evict again, cycle
        after cycle. Selective preemption never takes such a gang."""
        waiter = _running_waiter(r)
        return waiter is not None and self._honoured(waiter)

    def _honoured(self, g: _Waiter, at: float | None = None) -> bool:
        """Whether gang `g` has its reservation honoured (now, or when due `at`), its queue's
        share aside: starving then, and of the honoured size or past `honour_after`
        (`_starts_first`)."""
        if not self._starved(g, at):
            return False
        return self._honoured_size_of(g.members) or self._long_starved(g, at)

    def _long_starved(self, g: _Waiter, at: float | None = None) -> bool:
        """Whether a gang has waited (by now, or `at`) `honour_after` times the absolute
        starvation bound (its own bound when there is none): its reservation is then honoured
        whatever its size (`Policy.honour_after`)."""
        p = self.policy
        if p.honour_after <= 0:
            return False
        base = (
            p.reserve_after_s
            if p.reserve_after_s > 0
            else self._bound_for(g.duration, g.members, g.queue)
        )
        when = self.now if at is None else at
        threshold = p.honour_after * base
        if p.honour_after_peers:
            threshold = max(threshold, self._peer_uncapped(g.duration, g.queue))
        return when - g.created >= threshold

    def _peer_uncapped(self, duration: float, queue: str) -> float:
        """The bound `reserve_after_peers` sets for a gang of time limit `duration` of `queue`,
        before `peer_max_s` caps it (`_bound_for`; uncapped for `Policy.honour_after_peers`); 0
        by slowdown for a gang without a time limit (its own bound holds)."""
        peer = self.peer_bound.get(self._peer_key(queue), 0.0)
        if self.policy.peers_by_slowdown:
            if not math.isfinite(duration):
                return 0.0
            peer = max(0.0, peer - 1.0) * duration
        return peer

    def _honoured_size(self, w: GangWork) -> bool:
        """Whether `w` is large enough for `_starts_first` (see `_honoured_size_of`)."""
        return self._honoured_size_of(_pods(w))

    def _honoured_size_of(self, members: int) -> bool:
        """Whether a gang of `members` pods is large enough for `_starts_first`: at least
        `start_starving_leaves` leaves' worth of nodes (and 2 pods), or
        `start_starving_min_members` pods."""
        least = self.honoured_from
        return least is not None and members >= least

    def _honoured_from(self) -> int | None:
        """The fewest pods of a gang whose reservation is honoured (`_honoured_size_of`);
        `None` when no size is. Fixed for the walk (`honoured_from`)."""
        p = self.policy
        sizes = []
        if p.start_starving_min_members > 0:
            sizes.append(p.start_starving_min_members)
        leaves = self._pods_of_leaves(p.start_starving_leaves)
        if leaves is not None:
            sizes.append(leaves)
        return min(sizes) if sizes else None

    def _pods_of_leaves(self, leaves: float) -> int | None:
        """The pods of a gang of `leaves` leaves' worth of nodes (the largest leaf's), at least
        2; `None` for 0 (off)."""
        if leaves <= 0:
            return None
        leaf = max((len(ns) for ns in self.prep.topo.leaf_nodes), default=1)
        return max(2, math.ceil(leaves * leaf - 1e-9))

    def _yield_clause(self, w: GangWork, start: float) -> str:
        """What a binding reservation of `w` from `start` does not promise, for its message:
        it keeps gangs that would delay it off the capacity until it is due, but the cycle the
        capacity is free `w` fits now and is walked in its order, so gangs ahead of it (of less
        work, or of queues further below their share) may start there first and it reserves
        again, later. Only a reservation honoured by then (`_honoured`) starts before the
        walk. The parenthesis says what would change that: the size from which reservations
        are honoured, or, for a gang of that size not yet starving when due, how long it must
        have waited and when it will have (a gang of 3 pods told "from 2 pods" alone would
        read its reservation as honoured)."""
        members, created = _pods(w), w.gang.creation_time
        if self._honoured(_waiter(w), at=start):
            return ""
        least = self.honoured_from
        first = ""
        if least is not None and members < least:
            first = f" (a reservation starts ahead of the order from {least} pods)"
        elif least is not None and created is not None:
            bound = self._starving_after(members, w.duration, w.queue.name)
            if bound is not None and math.isfinite(bound):
                first = (
                    f" (it starts ahead of the order once it has waited "
                    f"{format_duration(bound)}, in {format_duration(created + bound - self.now)})"
                )
        return "; " + YIELDS_WHEN_DUE + first

    def _may_reserve(self, w: GangWork) -> bool:
        """Whether `w` is large enough to hold a binding reservation (`reserve_min_members`):
        a gang of one pod fits wherever one node frees, so greedy placement in the order
        serves it; only gangs whose members must be gathered from several places at once
        need capacity held for them (LSF reserves slots for parallel jobs only)."""
        return _pods(w) >= self.policy.reserve_min_members

    def _bound(self, w: GangWork) -> float:
        """`w`'s starvation bound (`ordering.starvation_bound`), per member when
        `reserve_per_member`."""
        return self._bound_for(w.duration, _pods(w), w.queue.name)

    def _bound_for(self, duration: float, members: int, queue: str) -> float:
        """The gang's own bound, or the one its peers set when longer (`reserve_after_peers`:
        k × their median wait, or (k × their median slowdown − 1) × its own limit with
        `peers_by_slowdown`), at most `peer_max_s`; not for gangs of `peers_below_leaves`
        leaves or more."""
        own = self._own_bound(duration, members)
        if self.peers_from is not None and members >= self.peers_from:
            return own
        p = self.policy
        peer = self._peer_uncapped(duration, queue)
        return max(own, min(peer, p.peer_max_s if p.peer_max_s > 0 else math.inf))

    def _own_bound(self, duration: float, members: int) -> float:
        p = self.policy
        per = members if p.reserve_per_member else 1
        return starvation_bound(duration, p.reserve_after_limits, p.reserve_after_s, per)

    def _capped(self, w: GangWork) -> bool:
        """Whether `backfill_depth_per_queue` keeps `w` from a binding reservation: its queue
        holds as many already, and `w` is not exempt (`_cap_exempt`)."""
        cap = self.policy.backfill_depth_per_queue
        return (
            cap > 0 and self.c.reserved_in.get(w.queue.name, 0) >= cap and not self._cap_exempt(w)
        )

    def _cap_exempt(self, w: GangWork) -> bool:
        """`owed_uncapped`: a gang owed its queue's share (rule 3) reserves whatever the cap, and
        is not counted against it: the cap is for the starving gangs of queues at their share.
        `cap_min_members`: nor is a gang of fewer members."""
        if _pods(w) < self.policy.cap_min_members:
            return True
        return self.policy.owed_uncapped and self._owed_reserve(w)

    def _owed_reserve(self, w: GangWork) -> bool:
        return (
            self.policy.reserve_under_share
            and (self._may_reserve(w) or self.policy.owed_small)
            and self._owed(w)
            and self._owed_room(w)
        )

    def _owed_room(self, w: GangWork) -> bool:
        """`charge_reservations`: whether `w` still fits within its queue's deserved share
        counting the binding reservations the queue got this cycle: a queue is owed its share,
        not a reservation for every gang that fits within it alone."""
        if not self.policy.charge_reservations:
            return True
        q = w.queue
        return q.alloc_fair + self.c.reserved_fair.get(q.name, 0) + w.fair <= q.deserved

    def _owed(self, w: GangWork) -> bool:
        """Whether `w` fits within its queue's deserved share while another queue borrows
        beyond its own: the queue is short of its share because of others (the condition for
        reclaim). A lone queue is never owed anything: its share is whatever it can use."""
        if not can_reclaim(w):
            return False
        me = w.queue.name
        return any(q.over_share for name, q in self.prep.queues.items() if name != me)

    def _not_binding(self, w: GangWork) -> str:
        """Why `w` gets no binding reservation now ('' when it does): the rule that holds it
        back from one, in words for its message."""
        p, q = self.policy, w.queue
        cap = p.backfill_depth_per_queue
        if self._capped(w):
            return f"queue {q.name} already holds {cap} reservation{'' if cap == 1 else 's'}"
        if not self._bounded():
            return ""
        small = not self._may_reserve(w)
        if small and not (p.owed_small and p.reserve_under_share and self._owed(w)):
            m = self.policy.reserve_min_members
            return (
                f"only gangs of {m} or more members hold reservations; it starts where it fits "
                "in its turn"
            )
        wait = max(0.0, self.now - w.gang.creation_time)
        bound = self._bound(w)
        if wait >= bound and not small:
            return ""
        if p.reserve_under_share and self._owed(w):
            if self._owed_room(w):
                return ""
            return (
                f"queue {q.name} is owed {q.deserved - q.alloc_fair} of its deserved "
                f"{q.deserved} and its reservations hold {self.c.reserved_fair.get(q.name, 0)} "
                f"of that already, no room for {w.fair} more, so it holds no reservation "
                "before its starvation bound and smaller gangs may start beside it"
            )
        return (
            f"waited {_hours(wait)} of its {_hours(bound)} starvation bound{self._peer_note(w)}, "
            "so it holds no reservation yet and smaller gangs may start beside it"
        )

    def _peer_note(self, w: GangWork) -> str:
        """Where `w`'s bound comes from when the other gangs' waits set it
        (`reserve_after_peers`), for its message: a bound longer than the gang's own reads as
        arbitrary otherwise."""
        p = self.policy
        peer = self._bound(w)
        own = self._own_bound(w.duration, _pods(w))
        if peer <= own:
            return ""
        whose = f" of queue {w.queue.name}" if p.peers_per_queue else ""
        median = self.peer_bound.get(self._peer_key(w.queue.name), 0.0) / p.reserve_after_peers
        since = f"of the gangs{whose} that started in the last {_hours(p.peer_window_s)}"
        capped = "" if p.peer_max_s <= 0 or peer < p.peer_max_s else f", at most {_hours(peer)}"
        if p.peers_by_slowdown:
            return (
                f" (its {_hours(w.duration)} limit × ({p.reserve_after_peers:g} × {median:.1f} "
                f"− 1), {median:.1f} the median slowdown {since}{capped})"
            )
        return f" ({p.reserve_after_peers:g} × {_hours(median)}, the median wait {since}{capped})"

    def _may_evict(self, w: GangWork) -> bool:
        """Cheap test: could reclaim or preemption apply to `w` at all?"""
        return (
            (self.policy.reclaim and can_reclaim(w))
            or self._may_preempt(w)
            or self._may_preempt_starving(w)
        )

    def _may_preempt_starving(self, w: GangWork) -> bool:
        """Selective preemption (`Policy.preempt_starving`) may apply to `w`: a starving gang of
        the size whose reservation is honoured, with a time limit, its queue not borrowing."""
        p = self.policy
        return (
            p.preempt_starving > 0
            and p.preemption
            and w.duration < math.inf
            and not w.queue.over_share
            and self._honoured_size(w)
            and self._starving(w)
        )

    def _could_evict(self, w: GangWork) -> bool:
        """`_may_evict`, counting reclaim only when another queue borrows (a lone queue below
        its share has no one to reclaim from)."""
        return (self.policy.reclaim and self._owed(w)) or self._may_preempt(w)

    def _may_preempt(self, w: GangWork) -> bool:
        """Preemption is on and `w`'s queue runs a gang of lower priority."""
        if not self.policy.preemption:
            return False
        low = self.lowest.get(w.queue.name)
        return low is not None and low < w.gang.priority

    def _caches(self) -> dict[str, Any]:
        c = self.c
        return {
            "cache": c.plan_cache,
            "node_cache": c.node_cache,
            "plan_nodes": c.plan_nodes,
            "least_idle": self.policy.reserve_least_idle,
        }

    def plan(self, w: GangWork) -> Plan | None:
        self.c.depth_used += 1
        gid = w.gang.id
        if gid in self._swept:
            return self._swept.pop(gid)
        return earliest_start(self.state, w, self.now, future=self.c.future, **self._caches())

    def _plan_binding(self, w: GangWork) -> Plan | None:
        """`plan` for `w`'s binding reservation. `Policy.owed_whole_nodes`: while a gang owed
        its queue's deserved share waits undecided, a gang not owed its own is planned with the
        nodes whole free now held from now on (for this plan only), so its reservation starts
        on capacity that frees later and the whole free nodes stay for the owed gang."""
        p, q = self.policy, w.queue
        if (
            not p.owed_whole_nodes
            or self._owed(w)
            or (p.owed_whole_overused and q.alloc_fair < q.deserved)
            or not self._owed_waiting()
        ):
            return self.plan(w)
        st, now = self.state, self.now
        whole = [
            n
            for n, a in enumerate(self.prep.allocatable)
            if st.usable[n] and a and a[0] > 0 and st.free_gpu[n] >= a[0]
        ]
        if not whole:
            return self.plan(w)
        for n in whole:
            st.add_hold(n, now, math.inf, list(st.free[n]), _SHIELD)
        self.c.depth_used += 1
        self._swept.pop(w.gang.id, None)  # swept on the unshielded nodes
        try:
            return earliest_start(st, w, now, future=self.c.future, **self._caches())
        finally:
            for n in whole:
                st.drop_holds(n, _SHIELD)

    def _owed_waiting(self) -> bool:
        """`Policy.owed_whole_nodes`: whether a gang owed its queue's deserved share (`_owed`)
        waits undecided in this cycle (not started, evicted for or planned yet); with
        `Policy.owed_whole_needed`, one with a pod that no node but a whole free one holds now."""
        cands = self._owed_cands
        if cands is None:
            now, cap = self.now, self.prep.capacity_gpu
            cands = self._owed_cands = [
                w
                for w in self.prep.works
                if not w.waiting_for_pods
                and not w.phantom
                and (w.gang.not_before is None or w.gang.not_before <= now)
                and w.gpus <= cap
                and can_reclaim(w)
            ]
        decided, deferred = self.c.reasons, self.c.unreserved
        hole = -1
        if self.policy.owed_whole_needed:
            # The most GPUs a node not whole free has free now: a pod needing more can start
            # now only on a whole free node.
            st = self.state
            hole = max(
                (
                    st.free_gpu[n]
                    for n, a in enumerate(self.prep.allocatable)
                    if st.usable[n] and a and st.free_gpu[n] < a[0]
                ),
                default=0,
            )
        return any(
            w.gang.id not in decided
            and w.gang.id not in deferred
            and (hole < 0 or max((s.gpu for s in w.shapes), default=0) > hole)
            and self._owed(w)
            for w in cands
        )

    def _may_plan(self, w: GangWork) -> bool:
        return self.policy.backfill and self.c.depth_used < self.policy.backfill_depth

    # -- explanations --------------------------------------------------------------------------

    def _need(self, w: GangWork) -> str:
        if w.gpus:
            return units(w.gpus, True)
        return units(_pods(w), False)

    def _usable_gpus(self, w: GangWork) -> int:
        st = self.state
        if len(w.shapes) == 1 and w.shapes[0].feasible.node_count == len(st.free):
            return st.total_gpu
        nodes = {n for s in w.shapes for ns in s.feasible.leaf_nodes.values() for n in ns}
        return sum(max(0, st.free[n][0]) for n in nodes if st.usable[n])

    def explain(self, w: GangWork, end: float, out: Outcome, plan: Plan | None) -> None:
        """Reason and message for a gang that cannot start now."""
        c, now, st, topo = self.c, self.now, self.state, self.prep.topo
        gid = w.gang.id
        eta = plan.start if plan is not None else None
        then = eta_phrase(eta, now, plan.ending if plan is not None else 0)
        if plan is None and self._may_plan(w) is False and self.policy.backfill:
            then = "; beyond the backfill depth, no expected start"
        why = c.unreserved.get(gid)
        if why:
            then = (then + " (not binding)" if plan is not None else "") + "; " + why
        elif plan is not None and gid in c.reservations:
            then += self._yield_clause(w, plan.start)
        if self.policy.reclaim and can_reclaim(w):
            # Its queue is owed capacity and nothing was evicted for it: say why, or "within
            # its share" elsewhere reads as a promise of reclaim that did not happen.
            key = len(self.c.evictions)
            if self._smallest is None or self._smallest[0] != key:
                self._smallest = (key, reclaim.smallest_gangs(self.prep.running))
            then += "; " + reclaim.why_not_reclaimed(
                w, self.prep.queues, self._smallest[1], self.policy.reclaim_tolerance
            )
        free = self._usable_gpus(w)
        need = self._need(w)
        placement = self._placement(plan.outcome) if plan is not None else None
        level = w.required_level
        if level is not None and not topo.level_present[level]:
            lv = topo.levels[level]
            w.never_fits = True
            c.reasons[gid] = self.decision(
                w,
                Reason.TOPOLOGY_UNSATISFIABLE,
                f"needs {need} under one {lv.name}, but no node has the label {lv.label}",
            )
            return
        never, domain = never_fits(self.prep, w.shapes, level)
        if never:
            w.never_fits = True
            reason, best = Reason.INSUFFICIENT_CAPACITY, None
            if domain is not None and level is not None:
                # The domain the message names (the closest even empty), with its GPUs free now.
                frees = self._domain_free_gpus(w, level)
                best = (topo.level_domain_names[level][domain], frees.get(domain, 0))
                reason = Reason.TOPOLOGY_UNSATISFIABLE
                need = f"{need} under one {topo.levels[level].name}"
            c.reasons[gid] = self.decision(
                w, reason, f"needs {need}; {never}", free=free, best=best
            )
            return
        if w.gpus > free:
            c.reasons[gid] = self.decision(
                w,
                Reason.INSUFFICIENT_CAPACITY,
                f"needs {need}; {free} free{self._off_note()}" + then,
                free=free,
                eta=eta,
                placement=placement,
            )
            return
        unreserved: Outcome | None = None  # where it starts were nothing reserved (asked once)
        if level is not None:
            # Topology keeps it out when it fits the free capacity without it and not with it.
            # Both asked as if nothing were reserved: holds (its own plan's among them, from its
            # expected start on) would make a gang that fits but for the topology read as one
            # that does not fit at all; whether holds keep it out too is the next question.
            loose = place(_IgnoreHolds(st, c.loose_cache, c.loose_index), w.shapes, None, None)
            if loose.assignment is not None:
                unreserved = self._place_ignoring_holds(w)
            if unreserved is not None and unreserved.assignment is None:
                name, gpus = self._best_domain(w, level, out)
                lv = topo.levels[level]
                c.reasons[gid] = self.decision(
                    w,
                    Reason.TOPOLOGY_UNSATISFIABLE,
                    f"needs {need} under one {lv.name}; the best {lv.name} ({name}) has "
                    f"{gpus} free{self._unusable_note(level, name)}" + then,
                    free=free,
                    best=(name, gpus),
                    eta=eta,
                    placement=placement,
                )
                return
        if st.hold_count:
            if unreserved is None:
                unreserved = self._place_ignoring_holds(w)
            if unreserved.assignment is not None:
                nodes = sorted({n for _, n in unreserved.assignment})
                holders = [g for g in st.held_gangs(nodes, end) if g != gid]
                who = ", ".join(holders[:3]) + (" …" if len(holders) > 3 else "")
                c.reasons[gid] = self.decision(
                    w,
                    Reason.WAITING_FOR_RESERVATION,
                    f"needs {need}; {free} free, but that capacity is reserved for {who}" + then,
                    free=free,
                    eta=eta,
                    placement=placement,
                )
                return
        fit = out.fit_pods
        detail = f"needs {need} ({self._shape_text(w)}); {free} free" + (
            f", but only {fit} of its pods fit" if fit and fit < _pods(w) else ""
        )
        c.reasons[gid] = self.decision(
            w, Reason.INSUFFICIENT_CAPACITY, detail + then, free=free, eta=eta, placement=placement
        )

    def _shape_text(self, w: GangWork) -> str:
        parts = []
        for s in w.shapes:
            what = ", ".join(
                f"{self.prep.index.names[i]}={a}"
                for i, a in s.req
                if self.prep.index.names[i] != "pods"
            )
            parts.append(f"{len(s.pods)} × {{{what}}}")
        return " + ".join(parts)

    def _off_nodes(self) -> str:
        """Says "2 nodes cordoned or not ready" when some nodes take no pods ("" when none):
        their GPUs are not counted free, and a user who drained two nodes reads "needs 48 GPUs;
        40 free" of a cluster with 56 idle."""
        if self._off is None:
            self._off = sum(1 for usable in self.state.usable if not usable)
        if not self._off:
            return ""
        return f"{self._off} node{'s' if self._off > 1 else ''} cordoned or not ready"

    def _off_note(self) -> str:
        off = self._off_nodes()
        return f" ({off})" if off else ""

    def _unusable_note(self, level: int, name: str) -> str:
        """Says " (1 of its 4 nodes cordoned or not ready)" when some nodes of the domain `name` of
        `level` take no pods: their GPUs are not free, so a leaf with nothing running on it
        reads as "has 24 free" of 32. Walked: after a `kubectl drain`, a gang waited on that
        number with the leaf empty, and nothing said why."""
        topo, usable = self.prep.topo, self.state.usable
        names = topo.level_domain_names[level]
        if name not in names:
            return ""
        domain = names.index(name)
        nodes = [
            n
            for leaf, of in enumerate(topo.level_domain_of_leaf[level])
            if of == domain
            for n in topo.leaf_nodes[leaf]
        ]
        off = sum(1 for n in nodes if not usable[n])
        if not off:
            return ""
        of = f"its {len(nodes)} nodes" if len(nodes) > 1 else "its one node"
        return f" ({off} of {of} cordoned or not ready)"

    def _best_domain(self, w: GangWork, level: int, out: Outcome) -> tuple[str, int]:
        if out.best_domain is not None and out.best_domain_gpus is not None:
            return out.best_domain, out.best_domain_gpus
        sums = self._domain_free_gpus(w, level)
        if not sums:
            return "none", 0
        d = min(sums, key=lambda d: (-sums[d], d))
        return self.prep.topo.level_domain_names[level][d], sums[d]

    def _domain_free_gpus(self, w: GangWork, level: int) -> dict[int, int]:
        """GPUs free now per domain of `level`, over the leaves some shape of the gang accepts:
        each leaf once, however many shapes accept it (summed per shape, a leaf accepted by two
        shapes read as twice its free GPUs: "the best leaf has 64 free" of 32)."""
        of_leaf = self.prep.topo.level_domain_of_leaf[level]
        leaf_gpu = self.state.leaf_gpu
        sums: dict[int, int] = {}
        for leaf in {leaf for s in w.shapes for leaf in s.feasible.leaves}:
            sums[of_leaf[leaf]] = sums.get(of_leaf[leaf], 0) + leaf_gpu[leaf]
        return sums

    def _bound_message(self, w: GangWork, out: Outcome, backfilled: bool) -> str:
        assert out.assignment is not None
        nodes = len({n for _, n in out.assignment})
        names = [self.prep.topo.leaf_name[lf] for lf in out.leaves]
        leaves = f"{len(names)} leaf" if len(names) == 1 else f"{len(names)} leaves"
        msg = (
            f"bound {len(out.assignment)} pods ({self._need(w)}) on {nodes} node"
            f"{'' if nodes == 1 else 's'} under {leaves} ({', '.join(names[:4])}"
            f"{' …' if len(names) > 4 else ''})"
        )
        if backfilled:
            limit = "no time limit" if w.duration == math.inf else "ends by its time limit"
            msg += f"; backfilled ahead of {self.c.first_reserved} ({limit}, delays no reservation)"
        return msg

    def _placement(self, out: Outcome) -> Placement | None:
        if out.assignment is None:
            return None
        topo = self.prep.topo
        nodes = sorted({n for _, n in out.assignment})
        leaves = sorted({topo.leaf_of[n] for n in nodes})
        domains: dict[str, tuple[str, ...]] = {}
        for j, lv in enumerate(topo.levels):
            of_leaf = topo.level_domain_of_leaf[j]
            names = topo.level_domain_names[j]
            domains[lv.name] = tuple(sorted({names[of_leaf[lf]] for lf in leaves}))
        return Placement(domains=domains, nodes=tuple(topo.node_names[n] for n in nodes))

    def decision(
        self,
        w: GangWork,
        reason: Reason,
        message: str,
        *,
        free: int | None = None,
        best: tuple[str, int] | None = None,
        eta: float | None = None,
        placement: Placement | None = None,
    ) -> GangDecision:
        bound = reason in (Reason.SCHEDULED, Reason.BACKFILLED)
        detail = None
        if not bound:
            detail = PendingDetail(
                requested_gpus=w.gpus,
                free_gpus=self._usable_gpus(w) if free is None else free,
                best_domain=best[0] if best else None,
                best_domain_free_gpus=best[1] if best else None,
                queue_deserved_gpus=w.queue.deserved,
                queue_allocated_gpus=w.queue.alloc_fair,
            )
        return GangDecision(
            reason=reason,
            message=message,
            detail=detail,
            queue_position=None if bound else w.position,
            estimated_start=eta,
            placement=placement,
        )

    # -- extras --------------------------------------------------------------------------------

    def place_extras(self) -> None:
        """Members beyond `minMember` — of gangs bound now, then of gangs already running (extras
        that came late, replacements under `memberFailure: keep`) — where they fit without a
        hold broken or the queue's limit passed. Each stands alone: one that does not fit waits
        for a later cycle, and the gang is never moved or rolled back for it."""
        for w in self.c.bind_order:
            if not w.extras:
                continue
            gid = w.gang.id
            used = sorted({n for _, n in self.c.bound[gid]})
            got = self._place_members(
                w.queue, w.extras, used, w.required_level, self.now + w.duration, gid
            )
            self.c.bound[gid].extend(got)
        for rx in self.prep.running_extras:
            if rx.gang_id not in self.c.extras_walked:
                self.place_running_extras(rx)

    def place_running_extras(self, rx: RunningExtras) -> None:
        """Waiting members of a gang that already runs, in its turn of the walk (its queue's
        order, among the pending gangs: `Walk.run`), or after the walk when its queue is gone.
        Walked when they were placed after every pending gang: a Job of 5 completions, 2 at a
        time, ran its first 2 pods and then its next ones waited for the reservation of a gang
        the work-first order had walked after a new Job of the same size, which started."""
        self.c.extras_walked.add(rx.gang_id)
        why: list[str] = []
        got = self._place_members(
            rx.queue, rx.extras, rx.nodes, rx.required_level, rx.end, rx.gang_id, why
        )
        if got:
            self.c.extra_bound[rx.gang_id] = got
        if why:
            self.c.extras_waiting[rx.gang_id] = why[0]

    def _place_members(
        self,
        queue: QueueState | None,
        extras: list[tuple[Member, Shape]],
        nodes: list[int],
        required_level: int | None,
        end: float,
        gid: str,
        why: list[str] | None = None,
    ) -> list[tuple[str, int]]:
        """Place `extras` one by one: on the gang's nodes first, then its leaves, then anywhere
        within its required domain (anywhere at all without one). `why` gets, for the first
        member left waiting, what keeps it out (its pods say so: walked, the 2 workers of an
        elastic PyTorchJob that did not fit sat Pending with no condition and no Event)."""
        st, topo = self.state, self.prep.topo
        view = NowView(st, self.now, end, self.c.cache, node_cache=self.c.node_cache)
        used = list(nodes)
        leaves = sorted({topo.leaf_of[n] for n in nodes})
        scope: set[int] | None = None
        if required_level is not None and leaves:
            of_leaf = topo.level_domain_of_leaf[required_level]
            doms = {of_leaf[lf] for lf in leaves}
            scope = {lf for lf in range(len(topo.leaf_nodes)) if of_leaf[lf] in doms}
        elif required_level is not None:
            scope = self._wave_scope(extras, required_level, view)
        placed: list[tuple[str, int]] = []
        for member, shape in extras:
            if queue is not None and queue.limit is not None:
                limit = queue.limit
                over = [i for i, v in enumerate(shape.vec) if v and queue.alloc[i] + v > limit[i]]
                if over:
                    if why is not None and not why:
                        i = over[0]
                        why.append(
                            f"its queue {queue.name} holds {queue.alloc[i]} of its limit of "
                            f"{limit[i]} {self.prep.index.names[i]}; this member needs "
                            f"{shape.vec[i]} more"
                        )
                    continue
            cands = list(used)
            for lf in leaves:
                cands.extend(shape.feasible.leaf_nodes.get(lf, []))
            for lf in shape.feasible.leaves:
                if scope is None or lf in scope:
                    cands.extend(shape.feasible.leaf_nodes[lf])
            feasible = {n for ns in shape.feasible.leaf_nodes.values() for n in ns}
            for n in cands:
                if n in feasible and count_fit(view.node_capacity(n), shape.req) > 0:
                    st.change(n, shape.vec, -1)
                    if end < math.inf:
                        st.add_release(end, n, list(shape.vec), gid)
                    else:
                        st.unlimited_gpu[n] += shape.vec[0]
                    if queue is not None:
                        self._charge(queue, shape.vec, shape.vec[self.prep.fair_pos])
                    placed.append((member.pod, n))
                    if n not in used:
                        used.append(n)
                    break
            else:
                if why is not None and not why:
                    why.append(
                        _why_member_waits(st, view, shape, [n for n in cands if n in feasible])
                    )
        return placed

    def _wave_scope(
        self, extras: list[tuple[Member, Shape]], level: int, view: NowView
    ) -> set[int]:
        """The leaves of the one domain of `level` that the members of a gang with a required
        level may use when none of its members is bound (its earlier ones all succeeded: the
        next wave of a Job of more completions than parallelism): the domain where most of them
        fit now, the first such in the fabric's order. Without it each member took the first
        node free wherever it was, and one wave of a `required: leaf` gang was bound across two
        leaves; the members left over wait for that domain, as replacements beside running
        members wait for theirs."""
        topo = self.prep.topo
        of_leaf = topo.level_domain_of_leaf[level]
        by_domain: dict[int, list[int]] = {}
        for lf in range(len(topo.leaf_nodes)):
            by_domain.setdefault(of_leaf[lf], []).append(lf)
        best, best_fit = -1, -1
        for domain in sorted(by_domain):
            left: dict[int, list[int]] = {}
            fit = 0
            # Capacities only shrink, so a node a member did not fit stays full for the next
            # member of the same shape (request and constraints: `Shape.id`): the scan resumes
            # where the last one fitted, one pass over the domain for a wave of identical
            # members, the common case.
            start, last_id = 0, -1
            nodes: list[int] = []
            for _, shape in extras:
                if shape.id != last_id:
                    of = shape.feasible.leaf_nodes
                    nodes = [n for lf in by_domain[domain] for n in of.get(lf, [])]
                    start, last_id = 0, shape.id
                for j in range(start, len(nodes)):
                    n = nodes[j]
                    cap = left.get(n)
                    if cap is None:
                        cap = left[n] = list(view.node_capacity(n))
                    if count_fit(cap, shape.req) > 0:
                        for i, v in enumerate(shape.vec):
                            cap[i] -= v
                        fit += 1
                        start = j
                        break
                else:
                    start = len(nodes)
            if fit > best_fit:
                best, best_fit = domain, fit
                if fit == len(extras):
                    break  # the whole wave fits: no later domain does better
        return set(by_domain.get(best, []))


def _why_member_waits(st: ClusterState, view: NowView, shape: Shape, nodes: list[int]) -> str:
    """Why a member of a running gang fits on none of `nodes` (those it may use), with the
    numbers: the most GPUs free on one of them now, and how many more are free but held for
    reservations."""
    if not nodes:
        return "no node it may use (its node selector, affinity, tolerations, topology) exists"
    if shape.gpu <= 0:
        return "it fits on no node it may use now"
    usable = max(view.node_capacity(n)[0] for n in nodes)
    free = max(st.free[n][0] for n in nodes)
    held = f" ({free} free on one, held for reservations of waiting gangs)" if free > usable else ""
    return (
        f"needs {shape.gpu} GPUs on one node; the most free on a node it may use is {usable}{held}"
    )


class _IgnoreHolds(NowView):
    """Free capacity now as if nothing were reserved (to tell 'reserved' from 'too small')."""

    __slots__ = ()

    def __init__(
        self, state: ClusterState, cache: LeafCache, index: ShapeCapsCache | None = None
    ) -> None:
        super().__init__(state, 0.0, -math.inf, cache, index=index)

    def node_capacity(self, n: int) -> list[int]:
        return list(self.state.free[n])

    def node_count(self, shape: Shape, n: int) -> int:
        return count_fit(self.state.free[n], shape.req)


class _OverHolds(NowView):
    """Capacity now until `end` as if the holds of `skip` did not exist
    (`Policy.share_over_holds`); fresh caches, as its answers differ from the plain view's."""

    __slots__ = ("skip",)

    def __init__(self, state: ClusterState, now: float, end: float, skip: frozenset[str]) -> None:
        super().__init__(state, now, end, {}, node_cache={})
        self.skip = skip

    def node_capacity(self, n: int) -> list[int]:
        st = self.state
        if st.holds[n]:
            return st.window_capacity(
                n, self.now, self.end, list(st.free[n]), 0, skip_holds=self.skip
            )
        return list(st.free[n])

    def shape_caps(self, shape: Shape) -> list[tuple[int, int]] | None:
        return None


@dataclass(frozen=True, slots=True)
class _Waiter:
    """What the starvation rules read of a gang, waiting or (if evicted now) running: its pods
    placed at once, its time limit (`inf`: none), when it was created and its queue."""

    members: int
    duration: float
    created: float
    queue: str


def _waiter(w: GangWork) -> _Waiter:
    return _Waiter(_pods(w), w.duration, w.gang.creation_time, w.queue.name)


def _running_waiter(r: RunState) -> _Waiter | None:
    """Running `r` as the starvation rules would see it if evicted now (None: its creation
    time is unknown, so it never counts as starving)."""
    g = r.gang
    if g.creation_time is None:
        return None
    limit = math.inf if g.time_limit is None else g.time_limit
    return _Waiter(len(g.members), limit, g.creation_time, g.queue)


def _pods(w: GangWork) -> int:
    """The pods `w` places at once (its members across shapes)."""
    return sum(len(s.pods) for s in w.shapes)


def _walked(entry: GangWork | RunningExtras, decided: set[str]) -> bool:
    """Whether the walk passes over `entry`: a gang decided before it (a starving gang's
    reservation); a running gang's waiting members never are."""
    return isinstance(entry, GangWork) and entry.gang.id in decided


def _shape_key(w: GangWork) -> tuple[int, int | None, int | None] | None:
    """A gang of one shape by its shape and topology levels (the key of the per-cycle memos of
    shapes that did not fit: capacity now only shrinks during the walk); None for several."""
    if len(w.shapes) != 1:
        return None
    return (w.shapes[0].id, w.required_level, w.preferred_level)


_SLIP_TRIES = 2
"""Second walks tried per cycle for `Policy.owed_slip` (each costs a whole walk)."""

_SHIELD = "\x00owed-whole-nodes"
"""The holder of `Policy.owed_whole_nodes`' holds on whole free nodes (no gang id has a NUL)."""


def _hours(seconds: float) -> str:
    """A wait or bound as people read it ("5s", "1h05m"), not as a fraction of an hour."""
    if seconds == math.inf:
        return "unbounded"
    return format_duration(seconds)


def _any(_cand: RunState, _chosen: list[RunState]) -> bool:
    return True


def _victim_list(victims: list[RunState]) -> str:
    names = sorted(v.gang.id for v in victims)
    queues = sorted({v.gang.queue for v in victims})
    return (
        f"{len(names)} gang{'' if len(names) == 1 else 's'} ({', '.join(names[:4])}"
        f"{' …' if len(names) > 4 else ''}) of queue{'' if len(queues) == 1 else 's'} "
        f"{', '.join(queues)}"
    )


def schedule(snapshot: Snapshot, policy: Policy, now: float) -> CycleResult:
    """Run one scheduling cycle over `snapshot` (pure: same inputs, same result).

    The cyclic garbage collector is paused for the cycle (and restored as it was): a cycle
    allocates hundreds of thousands of small, mostly long-lived objects (cache keys and answers),
    which made the collector run its full passes over them and the whole snapshot again and
    again — 10–20% of a large cycle, for no garbage (the cycle's structures are freed by reference
    counting when it returns)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        prep = prepare(snapshot, policy, now)
        scaled, scale = _queue_shares(prep, policy)
        sched = Walk(prep, policy, now)
        sched.run()
        for gid, bound_before in sched.c.slippers:
            prep2 = prepare(snapshot, policy, now)
            _queue_shares(prep2, policy)
            again = Walk(prep2, policy, now, first=gid)
            again.run()
            pushed = sched.pushed_within_slack(again, bound_before)
            if pushed is not None:
                again.say_slipped(pushed)
                _unlink(prep)
                prep, sched = prep2, again
                break
            _unlink(prep2)
        sched.place_extras()
        _unlink(prep)
        return _result(prep, sched, scaled, scale)
    finally:
        if enabled:
            gc.enable()


def _unlink(prep: Prepared) -> None:
    """Break the reference cycles (state ↔ DueNow, HeldNow) so refcounting frees a walk's
    state while the collector is paused."""
    prep.state.due = None
    prep.state.held_now = None


def _result(prep: Prepared, sched: Walk, scaled: bool, scale: float) -> CycleResult:
    c = sched.c
    names = prep.topo.node_names
    bindings = {
        gid: {pod: names[n] for pod, n in sorted(assignment)}
        for gid, assignment in sorted(c.bound.items())
    }
    gangs: dict[str, GangDecision] = {}
    for gid in prep.pending_ids:
        d = prep.decisions.get(gid) or c.reasons.get(gid)
        if d is not None:
            gangs[gid] = d
    fair_name = prep.index.names[prep.fair_pos]
    pending: dict[str, int] = {}
    bound: dict[str, int] = {}
    for w in prep.works:
        if w.gang.id in c.bound:
            bound[w.queue.name] = bound.get(w.queue.name, 0) + 1
        else:
            pending[w.queue.name] = pending.get(w.queue.name, 0) + 1
    queues: dict[str, QueueStatus] = {}
    for name, q in sorted(prep.queues.items()):
        running = [
            r
            for r in prep.running
            if r.gang.queue == name and not r.gang.evicting and not r.evicted
        ]
        allocated = _allocated_map(prep, sched, q, running)
        got = allocated.get(fair_name, 0)
        message = ""
        if scaled:
            message = (
                f"guarantees add up to more than the cluster's {prep.capacity_fair} "
                f"{fair_name}; scaled down to {scale:.0%}"
            )
        if q.invalid:
            message = q.invalid
        queues[name] = QueueStatus(
            deserved={fair_name: q.deserved},
            # The fair-share resource always, 0 too, as deserved and borrowed: a queue whose
            # gangs had all ended showed ALLOCATED blank beside DESERVED 0 in `kubectl get gq`.
            allocated={fair_name: 0, **allocated},
            borrowed={fair_name: max(0, got - q.deserved)},
            pending_gangs=pending.get(name, 0) + q.held,
            running_gangs=sum(1 for r in running if not r.gang.over) + bound.get(name, 0),
            fair_share=q.fair_share,
            guarantee_scaled=scaled,
            message=message,
            invalid=bool(q.invalid),
        )
    return CycleResult(
        bindings=bindings,
        evictions=tuple(sorted(c.evictions, key=lambda e: (e.for_gang, e.gang))),
        reservations=dict(sorted(c.reservations.items())),
        gangs=gangs,
        queues=queues,
        roll_forward=dict(sorted(prep.roll_forward.items())),
        roll_back=dict(sorted(prep.roll_back.items())),
        extra_bindings={
            gid: {pod: names[n] for pod, n in sorted(got)}
            for gid, got in sorted(c.extra_bound.items())
        },
        speculative=dict(sorted(c.speculative.items())),
        extras_waiting=dict(sorted(c.extras_waiting.items())),
    )


def _allocated_map(
    prep: Prepared, sched: Walk, q: QueueState, running: list[RunState]
) -> dict[str, int]:
    """What the queue holds after this cycle's decisions (running, minus evicted, plus bound)."""
    index = prep.index
    alloc = [0] * len(index)
    for r in running:
        for _, vec in r.nodes:
            for i, v in enumerate(vec):
                alloc[i] += v
    for w in prep.works:
        if w.queue is not q or w.gang.id not in sched.c.bound:
            continue
        vec_of = {p: s.vec for s in w.shapes for p in s.pods}
        vec_of.update({m.pod: s.vec for m, s in w.extras})
        for pod, _ in sched.c.bound[w.gang.id]:
            for i, v in enumerate(vec_of[pod]):
                alloc[i] += v
    for rx in prep.running_extras:
        if rx.queue is not q or rx.gang_id not in sched.c.extra_bound:
            continue
        vec_of = {m.pod: s.vec for m, s in rx.extras}
        for pod, _ in sched.c.extra_bound[rx.gang_id]:
            for i, v in enumerate(vec_of[pod]):
                alloc[i] += v
    out = index.to_map(alloc)
    out.pop("pods", None)
    return out
