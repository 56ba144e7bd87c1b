"""`phalanx.sim.verdicts` on a hand-worked trace: the core's verdicts on one job while it
waits, and for how long each held."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sim_builders import cluster, job, starving_at_limit

from phalanx.sim.policies import get_policy, with_settings
from phalanx.sim.queues import QueueSpec
from phalanx.sim.traces import TraceJob
from phalanx.sim.verdicts import kind_of, replay, report, standing, write_slips


def _trace() -> list[TraceJob]:
    """The trace of `test_sim_starved`: qb's b0 and b1 on both nodes (until 1,950 and 3,000),
    its starving b2 (16 GPUs) and qa's a1 (8 GPUs, 100 s) arriving at 1,900."""
    return [
        job("b0", 0, 8, 1950, "qb"),
        job("b1", 0, 8, 3000, "qb"),
        job("b2", 0, 16, 100, "qb"),
        job("a1", 1900, 8, 100, "qa"),
    ]


def _queues() -> list[QueueSpec]:
    return [QueueSpec(name="qa"), QueueSpec(name="qb", reclaimable=False)]


def test_a_jobs_verdicts_and_how_long_each_held() -> None:
    """a1 waits from 1,900 until 3,000, its queue qa holding 0 of its deserved 8 throughout:

    - 1,900–1,950: no GPU free (b0 ends at 1,950): `InsufficientCapacity`;
    - 1,950–3,000: n01 is free, but b2's reservation holds both nodes from 3,600 (b1's 1 h
      limit) and a1 would run until 3,750: `WaitingForReservation`;
    - 3,000: b1 ends and a1 starts.

    Two spans, 50 s and 1,050 s, all of it with qa below 90% of its share."""
    _, verdicts = replay(
        _trace(), cluster(2), _queues(), starving_at_limit(), ["a1"], cycle_interval_s=0
    )
    a1 = verdicts.jobs["a1"]
    assert a1.submit_s == 1900.0 and a1.start_s == 3000.0
    assert [(s.start_s, s.end_s, s.reason) for s in a1.spans] == [
        (1900.0, 1950.0, "InsufficientCapacity"),
        (1950.0, 3000.0, "WaitingForReservation"),
    ]
    assert a1.by_standing_s == {"queue below 90% of its share": 1100.0}
    assert sorted((k.split(":")[0], t) for k, t in a1.by_verdict_s.items()) == [
        ("InsufficientCapacity", 50.0),
        ("WaitingForReservation", 1050.0),
    ]
    assert "reserved for sim/b2" in a1.spans[1].message
    assert "reserved for G" in a1.spans[1].kind
    lines = report("a1", a1, spans=1)
    assert lines[0] == (
        "a1: submitted at 0.5 h, started at 0.8 h; 0.3 h of verdicts, "
        "0 runs evicted (0.0 h of run thrown away)"
    )
    assert (
        "reason:" in lines[4] and "1 longest" in lines[-2] and "WaitingForReservation" in lines[-1]
    )
    # 1,900–1,950: qa is owed its share, so a1 holds a binding reservation behind b2's (from
    # 5,400 = 3,600 + b2's 30 min limit); from 1,950 it fits now but for b2's hold and is only
    # `WaitingForReservation`, which holds none: one slip, b2 planned before it on its nodes.
    assert a1.planned_s == 50.0
    (slip,) = a1.slips
    assert (slip.t_s, slip.was_start_s, slip.now_start_s) == (1950.0, 5400.0, None)
    # qa holds 0 of its 8 (below); qb holds b1's 8 of its 8 (within).
    assert slip.held_before == ["sim/b2 (16, qb within, at 1.0 h)"]
    assert slip.standing == "queue below 90% of its share"
    assert lines[2] == "    its nodes reserved for gangs planned first, its queue: 1 below"


def test_a_job_not_in_the_trace_is_refused_before_the_replay() -> None:
    with pytest.raises(ValueError, match="not in the trace: a2"):
        replay(_trace(), cluster(2), _queues(), starving_at_limit(), ["a1", "a2"])


def test_verdicts_that_differ_only_in_numbers_are_one_kind() -> None:
    one = "needs 8 GPUs; 3 free; expected start in 58m20s, reserved for sim/x-1, sim/y"
    two = "needs 16 GPUs; 0 free; expected start in 2d3h, reserved for sim/z"
    assert kind_of(one) == "needs # GPUs; # free; expected start in T, reserved for G, G"
    assert kind_of(two) == "needs # GPUs; # free; expected start in T, reserved for G"


def test_a_queues_standing_against_its_share() -> None:
    assert standing(8, 10) == "queue below 90% of its share"
    assert standing(9, 10) == "queue within its share"
    assert standing(11, 10) == "queue borrowing beyond its share"
    assert standing(0, 0) == "queue deserves nothing"


def test_a_run_thrown_away_is_recorded_with_its_eviction() -> None:
    """Two nodes, qa and qb guaranteed one each. qb's b1 and b2 (8 GPUs, 1,000 s) start at 0,
    b2 on qa's idle node; qa's a1 arrives at 100 and reclaims it: one of them is evicted at
    100 after 100 s of run, waits while a1 runs (100–150) and starts again at 150. Its wait
    (0 to its last start) is 150 s, of which the first 100 s were a run thrown away, with no
    verdict; the verdicts cover 100–150 only."""
    queues = [
        QueueSpec(name="qa", guarantee={"nvidia.com/gpu": 8}),
        QueueSpec(name="qb", guarantee={"nvidia.com/gpu": 8}),
    ]
    jobs = [job("b1", 0, 8, 1000, "qb"), job("b2", 0, 8, 1000, "qb"), job("a1", 100, 8, 50, "qa")]
    _, verdicts = replay(
        jobs, cluster(2), queues, starving_at_limit(), ["b1", "b2"], cycle_interval_s=0
    )
    (victim,) = [w for w in verdicts.jobs.values() if w.evicted]
    (run,) = victim.evicted
    assert (run.start_s, run.end_s, run.reason) == (0.0, 100.0, "Reclaimed")
    assert (run.for_gang, run.for_gpus, run.for_queue) == ("sim/a1", 8, "qa")
    assert (run.with_gangs, run.with_gpus, run.taken_over) == (1, 8, True)
    assert str(run).endswith(
        "then Reclaimed for sim/a1 (8 GPUs, qa; 1 gangs of 8 GPUs evicted for it; "
        "started on its node)"
    )
    assert victim.start_s == 150.0
    assert sum(victim.by_reason_s.values()) == 50.0
    assert "1 runs evicted (0.0 h of run thrown away)" in report("b", victim, spans=1)[0]


def test_a_reservation_moved_by_a_gang_planned_first_is_a_slip_with_its_cause(
    tmp_path: Path,
) -> None:
    """Two nodes under `phalanx-conservative` (FIFO within a queue, queues below their share
    first) with two binding reservations. qb's b0 (8 GPUs, 3,000 s, limit 1 h) and b1 (8 GPUs,
    5,000 s, limit 2 h) run from 0; qb's b2 (8 GPUs, limit 30 min) waits, its reservation on
    b0's node n00 from 3,600. At 1,000 qa's a1 (8 GPUs, limit 30 min) arrives; qa is below its
    share (qb, not reclaimable, borrows), so a1 is planned first and takes n00 from 3,600, and
    b2 moves behind it on n00, from 5,400: one slip at 1,000 (3,600 → 5,400, same nodes),
    caused by a1 reserved there first. b0 ends at 3,000 and a1 starts on n00; b2's plan comes
    earlier (4,800, a1's limit from 3,000), which is no slip, until a1 ends at 3,100 and b2
    starts. It held a binding reservation 0–3,100, always on n00."""
    queues = [QueueSpec(name="qa"), QueueSpec(name="qb", reclaimable=False)]
    jobs = [
        job("b0", 0, 8, 3000, "qb"),
        job("b1", 0, 8, 5000, "qb"),
        job("b2", 0, 8, 100, "qb"),
        job("a1", 1000, 8, 100, "qa"),
    ]
    policy = with_settings(get_policy("phalanx-conservative"), {"backfill_depth": "2"})
    _, verdicts = replay(jobs, cluster(2), queues, policy, ["b2"], cycle_interval_s=0)
    b2 = verdicts.jobs["b2"]
    assert b2.start_s == 3100.0
    assert (b2.planned_s, b2.replans) == (3100.0, 0)
    (slip,) = b2.slips
    assert (slip.t_s, slip.was_start_s, slip.now_start_s, slip.same_nodes) == (
        1000.0,
        3600.0,
        5400.0,
        True,
    )
    # qb holds b0's and b1's 16 of its deserved 8 (beyond); qa nothing of its 8 (below).
    assert (slip.bound_there, slip.held_before) == ([], ["sim/a1 (8, qa below, at 1.0 h)"])
    assert slip.standing == "queue borrowing beyond its share"
    assert slip.cause == "its nodes reserved for gangs planned first"
    lines = report("b2", b2, spans=5)
    assert lines[1] == (
        "  binding reservation 0.9 h; re-planned onto other nodes 0 times; slipped later or "
        "lost 1 times: 1 its nodes reserved for gangs planned first"
    )
    write_slips(tmp_path / "slips.jsonl", verdicts)
    (line,) = (tmp_path / "slips.jsonl").read_text().splitlines()
    assert json.loads(line) == {
        "job": "b2",
        "t_s": 1000.0,
        "was_start_s": 3600.0,
        "now_start_s": 5400.0,
        "same_nodes": True,
        "bound_there": [],
        "held_before": ["sim/a1 (8, qa below, at 1.0 h)"],
        "standing": "queue borrowing beyond its share",
    }
    assert lines[2] == "    its nodes reserved for gangs planned first, its queue: 1 beyond"
    assert lines[3].endswith(
        "planned start 1.0 h -> 1.5 h (same nodes, its queue beyond); reserved before it "
        "there: sim/a1 (8, qa below, at 1.0 h)"
    )
