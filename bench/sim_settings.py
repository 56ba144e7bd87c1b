"""Replays of policy *settings* (issue 19): each mechanism alone and together, per trace.

`make bench-sim` compares the named policies; this script replays variants of them
(`phalanx simulate --set FIELD=VALUE`), one at a time and in this process, and appends one
JSON line per replay to `bench/results/sim-settings.jsonl` (the trace label, the setting's
name, the policy and settings, and the replay's summary). `bench/sim_bench.py` reads that file
for the Pareto plot (mean wait against the largest class's worst wait, one point per policy
and per setting) and the table of what each mechanism bought alone.

    bench/sim_settings.py --only itp-cluster04 --setting work-alone --setting bound-alone

A setting already recorded for a trace (same name, same settings, same job limit) is skipped,
so an interrupted sweep can be resumed. Run it under `nice`: a Philly replay takes ~20 min.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results" / "sim-settings.jsonl"

NO_HONOUR = {"start_starving_leaves": "0"}
"""The settings measured before the honoured reservations shipped ran on `phalanx` without them
(on the ITP traces that was the whole shipped policy of the time: the reclaim churn fix changes
nothing with one queue). Kept in their settings so each line replays what it measured."""

SETTINGS: dict[str, tuple[str, dict[str, str], str]] = {
    # name: (base policy, settings, what it measures)
    "work-alone": (
        "phalanx-conservative",
        {"work_weight": "1"},
        "the work term alone: `phalanx-conservative` (EASY, depth 1) ordered by age − work",
    ),
    "bound-alone": (
        "phalanx",
        {"work_weight": "0", **NO_HONOUR},
        "starvation-bounded reservations alone: FIFO order (work 0), no honoured reservations",
    ),
    "no-honour": (
        "phalanx",
        dict(NO_HONOUR),
        "the shipped policy without honoured reservations (the default before them)",
    ),
    "work+easy-per-queue": (
        "phalanx",
        {
            "backfill_depth_per_queue": "1",
            "reserve_after_limits": "0",
            "reserve_after_s": "0",
            **NO_HONOUR,
        },
        "the work term with no bound: the first gang of each queue that cannot start reserves",
    ),
    "per-queue-1": (
        "phalanx",
        {"backfill_depth_per_queue": "1", **NO_HONOUR},
        "one binding reservation per queue",
    ),
    "abs-24h-per-queue-1": (
        "phalanx",
        {"backfill_depth_per_queue": "1", "reserve_after_limits": "0", **NO_HONOUR},
        "an absolute 24 h bound only, one reservation per queue",
    ),
    "cap-12h": (
        "phalanx",
        {"reserve_after_s": "43200", **NO_HONOUR},
        "the bound capped at 12 h, not 24 h",
    ),
    "age-weight-2": ("phalanx", {"age_weight": "2", **NO_HONOUR}, "twice the age weight"),
    "bound-per-member": (
        "phalanx",
        {"reserve_per_member": "true", **NO_HONOUR},
        "the bound divided by the gang's members (large gangs reserve sooner)",
    ),
    "min-members-2": (
        "phalanx",
        {"reserve_min_members": "2", **NO_HONOUR},
        "only gangs of two or more pods hold binding reservations",
    ),
    "churn-fix-off": (
        "phalanx",
        {"charge_promised": "false", "evict_before_walk": "true"},
        "without the reclaim churn fix: gangs that reclaimed not charged to their queue, and "
        "gangs planned before the walk reclaim there",
    ),
    "start-starving-2": (
        "phalanx",
        {"start_starving_min_members": "2", **NO_HONOUR},
        "every starving gang of two or more pods that fits now starts before the walk",
    ),
    "start-starving-4": (
        "phalanx",
        {"start_starving_min_members": "4", **NO_HONOUR},
        "the same from four pods (= the shipped rule on `small`, 4 nodes a leaf)",
    ),
    "start-starving-8": (
        "phalanx",
        {"start_starving_min_members": "8", **NO_HONOUR},
        "the same from eight pods (= the shipped rule on `medium`, 8 nodes a leaf)",
    ),
    "deadline-order": (
        "phalanx",
        {"reserve_by_deadline": "true", **NO_HONOUR},
        "starving gangs reserve in the order they starved (earliest deadline first), not "
        "oldest first",
    ),
    "honour-unguarded": (
        "phalanx",
        {"honour_within_share": "false"},
        "honoured reservations also for gangs that would take their queue beyond its share",
    ),
    "no-under-share": (
        "phalanx",
        {"reserve_under_share": "false"},
        "the shipped policy without the under-share exception",
    ),
    # -- the second round of issue 19 (each on the shipped policy of 2026-12-01, honour on)
    "min-members-2-honour": (
        "phalanx",
        {"reserve_min_members": "2"},
        "only gangs of two or more pods hold binding reservations, reservations honoured",
    ),
    "work-weight-2": (
        "phalanx",
        {"work_weight": "2"},
        "twice the work weight (closer to shortest-work-first; the bound still caps waits)",
    ),
    "work-1.5": ("phalanx", {"work_weight": "1.5"}, "1.5 × the work weight"),
    "work-2+min-members-2": (
        "phalanx",
        {"work_weight": "2", "reserve_min_members": "2"},
        "twice the work weight, and only multi-pod gangs reserve",
    ),
    "slowdown-3": (
        "phalanx",
        {"reserve_after_limits": "2"},
        "the relative bound at twice the time limit (bounded slowdown 3, not 2)",
    ),
    "cap-48h": (
        "phalanx",
        {"reserve_after_s": "172800"},
        "the absolute cap of the bound at 48 h, not 24 h (the relative bound unchanged)",
    ),
    "per-queue-1-honour": (
        "phalanx",
        {"backfill_depth_per_queue": "1"},
        "one binding reservation per queue (EASY among the starving gangs), honoured",
    ),
    "cap-48h+per-queue-1": (
        "phalanx",
        {"reserve_after_s": "172800", "backfill_depth_per_queue": "1"},
        "the 48 h cap and one binding reservation per queue",
    ),
    "cap-48h+min-members-2": (
        "phalanx",
        {"reserve_after_s": "172800", "reserve_min_members": "2"},
        "the 48 h cap and only multi-pod gangs reserve",
    ),
    "per-queue-1+owed-uncapped": (
        "phalanx",
        {"backfill_depth_per_queue": "1", "owed_uncapped": "true"},
        "one binding reservation per queue, gangs owed their queue's share exempt from the cap",
    ),
    "per-queue-2-honour": (
        "phalanx",
        {"backfill_depth_per_queue": "2"},
        "two binding reservations per queue, honoured",
    ),
    "per-queue-1+min-members-2": (
        "phalanx",
        {"backfill_depth_per_queue": "1", "reserve_min_members": "2"},
        "one binding reservation per queue, and only multi-pod gangs reserve",
    ),
    "per-queue-1+honour-half-leaf": (
        "phalanx",
        {"backfill_depth_per_queue": "1", "start_starving_leaves": "0.5"},
        "one binding reservation per queue, honoured from half a leaf's worth of nodes",
    ),
    "per-queue-1+half-leaf+work-2": (
        "phalanx",
        {"backfill_depth_per_queue": "1", "start_starving_leaves": "0.5", "work_weight": "2"},
        "the same with twice the work weight",
    ),
    # -- the third round of issue 19 (session 10)
    "owed-start-first": (
        "phalanx",
        {"owed_start_first": "true"},
        "gangs of a queue below its share that fit now within it start before the queues "
        "after it plan their starving gangs",
    ),
    "least-idle": (
        "phalanx",
        {"reserve_least_idle": "true"},
        "a reservation takes, among equally good places, the leaves and nodes with the fewest "
        "GPUs free now (the least capacity held idle until it starts)",
    ),
    "overused-last": (
        "phalanx",
        {"reserve_borrowing_last": "true"},
        "a starving gang of a queue already at its share reserves in the walk, after the queues "
        "below theirs, not before it",
    ),
    "per-queue-1+owed-start-first": (
        "phalanx",
        {"backfill_depth_per_queue": "1", "owed_start_first": "true"},
        "one binding reservation per queue, and gangs of a queue below its share start first",
    ),
    "per-queue-1+least-idle": (
        "phalanx",
        {"backfill_depth_per_queue": "1", "reserve_least_idle": "true"},
        "one binding reservation per queue, placed where the least capacity is held idle",
    ),
    # -- the fourth round (session 11)
    "align-ends": (
        "phalanx",
        {"align_ends": "true"},
        "a gang starting now goes, between nodes that hold it equally well, where it ends "
        "(by its time limit) before the pods already there end by theirs: nodes come back whole",
    ),
    "per-queue-1+align-ends": (
        "phalanx",
        {"backfill_depth_per_queue": "1", "align_ends": "true"},
        "one binding reservation per queue, and end-time alignment",
    ),
    "charge-reservations+walk-order": (
        "phalanx",
        {"charge_reservations": "true", "reservations_in_walk_order": "true"},
        "a queue's binding reservations count toward its share within the cycle: for whether "
        "its next gang is still owed (a queue owed 14 GPUs reserves for 14, not for every gang "
        "that fits within 14 alone), and in the walk's queue order",
    ),
    "charge-reservations": (
        "phalanx",
        {"charge_reservations": "true"},
        "a queue's binding reservations count toward what it is owed within the cycle (not in "
        "the walk's order): its owed reservations together fit within its share",
    ),
    "per-queue-1+owed-start-first+least-idle": (
        "phalanx",
        {
            "backfill_depth_per_queue": "1",
            "owed_start_first": "true",
            "reserve_least_idle": "true",
        },
        "the three together",
    ),
    "preempt-starving-2": (
        "phalanx",
        {"preempt_starving": "2"},
        "selective preemption, factor 2: a starving gang of a leaf or more evicts gangs of its "
        "queue whose expansion factor is at most half its own and that ran at most twice its "
        "time limit",
    ),
    "preempt-starving-1.5": (
        "phalanx",
        {"preempt_starving": "1.5"},
        "selective preemption, factor 1.5",
    ),
    "preempt-starving-3": (
        "phalanx",
        {"preempt_starving": "3"},
        "selective preemption, factor 3",
    ),
    "owed-slip-2": (
        "phalanx",
        {"owed_slip": "2"},
        "slack-based backfilling for queues below their share: such a gang that fits now only on "
        "held capacity starts first if every reservation it pushes back still starts by its "
        "gang's creation + 2 × its starvation bound",
    ),
    "per-queue-1+owed-slip-2": (
        "phalanx",
        {"backfill_depth_per_queue": "1", "owed_slip": "2"},
        "one binding reservation per queue, and slack-based backfilling for queues below their "
        "share",
    ),
    "slip-any-2": (
        "phalanx",
        {"owed_slip": "2", "slip_any": "true"},
        "slack-based backfilling for every gang: one that fits now only on held capacity starts "
        "first if every reservation it pushes back still starts by its gang's creation + 2 × "
        "its starvation bound",
    ),
    "honour-after-2": (
        "phalanx",
        {"honour_after": "2"},
        "a starving gang of any size that has waited twice the 24 h bound starts first when "
        "it fits (its reservation honoured, as a leaf's worth of nodes is at once)",
    ),
    "max-age-7d": (
        "phalanx",
        {"age_max": "604800"},
        "the age factor of the order absolute, saturating at 7 days of wait (Slurm's "
        "PriorityMaxAge default) instead of relative to the longest wait pending",
    ),
    "max-age-7d+min-members-2": (
        "phalanx",
        {"age_max": "604800", "reserve_min_members": "2"},
        "the absolute age (7 days), and only gangs of two or more pods reserve for starving",
    ),
    "max-age-7d+half-leaf": (
        "phalanx",
        {"age_max": "604800", "start_starving_leaves": "0.5"},
        "the absolute age (7 days), and a starving gang of half a leaf's worth of nodes (two "
        "pods on small, four on medium) starts ahead of the order when it fits",
    ),
    "no-decay": (
        "phalanx",
        {"usage_decay": "false"},
        "no usage decay: deserved shares water-filled by weight alone, as the fairness reference",
    ),
    "per-queue-1-multi-node": (
        "phalanx",
        {"backfill_depth_per_queue": "1", "cap_min_members": "2"},
        "one binding reservation per queue for gangs of two or more pods (EASY for the gangs "
        "whose reservations drain several nodes); gangs of one pod reserve as in the default",
    ),
    "min-members-2-owed-small": (
        "phalanx",
        {"reserve_min_members": "2", "owed_small": "true"},
        "only gangs of two or more pods reserve for starving; a gang of one pod reserves only "
        "when its queue is owed its deserved share",
    ),
    "speculate-0.5": (
        "phalanx",
        {"speculate": "0.5"},
        "speculative backfilling: a gang without a binding reservation starts on held capacity "
        "whose holds begin at least half its time limit from now, and is evicted if it still "
        "runs when their start is due",
    ),
    "speculate-0.25": (
        "phalanx",
        {"speculate": "0.25"},
        "speculative backfilling on holds at least a quarter of the gang's time limit away",
    ),
    "shipped-12-01": (
        "phalanx",
        {},
        "the default before 2026-12-02: age relative to the longest wait pending, reservations "
        "honoured from a leaf's worth of nodes",
    ),
}

EARLIER_DEFAULTS = {
    "age_max": "0",
    "start_starving_leaves": "1",
    "reserve_after_limits": "1",
    "reserve_after_peers": "0",
}
"""Four defaults of `phalanx` changed in issue 19's twelfth and fourteenth rounds (2026-12-02:
age absolute at 7 days, honoured from half a leaf; 2026-12-03: the bound at twice the time
limit, and no sooner than the peers' slowdown gives), at their values before. Every setting
above was measured on the shipped policy of its day, so each keeps them (unless it sets them
itself) and replays what it measured; the recorded lines carry them too, so a resumed sweep
skips only what is truly recorded. Settings added from now on are on the new default and leave
them out."""

SETTINGS = {
    name: (base, {**EARLIER_DEFAULTS, **settings} if base == "phalanx" else settings, text)
    for name, (base, settings, text) in SETTINGS.items()
}
SETTINGS["shipped-12-02"] = (
    "phalanx",
    {"reserve_after_limits": "1", "reserve_after_peers": "0"},
    "the default of 2026-12-02: age absolute at 7 days, honoured from half a leaf, the bound "
    "at once the time limit",
)
SETTINGS["shipped-12-03"] = (
    "phalanx",
    {"reserve_after_peers": "0"},
    "the default of 2026-12-03 until the fourteenth round: as now, without the peers' slowdown "
    "bound",
)


def traces() -> dict[str, tuple[str, str]]:
    sys.path.insert(0, str(ROOT / "bench"))
    from sim_bench import runs

    return {label: (trace, shape) for label, trace, shape, _ in runs()}


def record(
    label: str, name: str, policy: str, settings: dict[str, str], limit: int | None
) -> dict[str, Any]:
    """Replay one setting on one trace and return its JSON line."""
    sys.path.insert(0, str(ROOT / "bench"))
    from sim_bench import use_sources

    use_sources()
    from phalanx.sim.cli import run_simulation

    trace, shape = traces()[label]
    began = time.time()
    summary, _ = run_simulation(
        trace, shape, policy, limit_jobs=limit, cycle_interval_s=60.0, settings=settings
    )
    summary["label"] = label
    summary["finished_at"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    summary["wall_s"] = time.time() - began
    return {"label": label, "name": name, "policy": policy, "settings": settings,
            "limit_jobs": limit, "summary": summary}  # fmt: skip


def recorded(path: Path = OUT) -> list[dict[str, Any]]:
    """Every line of the settings file (none if there is no file)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def append(path: Path, line: dict[str, Any]) -> None:
    """Add one replay's line to a results file (made if missing): each line is written as soon
    as its replay ends, so a stopped sweep keeps what finished."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(line) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", help="trace labels (default: all)")
    parser.add_argument("--setting", action="append", help=f"of {', '.join(SETTINGS)}")
    parser.add_argument(
        "--custom",
        nargs=3,
        action="append",
        metavar=("NAME", "POLICY", "FIELD=VALUE,..."),
        help="a setting not in the list",
    )
    parser.add_argument("--quick", type=int, default=None, metavar="N")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    chosen: list[tuple[str, str, dict[str, str]]] = []
    for name in args.setting or ([] if args.custom else list(SETTINGS)):
        policy, settings, _ = SETTINGS[name]
        chosen.append((name, policy, settings))
    for name, policy, text in args.custom or []:
        pairs = dict(p.split("=", 1) for p in text.split(",") if p)
        chosen.append((name, policy, pairs))
    done = {
        (r["label"], r["name"], json.dumps(r["settings"], sort_keys=True), r["limit_jobs"])
        for r in recorded(args.out)
    }
    labels = args.only or list(traces())
    for label in labels:
        for name, policy, settings in chosen:
            key = (label, name, json.dumps(settings, sort_keys=True), args.quick)
            if key in done:
                print(f"{label} {name}: recorded, skipped", flush=True)
                continue
            line = record(label, name, policy, settings, args.quick)
            s = line["summary"]
            print(
                f"{label} {name}: util {s['gpu_utilization']:.2%}, mean "
                f"{s['wait_mean_s'] / 3600:.2f} h, p95 {s['wait_p95_s'] / 3600:.2f} h, largest "
                f"{(s['largest_gang_wait_max_s'] or 0) / 3600:.1f} h, wall {s['wall_s']:.0f} s",
                flush=True,
            )
            append(args.out, line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
