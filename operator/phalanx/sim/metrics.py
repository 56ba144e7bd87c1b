"""Pure metrics of a simulation run: from completed-job records and time series to numbers.

Nothing here knows about the scheduler: the simulator records what happened (`CompletedJob`,
step-function `Sample`s, per-queue `QueueSnapshot`s) and these functions summarise it, so every
policy is measured by the same code and each figure can be checked by hand on a tiny example.

Conventions used throughout:
- A time series is a step function: a `Sample(t_s, value)` holds from `t_s` until the next
  sample's time (the last one until the window's end); before the first sample the value is 0.
  Samples must be in non-decreasing time order; of several at the same time the last wins.
- Percentiles use linear interpolation between closest ranks (Hyndman-Fan type 7, numpy's and
  pandas' default), so anyone can check a figure with `numpy.percentile(values, 95)`.
- Empty inputs give `None`, never NaN: the summary is written as JSON, where NaN is invalid.
- Pure Python on purpose: one pass over 82k jobs or a few hundred thousand samples takes well
  under a second, so numpy (not a dependency) would not pay for itself here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from phalanx.sim.traces.records import pod_gpu_split

SIZE_CLASSES: tuple[str, ...] = ("1", "2-8", "9-32", "33+")
"""Gang-size classes by total GPUs, smallest first; 2-8 fit one 8-GPU node, 9-32 span up to
four nodes (typically one leaf), 33+ are the large gangs that starve under naive policies."""


@dataclass(frozen=True, slots=True)
class CompletedJob:
    """One job as the simulator saw it finish.

    `start_s` is the start of the run that completed: after an eviction it is the last start,
    so time lost to eviction counts as waiting, as the user experiences it. `leaves_spanned` is
    the number of leaf switches its pods were placed under, `min_leaves` the fewest that could
    have held it on the simulated shape; both `None` when the simulator did not record them.
    """

    id: str
    queue: str
    gpus: int
    submit_s: float
    start_s: float
    end_s: float
    leaves_spanned: int | None = None
    min_leaves: int | None = None

    @property
    def wait_s(self) -> float:
        """Submit to start of the completing run."""
        return self.start_s - self.submit_s

    @property
    def completion_s(self) -> float:
        """Job completion time: submit to end."""
        return self.end_s - self.submit_s


@dataclass(frozen=True, slots=True)
class Sample:
    """One point of a step-function time series (e.g. allocated GPUs at `t_s`)."""

    t_s: float
    value: float


@dataclass(frozen=True, slots=True)
class QueueShare:
    """A queue's GPUs at one instant: allocated (running), deserved (fair share) and demand
    (running plus pending requests)."""

    allocated: float
    deserved: float
    demand: float


@dataclass(frozen=True, slots=True)
class QueueSnapshot:
    """All queues' shares at `t_s`; it holds until the next snapshot (a step function)."""

    t_s: float
    shares: Mapping[str, QueueShare]


@dataclass(frozen=True, slots=True)
class Stats:
    """Summary of a set of durations in seconds; the figures are `None` when `count` is 0."""

    count: int
    mean_s: float | None
    p50_s: float | None
    p95_s: float | None
    max_s: float | None
    p99_s: float | None = None
    """For the tails of each size class (`phalanx.sim.tails`); not in the replay summary."""


@dataclass(frozen=True, slots=True)
class QueueShareStats:
    """How a queue fared against its deserved share over the time it had demand.

    `mean_ratio`: time-weighted mean of allocated/deserved (over demand time with deserved > 0).
    `below_fraction`: share of that time it held less than (1 - tolerance) x deserved.
    """

    demand_time_s: float
    mean_ratio: float | None
    below_fraction: float | None


@dataclass(frozen=True, slots=True)
class NodeGpus:
    """One node's GPUs at an instant, for fragmentation."""

    leaf: str
    capacity: int
    free: int


@dataclass(frozen=True, slots=True)
class Fragmentation:
    """Free GPUs and how many of them are stranded.

    `stranded_node_gpus`: free GPUs on partly used nodes (0 < free < capacity): they cannot take
    a whole-node pod, which is what every member of a multi-node gang is (`pod_gpu_split`).
    `stranded_leaf_gpus`: free GPUs under leaves that are partly used: they cannot take a gang
    that needs a whole leaf.
    """

    free_gpus: int
    stranded_node_gpus: int
    stranded_leaf_gpus: int


def size_class(gpus: int) -> str | None:
    """The gang-size class of a job of `gpus` GPUs; `None` for CPU-only jobs (openb), which
    count in overall figures but in no class."""
    if gpus <= 0:
        return None
    if gpus == 1:
        return "1"
    if gpus <= 8:
        return "2-8"
    if gpus <= 32:
        return "9-32"
    return "33+"


def percentile(values: Sequence[float], q: float, *, presorted: bool = False) -> float | None:
    """The `q`-th percentile (0-100) by linear interpolation between closest ranks (type 7):
    rank h = (n - 1) x q/100, value = x[floor h] + frac(h) x (x[floor h + 1] - x[floor h])."""
    if not 0 <= q <= 100:
        raise ValueError(f"percentile must be in [0, 100], got {q}")
    if not values:
        return None
    ordered = values if presorted else sorted(values)
    h = (len(ordered) - 1) * q / 100
    lo = math.floor(h)
    if lo + 1 >= len(ordered):
        return float(ordered[-1])
    return float(ordered[lo] + (h - lo) * (ordered[lo + 1] - ordered[lo]))


def duration_stats(values: Iterable[float]) -> Stats:
    """Count, mean, median, p95, max and p99 of `values`."""
    ordered = sorted(values)
    if not ordered:
        return Stats(0, None, None, None, None)
    return Stats(
        count=len(ordered),
        mean_s=math.fsum(ordered) / len(ordered),
        p50_s=percentile(ordered, 50, presorted=True),
        p95_s=percentile(ordered, 95, presorted=True),
        max_s=float(ordered[-1]),
        p99_s=percentile(ordered, 99, presorted=True),
    )


def wait_stats(jobs: Iterable[CompletedJob]) -> Stats:
    """Wait (submit to start) over all jobs."""
    return duration_stats(job.wait_s for job in jobs)


def completion_stats(jobs: Iterable[CompletedJob]) -> Stats:
    """Job completion time (submit to end) over all jobs."""
    return duration_stats(job.completion_s for job in jobs)


def wait_stats_by_class(jobs: Iterable[CompletedJob]) -> dict[str, Stats]:
    """Wait statistics per gang-size class; every class in `SIZE_CLASSES` is present, empty
    ones with count 0, so tables of different runs line up."""
    waits: dict[str, list[float]] = {name: [] for name in SIZE_CLASSES}
    for job in jobs:
        cls = size_class(job.gpus)
        if cls is not None:
            waits[cls].append(job.wait_s)
    return {name: duration_stats(values) for name, values in waits.items()}


def largest_gang_wait_max(jobs: Sequence[CompletedJob]) -> tuple[str | None, float | None]:
    """Starvation: the longest wait in the largest non-empty size class, with that class.

    The largest class present, not always "33+": ITP cluster05 has no gang above 8 GPUs, and a
    figure over an empty class would say nothing. All policies replaying the same trace
    complete the same jobs, so they are compared over the same class.
    """
    by_class = wait_stats_by_class(jobs)
    for name in reversed(SIZE_CLASSES):
        if by_class[name].count:
            return name, by_class[name].max_s
    return None, None


def leaf_span_excess_mean(jobs: Iterable[CompletedJob]) -> float | None:
    """Mean of (leaves spanned - minimum possible) over multi-node gangs (more than one pod
    by `pod_gpu_split`) whose leaf figures were recorded; `None` when there are none.
    0 means every gang was placed as compactly as the shape allows."""
    excess = [
        job.leaves_spanned - job.min_leaves
        for job in jobs
        if job.leaves_spanned is not None
        and job.min_leaves is not None
        and len(pod_gpu_split(job.gpus)) > 1
    ]
    return math.fsum(excess) / len(excess) if excess else None


def _steps(samples: Iterable[Sample], end_s: float) -> Iterator[tuple[float, float, float]]:
    """(from, to, value) for each step of the series, the last one ending at `end_s`."""
    previous: Sample | None = None
    for sample in samples:
        if previous is not None:
            if sample.t_s < previous.t_s:
                raise ValueError(f"samples out of order: {sample.t_s} after {previous.t_s}")
            yield previous.t_s, sample.t_s, previous.value
        previous = sample
    if previous is not None and previous.t_s < end_s:
        yield previous.t_s, end_s, previous.value


def step_integral(samples: Iterable[Sample], start_s: float, end_s: float) -> float:
    """Integral of the step function over [start_s, end_s] (value x seconds)."""
    total = 0.0
    for step_from, step_to, value in _steps(samples, end_s):
        lo, hi = max(step_from, start_s), min(step_to, end_s)
        if hi > lo:
            total += value * (hi - lo)
    return total


def time_weighted_mean(samples: Iterable[Sample], start_s: float, end_s: float) -> float | None:
    """Mean value of the step function over [start_s, end_s]; `None` for an empty window."""
    if end_s <= start_s:
        return None
    return step_integral(samples, start_s, end_s) / (end_s - start_s)


def gpu_hours(samples: Iterable[Sample], start_s: float, end_s: float) -> float:
    """GPU-hours under a GPU-count series, e.g. GPUs held by partly placed gangs in the
    no-gang baseline (deadlocked GPU-hours)."""
    return step_integral(samples, start_s, end_s) / 3600


def allocation_from_jobs(jobs: Iterable[CompletedJob]) -> list[Sample]:
    """Allocated GPUs over time from the jobs' [start, end) intervals.

    Exact for runs without evictions; a simulator that evicts should record its own series,
    since a completed job's record does not keep its lost runs.
    """
    delta: dict[float, float] = {}
    for job in jobs:
        delta[job.start_s] = delta.get(job.start_s, 0.0) + job.gpus
        delta[job.end_s] = delta.get(job.end_s, 0.0) - job.gpus
    level = 0.0
    series = []
    for t in sorted(delta):
        level += delta[t]
        series.append(Sample(t, level))
    return series


def gpu_seconds_within(
    runs: Iterable[tuple[float, float, int]], start_s: float, end_s: float
) -> float:
    """GPU-seconds of (start, end, GPUs) runs that fall within [start_s, end_s): a run thrown
    away by an eviction counts as busy in the allocation series, and this is how much of the
    window's busy time such runs were."""
    return math.fsum(
        gpus * max(0.0, min(end, end_s) - max(start, start_s)) for start, end, gpus in runs
    )


def gpu_utilization(
    allocated: Iterable[Sample], total_gpus: int, start_s: float, end_s: float
) -> float | None:
    """Time-weighted GPU utilisation: integral of allocated GPUs over the window divided by
    total_gpus x window length, in [0, 1]."""
    if total_gpus <= 0:
        raise ValueError(f"total GPUs must be > 0, got {total_gpus}")
    mean = time_weighted_mean(allocated, start_s, end_s)
    return None if mean is None else mean / total_gpus


def jain_index(values: Sequence[float]) -> float | None:
    """Jain's fairness index (sum x)^2 / (n x sum x^2): 1 when all equal, 1/n when one takes
    all. All zeros count as equal (1.0); empty gives `None`."""
    if not values:
        return None
    squares = math.fsum(x * x for x in values)
    if squares == 0:
        return 1.0
    return math.fsum(values) ** 2 / (len(values) * squares)


def _ratios(snapshot: QueueSnapshot) -> dict[str, float]:
    """allocated/deserved of the queues that count: demand > 0 and deserved > 0 (a ratio to
    a zero share is undefined; such a queue still shows in the wait and starvation figures)."""
    return {
        name: share.allocated / share.deserved
        for name, share in snapshot.shares.items()
        if share.demand > 0 and share.deserved > 0
    }


def _held(
    snapshots: Iterable[QueueSnapshot], end_s: float
) -> Iterator[tuple[QueueSnapshot, float]]:
    """Each snapshot with how long it held (until the next one, the last until `end_s`)."""
    previous: QueueSnapshot | None = None
    for snapshot in snapshots:
        if previous is not None:
            if snapshot.t_s < previous.t_s:
                raise ValueError(f"snapshots out of order: {snapshot.t_s} after {previous.t_s}")
            yield previous, min(snapshot.t_s, end_s) - previous.t_s
        previous = snapshot
    if previous is not None:
        yield previous, end_s - previous.t_s


def jain_fairness(snapshots: Iterable[QueueSnapshot], end_s: float) -> float | None:
    """Time-weighted mean of Jain's index over the queues' allocated/deserved ratios, taken
    over the queues that have demand (and a non-zero deserved share) at each instant.

    Instants when no queue qualifies do not count. A queue borrowing beyond its share has a
    ratio above 1 and lowers the index like one below; with deserved shares water-filled up to
    demand, sustained borrowing means someone else is below theirs. `None` if nothing counted.
    """
    weighted = held_total = 0.0
    for snapshot, held in _held(snapshots, end_s):
        index = jain_index(list(_ratios(snapshot).values()))
        if index is not None and held > 0:
            weighted += index * held
            held_total += held
    return weighted / held_total if held_total > 0 else None


def queue_share_stats(
    snapshots: Iterable[QueueSnapshot], end_s: float, tolerance: float = 0.1
) -> dict[str, QueueShareStats]:
    """Per queue, over the time it had demand: mean allocated/deserved and the share of that
    time spent below (1 - tolerance) x deserved (the "within 10% of its share" goal)."""
    demand: dict[str, float] = {}
    ratio_time: dict[str, float] = {}
    ratio_sum: dict[str, float] = {}
    below: dict[str, float] = {}
    for snapshot, held in _held(snapshots, end_s):
        if held <= 0:
            continue
        for name, share in snapshot.shares.items():
            if share.demand <= 0:
                continue
            demand[name] = demand.get(name, 0.0) + held
            if share.deserved > 0:
                ratio_time[name] = ratio_time.get(name, 0.0) + held
                ratio_sum[name] = ratio_sum.get(name, 0.0) + held * share.allocated / share.deserved
                if share.allocated < (1 - tolerance) * share.deserved:
                    below[name] = below.get(name, 0.0) + held
    return {
        name: QueueShareStats(
            demand_time_s=demand[name],
            mean_ratio=ratio_sum[name] / ratio_time[name] if name in ratio_time else None,
            below_fraction=below.get(name, 0.0) / ratio_time[name] if name in ratio_time else None,
        )
        for name in sorted(demand)
    }


def fragmentation(nodes: Iterable[NodeGpus]) -> Fragmentation:
    """Free and stranded GPUs of a cluster at one instant (see `Fragmentation`)."""
    free = stranded_node = 0
    leaf_free: dict[str, int] = {}
    leaf_used: dict[str, bool] = {}
    for node in nodes:
        free += node.free
        if 0 < node.free < node.capacity:
            stranded_node += node.free
        leaf_free[node.leaf] = leaf_free.get(node.leaf, 0) + node.free
        leaf_used[node.leaf] = leaf_used.get(node.leaf, False) or node.free < node.capacity
    stranded_leaf = sum(leaf_free[leaf] for leaf, used in leaf_used.items() if used)
    return Fragmentation(free, stranded_node, stranded_leaf)


def summary(
    jobs: Sequence[CompletedJob],
    total_gpus: int,
    allocated: Sequence[Sample] | None = None,
    snapshots: Iterable[QueueSnapshot] | None = None,
    window: tuple[float, float] | None = None,
) -> dict[str, float | int | str | None]:
    """The headline figures of a run, JSON-ready (`None` where undefined).

    Window: `window` if given, else from the first submit to the last end of `jobs` (the
    makespan), for utilisation and fairness alike. `allocated` defaults to
    `allocation_from_jobs(jobs)`; without `snapshots`, `jain_fairness` is `None`.
    Keys: `jobs`, `gpu_utilization`, `wait_mean_s`, `wait_p95_s`, `wait_max_s`,
    `jct_mean_s`, `largest_gang_class`, `largest_gang_wait_max_s`, `jain_fairness`,
    `leaf_span_excess_mean`.
    """
    if window is None:
        if jobs:
            window = (min(job.submit_s for job in jobs), max(job.end_s for job in jobs))
        else:
            window = (0.0, 0.0)
    start_s, end_s = window
    series = allocation_from_jobs(jobs) if allocated is None else allocated
    waits = wait_stats(jobs)
    largest_class, largest_wait = largest_gang_wait_max(jobs)
    return {
        "jobs": len(jobs),
        "gpu_utilization": gpu_utilization(series, total_gpus, start_s, end_s),
        "wait_mean_s": waits.mean_s,
        "wait_p95_s": waits.p95_s,
        "wait_max_s": waits.max_s,
        "jct_mean_s": completion_stats(jobs).mean_s,
        "largest_gang_class": largest_class,
        "largest_gang_wait_max_s": largest_wait,
        "jain_fairness": None if snapshots is None else jain_fairness(snapshots, end_s),
        "leaf_span_excess_mean": leaf_span_excess_mean(jobs),
    }
