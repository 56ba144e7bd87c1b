"""Why GPUs sit idle while gangs wait: held for a reservation, fragmented, or too few.

    python -m phalanx.sim.idle --trace itp:bench/traces/itp/cluster03.csv --shape small \\
        --policy phalanx [--limit-jobs N] [--set FIELD=VALUE ...]

The utilisation figure of `make bench-sim` says how much of the cluster was busy over the
arrival window, not why the rest was not. On a loaded trace most idle GPU-time passes while
gangs wait, and a policy can only win it back if it knows which kind it is. This replay
records, after every cycle and until the next one, the GPUs free while at least one gang is
pending, split into:

- **held**: free GPUs on nodes a binding reservation will start on (the drain: capacity kept
  for a gang that cannot start yet);
- of the rest, **fits, not started**: some pending gang fits on them (first-fit decreasing of its
  pods over the free GPUs per node) and the policy left it waiting (order, limits, reclaim);
- **fragmented**: some pending gang needs no more GPUs than are free but fits on no set of nodes;
- **too few**: every pending gang needs more GPUs than are free.

GPU-seconds with nothing pending are counted apart. Only the arrival window counts (the
utilisation goal's window), so the table adds up to its idle GPU-time. Fit is judged on GPUs
alone (the simulator's pods request nothing else that binds). Used for `bench/SIM.md`
(issue 19, "cluster03, utilisation").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from phalanx.core import CycleResult
from phalanx.sim import engine, replay_cli
from phalanx.sim.metrics import gpu_utilization
from phalanx.sim.nodes import Cluster
from phalanx.sim.policies import SimPolicy
from phalanx.sim.queues import QueueSpec
from phalanx.sim.starved import due_bucket
from phalanx.sim.traces import TraceJob

GPU = "nvidia.com/gpu"

NOTHING_PENDING = "nothing pending"
HELD = "held for a reservation"
FITS = "fits a pending gang, not started"
FRAGMENTED = "fragmented"
TOO_FEW = "too few for any pending gang"
KINDS = (HELD, FITS, FRAGMENTED, TOO_FEW, NOTHING_PENDING)


@dataclass
class Idle:
    """Idle GPU-seconds over the arrival window, by why they were idle."""

    gpu_s: dict[str, float] = field(default_factory=lambda: dict.fromkeys(KINDS, 0.0))
    window_s: float = 0.0
    capacity: int = 0
    held_s: dict[str, float] = field(default_factory=dict)
    """The held GPU-seconds again, by how soon the reservation holding them is due and whether
    a pending gang other than the holders would fit on them if it could run past that start
    (what backfilling a job that may not finish in time would use)."""
    #: What the previous cycle left idle, charged with the time to the next one.
    last: dict[str, int] = field(default_factory=dict)
    last_held: dict[str, int] = field(default_factory=dict)
    last_t: float | None = None

    def charge(self, until_s: float, first_s: float, last_s: float) -> None:
        """Charge the previous cycle's idle GPUs for its time inside [first_s, last_s]."""
        if self.last_t is None:
            return
        held = max(0.0, min(until_s, last_s) - max(self.last_t, first_s))
        for kind, gpus in self.last.items():
            self.gpu_s[kind] += gpus * held
        for kind, gpus in self.last_held.items():
            self.held_s[kind] = self.held_s.get(kind, 0.0) + gpus * held


def fits(pods: Sequence[int], free: Iterable[int]) -> bool:
    """Whether pods of these GPU counts fit on nodes with these free GPUs (first-fit
    decreasing: exact for the simulator's gangs, whose pods are all 8 GPUs but one)."""
    left = sorted((f for f in free if f > 0), reverse=True)
    for pod in sorted(pods, reverse=True):
        for k, f in enumerate(left):
            if f >= pod:
                left[k] = f - pod
                break
        else:
            return False
    return True


class _Replay(engine.Replay):
    idle: Idle
    last_result: CycleResult | None = None

    def _core_cycle(self, t_s: float) -> CycleResult | None:
        result = super()._core_cycle(t_s)
        self.last_result = result
        return result

    def _cycle(self, t_s: float) -> None:
        first, last = self.jobs[0].job.submit_s, self.jobs[-1].job.submit_s
        self.idle.charge(t_s, first, last)
        self.last_result = None
        super()._cycle(t_s)
        self.idle.last, self.idle.last_held = self._classify(t_s)
        self.idle.last_t = t_s

    def _classify(self, t_s: float) -> tuple[dict[str, int], dict[str, int]]:
        """Idle GPUs after this cycle by kind, and the held ones again by how soon they are due
        and whether a pending gang would fit on them."""
        free = list(self.node_free)
        by_due: dict[str, int] = {}
        if not self.pending:
            return {NOTHING_PENDING: sum(free)}, by_due
        due: dict[int, float] = {}
        holders: set[str] = set()
        if self.last_result is not None:
            for res in self.last_result.reservations.values():
                holders.add(res.gang)
                for name in res.nodes:
                    k = self.node_index[name]
                    due[k] = min(due.get(k, res.start), res.start)
        held = sum(free[k] for k in due)
        if held:
            others = {tuple(s.pod_gpus) for g, s in self.pending.items() if g not in holders}
            would = "a pending gang fits" if any(fits(o, free) for o in others) else "none fits"
            for k, start in due.items():
                if free[k]:
                    key = f"due in {due_bucket(start - t_s)}, {would}"
                    by_due[key] = by_due.get(key, 0) + free[k]
        for k in due:
            free[k] = 0
        unheld = sum(free)
        out = {HELD: held}
        if unheld == 0:
            return out, by_due
        shapes = {tuple(sim.pod_gpus) for sim in self.pending.values()}
        small = [s for s in shapes if sum(s) <= unheld]
        if not small:
            out[TOO_FEW] = unheld
        elif any(fits(s, free) for s in small):
            out[FITS] = unheld
        else:
            out[FRAGMENTED] = unheld
        return out, by_due


def replay(
    jobs: Sequence[TraceJob],
    cluster: Cluster,
    queues: Sequence[QueueSpec],
    policy: SimPolicy,
    cycle_interval_s: float = 60.0,
    progress: engine.Progress | None = None,
) -> tuple[engine.SimResult, Idle]:
    """`engine.simulate`, recording why GPUs were idle after every cycle."""
    instrumented = _Replay(
        jobs, cluster, queues, policy, cycle_interval_s=cycle_interval_s, progress=progress
    )
    instrumented.idle = Idle(capacity=cluster.total_gpus)
    result = instrumented.run()
    instrumented.idle.charge(result.last_submit_s, result.first_submit_s, result.last_submit_s)
    instrumented.idle.window_s = result.last_submit_s - result.first_submit_s
    return result, instrumented.idle


def main(argv: list[str] | None = None) -> int:
    parser = replay_cli.parser(__doc__)
    args = parser.parse_args(argv)
    settings = replay_cli.settings_of(args)
    result, idle = replay(
        *replay_cli.inputs(args.trace, args.shape, args.policy, args.limit_jobs, settings),
        progress=replay_cli.ProgressLine("idle"),
    )
    waits = [j.start_s - j.submit_s for j in result.completed]
    total = idle.capacity * idle.window_s
    mean_h = sum(waits) / max(1, len(waits)) / 3600
    print(
        f"{args.policy} {' '.join(args.set)}: mean wait {mean_h:.2f} h;"
        f" over the arrival window ({idle.window_s / 86400:.1f} days, {idle.capacity} GPUs):"
    )
    util = gpu_utilization(
        result.allocated.samples(), idle.capacity, result.first_submit_s, result.last_submit_s
    )
    busy = (util or 0.0) * total
    latency = total - busy - sum(idle.gpu_s.values())
    print(f"  busy {busy / max(total, 1):6.2%} (the utilisation figure)")
    for kind in KINDS:
        share = idle.gpu_s[kind] / max(total, 1)
        print(f"  {share:6.2%}  {idle.gpu_s[kind] / max(idle.window_s, 1):5.2f} GPUs avg  {kind}")
        if kind == HELD:
            for key, gpu_s in sorted(idle.held_s.items()):
                print(f"      {gpu_s / max(total, 1):6.2%}  {key}")
    print(
        f"  {latency / max(total, 1):6.2%}  {latency / max(idle.window_s, 1):5.2f} GPUs avg  "
        "freed since the last cycle (cycle latency)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
