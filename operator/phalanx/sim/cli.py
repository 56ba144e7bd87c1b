"""`phalanx simulate`: replay a trace through the scheduling core and print what happened.

Registered by the main CLI as `app.command("simulate")(simulate)`. Kept in the sim package so
the main CLI does not import the simulator (or the core) until the command runs.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from phalanx.sim.policies import POLICIES

DEFAULT_INTERVAL_S = 60.0
"""Default cycle interval of a replay (see `engine`): one cycle per minute of virtual time at
most, like an operator with a 60 s cycle interval; waits are rounded up to the minute."""

_PROGRESS_MIN_JOBS = 2000
"""Below this many jobs a replay takes seconds: no progress bar."""


def run_simulation(
    trace: str,
    shape: str,
    policy: str,
    *,
    queues: Path | None = None,
    seed: int = 0,
    limit_jobs: int | None = None,
    cycle_interval_s: float = DEFAULT_INTERVAL_S,
    cycle_phase_s: float = 0.0,
    plots: Path | None = None,
    console: Console | None = None,
    progress: Callable[[int, int, int], None] | None = None,
    settings: dict[str, str] | None = None,
    keep: list[Any] | None = None,
    member_failure_rate: float = 0.0,
) -> tuple[dict[str, Any], list[Path]]:
    """Load, replay, summarise (and plot): the command without its printing.

    With a `console`, long replays show a progress bar on it; `progress` (jobs arrived,
    finished, jobs) is called as well, for callers that log instead. `settings` change core
    `Policy` fields (`--set`); the replay's `SimResult` is appended to `keep` when given (for
    `--compare`).
    """
    from phalanx.sim.engine import simulate as replay
    from phalanx.sim.nodes import load_cluster
    from phalanx.sim.policies import get_policy, with_settings
    from phalanx.sim.queues import load_queue_file, queues_for_trace
    from phalanx.sim.report import summarize
    from phalanx.sim.traces import load_trace

    chosen = with_settings(get_policy(policy), settings or {})
    loaded = load_trace(trace)
    cluster = load_cluster(shape)
    specs = load_queue_file(queues) if queues else queues_for_trace(loaded, cluster.total_gpus)
    jobs = loaded.jobs[:limit_jobs] if limit_jobs is not None else loaded.jobs
    show = console is not None and len(jobs) >= _PROGRESS_MIN_JOBS
    with Progress(
        TextColumn(f"[bold]{chosen.name}[/bold] replaying"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=console,
        disable=not show,
        transient=True,
    ) as bar:
        task = bar.add_task("jobs arrived", total=len(jobs))

        def advance(arrived: int, finished: int, total: int) -> None:
            # Arrivals, then (once all are in) the drain: jobs finished.
            if arrived < total:
                bar.update(task, completed=arrived)
            else:
                bar.update(task, completed=finished, description="draining: jobs finished")
            if progress is not None:
                progress(arrived, finished, total)

        result = replay(
            jobs,
            cluster,
            specs,
            chosen,
            seed=seed,
            cycle_interval_s=cycle_interval_s,
            cycle_phase_s=cycle_phase_s,
            progress=advance,
            member_failure_rate=member_failure_rate,
        )
    summary = summarize(
        result,
        trace=trace,
        shape=shape,
        queues_file=str(queues) if queues else None,
        jobs_in_trace=len(loaded.jobs),
        limit_jobs=limit_jobs,
    )
    if settings:
        summary["settings"] = dict(sorted(settings.items()))
    if member_failure_rate:
        summary["member_failure_rate"] = member_failure_rate
        summary["member_failures"] = result.member_failures
    summary["skipped_rows"] = dict(loaded.skipped)
    if loaded.malformed and console is not None:
        for line in loaded.malformed[:20]:
            console.print(f"phalanx: skipped {line}", highlight=False, markup=False, soft_wrap=True)
        more = len(loaded.malformed) - 20
        if more > 0:
            console.print(f"phalanx: ... and {more} more malformed rows", highlight=False)
    paths: list[Path] = []
    if plots is not None:
        from phalanx.sim.plots import write_plots

        paths = write_plots(result, plots, _title(trace, shape))
    if keep is not None:
        keep.append(result)
    return summary, paths


def _title(trace: str, shape: str) -> str:
    return f"{Path(trace.partition(':')[2]).name} on {shape}"


def simulate(
    trace: Annotated[
        str, typer.Option(help="KIND:PATH, KIND one of philly, itp, openb.", show_default=False)
    ],
    shape: Annotated[str, typer.Option(help="Cluster shape name (small, medium, ...) or file.")],
    policy: Annotated[
        str, typer.Option(help=f"One of: {', '.join(POLICIES)}.", show_default=False)
    ] = "phalanx",
    queues: Annotated[
        Path | None,
        typer.Option(help="YAML list of Queue specs (default: derived from the trace)."),
    ] = None,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Write the summary as JSON here ('-': stdout).")
    ] = None,
    plots: Annotated[Path | None, typer.Option(help="Write PNG plots into this directory.")] = None,
    seed: Annotated[int, typer.Option(help="Seed for the pod baseline's random choices.")] = 0,
    limit_jobs: Annotated[
        int | None, typer.Option(help="Replay only the first N jobs (by submit time).")
    ] = None,
    cycle_interval: Annotated[
        float, typer.Option(help="Seconds of virtual time between cycles (0: every event).")
    ] = DEFAULT_INTERVAL_S,
    cycle_phase: Annotated[
        float,
        typer.Option(
            help="Seconds after each multiple of --cycle-interval at which cycles run (0 <= it "
            "< the interval): the same replay on a shifted grid, to see how much a figure "
            "owes to when the cycles happen to fall (bench/sim_noise.py).",
        ),
    ] = 0.0,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="FIELD=VALUE: change one core Policy field (repeatable), e.g. work_weight=2.",
        ),
    ] = None,
    compare: Annotated[
        str | None,
        typer.Option(
            help="POLICY,POLICY,…: replay each, print one side-by-side table and write "
            "comparison plots (into --plots, default ./phalanx-compare).",
            show_default=False,
        ),
    ] = None,
    member_failure_rate: Annotated[
        float,
        typer.Option(
            min=0.0,
            max=0.99,
            help="Chance that each member fails during a run, at a uniform time in it (seeded by "
            "--seed); the core lifecycle then evicts its gang whole (MemberFailed) and it backs "
            "off, as the operator's would. Alibaba openb: 1,870 of 8,152 pods failed (0.229).",
        ),
    ] = 0.0,
) -> None:
    """Replay a GPU-cluster trace through the scheduling core, without a cluster."""
    err = Console(stderr=True)
    settings: dict[str, str] = {}
    for item in set_ or []:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            err.print(f"phalanx: --set {item!r}: expected FIELD=VALUE", highlight=False)
            raise typer.Exit(2)
        settings[name.strip()] = value.strip()
    names = [p.strip() for p in compare.split(",") if p.strip()] if compare else [policy]
    for name in names:
        if name not in POLICIES:
            err.print(f"phalanx: unknown policy {name!r}: use one of {', '.join(POLICIES)}")
            raise typer.Exit(2)
    if compare:
        _compare(
            err, names, trace, shape, queues, seed, limit_jobs, cycle_interval, cycle_phase,
            settings, plots or Path("phalanx-compare"), json_out,
        )  # fmt: skip
        return
    try:
        summary, paths = run_simulation(
            trace,
            shape,
            policy,
            queues=queues,
            seed=seed,
            limit_jobs=limit_jobs,
            cycle_interval_s=cycle_interval,
            cycle_phase_s=cycle_phase,
            plots=plots,
            console=err,
            settings=settings,
            member_failure_rate=member_failure_rate,
        )
    except (ValueError, OSError, RuntimeError) as exc:
        # soft_wrap: one line however narrow the terminal (rich would break it at its width).
        err.print(f"phalanx: {exc}", highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(1) from None
    text = json.dumps(summary, indent=2, sort_keys=False)
    if json_out is not None and str(json_out) == "-":
        print(text)
        return
    if json_out is not None:
        json_out.write_text(text + "\n", encoding="utf-8")
    _print_table(summary)
    for path in paths:
        err.print(f"wrote {path}", highlight=False)


def _print_table(summary: dict[str, Any]) -> None:
    from phalanx.sim.report import table_rows

    table = Table(title=f"{summary['trace']} on {summary['shape']}", show_header=False)
    table.add_column("figure")
    table.add_column("value", justify="right")
    for name, value in table_rows(summary):
        table.add_row(name, value)
    Console().print(table)


def _compare(
    err: Console,
    names: list[str],
    trace: str,
    shape: str,
    queues: Path | None,
    seed: int,
    limit_jobs: int | None,
    cycle_interval: float,
    cycle_phase: float,
    settings: dict[str, str],
    plots: Path,
    json_out: Path | None,
) -> None:
    """`--compare`: replay each policy (settings apply to every one that has a core), print
    one table with a column per policy, write the comparison plots on shared axes."""
    from phalanx.sim.plots import write_comparison
    from phalanx.sim.report import table_rows

    summaries: list[dict[str, Any]] = []
    results: list[Any] = []
    try:
        for name in names:
            sets = settings if POLICIES[name].core is not None else {}
            summary, _ = run_simulation(
                trace,
                shape,
                name,
                queues=queues,
                seed=seed,
                limit_jobs=limit_jobs,
                cycle_interval_s=cycle_interval,
                cycle_phase_s=cycle_phase,
                console=err,
                settings=sets,
                keep=results,
            )
            summaries.append(summary)
        paths = write_comparison(results, plots, _title(trace, shape))
    except (ValueError, OSError, RuntimeError) as exc:
        err.print(f"phalanx: {exc}", highlight=False, markup=False)
        raise typer.Exit(1) from None
    if json_out is not None:
        text = json.dumps(summaries, indent=2)
        if str(json_out) == "-":
            print(text)
            return
        json_out.write_text(text + "\n", encoding="utf-8")
    table = Table(title=f"{summaries[0]['trace']} on {shape}")
    table.add_column("figure")
    rows = [table_rows(s) for s in summaries]
    for s in summaries:
        table.add_column(str(s["policy"]), justify="right")
    for k, (figure, _) in enumerate(rows[0]):
        if figure == "policy":
            continue
        table.add_row(figure, *(r[k][1] for r in rows))
    Console().print(table)
    for path in paths:
        err.print(f"wrote {path}", highlight=False)
