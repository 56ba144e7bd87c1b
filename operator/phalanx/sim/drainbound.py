"""A lower bound on the wait of each large gang of a replay, from the drain of what ran then.

    python -m phalanx.sim.drainbound --trace itp:bench/traces/msr-itp-2021/cluster02.csv \\
        --shape small --policy phalanx [--min-gpus 33] [--set FIELD=VALUE ...]

At the first cycle after a gang of at least `--min-gpus` GPUs arrives, take the gangs running
then and their *real* end times (the trace's durations, not the rounded limits). If nothing
else started from then on and the gang were first in line, it could not start before as many
nodes as it has pods were empty of them: the time the `pods`-th node empties. No policy that
does not evict could start it sooner from that state (it ignores topology and the other
waiting gangs, so the true bound is at least this). Used for `bench/SIM.md` ("Where the goals
still miss").
"""

from __future__ import annotations

import argparse

from phalanx.core import CycleResult
from phalanx.sim import engine
from phalanx.sim.nodes import load_cluster
from phalanx.sim.policies import get_policy, with_settings
from phalanx.sim.queues import queues_for_trace
from phalanx.sim.traces import TraceJob, load_trace


class _Replay(engine.Replay):
    big: dict[str, TraceJob]
    bound_at: dict[str, tuple[float, float]]

    def _core_cycle(self, t_s: float) -> CycleResult | None:
        for gid in self.pending:
            job = self.big.get(gid)
            if job is None or gid in self.bound_at:
                continue
            free = {n.name: t_s for n in self.cluster.nodes}
            for sim in self.running.values():
                if sim.running is None or sim.start_s is None:
                    continue
                end = sim.start_s + sim.job.duration_s
                for m in sim.running.members:
                    free[m.node] = max(free[m.node], end)
            times = sorted(free.values())
            self.bound_at[gid] = (t_s, times[min(len(times), len(job.pod_gpus)) - 1])
        return super()._core_cycle(t_s)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--trace", required=True)
    parser.add_argument("--shape", required=True)
    parser.add_argument("--policy", default="phalanx")
    parser.add_argument("--min-gpus", type=int, default=33)
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE")
    args = parser.parse_args(argv)
    loaded = load_trace(args.trace)
    cluster = load_cluster(args.shape)
    policy = with_settings(get_policy(args.policy), dict(s.split("=", 1) for s in args.set))
    replay = _Replay(
        loaded.jobs,
        cluster,
        queues_for_trace(loaded, cluster.total_gpus),
        policy,
        cycle_interval_s=60.0,
    )
    replay.big = {f"sim/{j.id}": j for j in loaded.jobs if j.gpus >= args.min_gpus}
    replay.bound_at = {}
    result = replay.run()
    waits = {f"sim/{j.id}": j.start_s - j.submit_s for j in result.completed}
    for gid, (_, bound) in sorted(replay.bound_at.items(), key=lambda kv: kv[1][0]):
        job = replay.big[gid]
        print(
            f"day {job.submit_s / 86400:6.2f}  {job.gpus} GPUs, "
            f"ran {job.duration_s / 3600:6.1f} h: "
            f"waited {waits.get(gid, float('nan')) / 3600:7.1f} h, drain lower bound "
            f"{(bound - job.submit_s) / 3600:7.1f} h"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
