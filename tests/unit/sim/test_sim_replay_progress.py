"""The replays' progress: the engine reports arrivals, then the drain (jobs finished), and the
instrumented replays' line (`replay_cli.ProgressLine`) prints a line each step, not each call,
with the count, the share and the minutes since the replay began."""

from __future__ import annotations

import io

from sim_builders import cluster, job

from phalanx.sim.engine import simulate
from phalanx.sim.policies import get_policy
from phalanx.sim.queues import single_queue
from phalanx.sim.replay_cli import ProgressLine


def test_a_line_each_step_of_the_jobs_arrived_with_count_share_and_minutes() -> None:
    """1,000 jobs, a step of 25%: the engine calls at 100, 300, 500, 510, 990 and 1,000 jobs
    arrived, at minutes 1, 2, 3, 3, 4 and 5 of the replay. 100 is 10% (below 25: nothing); 300 is
    30%, the first line; 500 is 50% (the 50% step: a line), 510 is 51% (still the same step:
    nothing); 990 is 99% (past the 75% step: one line, not one per step skipped), 1,000 is 100%."""
    now = [0.0]
    out = io.StringIO()
    line = ProgressLine("sharefloor", step_pct=25, stream=out, clock=lambda: now[0])
    for minute, done in ((1, 100), (2, 300), (3, 500), (3, 510), (4, 990), (5, 1000)):
        now[0] = minute * 60.0
        line(done, done // 2, 1000)
    assert out.getvalue().splitlines() == [
        "sharefloor: 300 of 1,000 jobs arrived (30%), 150 finished, 2.0 min",
        "sharefloor: 500 of 1,000 jobs arrived (50%), 250 finished, 3.0 min",
        "sharefloor: 990 of 1,000 jobs arrived (99%), 495 finished, 4.0 min",
        "sharefloor: 1,000 of 1,000 jobs arrived (100%), 500 finished, 5.0 min",
    ]


def test_once_all_have_arrived_a_line_each_step_of_the_jobs_finished() -> None:
    """All 1,000 jobs arrived at minute 5 with 500 finished (50%); the drain is then reported by
    jobs finished, the next line at the 75% step: 600 (60%) at minute 20 says nothing, 760 (76%)
    at minute 40 a line, 800 (80%) nothing, 1,000 (100%) at minute 90 the last line. Before, the
    line stopped at the last arrival and a drain of an hour printed nothing."""
    now = [0.0]
    out = io.StringIO()
    line = ProgressLine("sharefloor", step_pct=25, stream=out, clock=lambda: now[0])
    now[0] = 300.0
    line(1000, 500, 1000)
    for minute, finished in ((20, 600), (40, 760), (50, 800), (90, 1000)):
        now[0] = minute * 60.0
        line(1000, finished, 1000)
    assert out.getvalue().splitlines() == [
        "sharefloor: 1,000 of 1,000 jobs arrived (100%), 500 finished, 5.0 min",
        "sharefloor: all arrived; 760 of 1,000 jobs finished (76%), 40.0 min",
        "sharefloor: all arrived; 1,000 of 1,000 jobs finished (100%), 90.0 min",
    ]


def test_an_empty_replay_says_it_is_done() -> None:
    out = io.StringIO()
    ProgressLine("churn", stream=out, clock=lambda: 0.0)(0, 0, 0)
    assert out.getvalue() == "churn: 0 of 0 jobs arrived (100%), 0 finished, 0.0 min\n"


def test_the_replay_reports_the_drain_after_the_last_arrival() -> None:
    """1,200 one-GPU jobs of 100 s on one 8-GPU node, all submitted at 0..1,199 s (one a second):
    they arrive within 20 min, but eight run at a time, so the node needs 1,200 / 8 × 100 s =
    15,000 s to finish them; about 1,000 finish after the last arrival. The engine reports every
    500 arrivals, then, with all 1,200 in, every 500 jobs finished, and once at the end: the
    reports after the last arrival count up to 1,200 finished."""
    calls: list[tuple[int, int, int]] = []
    jobs = [job(f"j{i}", float(i), 1, 100.0) for i in range(1200)]
    simulate(
        jobs,
        cluster(1),
        single_queue(),
        get_policy("volcano"),
        cycle_interval_s=60.0,
        progress=lambda a, f, t: calls.append((a, f, t)),
    )
    assert all(t == 1200 for _, _, t in calls)
    arrivals = [a for a, _, _ in calls if a < 1200]
    assert arrivals and all(a >= 500 for a in arrivals)
    drain = [f for a, f, _ in calls if a == 1200]
    assert drain[-1] == 1200
    assert len(drain) >= 3, f"the drain was reported {len(drain)} times: {calls}"
    assert drain == sorted(drain)
