"""Discrete-event replay of a trace through the scheduling core, on a virtual clock.

Why a replay and not a model: the point is to run *the* core (`phalanx.core.schedule`) that the
operator runs, on real job logs, so the figures are about the code we ship.

The clock jumps from event to event. Events: a job arrives (its gang becomes pending), a run
ends (its capacity is free), and for the `pod` baseline rendezvous timeouts and pod re-creation.
After the events of one instant are applied, one scheduling cycle runs at that instant; its
bindings start runs (each lasts the job's real duration), its evictions stop runs (the gang goes
back to pending with its original creation time; the GPU-time of the lost run is counted and
the run restarts from zero when bound again). A cycle that evicted is followed at once by
another at the same instant, so the gang that reclaimed can bind on what was freed (a zero
grace period), at most `FOLLOW_UPS` times. When nothing is pending the core is not called
(with no pending gang it can neither bind nor evict).

Coalescing (`cycle_interval_s`): 0 runs a cycle at every distinct event time (exact start
times, used by the tests). A positive interval runs cycles only on a grid of that period — the
first grid point at or after an event — applying every event up to it, like an operator whose
cycle interval is that long; capacity is released (and utilisation recorded) at the exact
event time, only decisions wait for the grid. It applies identically to every policy.
`cycle_phase_s` shifts the grid (phase + k × interval): an operator's cycles fall wherever its
clock puts them, so a figure that moves with the phase owes that much to chance alignment of
cycles with arrivals (`bench/sim_noise.py` replays several phases and quotes medians).

Fairness reference: besides each policy's own `deserved` (from the core's queue status; for
single-queue policies there is none), every cycle records a reference deserved share per trace
queue — guarantee plus spare water-filled by weight up to demand, with no usage decay, using
the core's own `water_fill` — so Jain's index compares all four policies against one yardstick.
Demand = GPUs running plus GPUs of pending gangs, per queue.
"""

from __future__ import annotations

import gc
import heapq
import math
import random
import time
from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from phalanx.core import (
    CPU,
    GPU,
    MEMORY,
    CycleResult,
    Member,
    PendingGang,
    Queue,
    RunningGang,
    RunningMember,
    Snapshot,
    accrue_usage,
    schedule,
)
from phalanx.core.fairshare import ShareInput, water_fill
from phalanx.core.lifecycle import (
    Action,
    EvictedMark,
    GangFacts,
    LifecyclePolicy,
    MemberState,
    Phase,
    decide,
)
from phalanx.core.reasons import EvictionReason
from phalanx.sim.metrics import CompletedJob
from phalanx.sim.nodes import Cluster, core_quantity
from phalanx.sim.podsched import RENDEZVOUS_TIMEOUT_S, PodPlacer, backoff_s
from phalanx.sim.policies import SimPolicy
from phalanx.sim.queues import DEFAULT_QUEUE, QueueSpec, queue_of
from phalanx.sim.series import QueueSeries, StepSeries
from phalanx.sim.time_limits import time_limit_for
from phalanx.sim.traces import TraceJob

ENGINE_REVISION = 2
"""Which replay this engine runs, recorded in every summary, so that a benchmark keeping
finished replays (`make bench-sim --reuse`, `bench/sim_noise.py`) does not keep one that the
engine now replays differently. Raise it with every change that can move a replay's figures,
and say in `UNMOVED_BY` which recorded replays the change leaves as they were.

1. The engine until 2026-12-05.
2. A gang evicted at an instant is pending again only from the next cycle on the grid, as the
   operator's pods come back only after their eviction is done (`Replay._snapshot`); before,
   it was requeued among the pending in that instant's follow-up cycles."""

UNMOVED_BY: dict[int, Callable[[Mapping[str, Any]], bool]] = {
    2: lambda summary: not any(dict(summary.get("evictions") or {}).values()),
}
"""Revision → whether a summary recorded before it is still what the engine replays: the
next-cycle requeue of revision 2 acts only on evicted gangs, so a replay that evicted nothing
is unchanged by it."""


def replays_alike(summary: Mapping[str, Any]) -> bool:
    """Whether a recorded summary is what this engine replays now: recorded at this revision
    (one without `engine_revision` predates it: revision 1), or every revision since leaves it
    unmoved (a revision without a rule in `UNMOVED_BY` moves every replay)."""
    recorded = int(summary.get("engine_revision", 1))
    return recorded == ENGINE_REVISION or all(
        rev in UNMOVED_BY and UNMOVED_BY[rev](summary)
        for rev in range(recorded + 1, ENGINE_REVISION + 1)
    )


MAX_POD_RESTARTS = 50
"""`pod` baseline: a job whose gang timed out this often is given up (left unfinished), so a
job that can never be whole cannot keep the replay going forever."""

FOLLOW_UPS = 3
"""Extra cycles at one instant after cycles that evicted (bounds a pathological loop)."""

_END, _ARRIVE, _TIMER, _REQUEUE, _FAIL, _LIMIT, _WAKE = 0, 1, 2, 3, 4, 5, 6
"""Event kinds; at one instant, capacity is released before arrivals are queued."""

_UNLIMITED = 1 << 62

Progress = Callable[[int, int, int], None]
"""Called with (jobs arrived so far, jobs finished so far, jobs in the trace) as the replay
advances: every 500 arrivals, then, once every job has arrived, every 500 jobs finished. The
drain after the last arrival can be most of a replay (an hour of a Philly replay whose backlog
grows), and a report of arrivals alone fell silent for all of it."""


@dataclass(slots=True)
class SimJob:
    """A trace job and its fate in this replay."""

    index: int
    job: TraceJob
    gang: PendingGang
    queue: str
    """The trace queue (Philly VC, else `default`): what metrics charge it to."""
    pod_gpus: tuple[int, ...]
    requests: tuple[dict[str, int], ...]
    time_limit: int | None
    start_s: float | None = None
    running: RunningGang | None = None
    epoch: int = 0
    restarts: int = 0
    leaves: int | None = None
    member_failures: int = 0
    evicted: EvictedMark | None = None
    """The last eviction of this job's gang (what its lifecycle backs off from)."""
    out_at: float = -math.inf
    """When its gang was last evicted: it is pending again only for cycles after that instant
    (`Replay._snapshot`)."""

    @property
    def gpus(self) -> int:
        """GPUs of the whole job."""
        return self.job.gpus


@dataclass(slots=True)
class SimResult:
    """Everything a replay recorded; `phalanx.sim.report` turns it into figures."""

    policy: SimPolicy
    seed: int
    cycle_interval_s: float
    cycle_phase_s: float
    cluster: Cluster
    queue_names: tuple[str, ...]
    completed: list[CompletedJob]
    unfinished: int
    unschedulable: int
    first_submit_s: float
    last_submit_s: float
    end_s: float
    allocated: StepSeries
    partial: StepSeries
    stranded_node: StepSeries
    stranded_leaf: StepSeries
    pending_gangs: StepSeries
    queues: QueueSeries
    cycle_seconds: array[float]
    cycles: int
    evictions: dict[str, int]
    lost_gpu_hours: float
    restarts: int
    rendezvous_timeouts: int
    wall_s: float
    member_failures: int = 0
    """Members that failed (`--member-failure-rate`), each evicting its gang (MemberFailed)."""
    lost_runs: tuple[tuple[float, float, int], ...] = ()
    """Each run thrown away by an eviction: (start, evicted at, GPUs). Utilisation counts these
    GPUs as busy (they were held); `report` also gives it without them."""


def core_queues(specs: Sequence[QueueSpec]) -> list[Queue]:
    """Queue specs (GPUs, cpu, memory as plain numbers) as core `Queue`s (integer units)."""

    def ints(raw: dict[str, float] | None) -> dict[str, int] | None:
        if raw is None:
            return None
        return {name: core_quantity(name, value) for name, value in raw.items()}

    return [
        Queue(
            name=spec.name,
            weight=spec.weight,
            guarantee=ints(spec.guarantee) or {},
            limit=ints(spec.limit),
            reclaimable=spec.reclaimable,
            namespaces=tuple(spec.namespaces or ()),
            priority=spec.priority,
            default_time_limit=spec.default_time_limit_seconds,
            max_time_limit=spec.max_time_limit_seconds,
        )
        for spec in specs
    ]


def _pod_requests(job: TraceJob) -> tuple[dict[str, int], ...]:
    """Per-pod requests: its GPUs, plus cpu and memory when the trace has them (openb)."""
    out = []
    for gpus in job.pod_gpus:
        req: dict[str, int] = {GPU: gpus} if gpus else {}
        if job.cpu_milli:
            req[CPU] = job.cpu_milli
        if job.memory_mib:
            req[MEMORY] = job.memory_mib * (1 << 20)
        out.append(req)
    return tuple(out)


@dataclass(slots=True)
class _QueueBook:
    """GPU accounting per trace queue, for the fairness rows."""

    alloc: dict[str, int] = field(default_factory=dict)
    pending: dict[str, int] = field(default_factory=dict)


class Replay:
    """One replay of `jobs` on `cluster` under `policy` (build, then `run()` once)."""

    def __init__(
        self,
        jobs: Sequence[TraceJob],
        cluster: Cluster,
        queues: Sequence[QueueSpec],
        policy: SimPolicy,
        *,
        seed: int = 0,
        cycle_interval_s: float = 0.0,
        cycle_phase_s: float = 0.0,
        progress: Progress | None = None,
        member_failure_rate: float = 0.0,
    ) -> None:
        if not 0.0 <= member_failure_rate < 1.0:
            raise ValueError(f"member failure rate must be in [0, 1), got {member_failure_rate}")
        self.member_failure_rate = member_failure_rate
        # A stream of its own, so replays with no failures draw exactly what they always drew.
        self.fail_rng = random.Random(seed ^ 0x5EED)
        self.lifecycle = LifecyclePolicy()
        self.member_failures = 0
        self.cluster = cluster
        self.policy = policy
        self.seed = seed
        self.interval = max(0.0, cycle_interval_s)
        if self.interval <= 0 and cycle_phase_s != 0:
            raise ValueError("a cycle phase needs a cycle interval: there is no grid to shift")
        if self.interval > 0 and not 0.0 <= cycle_phase_s < self.interval:
            raise ValueError(
                f"cycle phase must be in [0, {self.interval:g}) s, got {cycle_phase_s:g}"
            )
        self.phase = cycle_phase_s
        self.progress = progress
        self.rng = random.Random(seed)
        self.specs = list(queues)
        names = [s.name for s in self.specs]
        for job in jobs:
            if queue_of(job) not in names:
                names.append(queue_of(job))
                self.specs.append(QueueSpec(name=queue_of(job)))
        self.queue_names = tuple(names)
        if policy.queues:
            self.core_queues = core_queues(self.specs)
        else:
            self.core_queues = [Queue(name=DEFAULT_QUEUE)]
        self.usage = {q.name: 0.0 for q in self.core_queues}
        self.core_alloc = {q.name: 0 for q in self.core_queues}
        self.book = _QueueBook(dict.fromkeys(names, 0), dict.fromkeys(names, 0))
        self.node_index = {n.name: i for i, n in enumerate(cluster.nodes)}
        self.node_free = [n.allocatable.get(GPU, 0) for n in cluster.nodes]
        self.placer = PodPlacer(cluster.nodes, self.rng) if policy.core is None else None
        self.jobs: list[SimJob] = []
        self.by_gang: dict[str, SimJob] = {}
        self.unschedulable = 0
        max_pods_gpu = max((n.allocatable.get(GPU, 0) for n in cluster.nodes), default=0)
        for job in jobs:
            if job.gpus > cluster.total_gpus or max(job.pod_gpus) > max_pods_gpu:
                self.unschedulable += 1
                continue
            self.jobs.append(self._sim_job(len(self.jobs), job))
        self.total = len(self.jobs)
        self.heap: list[tuple[float, int, int, int, int]] = []
        self.seq = 0
        self.pending: dict[str, SimJob] = {}
        #: The gangs holding a binding reservation at the last core cycle, gang id → since
        #: when they have held one (`Snapshot.kept`, for `Policy.keep_reservations`).
        self.kept: dict[str, float] = {}
        self.running: dict[str, SimJob] = {}
        self.completed: list[CompletedJob] = []
        self.allocated = StepSeries()
        self.partial = StepSeries()
        self.stranded_node = StepSeries()
        self.stranded_leaf = StepSeries()
        self.pending_series = StepSeries()
        self.queue_series = QueueSeries(self.queue_names)
        self.cycle_seconds: array[float] = array("d")
        self.evictions: dict[str, int] = {}
        self.lost_runs: list[tuple[float, float, int]] = []
        self.restarts = 0
        self.timeouts = 0
        self.arrived = 0
        self.used_gpus = 0
        self.clock = 0.0
        self.leaf_nodes: dict[str, list[int]] = {}
        for k, n in enumerate(cluster.nodes):
            self.leaf_nodes.setdefault(cluster.leaf_of[n.name], []).append(k)

    def _sim_job(self, index: int, job: TraceJob) -> SimJob:
        queue = queue_of(job)
        requests = _pod_requests(job)
        limit = time_limit_for(job.duration_s)
        gang_id = f"sim/{job.id}"
        width = len(str(len(requests)))
        members = tuple(
            Member(pod=f"{job.id}-{k:0{width}d}", requests=req) for k, req in enumerate(requests)
        )
        gang = PendingGang(
            id=gang_id,
            min_member=len(members),
            members=members,
            queue=queue if self.policy.queues else DEFAULT_QUEUE,
            namespace="sim",
            creation_time=job.submit_s,
            time_limit=None if limit is None else float(limit),
        )
        sim = SimJob(index, job, gang, queue, tuple(job.pod_gpus), requests, limit)
        self.by_gang[gang_id] = sim
        return sim

    # -- events --------------------------------------------------------------------------------

    def _push(self, t_s: float, kind: int, job: int, tag: int = 0) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t_s, kind, self.seq, job, tag))

    def _advance(self, t_s: float) -> None:
        """Move the clock to `t_s`, accruing decayed usage over the interval (phalanx only)."""
        elapsed = t_s - self.clock
        if elapsed > 0 and self.policy.usage_decay and self.policy.core is not None:
            half_life = self.policy.core.usage_half_life
            for name, used in self.core_alloc.items():
                self.usage[name] = accrue_usage(self.usage[name], elapsed, used, half_life)
        self.clock = max(self.clock, t_s)

    def _record_alloc(self, t_s: float) -> None:
        self.allocated.record(t_s, self.used_gpus)

    def _handle(self, t_s: float, kind: int, index: int, tag: int) -> None:
        sim = self.jobs[index]
        if kind == _ARRIVE:
            self.arrived += 1
            self._enqueue(sim, t_s)
        elif kind == _END:
            if tag == sim.epoch and sim.running is not None:
                self._finish(sim, t_s)
        elif kind == _TIMER:
            assert self.placer is not None
            if self.placer.timeout(index, tag):
                self.timeouts += 1
                self.restarts += 1
                sim.restarts += 1
                self.partial.record(t_s, self.placer.partial_gpus)
                if sim.restarts <= MAX_POD_RESTARTS:
                    self._push(t_s + backoff_s(sim.restarts, self.rng), _REQUEUE, index)
        elif kind == _REQUEUE:
            assert self.placer is not None
            self.placer.add(index, self._pod_triples(sim), t_s)
        elif kind in (_FAIL, _LIMIT) and tag == sim.epoch and sim.running is not None:
            self._check_running(sim, t_s, failed_pods=1 if kind == _FAIL else 0)
        # _WAKE only makes sure a cycle runs (a backoff ended).

    def _check_running(self, sim: SimJob, t_s: float, failed_pods: int) -> None:
        """Ask the core lifecycle about a running gang — a member just failed, or its time
        limit is up — and carry its verdict out, as the operator does."""
        assert sim.running is not None and sim.start_s is not None
        pods = len(sim.running.members)
        states = [MemberState.FAILED] * failed_pods + [MemberState.RUNNING] * (pods - failed_pods)
        facts = GangFacts(
            id=sim.gang.id,
            min_member=sim.gang.min_member,
            members=tuple(states),
            created=sim.job.submit_s,
            recorded_phase=Phase.RUNNING,
            scheduled_at=sim.start_s,
            member_failures=sim.member_failures,
            time_limit=sim.running.time_limit,
        )
        d = decide(facts, self.lifecycle, t_s)
        if d.action is not Action.EVICT:
            return
        if d.reason == EvictionReason.MEMBER_FAILED:
            sim.member_failures = d.member_failures
            self.member_failures += failed_pods
        sim.evicted = EvictedMark(d.reason, t_s)
        self._evict(sim, d.reason, t_s)
        after = decide(
            GangFacts(
                id=sim.gang.id,
                min_member=sim.gang.min_member,
                members=(MemberState.PENDING,) * pods,
                created=sim.job.submit_s,
                recorded_phase=Phase.PENDING,
                evicted=sim.evicted,
                member_failures=sim.member_failures,
            ),
            self.lifecycle,
            t_s,
        )
        if after.not_before is not None:
            sim.gang = replace(sim.gang, not_before=after.not_before)
            self._push(after.not_before, _WAKE, sim.index)

    def _pod_triples(self, sim: SimJob) -> list[tuple[int, int, int]]:
        return [(r.get(GPU, 0), r.get(CPU, 0), r.get(MEMORY, 0)) for r in sim.requests]

    def _enqueue(self, sim: SimJob, t_s: float) -> None:
        self.pending[sim.gang.id] = sim
        self.book.pending[sim.queue] += sim.gpus
        if self.placer is not None:
            self.placer.add(sim.index, self._pod_triples(sim), t_s)

    def _start(self, sim: SimJob, nodes: dict[str, str], t_s: float) -> None:
        del self.pending[sim.gang.id]
        self.book.pending[sim.queue] -= sim.gpus
        members = tuple(
            RunningMember(pod=m.pod, node=nodes[m.pod], requests=m.requests)
            for m in sim.gang.members
        )
        sim.running = RunningGang(
            id=sim.gang.id,
            queue=sim.gang.queue,
            members=members,
            start_time=t_s,
            time_limit=None if sim.time_limit is None else float(sim.time_limit),
            creation_time=sim.gang.creation_time,
        )
        sim.start_s = t_s
        sim.leaves = self.cluster.leaves_spanned(sorted(set(nodes.values())))
        self.running[sim.gang.id] = sim
        self._charge(sim, members, +1)
        if sim.gang.not_before is not None:
            sim.gang = replace(sim.gang, not_before=None)
        duration = sim.job.duration_s
        self._push(t_s + duration, _END, sim.index, sim.epoch)
        limit = sim.running.time_limit
        if limit is not None and limit < duration:
            self._push(t_s + limit, _LIMIT, sim.index, sim.epoch)
        if self.member_failure_rate > 0 and self.placer is None:
            # Each member fails during this run with the given probability, at a uniform time
            # in it; the first failure is the one the lifecycle sees.
            rng, rate = self.fail_rng, self.member_failure_rate
            draws = [rng.random() for _ in members]
            times = [rng.random() * duration for _ in members]
            first = min((t for d, t in zip(draws, times, strict=True) if d < rate), default=None)
            if first is not None:
                self._push(t_s + first, _FAIL, sim.index, sim.epoch)

    def _charge(self, sim: SimJob, members: tuple[RunningMember, ...], sign: int) -> None:
        self.used_gpus += sign * sim.gpus
        self.book.alloc[sim.queue] += sign * sim.gpus
        self.core_alloc[sim.gang.queue] += sign * sim.gpus
        if self.placer is None:
            for m in members:
                self.node_free[self.node_index[m.node]] -= sign * m.requests.get(GPU, 0)

    def _finish(self, sim: SimJob, t_s: float) -> None:
        assert sim.running is not None and sim.start_s is not None
        self._charge(sim, sim.running.members, -1)
        if self.placer is not None:
            self.placer.finish(sim.index)
        del self.running[sim.gang.id]
        sim.running = None
        self.completed.append(
            CompletedJob(
                id=sim.job.id,
                queue=sim.queue,
                gpus=sim.gpus,
                submit_s=sim.job.submit_s,
                start_s=sim.start_s,
                end_s=t_s,
                leaves_spanned=sim.leaves,
                min_leaves=self.cluster.min_leaves(len(sim.pod_gpus)),
            )
        )
        self._record_alloc(t_s)

    def _evict(self, sim: SimJob, reason: str, t_s: float) -> None:
        assert sim.running is not None and sim.start_s is not None
        self._charge(sim, sim.running.members, -1)
        del self.running[sim.gang.id]
        self.lost_runs.append((sim.start_s, t_s, sim.gpus))
        sim.running = None
        sim.start_s = None
        sim.epoch += 1
        sim.restarts += 1
        self.restarts += 1
        self.evictions[reason] = self.evictions.get(reason, 0) + 1
        self.pending[sim.gang.id] = sim
        self.book.pending[sim.queue] += sim.gpus
        if self.interval > 0:
            # Pending again from the next cycle on the grid (`_snapshot`), which this wakes. With
            # a cycle at every event (an idealisation for hand-worked traces) there is no next
            # cycle to wait for: it is pending again at once, as before.
            sim.out_at = t_s
            self._push(math.nextafter(t_s, math.inf), _WAKE, sim.index)

    # -- cycles --------------------------------------------------------------------------------

    def _snapshot(self, t_s: float) -> Snapshot:
        """The core's input at `t_s`. A gang evicted at `t_s` is not in it: in the operator its
        pods come back only after the eviction is done — terminated, then made again by their
        controller, which the operator resumes once they are gone — so never in the cycle that
        first sees their capacity free, where the gang it was freed for binds. Requeued at the
        same instant, a victim could take back in the engine's follow-up cycle what was freed
        for another gang, which the operator never lets it do (the loop that showed it, between
        queues of different priority, is closed in the core: `reclaim.lenders`)."""
        queues = self.core_queues
        if self.policy.usage_decay:
            queues = [replace(q, usage=self.usage[q.name]) for q in queues]
        return Snapshot(
            nodes=self.cluster.nodes,
            queues=tuple(queues),
            running=tuple(s.running for s in self.running.values() if s.running is not None),
            pending=tuple(s.gang for s in self.pending.values() if s.out_at < t_s),
            kept=self.kept,
        )

    def _core_cycle(self, t_s: float) -> CycleResult | None:
        """One core cycle at `t_s`; returns its result (None when nothing was pending)."""
        assert self.policy.core is not None
        if not self.pending:
            return None
        snapshot = self._snapshot(t_s)
        began = time.perf_counter()
        result = schedule(snapshot, self.policy.core, t_s)
        self.cycle_seconds.append(time.perf_counter() - began)
        self.kept = {gid: self.kept.get(gid, t_s) for gid in result.reservations}
        for eviction in result.evictions:
            victim = self.running.get(eviction.gang)
            if victim is not None:
                self._evict(victim, eviction.reason.value, t_s)
        for gang_id, pods in result.bindings.items():
            sim = self.by_gang[gang_id]
            self._start(sim, dict(pods), t_s)
            yield_by = result.speculative.get(gang_id)
            if yield_by is not None and sim.running is not None:
                sim.running = replace(sim.running, yield_by=yield_by)
        return result

    def _pod_cycle(self, t_s: float) -> None:
        assert self.placer is not None
        began = time.perf_counter()
        out = self.placer.cycle()
        self.cycle_seconds.append(time.perf_counter() - began)
        names = [n.name for n in self.cluster.nodes]
        for index, placed in out.started:
            sim = self.jobs[index]
            nodes = {m.pod: names[placed[k]] for k, m in enumerate(sim.gang.members)}
            self._start(sim, nodes, t_s)
        for index, generation in out.partial:
            self._push(t_s + RENDEZVOUS_TIMEOUT_S, _TIMER, index, generation)
        self.partial.record(t_s, self.placer.partial_gpus)

    def _cycle(self, t_s: float) -> None:
        result: CycleResult | None = None
        if self.placer is not None:
            self._pod_cycle(t_s)
        else:
            for _ in range(1 + FOLLOW_UPS):
                latest = self._core_cycle(t_s)
                if latest is None:
                    break
                result = latest
                if not latest.evictions:
                    break
        self._record_alloc(t_s)
        self._record_queues(t_s, result)
        self._record_fragmentation(t_s)
        self.pending_series.record(t_s, len(self.pending))

    def _record_queues(self, t_s: float, result: CycleResult | None) -> None:
        book = self.book
        demand = {n: book.alloc[n] + book.pending[n] for n in self.queue_names}
        reference = self._reference_deserved(demand)
        values: list[int] = []
        for name in self.queue_names:
            mine = reference[name]
            if result is not None and self.policy.queues and name in result.queues:
                mine = int(result.queues[name].deserved.get(GPU, 0))
            values.extend((book.alloc[name], demand[name], mine, reference[name]))
        self.queue_series.record(t_s, values)

    def _reference_deserved(self, demand: dict[str, int]) -> dict[str, int]:
        inputs = []
        for spec in self.specs:
            limit = spec.limit.get(GPU) if spec.limit else None
            inputs.append(
                ShareInput(
                    name=spec.name,
                    weight=float(spec.weight),
                    guarantee=round(spec.guaranteed_gpus),
                    limit=_UNLIMITED if limit is None else round(limit),
                    demand=demand[spec.name],
                )
            )
        return dict(water_fill(self.cluster.total_gpus, inputs).deserved)

    def _record_fragmentation(self, t_s: float) -> None:
        free = self.placer.node_free_gpus() if self.placer is not None else self.node_free
        capacity = [n.allocatable.get(GPU, 0) for n in self.cluster.nodes]
        stranded_node = sum(f for f, c in zip(free, capacity, strict=True) if 0 < f < c)
        stranded_leaf = 0
        for nodes in self.leaf_nodes.values():
            if any(free[k] < capacity[k] for k in nodes):
                stranded_leaf += sum(free[k] for k in nodes)
        self.stranded_node.record(t_s, stranded_node)
        self.stranded_leaf.record(t_s, stranded_leaf)

    # -- main loop -----------------------------------------------------------------------------

    def run(self) -> SimResult:
        """Replay every job to completion (or until nothing more can ever start).

        The objects built up front (one gang per job) are frozen out of the garbage
        collector's reach for the run: every full collection would otherwise walk all of them
        again, which measurably slowed long replays. Nothing else changes.
        """
        gc.collect()
        gc.freeze()
        try:
            return self._run()
        finally:
            gc.unfreeze()

    def _run(self) -> SimResult:
        began = time.perf_counter()
        for sim in self.jobs:
            self._push(sim.job.submit_s, _ARRIVE, sim.index)
        first = self.jobs[0].job.submit_s if self.jobs else 0.0
        last = self.jobs[-1].job.submit_s if self.jobs else 0.0
        self.clock = first
        reported = 0
        while self.heap:
            t_next = self.heap[0][0]
            t_cycle = t_next if self.interval <= 0 else _grid(t_next, self.interval, self.phase)
            while self.heap and self.heap[0][0] <= t_cycle:
                t_s, kind, _, index, tag = heapq.heappop(self.heap)
                self._advance(t_s)
                self._handle(t_s, kind, index, tag)
            self._advance(t_cycle)
            self._cycle(t_cycle)
            if self.progress is not None:
                # Arrivals until every job is in, then finished jobs (the drain).
                count = self.arrived if self.arrived < self.total else len(self.completed)
                if count < reported or count - reported >= 500:
                    reported = count
                    self.progress(self.arrived, len(self.completed), self.total)
        if self.progress is not None:
            self.progress(self.arrived, len(self.completed), self.total)
        end = max((j.end_s for j in self.completed), default=last)
        return SimResult(
            policy=self.policy,
            seed=self.seed,
            cycle_interval_s=self.interval,
            cycle_phase_s=self.phase,
            cluster=self.cluster,
            queue_names=self.queue_names,
            completed=self.completed,
            unfinished=len(self.pending) + len(self.running),
            unschedulable=self.unschedulable,
            first_submit_s=first,
            last_submit_s=last,
            end_s=end,
            allocated=self.allocated,
            partial=self.partial,
            stranded_node=self.stranded_node,
            stranded_leaf=self.stranded_leaf,
            pending_gangs=self.pending_series,
            queues=self.queue_series,
            cycle_seconds=self.cycle_seconds,
            cycles=len(self.cycle_seconds),
            evictions=dict(sorted(self.evictions.items())),
            lost_gpu_hours=sum(gpus * (end - start) for start, end, gpus in self.lost_runs) / 3600,
            restarts=self.restarts,
            rendezvous_timeouts=self.timeouts,
            member_failures=self.member_failures,
            lost_runs=tuple(self.lost_runs),
            wall_s=time.perf_counter() - began,
        )


def _grid(t_s: float, interval: float, phase: float = 0.0) -> float:
    """The first time `phase` + a multiple of `interval` at or after `t_s`."""
    return math.ceil((t_s - phase) / interval) * interval + phase


def simulate(
    jobs: Sequence[TraceJob],
    cluster: Cluster,
    queues: Sequence[QueueSpec],
    policy: SimPolicy,
    *,
    seed: int = 0,
    cycle_interval_s: float = 0.0,
    cycle_phase_s: float = 0.0,
    progress: Progress | None = None,
    member_failure_rate: float = 0.0,
) -> SimResult:
    """Replay `jobs` on `cluster` with `queues` under `policy` (see the module docstring)."""
    replay = Replay(
        jobs,
        cluster,
        queues,
        policy,
        seed=seed,
        cycle_interval_s=cycle_interval_s,
        cycle_phase_s=cycle_phase_s,
        progress=progress,
        member_failure_rate=member_failure_rate,
    )
    return replay.run()
