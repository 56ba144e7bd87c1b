"""A replay's figures: the JSON summary (`phalanx simulate --json`) and the terminal table.

All figures come from the pure functions in `metrics`, so every policy is measured by the same
code. Choices a reader of the numbers needs to know:

- `gpu_utilization` is over the arrival window (first to last submit): every policy is judged
  over the same stretch of time, while the trace is live. `gpu_utilization_makespan` is over
  first submit to last end, which mostly measures how long the backlog took to drain.
  Only GPUs of running gangs count; GPUs held by partly placed jobs (`pod`) are idle and are
  reported as `deadlocked_gpu_hours` instead. A run later thrown away by an eviction counts
  as busy (its GPUs were held); `gpu_utilization_kept` is the same window without those runs,
  the GPUs doing work that was kept. On a trace whose arrival window holds all its work
  (Philly) every policy that evicts nothing has the same utilisation, so what lifts one that
  evicts above it is run thrown away: the two figures side by side say which.
- `jain_fairness` and `queue_share` use the reference deserved share (the same yardstick for
  every policy, see `engine`); `jain_fairness_own` and `queue_share_own` use the policy's own
  deserved share, for the policies that have queues (`volcano`, `phalanx`).
- Timing figures (`wall_s`, `peak_rss_mib`, `cycle_ms`) are the only ones that change between
  two runs with the same seed.
"""

from __future__ import annotations

import math
import resource
import sys
from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import Any

from phalanx.core_build import core_build
from phalanx.sim import metrics
from phalanx.sim.engine import ENGINE_REVISION, SimResult
from phalanx.sim.policies import SimPolicy

SHARE_TOLERANCE = 0.1
"""The "within 10% of its deserved share" of the issue's goals."""


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far, in MiB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1 << 20) if sys.platform == "darwin" else peak / 1024


def policy_config(policy: SimPolicy) -> dict[str, Any]:
    """What a replay's policy was configured with: the core `Policy` knobs (not the topology
    levels) and the simulator's own switches. Two summaries with equal configs (and the same
    trace, shape, job limit and cycle interval) come from the same replay up to timing."""
    out: dict[str, Any] = {"queues": policy.queues, "usage_decay": policy.usage_decay}
    if policy.core is not None:
        for f in fields(policy.core):
            if f.name != "topology_levels":
                out[f.name] = getattr(policy.core, f.name)
    return out


def work_weighted_wait(jobs: Sequence[metrics.CompletedJob]) -> float | None:
    """Mean wait weighted by each job's work (GPUs × run time of its completing run).

    Under overload every work-conserving policy does about the same work, and this mean moves
    little with the order of service (Kleinrock's conservation law), while the plain mean can be
    lowered just by serving small jobs first; the two together tell reordering from waste."""
    total = math.fsum(j.gpus * (j.end_s - j.start_s) for j in jobs)
    if total <= 0:
        return None
    return math.fsum(j.gpus * (j.end_s - j.start_s) * j.wait_s for j in jobs) / total


def _stats(stats: metrics.Stats) -> dict[str, Any]:
    return {
        "count": stats.count,
        "mean_s": stats.mean_s,
        "p50_s": stats.p50_s,
        "p95_s": stats.p95_s,
        "max_s": stats.max_s,
    }


def _shares(result: SimResult, end_s: float, *, reference: bool) -> dict[str, Any]:
    stats = metrics.queue_share_stats(
        result.queues.snapshots(reference=reference), end_s, SHARE_TOLERANCE
    )
    return {
        name: {
            "demand_time_s": s.demand_time_s,
            "mean_ratio": s.mean_ratio,
            "below_fraction": s.below_fraction,
        }
        for name, s in stats.items()
    }


def _worst_below(shares: Mapping[str, Mapping[str, Any]]) -> float | None:
    values = [s["below_fraction"] for s in shares.values() if s["below_fraction"] is not None]
    return max(values) if values else None


def summarize(result: SimResult, **context: Any) -> dict[str, Any]:
    """The JSON summary of a replay; `context` (trace, shape, ...) is put first as given."""
    jobs = result.completed
    total = result.cluster.total_gpus
    window = (result.first_submit_s, result.last_submit_s)
    if window[1] <= window[0]:
        window = (result.first_submit_s, result.end_s)
    head = metrics.summary(
        jobs,
        total,
        allocated=list(result.allocated.samples()),
        snapshots=result.queues.snapshots(reference=True),
        window=window,
    )
    end_s = window[1]
    own = result.policy.queues
    shares_ref = _shares(result, end_s, reference=True)
    shares_own = _shares(result, end_s, reference=False) if own else None
    span = (result.first_submit_s, result.end_s)
    cycle_ms = sorted(1000 * s for s in result.cycle_seconds)
    out: dict[str, Any] = dict(context)
    out.update(
        {
            "policy": result.policy.name,
            "policy_description": result.policy.description,
            "policy_config": policy_config(result.policy),
            "seed": result.seed,
            "cycle_interval_s": result.cycle_interval_s,
            "cycle_phase_s": result.cycle_phase_s,
            "core_build": core_build(),
            "engine_revision": ENGINE_REVISION,
            "cluster_gpus": total,
            "job_count": len(jobs),
            "unfinished": result.unfinished,
            "unschedulable": result.unschedulable,
        }
    )
    out.update(head)
    util = head["gpu_utilization"]
    out.update(
        {
            "gpu_utilization_kept": None
            if not isinstance(util, float)
            else util
            - metrics.gpu_seconds_within(result.lost_runs, *window)
            / (total * (window[1] - window[0])),
            "gpu_utilization_makespan": metrics.gpu_utilization(
                result.allocated.samples(), total, *span
            )
            if span[1] > span[0]
            else None,
            "makespan_s": span[1] - span[0],
            "wait_mean_work_weighted_s": work_weighted_wait(jobs),
            "wait_by_class": {
                name: _stats(s) for name, s in metrics.wait_stats_by_class(jobs).items()
            },
            "jain_fairness_own": metrics.jain_fairness(
                result.queues.snapshots(reference=False), end_s
            )
            if own
            else None,
            "queue_share": shares_ref,
            "queue_share_own": shares_own,
            "queue_below_share_worst": _worst_below(shares_ref),
            "queue_below_share_worst_own": _worst_below(shares_own) if shares_own else None,
            "stranded_node_gpus_mean": metrics.time_weighted_mean(
                result.stranded_node.samples(), *window
            ),
            "stranded_leaf_gpus_mean": metrics.time_weighted_mean(
                result.stranded_leaf.samples(), *window
            ),
            "deadlocked_gpu_hours": metrics.gpu_hours(result.partial.samples(), *span),
            "rendezvous_timeouts": result.rendezvous_timeouts,
            "evictions": result.evictions,
            "lost_gpu_hours": result.lost_gpu_hours,
            "restarts": result.restarts,
            "cycles": result.cycles,
            "pending_gangs_max": int(max(result.pending_gangs.v, default=0)),
            "wall_s": result.wall_s,
            "peak_rss_mib": peak_rss_mib(),
            "cycle_ms": {
                "mean": math.fsum(cycle_ms) / len(cycle_ms) if cycle_ms else None,
                "p95": metrics.percentile(cycle_ms, 95, presorted=True),
                "max": cycle_ms[-1] if cycle_ms else None,
            },
        }
    )
    return out


TIMING_KEYS = ("wall_s", "peak_rss_mib", "cycle_ms")
"""Keys of the summary that vary between runs of the same seed."""


def _hours(seconds: Any) -> str:
    return "-" if seconds is None else f"{seconds / 3600:.2f} h"


def _num(value: Any, fmt: str = "{:.3f}") -> str:
    return "-" if value is None else fmt.format(value)


def table_rows(summary: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(figure, value) rows for the terminal table of one replay."""
    rows = [
        ("policy", str(summary["policy"])),
        ("jobs completed", f"{summary['job_count']} ({summary['unfinished']} unfinished)"),
        ("GPU utilisation (arrival window)", _num(summary["gpu_utilization"], "{:.1%}")),
        ("  without runs thrown away", _num(summary.get("gpu_utilization_kept"), "{:.1%}")),
        ("wait mean", _hours(summary["wait_mean_s"])),
        ("wait p95", _hours(summary["wait_p95_s"])),
        ("wait max", _hours(summary["wait_max_s"])),
        (
            f"largest gangs ({summary['largest_gang_class']} GPUs) worst wait",
            _hours(summary["largest_gang_wait_max_s"]),
        ),
        ("job completion time mean", _hours(summary["jct_mean_s"])),
        ("Jain fairness (reference shares)", _num(summary["jain_fairness"])),
        ("worst queue: time below 90% share", _num(summary["queue_below_share_worst"], "{:.1%}")),
        ("leaves spanned above minimum (mean)", _num(summary["leaf_span_excess_mean"])),
        ("stranded GPUs on partly used nodes", _num(summary["stranded_node_gpus_mean"], "{:.1f}")),
        ("deadlocked GPU-hours", _num(summary["deadlocked_gpu_hours"], "{:.1f}")),
        ("evictions / lost GPU-hours", f"{sum(summary['evictions'].values())} / "
         f"{summary['lost_gpu_hours']:.1f}"),
        ("cycles / mean ms / max ms", f"{summary['cycles']} / "
         f"{_num(summary['cycle_ms']['mean'], '{:.1f}')} / "
         f"{_num(summary['cycle_ms']['max'], '{:.1f}')}"),
        ("wall time / peak RSS", f"{summary['wall_s']:.1f} s / {summary['peak_rss_mib']:.0f} MiB"),
    ]  # fmt: skip
    return rows
