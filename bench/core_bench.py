"""Benchmark of the scheduling core (issue 3): full-cycle time and placement quality.

Run with `make bench-core` (or `.venv/bin/python bench/core_bench.py [--quick] [--pure-only]`).
Writes `bench/results/core.json`. The snapshots are built once; then processes measure the
mypyc-compiled core (built or reused by tools/build_core.py — what the image ships, so its
figures are the headline keys) and the pure-Python core on the very same snapshots (the same keys
with a `_pure` suffix), alternating, `--rounds` processes each (3; each figure is the median of
the rounds' medians, `*_runs` hold every run); `pure_over_compiled_cpu` is the ratio of their CPU
times.
Figures:

* `cycle_ms_1024n` — one full `schedule()` on the `large` shape (4 spines × 8 leaves × 32 nodes ×
  8 GPUs) about 70% occupied, 500 running gangs, 1,000 pending gangs (median of RUNS runs), in
  the steady state of a running scheduler (see `build_snapshot`);
* `cycle_ms_1024n_unbalanced` — the same cluster with running gangs in random queues (the first
  benchmark's scenario: the cycle starts with a burst of reclaim);
* `cycle_ms_4096n` — the same on `xlarge` (8 × 16 × 32 × 8) with 5,000 pending;
* `place_64pod_gang_ms` — placing one 64-pod gang of 8-GPU pods on `large` at 50% occupancy
  (the placement call on a prepared cycle state; `cycle_ms_one_64pod_gang` is the whole cycle);
* `oracle_min_leaves_pct` — share of random fragmented instances where the chosen placement
  spans the minimum number of leaves, from the exact oracle in tests/unit/core/core_oracle.py;
* `growth_cpu_ms` — cycle CPU time as nodes and as pending gangs grow, one run each.

Every cycle figure has a `cycle_cpu_ms_*` twin: the machine is shared, so wall time includes
waiting for a core, and the CPU time is the cycle's own cost.

Gang sizes (GPUs) are drawn, seeded, from 1: 40%, 2: 10%, 4: 10%, 8: 20%, 16: 10%, 32: 7%,
64: 3%; gangs of 8 GPUs and more use 8-GPU pods; a third have a time limit. Running gangs alone
fill about half of the cluster with that mix, so the rest of the 70% is pods of other schedulers
(`Node.used`) scattered over random nodes — which is also what fragments the cluster.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import math
import os
import pickle
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "operator"))
sys.path.insert(0, str(ROOT / "tests" / "unit" / "core"))
# Under `tools/build_core.py --exec` the compiled core's build comes first (see main()).
if os.environ.get("PHALANX_CORE_BUILD"):
    sys.path.insert(0, os.environ["PHALANX_CORE_BUILD"])

from core_oracle import oracle_figure  # noqa: E402

from phalanx.core import (  # noqa: E402
    CPU,
    GPU,
    MEMORY,
    PODS,
    Member,
    Node,
    PendingGang,
    Policy,
    Queue,
    RunningGang,
    RunningMember,
    Snapshot,
    schedule,
)
from phalanx.core.capacity_views import NowView  # noqa: E402
from phalanx.core.cycle import _queue_shares  # noqa: E402
from phalanx.core.placement import place  # noqa: E402
from phalanx.core.prepare import prepare  # noqa: E402

OUT = ROOT / "bench" / "results" / "core.json"
SPINE = "network.topology.nvidia.com/spine"
LEAF = "network.topology.nvidia.com/block"
GiB = 1 << 30
NOW = 1_700_000_000.0
SIZES = (1, 2, 4, 8, 16, 32, 64)
WEIGHTS = (40, 10, 10, 20, 10, 7, 3)
LIMITS = (1800.0, 3600.0, 7200.0, 14400.0, 28800.0)
QUEUES = (("research", 2), ("prod", 3), ("batch", 1), ("interactive", 1))


def pod_shape(gpus: int) -> tuple[int, int]:
    """(pods, GPUs per pod) of a gang of `gpus` GPUs."""
    return (gpus // 8, 8) if gpus >= 8 else (1, gpus)


def requests(per_pod: int) -> dict[str, int]:
    return {GPU: per_pod, CPU: per_pod * 10_000, MEMORY: per_pod * 100 * GiB}


def _pending_gangs(rng: random.Random, count: int, prefix: str, t0: float) -> list[PendingGang]:
    """`count` gangs with the size mix of the issue, random queues, a third with a time limit."""
    out: list[PendingGang] = []
    for i in range(count):
        size = rng.choices(SIZES, WEIGHTS)[0]
        n, per_pod = pod_shape(size)
        name = f"{prefix}-{i:05d}"
        out.append(
            PendingGang(
                id=f"team/{name}",
                min_member=n,
                members=tuple(Member(f"{name}-{p}", requests(per_pod)) for p in range(n)),
                queue=rng.choice(QUEUES)[0],
                priority=rng.choice((0, 0, 0, 100)),
                creation_time=t0 + i,
                topology_preferred="leaf" if size >= 16 else None,
                time_limit=rng.choice(LIMITS) if rng.random() < 1 / 3 else None,
            )
        )
    return out


def _other_pods(rng: random.Random, free: dict[str, int], gpus: int) -> dict[str, int]:
    """Scatter `gpus` GPUs of other schedulers' pods (1, 2 or 4 at a time) over random nodes."""
    other = dict.fromkeys(free, 0)
    open_nodes = [n for n in sorted(free) if free[n] > 0]
    while gpus > 0 and open_nodes:
        node = rng.choice(open_nodes)
        take = min(free[node], rng.choice((1, 2, 4)), gpus)
        free[node] -= take
        other[node] += take
        gpus -= take
        if free[node] == 0:
            open_nodes.remove(node)
    return other


def _node(name: str, spine: str, leaf: str, other: int) -> Node:
    return Node(
        name=name,
        allocatable={GPU: 8, CPU: 96_000, MEMORY: 1024 * GiB, PODS: 110},
        used={GPU: other, CPU: other * 2_000, PODS: other},
        labels={SPINE: spine, LEAF: leaf},
    )


def build_snapshot(
    spines: int,
    leaves: int,
    per_leaf: int,
    running: int,
    pending: int,
    occupancy: float,
    seed: int,
    steady: bool = True,
) -> Snapshot:
    """The benchmark snapshot: `running` gangs and other schedulers' pods fill `occupancy` of
    the cluster, `pending` gangs wait.

    `steady` (the measured default) is a cycle of a scheduler that has been running: the running
    gangs were placed by the core itself, and their queues were drawn so that each queue holds
    GPUs in proportion to its deserved share (what the core's own walk converges to). With
    `steady=False` running gangs are packed first-fit from a random leaf and their queues are
    drawn at random, so the cycle starts by reclaiming from over-share queues — the first cycle
    after queue weights change, kept as a second figure.
    """
    if not steady:
        return _unbalanced_snapshot(spines, leaves, per_leaf, running, pending, occupancy, seed)
    rng = random.Random(seed)
    names = [
        (f"s{s:02d}-l{lf:02d}-n{n:02d}", f"s{s:02d}", f"s{s:02d}-l{lf:02d}")
        for s in range(spines)
        for lf in range(leaves)
        for n in range(per_leaf)
    ]
    queues = tuple(Queue(name, weight=w, usage=rng.uniform(0, 1e7)) for name, w in QUEUES)
    history = _pending_gangs(rng, running, "run", NOW - 9 * 3600)
    pend = _pending_gangs(rng, pending, "job", NOW - 3600)
    # Other schedulers' pods first, so the running gangs plus them make `occupancy`.
    free = {name: 8 for name, _, _ in names}
    total = 8 * len(names)
    running_gpus = sum(g.min_member * (g.members[0].requests[GPU]) for g in history)
    other = _other_pods(rng, free, max(0, int(total * occupancy) - running_gpus))
    nodes = tuple(_node(name, spine, leaf, other[name]) for name, spine, leaf in names)
    # Each queue's deserved share in the measured cycle (pending demand exceeds the cluster,
    # so it is set by weights and decayed usage), read from the core's own queue figures.
    plain = Policy(backfill=False, reclaim=False, preemption=False)
    shares = schedule(Snapshot(nodes, queues, (), tuple(pend)), plain, NOW).queues
    deserved = {q: max(1, shares[q].deserved[GPU]) for q, _ in QUEUES}
    # Queues of the running gangs: always the one furthest below its share (largest gangs
    # first), so every queue ends at the same fraction of its deserved share.
    held = dict.fromkeys(deserved, 0)
    relabelled: dict[str, str] = {}
    for g in sorted(history, key=lambda g: (-g.min_member * g.members[0].requests[GPU], g.id)):
        gpus = g.min_member * g.members[0].requests[GPU]
        q = min(deserved, key=lambda q: ((held[q] + gpus) / deserved[q], q))
        held[q] += gpus
        relabelled[g.id] = q
    history = [replace(g, queue=relabelled[g.id]) for g in history]
    # The core places them, as it would have in earlier cycles.
    placed = schedule(Snapshot(nodes, queues, (), tuple(history)), plain, NOW).bindings
    run: list[RunningGang] = []
    for g in history:
        pods = placed.get(g.id)
        if pods is None:
            continue
        started = NOW - rng.uniform(0, 8 * 3600)
        limit = None
        if rng.random() < 1 / 3:
            limit = (NOW - started) + rng.uniform(60, 6 * 3600)
        run.append(
            RunningGang(
                id=g.id,
                queue=g.queue,
                members=tuple(RunningMember(m.pod, pods[m.pod], m.requests) for m in g.members),
                priority=g.priority,
                start_time=started,
                time_limit=limit,
            )
        )
    return Snapshot(nodes, queues, tuple(run), tuple(pend))


def _unbalanced_snapshot(
    spines: int, leaves: int, per_leaf: int, running: int, pending: int, occupancy: float, seed: int
) -> Snapshot:
    """The first benchmark's scenario: running gangs in random queues (see build_snapshot)."""
    rng = random.Random(seed)
    names = [
        (f"s{s:02d}-l{lf:02d}-n{n:02d}", f"s{s:02d}", f"s{s:02d}-l{lf:02d}")
        for s in range(spines)
        for lf in range(leaves)
        for n in range(per_leaf)
    ]
    free = {name: 8 for name, _, _ in names}
    by_leaf: dict[str, list[str]] = {}
    for name, _, leaf in names:
        by_leaf.setdefault(leaf, []).append(name)
    leaf_names = sorted(by_leaf)

    run: list[RunningGang] = []
    for i in range(running):
        size = rng.choices(SIZES, WEIGHTS)[0]
        count, per_pod = pod_shape(size)
        members: list[RunningMember] = []
        start_leaf = rng.randrange(len(leaf_names))
        for k in range(len(leaf_names)):
            leaf = leaf_names[(start_leaf + k) % len(leaf_names)]
            for node in by_leaf[leaf]:
                while free[node] >= per_pod and len(members) < count:
                    free[node] -= per_pod
                    members.append(RunningMember(f"r{i}-{len(members)}", node, requests(per_pod)))
            if len(members) == count:
                break
        if len(members) < count:
            for m in members:
                free[m.node] += per_pod
            continue
        started = NOW - rng.uniform(0, 8 * 3600)
        limit = None
        if rng.random() < 1 / 3:
            limit = (NOW - started) + rng.uniform(60, 6 * 3600)
        run.append(
            RunningGang(
                id=f"team/run-{i:05d}",
                queue=rng.choice(QUEUES)[0],
                members=tuple(members),
                priority=rng.choice((0, 0, 0, 100)),
                start_time=started,
                time_limit=limit,
            )
        )
    # Other schedulers' pods bring the cluster to the target occupancy.
    total = 8 * len(names)
    target = int(total * occupancy)
    used_gpus = total - sum(free.values())
    other = dict.fromkeys(free, 0)
    open_nodes = [n for n in sorted(free) if free[n] > 0]
    while used_gpus < target and open_nodes:
        node = rng.choice(open_nodes)
        take = min(free[node], rng.choice((1, 2, 4)))
        free[node] -= take
        other[node] += take
        used_gpus += take
        if free[node] == 0:
            open_nodes.remove(node)
    nodes = tuple(
        Node(
            name=name,
            allocatable={GPU: 8, CPU: 96_000, MEMORY: 1024 * GiB, PODS: 110},
            used={GPU: other[name], CPU: other[name] * 2_000, PODS: other[name]},
            labels={SPINE: spine, LEAF: leaf},
        )
        for name, spine, leaf in names
    )
    pend: list[PendingGang] = []
    for i in range(pending):
        size = rng.choices(SIZES, WEIGHTS)[0]
        count, per_pod = pod_shape(size)
        gid = f"team/job-{i:05d}"
        pend.append(
            PendingGang(
                id=gid,
                min_member=count,
                members=tuple(Member(f"job-{i:05d}-{p}", requests(per_pod)) for p in range(count)),
                queue=rng.choice(QUEUES)[0],
                priority=rng.choice((0, 0, 0, 100)),
                creation_time=NOW - 3600 + i,
                topology_preferred="leaf" if size >= 16 else None,
                time_limit=rng.choice(LIMITS) if rng.random() < 1 / 3 else None,
            )
        )
    queues = tuple(Queue(name, weight=w, usage=rng.uniform(0, 1e7)) for name, w in QUEUES)
    return Snapshot(nodes, queues, tuple(run), tuple(pend))


def time_cycle(
    snap: Snapshot, runs: int, policy: Policy | None = None
) -> tuple[float, list[float], dict[str, int]]:
    """Median wall time of `runs` cycles (ms), all runs, and what the last one decided.

    The CPU time of each run is kept too (`CPU_MS`): on a shared machine the wall time includes
    waiting for a core, the CPU time is what the cycle itself costs.
    """
    times = []
    cpu = []
    summary: dict[str, int] = {}
    for _ in range(runs):
        c0 = time.process_time()
        t0 = time.perf_counter()
        result = schedule(snap, policy or Policy(), NOW)
        times.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
        summary = {
            "bound": len(result.bindings),
            "reservations": len(result.reservations),
            "evictions": len(result.evictions),
        }
    CPU_MS.append(statistics.median(cpu))
    CPU_RUNS.append([round(c, 1) for c in cpu])
    return statistics.median(times), [round(t, 1) for t in times], summary


#: CPU-time medians of the `time_cycle` calls, in call order (read right after each call).
CPU_MS: list[float] = []
#: The CPU time of every run of those calls.
CPU_RUNS: list[list[float]] = []


def place_64_snapshot() -> Snapshot:
    """`large` at 50% occupancy with one 64-pod gang of 8-GPU pods pending."""
    snap = build_snapshot(4, 8, 32, 250, 0, 0.5, seed=64, steady=False)
    gang = PendingGang(
        "team/big",
        64,
        tuple(Member(f"big-{p:02d}", requests(8)) for p in range(64)),
        queue="research",
        topology_preferred="leaf",
    )
    return Snapshot(snap.nodes, snap.queues, snap.running, (gang,))


def time_place_64(snap: Snapshot, runs: int) -> tuple[float, float, int]:
    place_ms = []
    cycle_ms = []
    leaves = 0
    for _ in range(runs):
        prep = prepare(snap, Policy(), NOW)
        _queue_shares(prep, Policy())
        w = prep.works[0]
        view = NowView(prep.state, NOW, math.inf, {})
        t0 = time.perf_counter()
        out = place(view, w.shapes, w.required_level, w.preferred_level)
        place_ms.append((time.perf_counter() - t0) * 1000)
        assert out.assignment is not None and len(out.assignment) == 64
        leaves = len(out.leaves)
        t0 = time.perf_counter()
        result = schedule(snap, Policy(), NOW)
        cycle_ms.append((time.perf_counter() - t0) * 1000)
        assert len(result.bindings["team/big"]) == 64
    return statistics.median(place_ms), statistics.median(cycle_ms), leaves


#: The measured snapshots: name → build_snapshot arguments (spines, leaves, nodes per leaf,
#: running, pending, occupancy, seed, steady). `place64` is `place_64_snapshot()`.
SNAPSHOTS: dict[str, tuple[int, int, int, int, int, float, int, bool]] = {
    "large": (4, 8, 32, 500, 1000, 0.70, 1, True),
    "unbalanced": (4, 8, 32, 500, 1000, 0.70, 1, False),
    "xlarge": (8, 16, 32, 2000, 5000, 0.70, 2, True),
}
GROWTH_NODES = {"256": (1, 8), "1024": (4, 8), "4096": (8, 16)}
GROWTH_PENDING = (250, 1000, 4000)


def build_all(quick: bool) -> dict[str, Snapshot]:
    snaps = {
        name: build_snapshot(*args[:6], seed=args[6], steady=args[7])
        for name, args in SNAPSHOTS.items()
    }
    snaps["place64"] = place_64_snapshot()
    if not quick:
        for label, (spines, leaves_per) in GROWTH_NODES.items():
            running = 500 * spines // 4 or 125
            snaps[f"nodes_{label}"] = build_snapshot(spines, leaves_per, 32, running, 1000, 0.7, 3)
        for pending in GROWTH_PENDING:
            snaps[f"pending_{pending}"] = build_snapshot(4, 8, 32, 500, pending, 0.7, 4)
    return snaps


def measure(snaps: dict[str, Snapshot], runs: int, quick: bool) -> dict[str, object]:
    """Every figure of one core (the one imported), on the given snapshots."""
    out: dict[str, object] = {}
    large = snaps["large"]
    out["cycle_ms_1024n"], out["cycle_ms_1024n_runs"], out["cycle_1024n_result"] = time_cycle(
        large, runs
    )
    out["cycle_cpu_ms_1024n"] = round(CPU_MS[-1], 1)
    out["cycle_cpu_ms_1024n_runs"] = CPU_RUNS[-1]
    print(
        f"large (1024 nodes, 1000 pending): {out['cycle_ms_1024n']:.1f} ms "
        f"(CPU {out['cycle_cpu_ms_1024n']} ms)",
        flush=True,
    )
    # The first benchmark's scenario (running gangs in random queues: a burst of reclaim).
    ms, ms_runs, summary = time_cycle(snaps["unbalanced"], runs)
    out["cycle_ms_1024n_unbalanced"] = round(ms, 1)
    out["cycle_ms_1024n_unbalanced_runs"] = ms_runs
    out["cycle_1024n_unbalanced_result"] = summary
    out["cycle_cpu_ms_1024n_unbalanced"] = round(CPU_MS[-1], 1)
    print(f"large, queues unbalanced: {ms:.1f} ms", flush=True)
    # Where the time goes: the same cycle with the expensive steps switched off.
    breakdown: dict[str, float] = {}
    for label, policy in (
        ("placement_only", Policy(backfill=False, reclaim=False, preemption=False)),
        ("with_backfill", Policy(reclaim=False, preemption=False)),
        ("with_backfill_and_reclaim", Policy(preemption=False)),
    ):
        breakdown[label] = round(time_cycle(large, runs, policy)[0], 1)
        breakdown[label + "_cpu"] = round(CPU_MS[-1], 1)
    out["cycle_ms_1024n_breakdown"] = breakdown
    print(f"large breakdown: {breakdown}", flush=True)

    xruns = max(1, runs - 2)
    out["cycle_ms_4096n"], out["cycle_ms_4096n_runs"], out["cycle_4096n_result"] = time_cycle(
        snaps["xlarge"], xruns
    )
    out["cycle_cpu_ms_4096n"] = round(CPU_MS[-1], 1)
    out["cycle_cpu_ms_4096n_runs"] = CPU_RUNS[-1]
    print(
        f"xlarge (4096 nodes, 5000 pending): {out['cycle_ms_4096n']:.1f} ms "
        f"(CPU {out['cycle_cpu_ms_4096n']} ms)",
        flush=True,
    )

    place_ms, one_cycle_ms, leaves = time_place_64(snaps["place64"], runs)
    out["place_64pod_gang_ms"] = round(place_ms, 2)
    out["cycle_ms_one_64pod_gang"] = round(one_cycle_ms, 1)
    out["place_64pod_gang_leaves"] = leaves
    print(f"64-pod gang: place {place_ms:.2f} ms, whole cycle {one_cycle_ms:.1f} ms", flush=True)

    fig = oracle_figure(instances=1000, seed=20240601)
    out["oracle_min_leaves_pct"] = round(fig.pct, 2)
    out["oracle_instances_feasible"] = fig.feasible
    out["oracle_worst_excess_leaves"] = fig.worst_excess
    print(f"oracle: {fig.pct:.2f}% at minimum leaves, worst +{fig.worst_excess}", flush=True)

    if not quick:
        growth: dict[str, dict[str, float]] = {"by_nodes_1000_pending": {}, "by_pending_1024n": {}}
        for label in GROWTH_NODES:
            time_cycle(snaps[f"nodes_{label}"], 1)
            growth["by_nodes_1000_pending"][label] = round(CPU_MS[-1], 1)
        for pending in GROWTH_PENDING:
            time_cycle(snaps[f"pending_{pending}"], 1)
            growth["by_pending_1024n"][str(pending)] = round(CPU_MS[-1], 1)
        out["growth_cpu_ms"] = growth
        print(f"growth: {growth}", flush=True)

    for key in ("cycle_ms_1024n", "cycle_ms_4096n"):
        out[key] = round(float(out[key]), 1)  # type: ignore[arg-type]
    out["runs"] = runs
    out["runs_4096n"] = xruns
    return out


# --- Snapshots as plain data: compiled frozen dataclasses do not unpickle, so the snapshots
# cross to the measuring processes as dicts of their fields (and back through the constructors).

_CLASS = "__dataclass__"


def to_plain(x: object) -> object:
    """`x` with every dataclass replaced by a dict of its fields and its class."""
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        out: dict[str, object] = {_CLASS: f"{type(x).__module__}:{type(x).__qualname__}"}
        for f in dataclasses.fields(x):
            out[f.name] = to_plain(getattr(x, f.name))
        return out
    if isinstance(x, dict):
        assert _CLASS not in x
        return {k: to_plain(v) for k, v in x.items()}
    if isinstance(x, tuple | list):
        return type(x)(to_plain(v) for v in x)
    assert x is None or type(x) in (str, int, float, bool), type(x)
    return x


def from_plain(x: object) -> object:
    """The inverse of `to_plain`, with the classes of the core that is imported."""
    if isinstance(x, dict):
        if _CLASS in x:
            module, _, qualname = x[_CLASS].partition(":")
            cls = getattr(importlib.import_module(module), qualname)
            return cls(**{k: from_plain(v) for k, v in x.items() if k != _CLASS})
        return {k: from_plain(v) for k, v in x.items()}
    if isinstance(x, tuple | list):
        return type(x)(from_plain(v) for v in x)
    return x


def _child(args: argparse.Namespace) -> None:
    """One core's figures (`--variant`), on the parent's snapshots, into `--out`."""
    import phalanx.core.cycle

    where = phalanx.core.cycle.__file__ or ""
    compiled = not where.endswith(".py")
    assert compiled == (args.variant == "compiled"), f"{args.variant} run imported {where}"
    plain = pickle.loads(args.snapshots.read_bytes())
    snaps = {name: from_plain(v) for name, v in plain.items()}
    out = measure(snaps, args.runs, args.quick)  # type: ignore[arg-type]
    out["core_module"] = where
    args.out.write_text(json.dumps(out))


def merge_rounds(rounds: list[dict[str, object]]) -> dict[str, object]:
    """One result from several rounds of a variant: the median of each figure over the rounds
    (of their medians), every run of every round, and what must not vary asserted equal."""
    out: dict[str, object] = {}
    for key, first in rounds[0].items():
        values = [r[key] for r in rounds]
        if not isinstance(first, list | dict) and all(v == first for v in values):
            out[key] = first
        elif isinstance(first, bool) or not isinstance(first, int | float | list | dict):
            raise AssertionError(f"{key} differs between rounds: {values}")
        elif isinstance(first, int | float):
            out[key] = round(statistics.median(values), 2)  # type: ignore[type-var]
        elif isinstance(first, list):
            out[key] = [x for v in values for x in v]  # type: ignore[attr-defined]
        else:
            out[key] = merge_rounds(values)  # type: ignore[arg-type]
    return out


def _run_variant(
    variant: str, snap_file: Path, runs: int, quick: bool, env: dict[str, str]
) -> dict[str, object]:
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        cmd = [sys.executable, __file__, "--variant", variant, "--runs", str(runs)]
        cmd += ["--snapshots", str(snap_file), "--out", f.name] + (["--quick"] if quick else [])
        print(f"--- {variant} core", flush=True)
        subprocess.run(cmd, env=env, check=True)
        out: dict[str, object] = json.loads(Path(f.name).read_text())
        return out


#: Figures that do not depend on the build (asserted equal, published once).
SAME = (
    "cycle_1024n_result",
    "cycle_1024n_unbalanced_result",
    "cycle_4096n_result",
    "place_64pod_gang_leaves",
    "oracle_min_leaves_pct",
    "oracle_instances_feasible",
    "oracle_worst_excess_leaves",
    "runs",
    "runs_4096n",
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer runs, no growth table")
    ap.add_argument("--pure-only", action="store_true", help="no compiled core (no C compiler)")
    ap.add_argument(
        "--rounds", type=int, default=0, help="processes per core, alternating (default 3, quick 1)"
    )
    ap.add_argument("--variant", choices=("pure", "compiled"), help=argparse.SUPPRESS)
    ap.add_argument("--snapshots", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--runs", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.variant:
        _child(args)
        return
    runs = 2 if args.quick else 5
    sys.path.insert(0, str(ROOT / "tools"))
    import build_core

    build = None if args.pure_only else build_core.ensure_built()
    print("building the snapshots …", flush=True)
    snaps = build_all(args.quick)
    pure_env = {k: v for k, v in os.environ.items() if k != "PHALANX_CORE_BUILD"}
    with tempfile.TemporaryDirectory() as tmp:
        snap_file = Path(tmp) / "snapshots.pickle"
        snap_file.write_bytes(pickle.dumps({k: to_plain(v) for k, v in snaps.items()}))
        # Rounds alternate the two cores, so that load on the shared machine hits both alike.
        rounds = args.rounds or (1 if args.quick else 3)
        by_variant: dict[str, list[dict[str, object]]] = {"pure": [], "compiled": []}
        env = {**pure_env, "PHALANX_CORE_BUILD": str(build)}
        env["PYTHONPATH"] = build_core.pythonpath(build) if build is not None else ""
        for _ in range(rounds):
            by_variant["pure"].append(_run_variant("pure", snap_file, runs, args.quick, pure_env))
            if build is not None:
                by_variant["compiled"].append(
                    _run_variant("compiled", snap_file, runs, args.quick, env)
                )
        pure = merge_rounds(by_variant["pure"])
        compiled = merge_rounds(by_variant["compiled"]) if build is not None else None

    if compiled is None:
        out = {**pure, "core": "pure Python (--pure-only)"}
    else:
        for key in SAME:
            assert pure[key] == compiled[key], (key, pure[key], compiled[key])
        out = {**compiled}
        out.update({f"{k}_pure": v for k, v in pure.items() if k not in SAME})
        out["core"] = (
            f"compiled with mypyc {build_core.mypy_version()} (what the image ships); "
            "*_pure: the same snapshots on the pure-Python core, same run"
        )
        out["pure_over_compiled_cpu"] = {
            key: round(float(pure[key]) / float(compiled[key]), 2)  # type: ignore[arg-type]
            for key in ("cycle_cpu_ms_1024n", "cycle_cpu_ms_1024n_unbalanced", "cycle_cpu_ms_4096n")
        }
        print(f"pure / compiled (CPU): {out['pure_over_compiled_cpu']}", flush=True)
    out["rounds"] = rounds
    out["targets_ms"] = {"cycle_ms_1024n": 100, "cycle_ms_4096n": 1000, "place_64pod_gang_ms": 5}
    out["machine"] = (
        f"{platform.python_implementation()} {platform.python_version()} on {platform.machine()}, "
        f"{os.cpu_count()} CPUs ({platform.processor() or 'unknown cpu'}); single-threaded"
    )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=2, sort_keys=True) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
