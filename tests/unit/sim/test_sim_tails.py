"""The tail figures of `phalanx.sim.tails`, on hand-made completed jobs."""

from __future__ import annotations

from pathlib import Path

import pytest

from phalanx.sim.metrics import CompletedJob
from phalanx.sim.tails import Tail, class_tails, longest_waits, main

H = 3600.0


def _job(id: str, gpus: int, wait_h: float, run_h: float) -> CompletedJob:
    return CompletedJob(
        id=id, queue="q", gpus=gpus, submit_s=0.0, start_s=wait_h * H, end_s=(wait_h + run_h) * H
    )


def test_class_tails_per_class_with_empty_classes_zero() -> None:
    """Five one-GPU jobs waiting 0, 1, 2, 3, 4 h: mean 2; type-7 p95 at rank 4 × 0.95 = 3.8
    → 3.8 h, p99 at rank 3.96 → 3.96 h; worst 4. One 8-GPU job waiting 10 h is the whole 2-8
    class; 9-32 and 33+ are empty."""
    jobs = [_job(f"a{i}", 1, float(i), 1.0) for i in range(5)] + [_job("b", 8, 10.0, 1.0)]
    got = class_tails(jobs)
    one = got["1"]
    assert (one.count, one.mean_h, one.max_h) == (5, 2.0, 4.0)
    assert one.p95_h == pytest.approx(3.8)
    assert one.p99_h == pytest.approx(3.96)
    assert got["2-8"] == Tail(1, 10.0, 10.0, 10.0, 10.0)
    assert got["9-32"] == got["33+"] == Tail(0, 0.0, 0.0, 0.0, 0.0)


def test_longest_waits_pair_jobs_by_id_with_the_limit_seen() -> None:
    """`w` waited 100 h under the first policy and 9 h under the other, ran 25.9 h: its limit
    is the round-up to 48 h. `v` (50 h) comes second; `x` (5 h) is cut by `top`; `v` did not
    complete under the other policy."""
    mine = [_job("x", 1, 5.0, 0.2), _job("w", 8, 100.0, 25.9), _job("v", 4, 50.0, 0.4)]
    theirs = [_job("w", 8, 9.0, 25.9), _job("x", 1, 1.0, 0.2)]
    got = longest_waits(mine, theirs, 2)
    assert [w.id for w in got] == ["w", "v"]
    assert (got[0].wait_h, got[0].other_wait_h, got[0].limit_h) == (100.0, 9.0, 48.0)
    assert got[0].run_h == pytest.approx(25.9)
    assert (got[1].other_wait_h, got[1].limit_h) == (None, 0.5)


def test_the_command_prints_both_policies_per_class_and_the_longest_waits(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The first 300 jobs of ITP cluster05 on `small`, `phalanx` against `fifo-gang`: one row
    per non-empty class with four figure pairs, then the three longest waits, longest first."""
    trace = Path(__file__).resolve().parents[3] / "bench" / "traces" / "msr-itp-2021"
    args = ["--trace", f"itp:{trace / 'cluster05.csv'}", "--shape", "small"]
    assert main([*args, "--limit-jobs", "300", "--against", "fifo-gang", "--top", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "phalanx against fifo-gang: wait h per size class"
    at = lines.index("the 3 longest waits under phalanx:")
    classes = [line.split()[0] for line in lines[2:at]]
    assert classes and set(classes) <= {"1", "2-8", "9-32", "33+"}
    assert all(len(line.split()) == 6 and line.count("/") == 4 for line in lines[2:at])
    rows = lines[at + 2 :]
    assert len(rows) == 3
    waits = [float(row.split()[3]) for row in rows]
    assert waits == sorted(waits, reverse=True)
