"""`phalanx simulate --set` and `--compare` (issue 19), on a small slice of a real trace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from phalanx.sim.cli import simulate
from phalanx.sim.policies import POLICIES, get_policy, with_settings

TRACES = Path(__file__).resolve().parents[3] / "bench" / "traces"
ITP = TRACES / "msr-itp-2021" / "cluster05.csv"


def _app() -> typer.Typer:
    app = typer.Typer()
    app.command()(simulate)
    return app


def test_settings_change_only_the_named_fields() -> None:
    base = get_policy("phalanx")
    got = with_settings(base, {"work_weight": "2", "backfill_depth_per_queue": "3"})
    assert got.core is not None and base.core is not None
    assert (got.core.work_weight, got.core.backfill_depth_per_queue) == (2.0, 3)
    assert got.core.reserve_after_s == base.core.reserve_after_s
    assert with_settings(base, {"reserve_under_share": "false"}).core.reserve_under_share is False  # type: ignore[union-attr]


def test_usage_decay_is_the_simulators_switch_not_a_core_field() -> None:
    base = get_policy("phalanx")
    off = with_settings(base, {"usage_decay": "false", "work_weight": "2"})
    assert (base.usage_decay, off.usage_decay) == (True, False)
    assert off.core is not None and off.core.work_weight == 2.0
    assert with_settings(base, {"work_weight": "2"}).usage_decay is True


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"colour": "1"}, "--set colour: not a setting"),
        ({"work_weight": "abc"}, "--set work_weight=abc: not a number"),
        ({"work_weight": "-1"}, "must be a finite number >= 0"),
        ({"age_weight": "nan"}, "must be a finite number >= 0"),
        ({"backfill_depth": "1.5"}, "must be a whole number"),
        ({"reclaim": "maybe"}, "must be true or false"),
        ({"usage_decay": "off"}, "--set usage_decay=off: must be true or false"),
    ],
)
def test_bad_settings_are_refused_naming_them(settings: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        with_settings(get_policy("phalanx"), settings)


def test_the_pod_baseline_has_no_settings() -> None:
    with pytest.raises(ValueError, match="no core settings"):
        with_settings(POLICIES["pod"], {"work_weight": "1"})


def test_compare_prints_one_table_and_writes_the_plots(tmp_path: Path) -> None:
    out = tmp_path / "cmp.json"
    got = CliRunner().invoke(
        _app(),
        [
            *("--trace", f"itp:{ITP}", "--shape", "small", "--compare", "volcano,phalanx"),
            *("--limit-jobs", "60", "--plots", str(tmp_path / "plots"), "--json", str(out)),
        ],
    )
    assert got.exit_code == 0, got.output
    assert "volcano" in got.output and "phalanx" in got.output
    assert got.output.count("wait mean") == 1  # one table, a column per policy
    summaries = json.loads(out.read_text())
    assert [s["policy"] for s in summaries] == ["volcano", "phalanx"]
    for name in ("compare-waits.png", "compare-utilisation.png", "compare-queue-shares.png"):
        assert (tmp_path / "plots" / name).stat().st_size > 0


def test_an_unknown_policy_in_compare_is_refused() -> None:
    got = CliRunner().invoke(
        _app(), ["--trace", f"itp:{ITP}", "--shape", "small", "--compare", "volcano,slurm"]
    )
    assert got.exit_code == 2
    assert "unknown policy 'slurm'" in got.output


def test_malformed_rows_are_counted_in_the_summary(tmp_path: Path) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text(
        "job_id,submission_time,duration,num_gpu\na,0,60,1\nb,zz,60,1\nc,5,60\nd,9,60,2\n"
    )
    out = tmp_path / "s.json"
    got = CliRunner().invoke(
        _app(),
        ["--trace", f"itp:{trace}", "--shape", "small", "--policy", "volcano", "--json", str(out)],
    )
    assert got.exit_code == 0, got.output
    assert f"skipped {trace}:3: submission_time: not a number: 'zz'" in got.output
    assert f"skipped {trace}:4: expected 4 fields, got 3" in got.output
    summary = json.loads(out.read_text())
    assert summary["skipped_rows"] == {"malformed": 2}
    assert summary["job_count"] == 2
