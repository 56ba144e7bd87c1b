"""The command line the instrumented replays share (`phalanx.sim.churn`, `phalanx.sim.starved`):
one trace on one shape under one policy, with `--set` fields, as `make bench-sim` replays it."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from typing import TextIO

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


class ProgressLine:
    """Reports a replay's progress on stderr, a line each `step_pct` percent of the jobs arrived,
    then, once all have arrived, each `step_pct` percent of them finished (the drain).

    The instrumented replays of Philly run 20 min to over an hour and printed nothing until
    they were done, so a slow replay could not be told from a hung one; a line (not a bar)
    because they are run in the background with stderr to a file. The drain is reported too: a
    replay whose backlog grows spends most of its time after the last arrival, and a report of
    arrivals alone said nothing for that hour.
    """

    def __init__(
        self,
        label: str,
        *,
        step_pct: int = 5,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label = label
        self.step_pct = step_pct
        self.stream = stream
        self.clock = clock
        self.began = clock()
        self.next_pct = step_pct
        self.next_done_pct: int | None = None

    def __call__(self, arrived: int, finished: int, total: int) -> None:
        if self.next_done_pct is None:
            pct = _pct(arrived, total)
            if pct < self.next_pct:
                return
            self.next_pct = self._step_after(pct)
            self._say(f"{arrived:,} of {total:,} jobs arrived ({pct}%), {finished:,} finished")
            if arrived >= total:
                self.next_done_pct = self._step_after(_pct(finished, total))
            return
        pct = _pct(finished, total)
        if pct < self.next_done_pct:
            return
        self.next_done_pct = self._step_after(pct)
        self._say(f"all arrived; {finished:,} of {total:,} jobs finished ({pct}%)")

    def _step_after(self, pct: int) -> int:
        """The next multiple of `step_pct` above `pct` (one line, not one per step skipped)."""
        return (pct // self.step_pct + 1) * self.step_pct

    def _say(self, what: str) -> None:
        minutes = (self.clock() - self.began) / 60
        print(
            f"{self.label}: {what}, {minutes:.1f} min",
            file=self.stream if self.stream is not None else sys.stderr,
            flush=True,
        )


def _pct(count: int, total: int) -> int:
    """`count` as a whole percentage of `total` (100 when there is nothing to count)."""
    return 100 if total <= 0 else count * 100 // total
