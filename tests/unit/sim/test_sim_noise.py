"""`bench/sim_noise.py`: each policy is judged against `volcano` replayed at the same cycle
phase, and the medians over the phases are what its report quotes (figures worked by hand)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[3] / "bench"


@pytest.fixture(scope="module")
def noise() -> ModuleType:
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    return importlib.import_module("sim_noise")


def _row(
    name: str,
    phase: float,
    util: float,
    mean: float,
    p95: float,
    largest: float,
    worst_queue: float | None = None,
) -> dict[str, Any]:
    figures = {"util": util, "mean": mean, "p95": p95, "largest": largest,
               "worst_queue": worst_queue}  # fmt: skip
    return {"label": "t", "name": name, "policy": name, "settings": {}, "phase": phase,
            "figures": figures}  # fmt: skip


ROWS = [
    # Phase 0: volcano 10 h mean, Phalanx 7.5 h; phase 15: 20 h against 8 h.
    _row("volcano", 0, 70.0, 10.0, 40.0, 100.0),
    _row("phalanx", 0, 69.8, 7.5, 40.0, 40.0, worst_queue=0.259),
    _row("volcano", 15, 70.2, 20.0, 50.0, 100.0),
    _row("phalanx", 15, 69.2, 8.0, 45.0, 60.0),
    _row("phalanx", 30, 69.0, 8.0, 45.0, 60.0),  # no volcano at 30: not compared
]


def test_each_phase_is_compared_with_volcano_at_the_same_phase(noise: ModuleType) -> None:
    """Phase 0: utilisation 69.8 − 70.0 = −0.2 points, mean 7.5/10 − 1 = −25%, p95 0%, largest
    −60%: every goal met. Phase 15: −1.0 points, mean −60%, p95 −10%, largest −40%."""
    rel = noise.against_volcano(ROWS)["t"]["phalanx"]
    assert set(rel) == {0, 15}
    assert rel[0] == pytest.approx({"util": -0.2, "mean": -0.25, "p95": 0.0, "largest": -0.6})
    assert rel[15] == pytest.approx({"util": -1.0, "mean": -0.6, "p95": -0.1, "largest": -0.4})
    assert noise.met(rel[0]) == {"util": True, "mean": True, "p95": True, "largest": True}
    assert noise.met(rel[15]) == {"util": False, "mean": True, "p95": True, "largest": False}


def test_the_report_quotes_medians_and_how_many_phases_meet_each_goal(noise: ModuleType) -> None:
    """Medians of two phases are their means: utilisation −0.60 points (1 of 2 met), mean
    −42.5% (2/2), p95 −5% (2/2), largest −50% (1/2: −60% met, −40% not). The worst queue is
    shown where it was recorded (25.9% at phase 0), "–" where not."""
    text = "\n".join(noise.markdown(ROWS))
    assert (
        "| **phalanx, median** | 2 phases | | | | | | -0.60 pt (1/2 met) | -42.5% (2/2) | " in text
    )
    assert "-5.0% (2/2) | -50% (1/2) |" in text
    assert "| phalanx | 30 | 69.00% | 8.00 | 45.00 | 60.0 | – | – | – | – | – |" in text
    assert (
        "| phalanx | 0 | 69.80% | 7.50 | 40.00 | 40.0 | 25.9% | -0.20 pt | -25.0% | +0.0% |" in text
    )


def test_lines_an_older_engine_replays_differently_are_reported_apart(noise: ModuleType) -> None:
    """A line of revision 1 that evicted (its eviction count, else run thrown away, else a
    trace of several queues) goes to the earlier engine's tables, compared with that engine's
    `volcano` there, or with today's if the change left `volcano` as it was."""
    evicting = dict(_row("phalanx", 0, 69.0, 5.0, 40.0, 40.0), label="philly")
    kept = dict(_row("volcano", 0, 70.0, 10.0, 40.0, 100.0), label="philly", engine_revision=2)
    assert not noise.current(evicting)
    assert noise.current(kept)
    lost = dict(_row("x", 0, 69.0, 5.0, 40.0, 40.0))
    lost["figures"] = dict(lost["figures"], lost_gpu_h=3.5)
    assert not noise.current(lost)
    assert noise.current(dict(lost, figures=dict(lost["figures"], lost_gpu_h=0.0)))
    assert noise.current(_row("one-queue", 0, 69.0, 5.0, 40.0, 40.0))
    preempting = dict(_row("p", 0, 69.0, 5.0, 40.0, 40.0), settings={"preempt_starving": "2"})
    assert not noise.current(preempting)
    counted = dict(evicting, figures=dict(evicting["figures"], evictions=0))
    assert noise.current(counted)
    text = "\n".join(noise.markdown([evicting, kept]))
    now, _, older = text.partition("Replayed by an earlier engine")
    assert "| volcano | 0 |" in now and "| phalanx | 0 |" not in now
    assert "**philly (earlier engine)**" in older
    # Compared with the yardstick the change left alone: mean 5/10 − 1 = −50%.
    assert "| phalanx | 0 | 69.00% | 5.00 | 40.00 | 40.0 | – | -1.00 pt | -50.0% |" in older


def test_phase_0_is_taken_from_the_bench_replay_when_asked(
    noise: ModuleType, tmp_path: Path
) -> None:
    """`--from-bench`: phase 0 of a named policy is `make bench-sim`'s replay; its line is made
    from that summary (figures in hours and per cent, the eviction count, the engine) and says
    where it came from; a replay of a job slice or another interval is not that replay."""
    import json

    summary = {"gpu_utilization": 0.775, "wait_mean_s": 3600 * 8.94, "wait_p95_s": 3600 * 22.0,
               "largest_gang_wait_max_s": 3600 * 110.0, "queue_below_share_worst_own": 0.39,
               "lost_gpu_hours": 60000.0, "evictions": {"Reclaimed": 9000},
               "core_build": "mypyc", "engine_revision": 2, "cycle_interval_s": 60.0,
               "limit_jobs": None, "wall_s": 668.0}  # fmt: skip
    path = noise.ROOT / "bench" / "results" / f"tmp-{tmp_path.name}.json"
    try:
        path.write_text(json.dumps({"results": {"philly": {"volcano": summary}}}))
        # As the command line gives it: relative to where it runs (the repository here).
        line = noise.from_bench("philly", "volcano", path.relative_to(noise.ROOT))
        assert line is not None and line["phase"] == 0.0 and line["from"].startswith("bench/")
        assert line["figures"]["mean"] == pytest.approx(8.94)
        assert line["figures"]["util"] == pytest.approx(77.5)
        assert line["figures"]["evictions"] == 9000 and line["engine_revision"] == 2
        assert noise.current(line)
        assert noise.from_bench("philly", "phalanx", path) is None
        sliced = {"results": {"philly": {"volcano": dict(summary, limit_jobs=20000)}}}
        path.write_text(json.dumps(sliced))
        assert noise.from_bench("philly", "volcano", path) is None
    finally:
        path.unlink(missing_ok=True)
