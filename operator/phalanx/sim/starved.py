"""Why a queue below its deserved share stays there: what holds back its pending gangs.

    python -m phalanx.sim.starved --trace philly:bench/traces/philly-pollux/philly.csv \\
        --shape medium --policy phalanx [--limit-jobs N] [--set FIELD=VALUE ...] [--top 5]

The queue-share figure of `make bench-sim` (time below 90% of its own deserved share) says
how long a queue was short, not why. This replay records, after every core cycle and for every
queue below 90% of the deserved share the core computed, the verdict on the smallest of its
pending gangs that fits within what it is owed (deserved − allocated), weighted by the time
until the next cycle: the reason code, and for `WaitingForReservation` whether the holders of
the capacity it would need belong to its own queue, to a queue within its share, or to one
borrowing beyond it. That tells fragmentation (`InsufficientCapacity` with enough GPUs free),
reservations of other queues, and the queue's own reservations apart. The same time is split a
second way, by the whole nodes free after the cycle (none; one no reservation holds; all held,
by how soon the soonest holder is due): idle nodes kept for gangs far from starting are what a
slack-based backfill would lend out. Used for `bench/SIM.md`
(issue 19, "Philly, queue share").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from phalanx.core import CycleResult
from phalanx.sim import engine, replay_cli
from phalanx.sim.nodes import Cluster
from phalanx.sim.policies import SimPolicy
from phalanx.sim.queues import QueueSpec
from phalanx.sim.traces import TraceJob

GPU = "nvidia.com/gpu"
_HOLDERS = re.compile(r"reserved for (.+?)(?:;|$| \(| …)")


@dataclass
class Starved:
    """Seconds below 90% of share per queue, split by what held its gang back."""

    below_s: dict[str, float] = field(default_factory=dict)
    why_s: dict[str, dict[str, float]] = field(default_factory=dict)
    idle_s: dict[str, dict[str, float]] = field(default_factory=dict)
    """The same time, split by the whole nodes free after the cycle's starts: none, one that
    no reservation holds, or all held, by how soon the soonest reservation holding one is due
    (how long idle capacity is kept for a gang that cannot start yet)."""
    #: (queue, category) of the previous cycle, charged with the time to the next one.
    last: list[tuple[str, str]] = field(default_factory=list)
    last_idle: list[tuple[str, str]] = field(default_factory=list)
    last_t: float | None = None


class _Replay(engine.Replay):
    starved: Starved

    def _core_cycle(self, t_s: float) -> CycleResult | None:
        result = super()._core_cycle(t_s)
        s = self.starved
        if s.last_t is not None and t_s > s.last_t:
            held = t_s - s.last_t
            for queue, why in s.last:
                s.below_s[queue] = s.below_s.get(queue, 0.0) + held
                whys = s.why_s.setdefault(queue, {})
                whys[why] = whys.get(why, 0.0) + held
            for queue, idle in s.last_idle:
                idles = s.idle_s.setdefault(queue, {})
                idles[idle] = idles.get(idle, 0.0) + held
        s.last, s.last_idle, s.last_t = [], [], t_s
        if result is None:
            return result
        over = {
            name: q.allocated.get(GPU, 0) > q.deserved.get(GPU, 0)
            for name, q in result.queues.items()
        }
        short: dict[str, int] = {}
        for name, q in result.queues.items():
            deserved, alloc = q.deserved.get(GPU, 0), q.allocated.get(GPU, 0)
            if deserved > 0 and alloc < 0.9 * deserved:
                short[name] = deserved - alloc
        if not short:
            return result
        idle = self._whole_nodes_idle(result, t_s)
        s.last_idle.extend((name, idle) for name in short)
        smallest: dict[str, tuple[int, str]] = {}
        for gid in result.gangs:
            sim = self.by_gang.get(gid)
            if sim is None or gid in result.bindings:
                continue
            name = sim.gang.queue
            owed = short.get(name)
            if owed is None:
                continue
            gpus = sum(sim.pod_gpus)
            if gpus <= owed and (name not in smallest or gpus < smallest[name][0]):
                smallest[name] = (gpus, gid)
        for name in short:
            best = smallest.get(name)
            if best is None:
                s.last.append((name, "no pending gang fits what it is owed"))
                continue
            gpus, gid = best
            d = result.gangs[gid]
            why = f"{d.reason.value} ({_size(gpus)})"
            if d.reason.value == "WaitingForReservation":
                m = _HOLDERS.search(d.message)
                if m:
                    kinds = set()
                    for holder in m.group(1).split(", "):
                        hq = self.by_gang[holder].gang.queue if holder in self.by_gang else "?"
                        kinds.add(
                            "own queue"
                            if hq == name
                            else "borrowing"
                            if over.get(hq)
                            else "in share"
                        )
                    why += " held by " + "+".join(sorted(kinds))
                elif "being freed" in d.message or "stopped" in d.message:
                    why += " (reclaiming)"
            s.last.append((name, why))
        return result

    def _whole_nodes_idle(self, result: CycleResult, t_s: float) -> str:
        """Whether a whole node is free after this cycle's starts, and if every free one is
        held by a binding reservation, how soon the soonest of those is due."""
        whole = {
            node.name
            for node, free in zip(self.cluster.nodes, self.node_free, strict=True)
            if free > 0 and free == node.allocatable.get(GPU, 0)
        }
        if not whole:
            return "no whole node free"
        due: dict[str, float] = {}
        for res in result.reservations.values():
            for name in res.nodes:
                if name in whole:
                    due[name] = min(due.get(name, res.start), res.start)
        if len(due) < len(whole):
            return "a whole node free that no reservation holds"
        return (
            f"whole nodes free, all reserved, soonest due in {due_bucket(min(due.values()) - t_s)}"
        )


def due_bucket(seconds: float) -> str:
    """How soon a reservation is due, in the buckets the diagnoses report."""
    for bound, label in ((1, "< 1 h"), (6, "1-6 h"), (24, "6-24 h"), (48, "24-48 h")):
        if seconds < bound * 3600:
            return label
    return ">= 48 h"


def most(seconds: dict[str, float]) -> list[tuple[str, float]]:
    """`seconds` by category, the most time first (ties by name)."""
    return sorted(seconds.items(), key=lambda kv: (-kv[1], kv[0]))


def _size(gpus: int) -> str:
    return "1 GPU" if gpus == 1 else "2-8 GPUs" if gpus <= 8 else "9-32" if gpus <= 32 else "33+"


def replay(
    jobs: Sequence[TraceJob],
    cluster: Cluster,
    queues: Sequence[QueueSpec],
    policy: SimPolicy,
    cycle_interval_s: float = 60.0,
    progress: engine.Progress | None = None,
) -> tuple[engine.SimResult, Starved]:
    """`engine.simulate`, recording what held back each queue below its share."""
    instrumented = _Replay(
        jobs, cluster, queues, policy, cycle_interval_s=cycle_interval_s, progress=progress
    )
    instrumented.starved = Starved()
    return instrumented.run(), instrumented.starved


def main(argv: list[str] | None = None) -> int:
    parser = replay_cli.parser(__doc__)
    parser.add_argument("--top", type=int, default=5, help="queues to report, most time first")
    args = parser.parse_args(argv)
    settings = replay_cli.settings_of(args)
    result, starved = replay(
        *replay_cli.inputs(args.trace, args.shape, args.policy, args.limit_jobs, settings),
        progress=replay_cli.ProgressLine("starved"),
    )
    waits = [j.start_s - j.submit_s for j in result.completed]
    print(f"mean wait {sum(waits) / max(1, len(waits)) / 3600:.2f} h")
    for queue, total in most(starved.below_s)[: args.top]:
        print(f"{queue}: {total / 3600:.1f} h below 90% of its share")
        for why, t in most(starved.why_s[queue]):
            print(f"  {t / total:6.1%}  {why}")
        for idle, t in most(starved.idle_s.get(queue, {})):
            print(f"  {t / total:6.1%}  {idle}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
