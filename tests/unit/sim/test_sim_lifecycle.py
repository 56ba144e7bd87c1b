"""The simulator runs the operator's lifecycle: failed members evict their gang whole, which
backs off and runs again; a run past its time limit is evicted; a replay with no failures is
unchanged. Same `core.lifecycle.decide` as the operator."""

from __future__ import annotations

from dataclasses import replace

import pytest
from sim_builders import cluster, job

from phalanx.sim.engine import Replay, simulate
from phalanx.sim.policies import get_policy
from phalanx.sim.queues import single_queue


def test_no_failure_rate_changes_nothing() -> None:
    jobs = [job(f"j{i}", 10.0 * i, 8 * (1 + i % 2), 300.0) for i in range(12)]
    plain = simulate(jobs, cluster(4), single_queue(), get_policy("phalanx"), seed=3)
    zero = simulate(
        jobs, cluster(4), single_queue(), get_policy("phalanx"), seed=3, member_failure_rate=0.0
    )
    assert [(j.id, j.start_s, j.end_s) for j in plain.completed] == [
        (j.id, j.start_s, j.end_s) for j in zero.completed
    ]
    assert zero.member_failures == 0 and "MemberFailed" not in zero.evictions


def test_failing_members_evict_their_gangs_whole_and_every_job_still_finishes() -> None:
    """Half the members fail somewhere in each run: gangs are evicted (MemberFailed), restart
    from zero after their backoff, and in the end every job ran whole once."""
    jobs = [job(f"j{i}", 100.0 * i, 16, 600.0) for i in range(6)]
    result = simulate(
        jobs, cluster(4), single_queue(), get_policy("phalanx"), seed=7, member_failure_rate=0.5
    )
    assert result.unfinished == 0
    assert len(result.completed) == 6
    assert result.member_failures > 0
    assert result.evictions.get("MemberFailed") == result.member_failures
    assert result.lost_gpu_hours > 0
    for done in result.completed:
        assert done.end_s - done.start_s == pytest.approx(600.0), "the finished run ran whole"


def test_a_gang_evicted_for_member_failure_waits_out_its_backoff() -> None:
    """A 2-pod gang whose members fail every run: after its k-th MemberFailed eviction it
    waits 10 × 2^(k−1) s before it starts again, so its gaps between runs grow 10, 20, 40 …"""
    replay = Replay(
        [job("crashy", 0.0, 16, 1000.0)],
        cluster(2),
        single_queue(),
        get_policy("phalanx"),
        seed=1,
        member_failure_rate=0.999,
    )
    starts: list[float] = []
    evicted: list[float] = []
    real_start, real_evict = replay._start, replay._evict

    def start(sim, nodes, t_s):  # type: ignore[no-untyped-def]
        starts.append(t_s)
        real_start(sim, nodes, t_s)
        if len(starts) >= 5:
            replay.member_failure_rate = 0.0  # let it finish after the fifth try

    def evict(sim, reason, t_s):  # type: ignore[no-untyped-def]
        evicted.append(t_s)
        real_evict(sim, reason, t_s)

    replay._start, replay._evict = start, evict  # type: ignore[method-assign]
    result = replay.run()
    assert result.unfinished == 0
    gaps = [round(s - e, 6) for e, s in zip(evicted, starts[1:], strict=False)]
    assert gaps[:4] == [10.0, 20.0, 40.0, 80.0], gaps


def test_a_run_past_its_time_limit_is_evicted_time_limit_exceeded() -> None:
    """The round-up time limits never undercut a run; set one below the run (100 s of a
    300 s run) and the lifecycle evicts it at 100 s and, restarted at once, at 200 s; with the
    limit then lifted it runs 200..500."""
    replay = Replay([job("long", 0.0, 8, 300.0)], cluster(1), single_queue(), get_policy("phalanx"))
    sim = replay.jobs[0]
    sim.time_limit = 100
    sim.gang = replace(sim.gang, time_limit=100.0)
    seen: list[str] = []
    real_evict = replay._evict

    def evict(victim, reason, t_s):  # type: ignore[no-untyped-def]
        seen.append(f"{reason}@{t_s:g}")
        real_evict(victim, reason, t_s)
        if len(seen) == 2:
            victim.time_limit = None
            victim.gang = replace(victim.gang, time_limit=None)

    replay._evict = evict  # type: ignore[method-assign]
    result = replay.run()
    assert seen == ["TimeLimitExceeded@100", "TimeLimitExceeded@200"], seen
    assert [(j.start_s, j.end_s) for j in result.completed] == [(200.0, 500.0)]
