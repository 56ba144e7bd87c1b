"""The command line the instrumented replays share (`phalanx.sim.churn`, `phalanx.sim.starved`):
one trace on one shape under one policy, with `--set` fields, as `make bench-sim` replays it."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from phalanx.sim.nodes import Cluster, load_cluster
from phalanx.sim.policies import SimPolicy, get_policy, with_settings
from phalanx.sim.queues import QueueSpec, queues_for_trace
from phalanx.sim.traces import TraceJob, load_trace


def parser(doc: str | None) -> argparse.ArgumentParser:
    """`--trace`, `--shape`, `--policy`, `--limit-jobs` and `--set`, described by the first
    line of the calling module's docstring."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0] if doc else None)
    p.add_argument("--trace", required=True)
    p.add_argument("--shape", required=True)
    p.add_argument("--policy", default="phalanx")
    p.add_argument("--limit-jobs", type=int, default=None)
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE")
    return p


def inputs(
    trace: str, shape: str, policy: str, limit_jobs: int | None, settings: dict[str, str]
) -> tuple[Sequence[TraceJob], Cluster, list[QueueSpec], SimPolicy]:
    """The jobs (the first `limit_jobs`), the cluster, the trace's queues and the policy with
    `settings` applied."""
    loaded = load_trace(trace)
    cluster = load_cluster(shape)
    jobs = loaded.jobs[:limit_jobs] if limit_jobs is not None else loaded.jobs
    chosen = with_settings(get_policy(policy), settings)
    return jobs, cluster, list(queues_for_trace(loaded, cluster.total_gpus)), chosen


def settings_of(args: argparse.Namespace) -> dict[str, str]:
    """The `--set FIELD=VALUE` pairs."""
    return dict(s.split("=", 1) for s in args.set)
