"""How long a queue stays below its share even when it is served before every other queue.

    python -m phalanx.sim.sharefloor --trace philly:bench/traces/philly-pollux/philly.csv \\
        --shape medium --queue ee9e8c [--policy volcano] [--set reclaim=false ...]

Issue 19 asks that no Philly queue be below 90% of its deserved share for more than 15% of its
demand time. The deserved share (the reference of `make bench-sim`: guarantee plus spare,
water-filled by weight up to demand) rises the moment a queue's demand does, but a policy that
does not evict can give the queue only what running gangs free as they end. This replay puts
`--queue` above every other queue (queue `priority`, which the core walks first, PRODUCT.md §3;
the reference share does not read it, so the yardstick is unchanged) and, with eviction off
(`--set reclaim=false --set preemption=false`), its gangs take whatever fits before any other
queue's: the time it still spends below its share is close to the least any non-evicting
policy could give it from the same arrivals. Close to, not a proof: a greedy first fit can
strand GPUs a cleverer order would use, reservations (`--policy phalanx`) can drain nodes for
its larger gangs sooner or later than greedy does, and starts wait for the 60 s cycle grid.
With eviction on it says what reclaim can buy that queue instead. Below the figure, that time
is split as `phalanx.sim.starved` splits it (what held back the queue's smallest gang within
what it was owed, and whether a whole node was free), measured there against the share the
core computed, so its hours can differ a little from the reference's. Used for
`bench/SIM.md` (issue 19, "Philly, queue share").
"""

from __future__ import annotations

from collections.abc import Sequence

from phalanx.sim import replay_cli, starved
from phalanx.sim.queues import QueueSpec
from phalanx.sim.report import summarize


def served_first(queues: Sequence[QueueSpec], name: str) -> list[QueueSpec]:
    """`queues` with `name`'s priority one above every other queue's, the rest unchanged.

    `ValueError` naming the queues there are when `name` is not one of them (a typo would
    otherwise replay the unchanged policy and report a floor that is nothing of the sort)."""
    names = [q.name for q in queues]
    if name not in names:
        raise ValueError(f"no queue {name!r}; the trace's queues are: {', '.join(names)}")
    top = max((q.priority for q in queues if q.name != name), default=0) + 1
    return [q.model_copy(update={"priority": top}) if q.name == name else q for q in queues]


def main(argv: list[str] | None = None) -> int:
    parser = replay_cli.parser(__doc__)
    parser.add_argument("--queue", required=True, help="the queue to serve before all others")
    args = parser.parse_args(argv)
    settings = replay_cli.settings_of(args)
    jobs, cluster, queues, policy = replay_cli.inputs(
        args.trace, args.shape, args.policy, args.limit_jobs, settings
    )
    try:
        first = served_first(queues, args.queue)
    except ValueError as exc:
        parser.error(str(exc))
    result, why = starved.replay(
        jobs, cluster, first, policy, progress=replay_cli.ProgressLine("sharefloor")
    )
    summary = summarize(result, trace=args.trace, shape=args.shape)
    share = summary["queue_share"][args.queue]
    print(
        f"{args.queue} first ({policy.name}, {', '.join(args.set) or 'no --set'}): "
        f"{share['demand_time_s'] / 3600:.1f} h of demand, "
        f"below 90% of its share {_pct(share['below_fraction'])} of it, "
        f"mean allocated/deserved {_num(share['mean_ratio'])}"
    )
    below = why.below_s.get(args.queue, 0.0)
    if below:
        print(f"  what held back its smallest gang within what it was owed ({_h(below)} h):")
        for reason, seconds in starved.most(why.why_s[args.queue]):
            print(f"  {seconds / below:6.1%}  {reason}")
        for idle, seconds in starved.most(why.idle_s.get(args.queue, {})):
            print(f"  {seconds / below:6.1%}  {idle}")
    worst = max(summary["queue_share"].items(), key=lambda kv: kv[1]["below_fraction"] or 0.0)
    print(
        f"all jobs: mean wait {summary['wait_mean_s'] / 3600:.2f} h, utilisation "
        f"{summary['gpu_utilization']:.2%}, worst queue {worst[0]} "
        f"{_pct(worst[1]['below_fraction'])}"
    )
    return 0


def _h(seconds: float) -> str:
    return f"{seconds / 3600:.1f}"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


if __name__ == "__main__":
    raise SystemExit(main())
