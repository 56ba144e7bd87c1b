"""Reclaim churn of one replay: how long victims had run, whether each reclaim let its gang start.

    python -m phalanx.sim.churn --trace philly:bench/traces/philly-pollux/philly.csv \\
        --shape medium --policy phalanx --limit-jobs 20000 [--set FIELD=VALUE ...]

A reclaim is useful when the gang it was made for starts on what it freed. Churn is the other
case: the victims (usually the gangs that started last, "least run time lost") are evicted, the
reclaimer does not start, the capacity goes back to borrowers, and the next cycle reclaims
again. The figures printed tell the two apart: how long victims had run when evicted, the share
of reclaims whose gang started at that same instant (the replay's follow-up cycles run at the
eviction's instant, a zero grace period), and the most reclaims made for one gang and the most
evictions of one gang. Used for `bench/SIM.md` ("Reclaim churn").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from phalanx.core import CycleResult
from phalanx.sim import engine, replay_cli
from phalanx.sim.nodes import Cluster
from phalanx.sim.policies import SimPolicy
from phalanx.sim.queues import QueueSpec
from phalanx.sim.traces import TraceJob


@dataclass
class Churn:
    """What the instrumented replay saw (one entry per eviction, in order)."""

    ran_s: list[float] = field(default_factory=list)
    reclaimer: list[str] = field(default_factory=list)
    victim: list[str] = field(default_factory=list)
    at: list[float] = field(default_factory=list)
    started: dict[str, list[float]] = field(default_factory=dict)


class _Replay(engine.Replay):
    churn: Churn

    def _core_cycle(self, t_s: float) -> CycleResult | None:
        began = {g: s.start_s for g, s in self.running.items()}
        result = super()._core_cycle(t_s)
        if result is not None:
            for e in result.evictions:
                start = began.get(e.gang)
                self.churn.reclaimer.append(e.for_gang)
                self.churn.victim.append(e.gang)
                self.churn.ran_s.append(t_s - start if start is not None else 0.0)
                self.churn.at.append(t_s)
        return result

    def _start(self, sim: engine.SimJob, nodes: dict[str, str], t_s: float) -> None:
        self.churn.started.setdefault(sim.gang.id, []).append(t_s)
        super()._start(sim, nodes, t_s)


def replay(
    jobs: Sequence[TraceJob],
    cluster: Cluster,
    queues: Sequence[QueueSpec],
    policy: SimPolicy,
    cycle_interval_s: float = 60.0,
    progress: engine.Progress | None = None,
) -> tuple[engine.SimResult, Churn]:
    """`engine.simulate`, recording every eviction."""
    instrumented = _Replay(
        jobs, cluster, queues, policy, cycle_interval_s=cycle_interval_s, progress=progress
    )
    instrumented.churn = Churn()
    return instrumented.run(), instrumented.churn


def measure(
    trace: str,
    shape: str,
    policy: str,
    limit_jobs: int | None,
    settings: dict[str, str],
    progress: engine.Progress | None = None,
) -> tuple[engine.SimResult, Churn]:
    """Replay a trace with 60 s cycles, as `make bench-sim` does, recording every eviction."""
    return replay(*replay_cli.inputs(trace, shape, policy, limit_jobs, settings), progress=progress)


def report(result: engine.SimResult, churn: Churn) -> list[str]:
    """The figures, one per line."""
    n = len(churn.ran_s)
    waits = [j.start_s - j.submit_s for j in result.completed]
    lines = [
        f"evictions {dict(result.evictions)}, lost {result.lost_gpu_hours:,.0f} GPU-h, "
        f"mean wait {sum(waits) / max(1, len(waits)) / 3600:.2f} h",
    ]
    if not n:
        return lines
    ran = sorted(churn.ran_s)
    same = sum(
        1 for g, t in zip(churn.reclaimer, churn.at, strict=True) if t in churn.started.get(g, ())
    )
    lines += [
        f"victims had run: median {ran[n // 2]:.0f} s; at most 60 s: "
        f"{sum(x <= 60 for x in ran)} of {n}",
        f"reclaims whose gang started at that instant: {same} of {n} ({same / n:.0%})",
        f"most reclaims for one gang: {max(Counter(churn.reclaimer).values())}; most "
        f"evictions of one gang: {max(Counter(churn.victim).values())}",
    ]
    return lines


def main(argv: list[str] | None = None) -> int:
    args = replay_cli.parser(__doc__).parse_args(argv)
    settings = replay_cli.settings_of(args)
    result, churn = measure(
        args.trace,
        args.shape,
        args.policy,
        args.limit_jobs,
        settings,
        progress=replay_cli.ProgressLine("churn"),
    )
    for line in report(result, churn):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
