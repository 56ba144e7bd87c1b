"""One cycle with 1,000 hostile objects beside the `large` snapshot, against the same cycle
without them (issue 17: it must stay under 2x).

The `large` snapshot of bench/core_bench.py (1,024 nodes, 500 running gangs, 1,000 pending).
Hostile: 1,000 PodGroups as a careless or hostile tenant can make them within the schema (at
random ages, and again all older than every normal gang, so they come first and use up the
backfill depth) —
`minMember` up to 10,000 with `minResources` (planned before their pods exist: phantoms), GPU
requests beyond the cluster, priority classes no queue allows, queues that do not exist, fields
the adapter could not read. The two snapshots alternate, RUNS cycles each; medians of wall and
CPU time are written to bench/results/hostile.json and printed.

Run: `.venv/bin/python bench/hostile_bench.py` (`make bench-hostile`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from core_bench import NOW, SNAPSHOTS, build_snapshot  # noqa: E402
from phalanx.core import GPU, PendingGang, Policy, Snapshot, schedule  # noqa: E402

RUNS = int(os.environ.get("HOSTILE_RUNS", "7"))
HOSTILE = 1000


def hostile_gangs(rng: random.Random, count: int, oldest: bool) -> list[PendingGang]:
    """`oldest`: created before every normal gang, so they come first in the order and use up
    the backfill depth (the worst case); else at random ages within the last hour."""
    out = []
    for i in range(count):
        kind = i % 5
        gid = f"evil/g{i:04d}"
        if kind == 0:  # a phantom of 10,000 members, more GPUs than the cluster
            out.append(
                PendingGang(
                    gid,
                    10_000,
                    min_resources={GPU: 100_000},
                    creation_time=(NOW - 10 * 86_400 - i) if oldest else NOW - rng.random() * 3600,
                )
            )
        elif kind == 1:  # a phantom that would fit: planned from stand-ins
            out.append(
                PendingGang(
                    gid,
                    rng.choice((64, 512, 4096)),
                    min_resources={GPU: rng.choice((64, 256, 1024))},
                    creation_time=(NOW - 10 * 86_400 - i) if oldest else NOW - rng.random() * 3600,
                )
            )
        elif kind == 2:  # a class the queue does not allow (system)
            out.append(
                PendingGang(
                    gid,
                    1,
                    creation_time=NOW - 10 * 86_400 - i if oldest else 0.0,
                    priority=2_000_001_000,
                    priority_class="system-node-critical",
                    min_resources={GPU: 8},
                )
            )
        elif kind == 3:  # a queue that does not exist
            out.append(
                PendingGang(
                    gid,
                    4,
                    queue="nobody",
                    min_resources={GPU: 32},
                    creation_time=NOW - 10 * 86_400 - i if oldest else 0.0,
                )
            )
        else:  # a field the adapter could not read
            out.append(PendingGang(gid, 2, invalid="spec.minResources.nvidia.com/gpu: 'lots'"))
    return out


def main() -> None:
    name = "large"
    base = build_snapshot(*SNAPSHOTS[name][:6], seed=SNAPSHOTS[name][6], steady=SNAPSHOTS[name][7])
    snaps: dict[str, Snapshot] = {"normal": base}
    for label, oldest in (("hostile", False), ("hostile_first", True)):
        gangs = hostile_gangs(random.Random(17), HOSTILE, oldest)
        snaps[label] = dataclasses.replace(base, pending=(*base.pending, *gangs))
    policy = Policy()
    wall: dict[str, list[float]] = {k: [] for k in snaps}
    cpu: dict[str, list[float]] = {k: [] for k in snaps}
    schedule(base, policy, NOW)  # warm up
    sides = list(snaps)
    for run in range(RUNS):
        for side in sides if run % 2 == 0 else reversed(sides):
            c0, t0 = time.process_time(), time.perf_counter()
            schedule(snaps[side], policy, NOW)
            wall[side].append(1000 * (time.perf_counter() - t0))
            cpu[side].append(1000 * (time.process_time() - c0))
        print(
            f"run {run + 1}/{RUNS}: " + ", ".join(f"{k} {wall[k][-1]:.0f} ms" for k in sides),
            flush=True,
        )
    med = {k: statistics.median(v) for k, v in cpu.items()}
    out = {
        "snapshot": "large (1,024 nodes, 500 running, 1,000 pending gangs)",
        "hostile_objects": HOSTILE,
        "runs": RUNS,
        "cycle_cpu_ms_median": {k: round(v, 1) for k, v in med.items()},
        "cycle_wall_ms_median": {k: round(statistics.median(v), 1) for k, v in wall.items()},
        "ratio_cpu": round(med["hostile"] / med["normal"], 3),
        "ratio_cpu_hostile_first": round(med["hostile_first"] / med["normal"], 3),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }
    (ROOT / "bench" / "results" / "hostile.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
