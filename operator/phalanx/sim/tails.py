"""Who waits longest under a policy, and how long the same jobs wait under another.

    python -m phalanx.sim.tails --trace itp:bench/traces/msr-itp-2021/cluster04.csv \\
        --shape medium --policy phalanx --against volcano [--top 20] [--set FIELD=VALUE ...]

`make bench-sim` reports each size class's mean, p95 and worst wait; the goals of issue 19
judge the largest class's worst wait and everyone's p95. An order that serves the least work
first lowers the mean of every class and lengthens the tail of the classes whose jobs are
large work (whole nodes, long limits): this replays the trace under both policies and prints,
per size class, the mean, p95, p99 and worst wait side by side, then the jobs that waited
longest under `--policy` with their GPUs, run time, time limit (`time_limits`) and their wait
under `--against`. The same jobs complete under both (the engine replays every job), so the
rows pair by job id. One cycle per 60 s of virtual time, as `make bench-sim`. Used for
`bench/SIM.md` (issue 19, ninth round).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from phalanx.sim import engine, replay_cli
from phalanx.sim.metrics import SIZE_CLASSES, CompletedJob, wait_stats_by_class
from phalanx.sim.time_limits import time_limit_for

HOUR = 3600.0


@dataclass(frozen=True, slots=True)
class Tail:
    """One size class's waits, in hours (all 0 for an empty class)."""

    count: int
    mean_h: float
    p95_h: float
    p99_h: float
    max_h: float


def class_tails(jobs: Iterable[CompletedJob]) -> dict[str, Tail]:
    """Mean, p95, p99 and worst wait per size class (`metrics.wait_stats_by_class`, in
    hours); every class present, empty ones zero."""
    out: dict[str, Tail] = {}
    for name, st in wait_stats_by_class(jobs).items():
        out[name] = Tail(
            count=st.count,
            mean_h=(st.mean_s or 0.0) / HOUR,
            p95_h=(st.p95_s or 0.0) / HOUR,
            p99_h=(st.p99_s or 0.0) / HOUR,
            max_h=(st.max_s or 0.0) / HOUR,
        )
    return out


@dataclass(frozen=True, slots=True)
class Waiter:
    """A job that waited long under the first policy, and the same job under the second."""

    id: str
    queue: str
    gpus: int
    wait_h: float
    other_wait_h: float | None
    run_h: float
    limit_h: float | None


def longest_waits(
    jobs: Sequence[CompletedJob], other: Sequence[CompletedJob], top: int
) -> list[Waiter]:
    """The `top` longest waits of `jobs` (ties by id), each with its wait in `other` (`None`
    if it did not complete there). Run time is that of the completing run; its time limit is
    the one the policies saw (the round-up of the real run time)."""
    theirs: Mapping[str, CompletedJob] = {j.id: j for j in other}
    worst = sorted(jobs, key=lambda j: (-j.wait_s, j.id))[: max(0, top)]
    out = []
    for j in worst:
        o = theirs.get(j.id)
        run = j.end_s - j.start_s
        limit = time_limit_for(run)
        out.append(
            Waiter(
                id=j.id,
                queue=j.queue,
                gpus=j.gpus,
                wait_h=j.wait_s / HOUR,
                other_wait_h=None if o is None else o.wait_s / HOUR,
                run_h=run / HOUR,
                limit_h=None if limit is None else limit / HOUR,
            )
        )
    return out


def _h(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


def main(argv: list[str] | None = None) -> int:
    parser = replay_cli.parser(__doc__)
    parser.add_argument("--against", default="volcano", help="the policy to compare with")
    parser.add_argument("--top", type=int, default=20, help="how many of the longest waits")
    args = parser.parse_args(argv)
    settings = replay_cli.settings_of(args)
    names = (args.policy, args.against)
    results = []
    for name, changes in ((args.policy, settings), (args.against, {})):
        jobs, cluster, queues, policy = replay_cli.inputs(
            args.trace, args.shape, name, args.limit_jobs, changes
        )
        results.append(engine.simulate(jobs, cluster, queues, policy, cycle_interval_s=60.0))
    mine, theirs = (r.completed for r in results)
    label = " ".join([names[0], *args.set])
    print(f"{label} against {names[1]}: wait h per size class")
    print(f"{'class':>6} {'jobs':>6}  mean  p95  p99  max  ({names[0]} / {names[1]})")
    a, b = class_tails(mine), class_tails(theirs)
    for cls in SIZE_CLASSES:
        x, y = a[cls], b[cls]
        if not x.count:
            continue
        print(
            f"{cls:>6} {x.count:>6}  {x.mean_h:.1f}/{y.mean_h:.1f}  {x.p95_h:.1f}/{y.p95_h:.1f}"
            f"  {x.p99_h:.1f}/{y.p99_h:.1f}  {x.max_h:.1f}/{y.max_h:.1f}"
        )
    print(f"the {args.top} longest waits under {names[0]}:")
    head = f"{'job':<16} {'queue':<10} {'GPUs':>4} {'wait':>7} {names[1]:>8}"
    print(f"{head} {'run':>7} {'limit':>7}")
    for w in longest_waits(mine, theirs, args.top):
        print(
            f"{w.id[:16]:<16} {w.queue[:10]:<10} {w.gpus:>4} {w.wait_h:>7.1f} "
            f"{_h(w.other_wait_h):>8} {w.run_h:>7.1f} {_h(w.limit_h):>7}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
