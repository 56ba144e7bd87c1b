"""`phalanx simulate` end to end on a small slice of a real trace, through Typer."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from typer.testing import CliRunner

from phalanx.sim.cli import simulate

TRACES = Path(__file__).resolve().parents[3] / "bench" / "traces"
ITP = TRACES / "msr-itp-2021" / "cluster05.csv"


def _app() -> typer.Typer:
    app = typer.Typer()
    app.command()(simulate)
    return app


def test_json_summary_has_the_documented_keys(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    got = CliRunner().invoke(
        _app(),
        [
            *("--trace", f"itp:{ITP}", "--shape", "small", "--policy", "phalanx"),
            *("--limit-jobs", "60", "--json", str(out)),
        ],
    )
    assert got.exit_code == 0, got.output
    summary = json.loads(out.read_text())
    for key in (
        "gpu_utilization",
        "wait_mean_s",
        "wait_p95_s",
        "largest_gang_wait_max_s",
        "jain_fairness",
        "leaf_span_excess_mean",
        "wall_s",
        "peak_rss_mib",
        "job_count",
    ):
        assert key in summary
    assert summary["job_count"] == 60
    assert "GPU utilisation" in got.output


def test_unknown_policy_is_one_line_and_exit_2() -> None:
    got = CliRunner().invoke(
        _app(), ["--trace", f"itp:{ITP}", "--shape", "small", "--policy", "slurm"]
    )
    assert got.exit_code == 2
    assert "unknown policy 'slurm'" in got.output


def test_bad_trace_kind_is_a_clean_error() -> None:
    got = CliRunner().invoke(_app(), ["--trace", "nope:x.csv", "--shape", "small"])
    assert got.exit_code == 1
    assert "trace must be KIND:PATH" in got.output


def test_a_missing_trace_or_a_malformed_row_is_one_line_naming_it_and_exit_1(
    tmp_path: Path,
) -> None:
    """A missing trace is one line and exit 1; a malformed row is one line naming its row and
    what to do, and is skipped (the replay goes on with the others: issue 19)."""
    missing = tmp_path / "none.csv"
    bad = tmp_path / "bad.csv"
    bad.write_text("job_id,submission_time,duration,num_gpu\na,1,1,1\nb,2,-5,1\n")
    got = CliRunner().invoke(_app(), ["--trace", f"itp:{missing}", "--shape", "small"])
    assert got.exit_code == 1
    assert got.output.count("\n") == 1, got.output  # one line, however long: no traceback
    expected = f"phalanx: {missing}: cannot open: No such file or directory; check the path"
    assert got.output.startswith(expected), got.output
    got = CliRunner().invoke(_app(), ["--trace", f"itp:{bad}", "--shape", "small"])
    assert got.exit_code == 0, got.output
    skipped = [line for line in got.output.splitlines() if line.startswith("phalanx: skipped")]
    assert skipped == [
        f"phalanx: skipped {bad}:3: duration: negative duration: '-5'; fix or remove that row, "
        "or check that the file is a trace of the kind given"
    ], got.output
