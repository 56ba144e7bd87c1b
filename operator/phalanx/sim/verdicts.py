"""Why one job waits as long as it does: the core's verdict on it at every cycle it waits.

    python -m phalanx.sim.verdicts --trace philly:bench/traces/philly-pollux/philly.csv \\
        --shape medium --policy phalanx --job philly-29749 [--job ...] [--set FIELD=VALUE ...]

`phalanx.sim.tails` names the jobs that wait longest; `phalanx.sim.starved` says what holds a
queue below its share. Neither says why one job waits for months while its queue holds its
share. This replay records, after every core cycle and for each watched job still pending, the
reason code of the cycle's verdict on it, its message with the numbers and gang names taken
out (so "needs 8 GPUs; 3 free" and "needs 8 GPUs; 5 free" are one kind of verdict), and where
its queue stood: below 90% of its deserved share, within it, or borrowing beyond it. Each is
charged with the time until the next cycle. It prints, per job, that time split by verdict and
by queue standing, then the verdicts as a timeline: consecutive cycles with the same verdict
and standing collapsed into one span, with the first message of the span in full. Used for
`bench/SIM.md` (issue 19, the longest single waits).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from phalanx.core import CycleResult
from phalanx.sim import engine, replay_cli
from phalanx.sim.nodes import Cluster
from phalanx.sim.policies import SimPolicy
from phalanx.sim.queues import QueueSpec
from phalanx.sim.report import summarize
from phalanx.sim.traces import TraceJob

GPU = "nvidia.com/gpu"
HOUR = 3600.0
SLIP_S = 60.0
"""A reservation whose start moves later by more than this (the simulator's cycle) between
cycles has slipped: ends before time limits only bring planned starts earlier, so a later one
means something took what the earlier plan counted on."""
_GANG = re.compile(r"sim/\S+?(?=[,;) ]|$)")
_DURATION = re.compile(r"\b\d+[dhms](?:\d+[dhms])*\b")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def kind_of(message: str) -> str:
    """A verdict's message with gang names, durations and numbers replaced (`G`, `T`, `#`):
    the verdicts that differ only in how many GPUs are free, how long until a start or which
    gang holds them are one kind."""
    return _NUMBER.sub("#", _DURATION.sub("T", _GANG.sub("G", message)))


def standing(allocated: int, deserved: int) -> str:
    """Where a queue stands against its deserved share (the 90% of the queue-share goal)."""
    if deserved <= 0:
        return "queue deserves nothing"
    if allocated < 0.9 * deserved:
        return "queue below 90% of its share"
    if allocated <= deserved:
        return "queue within its share"
    return "queue borrowing beyond its share"


def _standing_in(result: CycleResult, queue: str) -> str:
    """`standing` of `queue` after this cycle's bindings."""
    q = result.queues.get(queue)
    if q is None:
        return "queue unknown"
    return standing(q.allocated.get(GPU, 0), q.deserved.get(GPU, 0))


def _short(stand: str) -> str:
    """`standing` in one word, for the gangs a slip names."""
    for word in ("below", "within", "beyond", "nothing"):
        if word in stand:
            return {"nothing": "no share"}.get(word, word)
    return "unknown"


@dataclass
class Span:
    """Consecutive cycles with one verdict on a job: from `start_s` to `end_s`."""

    start_s: float
    end_s: float
    reason: str
    kind: str
    standing: str
    message: str
    """The first cycle's message, in full."""


@dataclass
class LostRun:
    """A run of a watched job an eviction ended, and what it was ended for."""

    start_s: float
    end_s: float
    reason: str
    nodes: tuple[str, ...]
    """Where the run was."""
    for_gang: str = ""
    """The gang the eviction made room for (empty for evictions the lifecycle decides)."""
    for_gpus: int = 0
    for_queue: str = ""
    with_gangs: int = 0
    """How many gangs, this one included, the same cycle evicted for `for_gang`."""
    with_gpus: int = 0
    """The GPUs those gangs held."""
    taken_over: bool | None = None
    """Whether `for_gang`, when it next started, started on one of this run's nodes (the
    eviction emptied the node for it); None until it starts."""

    def __str__(self) -> str:
        out = f"ran {self.start_s / HOUR:9.1f}-{self.end_s / HOUR:9.1f} h, then {self.reason}"
        if not self.for_gang:
            return out
        where = {None: "not started since", True: "on its node", False: "elsewhere"}[
            self.taken_over
        ]
        return (
            f"{out} for {self.for_gang} ({self.for_gpus} GPUs, {self.for_queue}; "
            f"{self.with_gangs} gangs of {self.with_gpus} GPUs evicted for it; started {where})"
        )


@dataclass
class Slip:
    """A cycle at which a watched job's binding reservation started later than the cycle
    before planned (or was gone), and what was on the nodes the earlier plan had."""

    t_s: float
    was_start_s: float
    now_start_s: float | None
    """None: no binding reservation this cycle."""
    same_nodes: bool
    bound_there: list[str] = field(default_factory=list)
    """Gangs this cycle started on the earlier plan's nodes: `gang (GPUs, queue, reason)`."""
    held_before: list[str] = field(default_factory=list)
    """Gangs planned before it this cycle whose reservations hold the earlier plan's nodes."""
    standing: str = ""
    """Its queue's `standing` this cycle: whether the gangs that took its place could have
    been kept off while its queue was owed (below or within its share) or not (borrowing)."""

    def __str__(self) -> str:
        now = "none" if self.now_start_s is None else f"{self.now_start_s / HOUR:.1f} h"
        out = f"{self.t_s / HOUR:9.1f} h: planned start {self.was_start_s / HOUR:.1f} h -> {now}"
        notes = (
            [] if self.now_start_s is None else [f"{'same' if self.same_nodes else 'other'} nodes"]
        )
        if self.standing:
            notes.append(f"its queue {_short(self.standing)}")
        if notes:
            out += f" ({', '.join(notes)})"
        if self.bound_there:
            out += "; started there: " + ", ".join(self.bound_there[:4])
        if self.held_before:
            out += "; reserved before it there: " + ", ".join(self.held_before[:4])
        return out

    @property
    def moved_s(self) -> float:
        """How much later it now starts (infinite when it lost its reservation)."""
        if self.now_start_s is None:
            return math.inf
        return self.now_start_s - self.was_start_s

    @property
    def cause(self) -> str:
        """The first of: its nodes started other gangs, were reserved for gangs planned
        first, it lost its reservation, or none of these (its plan moved by itself)."""
        if self.bound_there:
            return "its nodes started other gangs"
        if self.held_before:
            return "its nodes reserved for gangs planned first"
        if self.now_start_s is None:
            return "no binding reservation"
        return "none of these"


@dataclass
class Watched:
    """What the core said about one job while it waited."""

    submit_s: float = 0.0
    start_s: float | None = None
    by_verdict_s: dict[str, float] = field(default_factory=dict)
    by_standing_s: dict[str, float] = field(default_factory=dict)
    spans: list[Span] = field(default_factory=list)
    by_reason_s: dict[str, float] = field(default_factory=dict)
    plan: tuple[float, tuple[str, ...]] | None = None
    """The last cycle's binding reservation: planned start and nodes."""
    planned_s: float = 0.0
    """Time it held a binding reservation."""
    replans: int = 0
    """Cycles whose binding reservation was on other nodes than the cycle before."""
    slips: list[Slip] = field(default_factory=list)
    """Cycles whose binding reservation started over `SLIP_S` later than the cycle before
    planned, or was gone."""
    evicted: list[LostRun] = field(default_factory=list)
    """Each run of it an eviction ended. The
    wait of a job that restarts counts from its submission to its last start, so a run thrown
    away is waiting time in which the core gave no verdict on it."""


@dataclass
class Verdicts:
    """The watched jobs by trace id, and the previous cycle's verdicts, charged at the next."""

    jobs: dict[str, Watched] = field(default_factory=dict)
    last: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    """Per watched job pending after the last cycle: (reason, kind, queue standing)."""
    last_t: float | None = None


class _Replay(engine.Replay):
    verdicts: Verdicts
    watched_gangs: dict[str, str]
    awaiting: dict[str, list[LostRun]]
    """Runs thrown away for a gang that has not started since, by that gang."""

    def _core_cycle(self, t_s: float) -> CycleResult | None:
        result = super()._core_cycle(t_s)
        v = self.verdicts
        if v.last_t is not None and t_s > v.last_t:
            held = t_s - v.last_t
            for job_id, (reason, kind, stand) in v.last.items():
                w = v.jobs[job_id]
                key = f"{reason}: {kind}"
                w.by_verdict_s[key] = w.by_verdict_s.get(key, 0.0) + held
                w.by_reason_s[reason] = w.by_reason_s.get(reason, 0.0) + held
                w.by_standing_s[stand] = w.by_standing_s.get(stand, 0.0) + held
                span = w.spans[-1]
                span.end_s = t_s
                if w.plan is not None:
                    w.planned_s += held
        v.last, v.last_t = {}, t_s
        if result is None:
            return result
        self._why_evicted(result)
        for gid, job_id in self.watched_gangs.items():
            sim = self.by_gang.get(gid)
            d = result.gangs.get(gid)
            if sim is None or d is None:
                continue
            w = v.jobs[job_id]
            if gid in result.bindings:
                w.start_s = t_s
                w.plan = None
                continue
            stand = _standing_in(result, sim.gang.queue)
            self._track_plan(w, gid, t_s, result, stand)
            reason, kind = d.reason.value, kind_of(d.message)
            v.last[job_id] = (reason, kind, stand)
            last = w.spans[-1] if w.spans else None
            if last is None or (last.end_s, last.reason, last.kind, last.standing) != (
                t_s,
                reason,
                kind,
                stand,
            ):
                w.spans.append(Span(t_s, t_s, reason, kind, stand, d.message))
        return result

    def _track_plan(
        self, w: Watched, gid: str, t_s: float, result: CycleResult, stand: str
    ) -> None:
        """Record the binding reservation this cycle gave the job, and a `Slip` when it starts
        later than the last cycle's (or is gone), with what took the earlier plan's nodes and
        where its queue and theirs stood (`stand` is its own)."""
        res = result.reservations.get(gid)
        now = None if res is None else (res.start, res.nodes)
        was, w.plan = w.plan, now
        if was is None:
            return
        if now is not None and now[1] != was[1]:
            w.replans += 1
        if now is not None and now[0] <= was[0] + SLIP_S:
            return
        old = set(was[1])
        slip = Slip(
            t_s,
            was[0],
            None if now is None else now[0],
            now is not None and now[1] == was[1],
            standing=stand,
        )
        for other, pods in result.bindings.items():
            if old & set(pods.values()):
                d = result.gangs.get(other)
                sim = self.by_gang.get(other)
                queue = "" if sim is None else sim.gang.queue
                slip.bound_there.append(
                    f"{other} ({0 if sim is None else sim.gpus}, "
                    f"{queue} {_short(_standing_in(result, queue))}, "
                    f"{'' if d is None else d.reason.value})"
                )
        for other, r in result.reservations.items():
            if other == gid:
                break
            if old & set(r.nodes):
                sim = self.by_gang.get(other)
                queue = "" if sim is None else sim.gang.queue
                slip.held_before.append(
                    f"{other} ({0 if sim is None else sim.gpus}, "
                    f"{queue} {_short(_standing_in(result, queue))}, at {r.start / HOUR:.1f} h)"
                )
        w.slips.append(slip)

    def _why_evicted(self, result: CycleResult) -> None:
        """Complete the runs of watched jobs this cycle evicted with what they made room for,
        and, when the gangs they made room for start, whether on their nodes."""
        for gang_id, pods in result.bindings.items():
            for run in self.awaiting.pop(gang_id, []):
                run.taken_over = bool(set(pods.values()) & set(run.nodes))
        for e in result.evictions:
            job_id = self.watched_gangs.get(e.gang)
            if job_id is None:
                continue
            run = self.verdicts.jobs[job_id].evicted[-1]
            beneficiary = self.by_gang.get(e.for_gang)
            same = [x.gang for x in result.evictions if x.for_gang == e.for_gang]
            run.for_gang = e.for_gang
            run.for_gpus = 0 if beneficiary is None else beneficiary.gpus
            run.for_queue = "" if beneficiary is None else beneficiary.gang.queue
            run.with_gangs = len(same)
            run.with_gpus = sum(self.by_gang[g].gpus for g in same if g in self.by_gang)
            self.awaiting.setdefault(e.for_gang, []).append(run)

    def _evict(self, sim: engine.SimJob, reason: str, t_s: float) -> None:
        job_id = self.watched_gangs.get(sim.gang.id)
        if job_id is not None and sim.start_s is not None and sim.running is not None:
            nodes = tuple(sorted({m.node for m in sim.running.members}))
            self.verdicts.jobs[job_id].evicted.append(LostRun(sim.start_s, t_s, reason, nodes))
        super()._evict(sim, reason, t_s)


def replay(
    jobs: Sequence[TraceJob],
    cluster: Cluster,
    queues: Sequence[QueueSpec],
    policy: SimPolicy,
    watch: Sequence[str],
    cycle_interval_s: float = 60.0,
    progress: engine.Progress | None = None,
) -> tuple[engine.SimResult, Verdicts]:
    """`engine.simulate`, recording the core's verdicts on the jobs `watch` names (trace ids).
    A name not in `jobs` is refused: a typo would otherwise replay for half an hour to say
    nothing."""
    ids = {j.id: j for j in jobs}
    missing = [name for name in watch if name not in ids]
    if missing:
        raise ValueError(f"not in the trace: {', '.join(missing)}")
    instrumented = _Replay(
        jobs, cluster, queues, policy, cycle_interval_s=cycle_interval_s, progress=progress
    )
    instrumented.verdicts = Verdicts(jobs={name: Watched(ids[name].submit_s) for name in watch})
    instrumented.watched_gangs = {f"sim/{name}": name for name in watch}
    instrumented.awaiting = {}
    return instrumented.run(), instrumented.verdicts


def report(name: str, w: Watched, spans: int, kinds: int = 12) -> list[str]:
    """One job's verdicts in words: its runs thrown away, the time split by reason, by the
    `kinds` commonest kinds of verdict and by its queue's standing, then the `spans` longest
    spans in time order (all when fewer)."""
    waited = sum(w.by_standing_s.values())
    start = "never started" if w.start_s is None else f"started at {w.start_s / HOUR:.1f} h"
    lost = sum(r.end_s - r.start_s for r in w.evicted)
    out = [
        f"{name}: submitted at {w.submit_s / HOUR:.1f} h, {start}; "
        f"{waited / HOUR:.1f} h of verdicts, {len(w.evicted)} runs evicted "
        f"({lost / HOUR:.1f} h of run thrown away)"
    ]
    for run in w.evicted:
        out.append(f"  {run}")
    if w.planned_s or w.slips:
        causes: dict[str, int] = {}
        for slip in w.slips:
            causes[slip.cause] = causes.get(slip.cause, 0) + 1
        out.append(
            f"  binding reservation {w.planned_s / HOUR:.1f} h; re-planned onto other nodes "
            f"{w.replans} times; slipped later or lost {len(w.slips)} times: "
            + (
                ", ".join(f"{n} {c}" for c, n in sorted(causes.items(), key=lambda kv: -kv[1]))
                or "never"
            )
        )
        by_standing: dict[str, dict[str, int]] = {}
        for slip in w.slips:
            counts = by_standing.setdefault(slip.cause, {})
            word = _short(slip.standing)
            counts[word] = counts.get(word, 0) + 1
        for cause, counts in sorted(by_standing.items(), key=lambda kv: -sum(kv[1].values())):
            out.append(
                f"    {cause}, its queue: "
                + ", ".join(f"{n} {word}" for word, n in sorted(counts.items()))
            )
        worst = sorted(w.slips, key=lambda x: -x.moved_s)[:spans]
        for slip in sorted(worst, key=lambda x: x.t_s):
            out.append(f"    {slip}")
    splits = (
        ("reason", w.by_reason_s, None),
        ("verdict", w.by_verdict_s, kinds),
        ("queue", w.by_standing_s, None),
    )
    for label, split, top in splits:
        ranked = sorted(split.items(), key=lambda kv: (-kv[1], kv[0]))
        for what, t in ranked[:top]:
            out.append(f"  {label}: {t / max(waited, 1e-9):6.1%} {t / HOUR:8.1f} h  {what}")
    chosen = sorted(w.spans, key=lambda s: -(s.end_s - s.start_s))[:spans]
    out.append(f"  {len(w.spans)} spans; the {len(chosen)} longest in time order:")
    for s in sorted(chosen, key=lambda s: s.start_s):
        out.append(
            f"  {s.start_s / HOUR:9.1f}-{s.end_s / HOUR:9.1f} h  {s.reason} ({s.standing}): "
            f"{s.message}"
        )
    return out


def write_slips(path: Path, verdicts: Verdicts) -> None:
    """Every slip of every watched job, one JSON object a line (`job` and the `Slip`'s
    fields): the report shows the largest; telling the rest apart needs them all."""
    with path.open("w") as out:
        for name, w in verdicts.jobs.items():
            for slip in w.slips:
                out.write(json.dumps({"job": name, **asdict(slip)}) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = replay_cli.parser(__doc__)
    parser.add_argument("--job", action="append", required=True, help="a trace job id to watch")
    parser.add_argument("--spans", type=int, default=30, help="longest spans to print per job")
    parser.add_argument("--kinds", type=int, default=12, help="commonest verdicts to print")
    parser.add_argument(
        "--json", default=None, metavar="PATH", help="also write the replay's summary here"
    )
    parser.add_argument(
        "--slips",
        default=None,
        metavar="PATH",
        help="also write every slip of the watched jobs here, one JSON object a line",
    )
    args = parser.parse_args(argv)
    settings = replay_cli.settings_of(args)
    try:
        result, verdicts = replay(
            *replay_cli.inputs(args.trace, args.shape, args.policy, args.limit_jobs, settings),
            watch=args.job,
            progress=replay_cli.ProgressLine("verdicts"),
        )
    except ValueError as e:
        parser.error(str(e))
    if args.json:
        summary = summarize(result, trace=args.trace, shape=args.shape, settings=settings)
        Path(args.json).write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
    if args.slips:
        write_slips(Path(args.slips), verdicts)
    for name, w in verdicts.jobs.items():
        print("\n".join(report(name, w, args.spans, args.kinds)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
