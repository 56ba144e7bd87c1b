"""How much of a goal figure is chance: the same replays on shifted cycle grids (issue 19).

A replay is deterministic, but where its 60 s cycles fall against the arrivals is not a
property of a policy: an operator's cycles fall wherever its clock puts them. Shifting the grid
(`phalanx simulate --cycle-phase S`: cycles at S + k × 60 s) changes nothing a policy sees but
that alignment, so a goal figure that moves with the phase owes that much to chance. This
script replays each policy at several phases and appends one JSON line per replay to
`bench/results/sim-noise.jsonl`; `--report` prints, per trace, each policy's goal figures
against `volcano` at the same phase, and their median over the phases (the figure to judge a
policy by, as the benches quote medians of several runs).

    nice bench/sim_noise.py --only itp-cluster03 --policy volcano --policy phalanx
    bench/sim_noise.py --report

A replay already recorded (same trace, policy, settings and phase) is skipped, so an
interrupted sweep resumes. `--setting NAME` replays one of `bench/sim_settings.py`'s settings
as a policy of its own.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from sim_settings import SETTINGS, append  # noqa: E402  (a script beside it, not a package)
from sim_settings import recorded as read_lines  # noqa: E402

OUT = ROOT / "bench" / "results" / "sim-noise.jsonl"
PHASES = (0.0, 15.0, 30.0, 45.0)
"""Four grids a quarter of the 60 s interval apart."""
LABELS = ("itp-cluster02", "itp-cluster03", "itp-cluster04")
"""The ITP goal traces; Philly (~20-40 min a replay) only when asked for with --only."""
GOALS = ("util", "mean", "p95", "largest")


def record(
    label: str, name: str, policy: str, settings: dict[str, str], phase: float
) -> dict[str, Any]:
    """Replay one policy on one trace at one phase and return its JSON line."""
    from sim_bench import use_sources
    from sim_settings import traces

    use_sources()
    from phalanx.sim.cli import run_simulation

    trace, shape = traces()[label]
    began = time.time()
    summary, _ = run_simulation(
        trace, shape, policy, cycle_interval_s=60.0, cycle_phase_s=phase, settings=settings
    )
    return line_of(label, name, policy, settings, phase, summary, time.time() - began)


def line_of(
    label: str,
    name: str,
    policy: str,
    settings: dict[str, str],
    phase: float,
    summary: dict[str, Any],
    wall_s: float,
) -> dict[str, Any]:
    """One replay's JSON line from its summary."""
    figures = {
        "util": summary["gpu_utilization"] * 100,
        "mean": summary["wait_mean_s"] / 3600,
        "p95": summary["wait_p95_s"] / 3600,
        "largest": (summary["largest_gang_wait_max_s"] or 0) / 3600,
        "worst_queue": summary.get("queue_below_share_worst_own"),
        "kept": summary.get("gpu_utilization_kept", 0.0) * 100,
        "lost_gpu_h": summary.get("lost_gpu_hours"),
        "evictions": sum(summary.get("evictions", {}).values()),
    }
    return {"label": label, "name": name, "policy": policy, "settings": settings,
            "phase": phase, "figures": figures, "wall_s": wall_s,
            "core_build": summary["core_build"],
            "engine_revision": summary.get("engine_revision", 1),
            "finished_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}  # fmt: skip


def from_bench(label: str, policy: str, path: Path) -> dict[str, Any] | None:
    """Phase 0 of a named policy is the replay `make bench-sim` records (cycles at multiples
    of 60 s): its line, taken from that results file instead of replayed (None if it holds no
    such replay)."""
    payload = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    summary = payload.get("results", {}).get(label, {}).get(policy)
    if summary is None or summary.get("cycle_interval_s") != 60.0 or summary.get("limit_jobs"):
        return None
    line = line_of(label, policy, policy, {}, 0.0, summary, summary.get("wall_s", 0.0))
    where = path.resolve()
    shown = where.relative_to(ROOT) if where.is_relative_to(ROOT) else where
    line["from"] = f"{shown} (the recorded replay: cycles at multiples of 60 s)"
    line["finished_at"] = summary.get("finished_at", line["finished_at"])
    return line


def recorded(path: Path = OUT) -> list[dict[str, Any]]:
    """Every line of the noise file (none if there is no file)."""
    return read_lines(path)


def current(row: dict[str, Any]) -> bool:
    """Whether a recorded line is what the engine replays now (`ENGINE_REVISION`), which for
    revision 2 turns on whether the replay evicted. Lines before 2026-12-05 kept no eviction
    count: one that kept the run thrown away evicted iff it threw run away (a gang is evicted a
    cycle or more after it was bound); one that kept neither evicted unless it ran on a trace of
    one queue (reclaim has no other queue to take from) without `preempt_starving` (trace jobs
    share one priority, so nothing else preempts there: every such replay recorded with a count
    since has 0)."""
    from sim_bench import use_sources

    use_sources()
    from phalanx.sim.engine import replays_alike

    f = row["figures"]
    if "evictions" in f:
        evicted = bool(f["evictions"])
    elif "lost_gpu_h" in f:
        evicted = bool(f["lost_gpu_h"])
    else:
        evicted = row["label"] == "philly" or float(row["settings"].get("preempt_starving", 0)) > 0
    return replays_alike(
        {"engine_revision": row.get("engine_revision", 1), "evictions": {"any": int(evicted)}}
    )


def against_volcano(
    rows: list[dict[str, Any]],
) -> dict[str, dict[str, dict[float, dict[str, float]]]]:
    """label → policy name → phase → goal figure relative to `volcano` at the same phase:
    utilisation in points (policy − volcano), the waits as ratios − 1."""
    by: dict[tuple[str, str, float], dict[str, float]] = {}
    for r in rows:
        by[(r["label"], r["name"], r["phase"])] = r["figures"]
    out: dict[str, dict[str, dict[float, dict[str, float]]]] = {}
    for (label, name, phase), f in sorted(by.items()):
        base = by.get((label, "volcano", phase))
        if base is None or name == "volcano":
            continue
        rel = {"util": f["util"] - base["util"]}
        for k in ("mean", "p95", "largest"):
            rel[k] = f[k] / base[k] - 1 if base[k] else 0.0
        out.setdefault(label, {}).setdefault(name, {})[phase] = rel
    return out


def met(rel: dict[str, float]) -> dict[str, bool]:
    """Issue 19's goals on one comparison, with `sim_bench`'s thresholds (`goal_figures`), each
    figure on its own: the mean here does not also require the utilisation goal, as the goal
    tables' "mean wait met" does, so that a table shows which of the two a setting misses."""
    from sim_bench import LARGEST_RATIO, MEAN_RATIO, P95_RATIO, UTIL_SLACK

    return {
        "util": rel["util"] >= -UTIL_SLACK * 100,
        "mean": rel["mean"] + 1 <= MEAN_RATIO,
        "p95": rel["p95"] + 1 <= P95_RATIO,
        "largest": rel["largest"] + 1 <= LARGEST_RATIO,
    }


def markdown(rows: list[dict[str, Any]]) -> list[str]:
    """The tables of the replays this engine would replay the same (`current`), then, apart,
    those an earlier engine replayed differently, each compared with `volcano` of its own
    engine: kept, as the rounds of SIM.md quote them, but not mixed with what runs now."""
    now = [r for r in rows if current(r)]
    older = [r for r in rows if not current(r)]
    # A `volcano` replay the engine change left as it was is the yardstick of the older ones too.
    old_bases = {(r["label"], r["phase"]) for r in older if r["name"] == "volcano"}
    older += [
        r
        for r in now
        if r["name"] == "volcano"
        and (r["label"], r["phase"]) not in old_bases
        and any(o["label"] == r["label"] for o in older)
    ]
    out = _tables(now)
    if older:
        out += [
            "Replayed by an earlier engine (`phalanx.sim.engine.ENGINE_REVISION`: what each "
            "revision changed is in its docstring), compared with `volcano` of the same "
            "engine; a setting not replayed since is judged by these:",
            "",
            *_tables(older, " (earlier engine)"),
        ]
    return out


def _tables(rows: list[dict[str, Any]], suffix: str = "") -> list[str]:
    """Per trace: each policy's figures at every phase, then the medians and how many phases
    meet each goal. The worst queue's time below 90% of its own share is a goal on Philly
    only (one queue elsewhere); it is shown wherever it was recorded."""
    out: list[str] = []
    figures = {(r["label"], r["name"], r["phase"]): r["figures"] for r in rows}
    rel = against_volcano(rows)
    for label in sorted({r["label"] for r in rows}):
        out += [f"**{label}{suffix}**", ""]
        out += [
            "| policy | phase s | util. | mean h | p95 h | largest worst h | worst queue "
            "| util. vs volcano | mean vs volcano | p95 vs volcano | largest vs volcano |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        names = sorted(
            {n for (lb, n, _) in figures if lb == label}, key=lambda n: (n != "volcano", n)
        )
        for name in names:
            phases = sorted(p for (lb, n, p) in figures if lb == label and n == name)
            for p in phases:
                f = figures[(label, name, p)]
                r = rel.get(label, {}).get(name, {}).get(p)
                cmp = "– | – | – | –"
                if r is not None:
                    cmp = (
                        f"{r['util']:+.2f} pt | {r['mean']:+.1%} | {r['p95']:+.1%} | "
                        f"{r['largest']:+.0%}"
                    )
                wq = f.get("worst_queue")
                queue = "–" if wq is None else f"{wq:.1%}"
                out.append(
                    f"| {name} | {p:g} | {f['util']:.2f}% | {f['mean']:.2f} | {f['p95']:.2f} "
                    f"| {f['largest']:.1f} | {queue} | {cmp} |"
                )
            per = rel.get(label, {}).get(name)
            if per:
                med = {k: statistics.median(v[k] for v in per.values()) for k in GOALS}
                count = {k: sum(met(v)[k] for v in per.values()) for k in GOALS}
                n = len(per)
                out.append(
                    f"| **{name}, median** | {n} phases | | | | | | {med['util']:+.2f} pt "
                    f"({count['util']}/{n} met) | {med['mean']:+.1%} ({count['mean']}/{n}) | "
                    f"{med['p95']:+.1%} ({count['p95']}/{n}) | {med['largest']:+.0%} "
                    f"({count['largest']}/{n}) |"
                )
        out.append("")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only", action="append", help=f"trace labels (default: {', '.join(LABELS)})"
    )
    parser.add_argument(
        "--policy", action="append", help="named policies (default: volcano, phalanx)"
    )
    parser.add_argument(
        "--setting", action="append", default=[], help="settings of bench/sim_settings.py"
    )
    parser.add_argument(
        "--phase",
        action="append",
        type=float,
        help=f"seconds (default: {', '.join(f'{p:g}' for p in PHASES)})",
    )
    parser.add_argument(
        "--custom",
        nargs=3,
        action="append",
        default=[],
        metavar=("NAME", "POLICY", "FIELD=VALUE,..."),
        help="a setting not in bench/sim_settings.py",
    )
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument(
        "--from-bench",
        type=Path,
        metavar="SIM_JSON",
        help="take phase 0 of the named policies from this `make bench-sim` results file "
        "instead of replaying it (the same replay)",
    )
    parser.add_argument("--report", action="store_true", help="print the tables and stop")
    args = parser.parse_args(argv)
    if args.report:
        print("\n".join(markdown(recorded(args.out))))
        return 0
    table = SETTINGS
    chosen: list[tuple[str, str, dict[str, str]]] = [
        (p, p, {})
        for p in (args.policy or ([] if args.setting or args.custom else ["volcano", "phalanx"]))
    ]
    for name in args.setting:
        if name not in table:
            parser.error(f"unknown setting {name!r}")
        policy, settings, _ = table[name]
        chosen.append((name, policy, settings))
    for name, policy, text in args.custom:
        chosen.append((name, policy, dict(p.split("=", 1) for p in text.split(",") if p)))
    done = {(r["label"], r["name"], r["phase"]) for r in recorded(args.out) if current(r)}
    for label in args.only or LABELS:
        for phase in args.phase or PHASES:
            for name, policy, settings in chosen:
                if (label, name, phase) in done:
                    print(f"{label} {name} phase {phase:g}: recorded, skipped", flush=True)
                    continue
                taken = None
                if args.from_bench and phase == 0 and name == policy and not settings:
                    taken = from_bench(label, policy, args.from_bench)
                line = taken or record(label, name, policy, settings, phase)
                f = line["figures"]
                print(
                    f"{label} {name} phase {phase:g}: util {f['util']:.2f}%, mean "
                    f"{f['mean']:.2f} h, p95 {f['p95']:.2f} h, largest {f['largest']:.1f} h, "
                    f"wall {line['wall_s']:.0f} s",
                    flush=True,
                )
                append(args.out, line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
