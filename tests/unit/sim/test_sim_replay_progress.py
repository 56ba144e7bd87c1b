"""The instrumented replays' progress line (`replay_cli.ProgressLine`): a line each step, not
each call, with the count, the share and the minutes since the replay began."""

from __future__ import annotations

import io

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
        line(done, 1000)
    assert out.getvalue().splitlines() == [
        "sharefloor: 300 of 1,000 jobs arrived (30%), 2.0 min",
        "sharefloor: 500 of 1,000 jobs arrived (50%), 3.0 min",
        "sharefloor: 990 of 1,000 jobs arrived (99%), 4.0 min",
        "sharefloor: 1,000 of 1,000 jobs arrived (100%), 5.0 min",
    ]


def test_an_empty_replay_says_it_is_done() -> None:
    out = io.StringIO()
    ProgressLine("churn", stream=out, clock=lambda: 0.0)(0, 0)
    assert out.getvalue() == "churn: 0 of 0 jobs arrived (100%), 0.0 min\n"
