"""`phalanx.sim.sharefloor`: a queue served before every other, on a hand-worked trace."""

from __future__ import annotations

from pathlib import Path

import pytest
from sim_builders import cluster, job

from phalanx.sim import engine
from phalanx.sim.policies import get_policy, with_settings
from phalanx.sim.queues import QueueSpec
from phalanx.sim.report import summarize
from phalanx.sim.sharefloor import main, served_first
from phalanx.sim.traces import TraceJob


def _queues() -> list[QueueSpec]:
    return [QueueSpec(name="qa"), QueueSpec(name="qb", priority=3), QueueSpec(name="qc")]


def test_the_named_queue_goes_one_above_every_other_and_nothing_else_changes() -> None:
    first = served_first(_queues(), "qc")
    assert [(q.name, q.priority) for q in first] == [("qa", 0), ("qb", 3), ("qc", 4)]
    assert first[:2] == _queues()[:2]


def test_a_queue_that_is_not_there_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"no queue 'qd'; the trace's queues are: qa, qb, qc"):
        served_first(_queues(), "qd")


def test_the_cli_refuses_an_unknown_queue_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("job_id,submission_time,duration,num_gpu\nj1,0,60,1\n")
    with pytest.raises(SystemExit) as exc:
        main(["--trace", f"itp:{trace}", "--shape", "small", "--queue", "research"])
    assert exc.value.code == 2
    assert "no queue 'research'; the trace's queues are: default" in capsys.readouterr().err


def _trace() -> list[TraceJob]:
    """One 8-GPU node. qb's b0 (8 GPUs) runs 0–1,000; qb's b2 (8 GPUs, 500 s) waits from 50,
    qa's a1 (8 GPUs, 500 s) from 100; qa's z (1 GPU) at 2,000 only stretches the window the
    share figures cover (first to last submit) to 2,000."""
    return [
        job("b0", 0, 8, 1000, "qb"),
        job("b2", 50, 8, 500, "qb"),
        job("a1", 100, 8, 500, "qa"),
        job("z", 2000, 1, 10, "qa"),
    ]


def _below(queues: list[QueueSpec]) -> dict[str, float | None]:
    policy = with_settings(get_policy("volcano"), {"reclaim": "false"})
    result = engine.simulate(_trace(), cluster(1), queues, policy, cycle_interval_s=0)
    shares = summarize(result)["queue_share"]
    return {name: shares[name]["below_fraction"] for name in ("qa", "qb")}


def test_serving_a_queue_first_gives_it_the_capacity_that_frees_first() -> None:
    """From 100 both queues want 8 GPUs: deserved 4 each (equal weights, no guarantees).

    Unchanged: at 1,000, when b0 ends, both hold 0 of 4 and the tie goes by name, so qa's a1
    runs 1,000–1,500 and b2 1,500–2,000. qa is below 90% of its share 100–1,000 (900 s of its
    1,400 s of demand, 100–1,500); qb 1,000–1,500 (500 s of its 2,000 s, 0–2,000).
    qb first: b2 runs 1,000–1,500, a1 1,500–2,000; qb is never below, qa 100–1,500 (1,400 s
    of its 1,900 s, 100–2,000)."""
    unchanged = _below([QueueSpec(name="qa"), QueueSpec(name="qb")])
    first = _below(served_first([QueueSpec(name="qa"), QueueSpec(name="qb")], "qb"))
    assert unchanged == {"qa": pytest.approx(900 / 1400), "qb": pytest.approx(500 / 2000)}
    assert first == {"qa": pytest.approx(1400 / 1900), "qb": 0.0}


def test_the_cli_prints_the_queue_s_figures_and_the_run_s(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One queue, one 1-GPU job of 60 s submitted at 0: it starts at once, so its queue is
    never below its share."""
    trace = tmp_path / "t.csv"
    trace.write_text("job_id,submission_time,duration,num_gpu\nj1,0,60,1\n")
    assert main(["--trace", f"itp:{trace}", "--shape", "small", "--queue", "default"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (
        "default first (phalanx, no --set): 0.0 h of demand, below 90% of its share 0.0% of "
        "it, mean allocated/deserved 1.00"
    )
    assert out[1].startswith("all jobs: mean wait 0.00 h, utilisation ")
    assert out[1].endswith(", worst queue default 0.0%")
