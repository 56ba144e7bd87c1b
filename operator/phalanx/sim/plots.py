"""PNG plots of a replay: utilisation over time, wait times by gang size, queue shares.

matplotlib is an optional dependency (the `sim` extra): it is imported only when plots are
asked for, so `phalanx simulate` without `--plots` works without it, and a missing install is
one clear error instead of an ImportError at start-up. The Agg backend renders to files
without a display.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from phalanx.sim.metrics import SIZE_CLASSES, size_class
from phalanx.sim.series import StepSeries

if TYPE_CHECKING:
    from phalanx.sim.engine import SimResult

_DAY = 86400.0


class PlotsUnavailable(RuntimeError):
    """matplotlib is not installed."""


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise PlotsUnavailable(
            "plots need matplotlib: pip install 'phalanx[sim]' (or pip install matplotlib)"
        ) from exc
    return plt


def _steps(
    series: StepSeries, origin: float, scale: float = 1.0
) -> tuple[list[float], list[float]]:
    xs = [(t - origin) / _DAY for t in series.t]
    ys = [v * scale for v in series.v]
    return xs, ys


def write_plots(result: SimResult, directory: Path, title: str) -> list[Path]:
    """Write the three plots for `result` into `directory`; returns their paths."""
    plt = _pyplot()
    directory.mkdir(parents=True, exist_ok=True)
    name = result.policy.name
    paths = [
        _utilisation(plt, result, directory / f"{name}-utilisation.png", title),
        _waits(plt, result, directory / f"{name}-waits.png", title),
        _shares(plt, result, directory / f"{name}-queue-shares.png", title),
    ]
    return paths


def _utilisation(plt: Any, result: SimResult, path: Path, title: str) -> Path:
    origin = result.first_submit_s
    total = result.cluster.total_gpus
    fig, ax = plt.subplots(figsize=(11, 4))
    xs, ys = _steps(result.allocated, origin, 100.0 / total)
    ax.step(xs, ys, where="post", linewidth=0.6, label="GPUs running gangs")
    if len(result.partial):
        xs, ys = _steps(result.partial, origin, 100.0 / total)
        ax.step(xs, ys, where="post", linewidth=0.6, color="tab:red", label="held by partial jobs")
    ax.axvline((result.last_submit_s - origin) / _DAY, color="grey", linestyle=":", linewidth=1)
    ax.set_ylim(0, 105)
    ax.set_xlabel("days since the first submit (dotted: last submit)")
    ax.set_ylabel("% of GPUs")
    ax.set_title(f"{title} — {result.policy.name}: GPU utilisation")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _waits(plt: Any, result: SimResult, path: Path, title: str) -> Path:
    waits: dict[str, list[float]] = {c: [] for c in SIZE_CLASSES}
    for job in result.completed:
        cls = size_class(job.gpus)
        if cls is not None:
            waits[cls].append(max(job.wait_s, 1.0) / 3600)
    labels = [f"{c} GPUs\n(n={len(waits[c])})" for c in SIZE_CLASSES]
    data = [waits[c] or [float("nan")] for c in SIZE_CLASSES]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.boxplot(data, whis=(5, 95), showfliers=False)
    ax.set_xticks(range(1, len(labels) + 1), labels)
    ax.set_yscale("log")
    ax.set_ylabel("wait (hours, log; waits under 1 s shown as 1 s)")
    ax.set_title(f"{title} — {result.policy.name}: wait by gang size (box 25-75%, whiskers 5-95%)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _shares(plt: Any, result: SimResult, path: Path, title: str) -> Path:
    origin = result.first_submit_s
    names = result.queues.names
    xs: list[float] = []
    alloc: dict[str, list[float]] = {n: [] for n in names}
    deserved: dict[str, list[float]] = {n: [] for n in names}
    for snap in result.queues.snapshots(reference=not result.policy.queues):
        xs.append((snap.t_s - origin) / _DAY)
        for n in names:
            share = snap.shares[n]
            alloc[n].append(share.allocated)
            deserved[n].append(share.deserved)
    busiest = sorted(names, key=lambda n: -sum(alloc[n]))[:6]
    fig, axes = plt.subplots(len(busiest), 1, figsize=(11, 1.8 * len(busiest) + 1), sharex=True)
    axes = axes if len(busiest) > 1 else [axes]
    for ax, n in zip(axes, busiest, strict=True):
        ax.step(xs, alloc[n], where="post", linewidth=0.6, label="allocated")
        ax.step(xs, deserved[n], where="post", linewidth=0.6, color="tab:orange", label="deserved")
        ax.set_ylabel(f"{n}\nGPUs", fontsize=8)
    axes[0].legend(loc="upper right", fontsize=8)
    axes[0].set_title(f"{title} — {result.policy.name}: GPUs per queue (six busiest)")
    axes[-1].set_xlabel("days since the first submit")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_comparison(results: list[SimResult], directory: Path, title: str) -> list[Path]:
    """`phalanx simulate --compare`: the three plots with every policy on the same axes —
    waits by size class (box per policy, the maximum marked), utilisation over time, and the
    busiest queues' GPUs against the reference deserved share (the same for every policy)."""
    plt = _pyplot()
    directory.mkdir(parents=True, exist_ok=True)
    return [
        _compare_waits(plt, results, directory / "compare-waits.png", title),
        _compare_utilisation(plt, results, directory / "compare-utilisation.png", title),
        _compare_shares(plt, results, directory / "compare-queue-shares.png", title),
    ]


def _compare_waits(plt: Any, results: list[SimResult], path: Path, title: str) -> Path:
    n = len(results)
    width = 0.8 / max(1, n)
    fig, ax = plt.subplots(figsize=(9, 4.8))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for k, result in enumerate(results):
        waits: dict[str, list[float]] = {c: [] for c in SIZE_CLASSES}
        for job in result.completed:
            cls = size_class(job.gpus)
            if cls is not None:
                waits[cls].append(max(job.wait_s, 1.0) / 3600)
        pos = [i + 1 - 0.4 + width * (k + 0.5) for i in range(len(SIZE_CLASSES))]
        data = [waits[c] or [float("nan")] for c in SIZE_CLASSES]
        colour = colours[k % len(colours)]
        ax.boxplot(
            data,
            positions=pos,
            widths=width * 0.9,
            whis=(5, 95),
            showfliers=False,
            patch_artist=True,
            boxprops={"facecolor": colour, "alpha": 0.5},
            medianprops={"color": "black"},
        )
        maxima = [max(v) if v else float("nan") for v in (waits[c] for c in SIZE_CLASSES)]
        ax.scatter(pos, maxima, marker="v", color=colour, zorder=3, label=f"{result.policy.name}")
    ax.set_xticks(range(1, len(SIZE_CLASSES) + 1), [f"{c} GPUs" for c in SIZE_CLASSES])
    ax.set_xlim(0.5, len(SIZE_CLASSES) + 0.5)
    ax.set_yscale("log")
    ax.set_ylabel("wait (hours, log)")
    ax.set_title(f"{title}: wait by gang size (box 25-75%, whiskers 5-95%, ▼ maximum)")
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _compare_utilisation(plt: Any, results: list[SimResult], path: Path, title: str) -> Path:
    origin = min(r.first_submit_s for r in results)
    fig, ax = plt.subplots(figsize=(11, 4))
    for result in results:
        xs, ys = _steps(result.allocated, origin, 100.0 / result.cluster.total_gpus)
        ax.step(xs, ys, where="post", linewidth=0.6, label=result.policy.name)
    ax.set_ylim(0, 105)
    ax.set_xlabel("days since the first submit")
    ax.set_ylabel("% of GPUs running gangs")
    ax.set_title(f"{title}: GPU utilisation")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _compare_shares(plt: Any, results: list[SimResult], path: Path, title: str) -> Path:
    origin = min(r.first_submit_s for r in results)
    names = results[0].queues.names
    series: list[tuple[str, list[float], dict[str, list[float]], dict[str, list[float]]]] = []
    for result in results:
        xs: list[float] = []
        alloc: dict[str, list[float]] = {n: [] for n in names}
        ref: dict[str, list[float]] = {n: [] for n in names}
        for snap in result.queues.snapshots(reference=True):
            xs.append((snap.t_s - origin) / _DAY)
            for n in names:
                alloc[n].append(snap.shares[n].allocated)
                ref[n].append(snap.shares[n].deserved)
        series.append((result.policy.name, xs, alloc, ref))
    busiest = sorted(names, key=lambda n: -sum(series[0][2][n]))[:6]
    fig, axes = plt.subplots(len(busiest), 1, figsize=(11, 1.8 * len(busiest) + 1), sharex=True)
    axes = axes if len(busiest) > 1 else [axes]
    for ax, n in zip(axes, busiest, strict=True):
        for name, xs, alloc, _ in series:
            ax.step(xs, alloc[n], where="post", linewidth=0.6, label=name)
        _, xs0, _, ref0 = series[0]
        ax.step(xs0, ref0[n], where="post", linewidth=0.8, color="black", linestyle=":",
                label="reference deserved")  # fmt: skip
        ax.set_ylabel(f"{n}\nGPUs", fontsize=8)
    axes[0].legend(loc="upper right", fontsize=7, ncol=len(series) + 1)
    axes[0].set_title(f"{title}: GPUs per queue (six busiest) against the reference share")
    axes[-1].set_xlabel("days since the first submit")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
