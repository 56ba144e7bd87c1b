"""The replay on hand-made traces: exact start times worked out by hand in each docstring."""

from __future__ import annotations

from dataclasses import replace
from itertools import pairwise

import pytest
from sim_builders import cluster, job

from phalanx.sim.engine import simulate
from phalanx.sim.metrics import gpu_seconds_within
from phalanx.sim.policies import PHALANX_BACKFILL_DEPTH, POLICIES, SimPolicy, get_policy
from phalanx.sim.queues import QueueSpec, single_queue
from phalanx.sim.report import summarize

GPU = "nvidia.com/gpu"


def starts(policy: str, jobs: list, nodes: int = 1, queues: list | None = None) -> dict:
    result = simulate(jobs, cluster(nodes), queues or single_queue(), get_policy(policy))
    assert result.unfinished == 0
    return {j.id: (j.start_s, j.end_s) for j in result.completed}


@pytest.mark.parametrize("policy", list(POLICIES))
def test_second_job_starts_exactly_when_the_first_ends(policy: str) -> None:
    """One 8-GPU node; A (8 GPUs, 100 s) at 0, B (8 GPUs, 50 s) at 10: B runs 100..150."""
    got = starts(policy, [job("a", 0, 8, 100), job("b", 10, 8, 50)])
    assert got == {"a": (0, 100), "b": (100, 150)}


@pytest.mark.parametrize("policy", ["fifo-gang", "volcano", "phalanx", "phalanx-conservative"])
def test_gangs_share_out_nodes_whole(policy: str) -> None:
    """Two nodes; a 16-GPU gang at 0 takes both; two 8-GPU jobs queued behind it start when it
    ends, together."""
    got = starts(
        policy,
        [job("big", 0, 16, 300), job("s1", 5, 8, 10), job("s2", 6, 8, 20)],
        nodes=2,
    )
    assert got == {"big": (0, 300), "s1": (300, 310), "s2": (300, 320)}


def _backfill_trace() -> list:
    """Two nodes. A (8 GPUs, runs 5000 s, limit 2 h) holds one node from 0. B (16 GPUs) at 1
    needs both: it gets a reservation at A's limit (7200). C (8 GPUs, 600 s, limit 30 min) at 2
    ends by 1802, before the reservation: it may start at once on the other node. D (8 GPUs,
    5000 s, limit 2 h) at 3 would run past 7200 on a node reserved for B."""
    return [
        job("a", 0, 8, 5000),
        job("b", 1, 16, 100),
        job("c", 2, 8, 600),
        job("d", 3, 8, 5000),
    ]


def test_phalanx_backfills_the_short_job_and_keeps_the_reservation() -> None:
    """`phalanx-conservative` (every gang reserves at once): C backfills at 2; D is held back,
    so B starts the moment A ends (5000) and D after B."""
    got = starts("phalanx-conservative", _backfill_trace(), nodes=2)
    assert got == {
        "a": (0, 5000),
        "c": (2, 602),
        "b": (5000, 5100),
        "d": (5100, 10100),
    }


def test_shipped_phalanx_lets_a_gang_run_beside_a_fresh_reservation() -> None:
    """The shipped `phalanx`: B's starvation bound is its time limit (100 s run → 30 min,
    1800 s). C backfills at 2 as before; when C ends at 602 B has waited 601 s < 1800 s and
    holds nothing binding, so D takes the free node (602 → 5602). B passes its bound at 1801
    and reserves both nodes from 7802 (D's limit; A's is 7200); A ends at 5000, D at 5602, and
    the cycle then finds both free: B runs 5602 → 5702."""
    got = starts("phalanx", _backfill_trace(), nodes=2)
    assert got == {
        "a": (0, 5000),
        "c": (2, 602),
        "d": (602, 5602),
        "b": (5602, 5702),
    }


@pytest.mark.parametrize("policy", ["fifo-gang", "volcano"])
def test_without_reservations_the_big_gang_is_overtaken(policy: str) -> None:
    """Without reservations D takes the free node when C ends (602), so B waits for D too."""
    got = starts(policy, _backfill_trace(), nodes=2)
    assert got == {
        "a": (0, 5000),
        "c": (2, 602),
        "d": (602, 5602),
        "b": (5602, 5702),
    }


def _reclaim_case() -> tuple[list, list[QueueSpec]]:
    """Two nodes, queues qa and qb guaranteed one node each. qb's two jobs (8 GPUs, 1000 s) at 0
    borrow qa's idle node; qa's job (8 GPUs, 50 s) at 100 is owed it back."""
    queues = [
        QueueSpec(name="qa", guarantee={GPU: 8}),
        QueueSpec(name="qb", guarantee={GPU: 8}),
    ]
    jobs = [
        job("b1", 0, 8, 1000, "qb"),
        job("b2", 0, 8, 1000, "qb"),
        job("a1", 100, 8, 50, "qa"),
    ]
    return jobs, queues


@pytest.mark.parametrize("policy", ["volcano", "phalanx"])
def test_reclaim_evicts_a_borrower_and_its_run_restarts(policy: str) -> None:
    """a1 reclaims at once (100..150); one of qb's gangs is evicted at 100 and restarts from
    zero when a1 is done (150..1150): 8 GPUs x 100 s of work lost."""
    jobs, queues = _reclaim_case()
    result = simulate(jobs, cluster(2), queues, get_policy(policy))
    got = {j.id: (j.start_s, j.end_s) for j in result.completed}
    assert got["a1"] == (100, 150)
    restarted = [name for name in ("b1", "b2") if got[name] == (150, 1150)]
    kept = [name for name in ("b1", "b2") if got[name] == (0, 1000)]
    assert len(restarted) == 1 and len(kept) == 1
    assert result.evictions == {"Reclaimed": 1}
    assert result.lost_gpu_hours == pytest.approx(8 * 100 / 3600)


def test_utilisation_without_the_run_an_eviction_threw_away() -> None:
    """The reclaim case's arrival window is 0..100 (the last submit, a1's): both nodes busy
    throughout, 100%; but one of them ran the gang evicted at 100, whose 8 GPUs x 100 s are
    run again later, so the work kept in the window is half of it."""
    jobs, queues = _reclaim_case()
    result = simulate(jobs, cluster(2), queues, get_policy("phalanx"))
    assert result.lost_runs == ((0.0, 100.0, 8),)
    summary = summarize(result)
    assert summary["gpu_utilization"] == pytest.approx(1.0)
    assert summary["gpu_utilization_kept"] == pytest.approx(0.5)


def test_gpu_seconds_of_runs_within_a_window() -> None:
    """Each run counts only where it overlaps the window 100..300: 8 x 50 + 2 x 180 + 0."""
    runs = [(0.0, 150.0, 8), (120.0, 300.0, 2), (400.0, 500.0, 4)]
    assert gpu_seconds_within(runs, 100.0, 300.0) == 8 * 50 + 2 * 180


def test_without_reclaim_the_owner_waits_for_the_borrower() -> None:
    """fifo-gang has one queue and no reclaim: a1 waits for a b-job to end at 1000."""
    jobs, queues = _reclaim_case()
    result = simulate(jobs, cluster(2), queues, get_policy("fifo-gang"))
    got = {j.id: (j.start_s, j.end_s) for j in result.completed}
    assert got == {"b1": (0, 1000), "b2": (0, 1000), "a1": (1000, 1050)}
    assert result.evictions == {}


def test_coalesced_cycles_act_on_the_grid() -> None:
    """With a 60 s cycle interval, B (arriving at 10, after A ended at 5) starts at 60, and C
    (arriving at 61) at 120; capacity is still released at the exact end time."""
    jobs = [job("a", 0, 8, 5), job("b", 10, 8, 30), job("c", 61, 8, 1)]
    result = simulate(jobs, cluster(1), single_queue(), get_policy("phalanx"), cycle_interval_s=60)
    got = {j.id: (j.start_s, j.end_s) for j in result.completed}
    assert got == {"a": (0, 5), "b": (60, 90), "c": (120, 121)}


def test_a_cycle_phase_shifts_the_grid() -> None:
    """The trace above with cycles at 45 + k × 60 s: at 45 A and B are both pending and A
    starts (runs 45..50); B starts on the next point, 105 (runs 105..135); C (arriving at 61)
    finds the node busy at 105 and starts at 165. Phase 0 gave 0, 60 and 120."""
    jobs = [job("a", 0, 8, 5), job("b", 10, 8, 30), job("c", 61, 8, 1)]
    result = simulate(
        jobs,
        cluster(1),
        single_queue(),
        get_policy("phalanx"),
        cycle_interval_s=60,
        cycle_phase_s=45,
    )
    got = {j.id: (j.start_s, j.end_s) for j in result.completed}
    assert got == {"a": (45, 50), "b": (105, 135), "c": (165, 166)}
    assert result.cycle_phase_s == 45


def test_a_cycle_phase_outside_the_interval_is_refused() -> None:
    with pytest.raises(ValueError, match=r"cycle phase must be in \[0, 60\) s, got 60"):
        simulate([job("a", 0, 8, 5)], cluster(1), single_queue(), get_policy("phalanx"),
                 cycle_interval_s=60, cycle_phase_s=60)  # fmt: skip
    with pytest.raises(ValueError, match="a cycle phase needs a cycle interval"):
        simulate([job("a", 0, 8, 5)], cluster(1), single_queue(), get_policy("phalanx"),
                 cycle_interval_s=0, cycle_phase_s=15)  # fmt: skip


def _depth_trace() -> list:
    """Three nodes. A (8 GPUs, 1000 s, limit 30 min) and E (8 GPUs, 20000 s, limit 8 h) start
    at 0 on two of them. B (24 GPUs) at 1 needs all three: reserved at E's limit, 28800. C
    (16 GPUs, limit 30 min) at 2 fits from A's limit (1800) on A's node and the free one,
    well before B's reservation. D (8 GPUs, 10000 s, limit 4 h) at 3 fits the free node now
    and ends before 28800, but runs past 1800 on a node C would be planned on."""
    return [
        job("a", 0, 8, 1000),
        job("e", 0, 8, 20000),
        job("b", 1, 24, 100),
        job("c", 2, 16, 100),
        job("d", 3, 8, 10000),
    ]


def _with_depth(depth: int) -> SimPolicy:
    policy = get_policy("phalanx-conservative")
    assert policy.core is not None
    return replace(policy, core=replace(policy.core, backfill_depth=depth))


def test_simulated_phalanx_reserves_for_the_first_waiting_gang_only() -> None:
    """The `phalanx-conservative` policy (the simulated `phalanx` before issue 19) runs with
    backfill depth 1 (EASY): only B is reserved, so D starts at 3 (it ends before 28800); C
    waits for two free nodes until D ends (10003); B starts when E ends (20000), never
    delayed."""
    conservative = POLICIES["phalanx-conservative"].core
    assert conservative is not None
    assert conservative.backfill_depth == PHALANX_BACKFILL_DEPTH == 1
    result = simulate(
        _depth_trace(), cluster(3), single_queue(), get_policy("phalanx-conservative")
    )
    got = {j.id: (j.start_s, j.end_s) for j in result.completed}
    assert got == {
        "a": (0, 1000),
        "e": (0, 20000),
        "d": (3, 10003),
        "c": (10003, 10103),
        "b": (20000, 20100),
    }


def test_deeper_backfill_reserves_for_the_second_gang_too() -> None:
    """At the product default depth (100) C is reserved from 1800 as well, so D (which would
    overlap it) is held back: C starts when A ends (1000), D when C ends (1100), B at 20000."""
    result = simulate(_depth_trace(), cluster(3), single_queue(), _with_depth(100))
    got = {j.id: (j.start_s, j.end_s) for j in result.completed}
    assert got == {
        "a": (0, 1000),
        "e": (0, 20000),
        "c": (1000, 1100),
        "d": (1100, 11100),
        "b": (20000, 20100),
    }


def test_each_cycle_sees_the_last_cycles_binding_reservations() -> None:
    """`Snapshot.kept` (for `Policy.keep_reservations`): the replay hands each core cycle the
    gangs the cycle before it gave a binding reservation, each with the time of the first cycle
    of its unbroken run of them. The trace of `test_sim_verdicts`: qb's b0 and b1 hold both
    nodes, its b2 (16 GPUs) starves and holds a binding reservation until it starts; the first
    cycle sees none."""
    from phalanx.core import CycleResult, Snapshot
    from phalanx.sim import engine

    seen: list[tuple[float, dict[str, float], set[str]]] = []

    class Watching(engine.Replay):
        def _snapshot(self, t_s: float) -> Snapshot:
            snap = super()._snapshot(t_s)
            seen.append((-1.0, dict(snap.kept), set()))
            return snap

        def _core_cycle(self, t_s: float) -> CycleResult | None:
            result = super()._core_cycle(t_s)
            if result is not None:
                seen[-1] = (t_s, seen[-1][1], set(result.reservations))
            return result

    jobs = [
        job("b0", 0, 8, 1950, "qb"),
        job("b1", 0, 8, 3000, "qb"),
        job("b2", 0, 16, 100, "qb"),
        job("a1", 1900, 8, 100, "qa"),
    ]
    queues = [QueueSpec(name="qa"), QueueSpec(name="qb", reclaimable=False)]
    policy = replace(
        get_policy("phalanx"),
        core=replace(get_policy("phalanx").core, reserve_after_limits=1.0, keep_reservations=True),
    )
    Watching(jobs, cluster(2), queues, policy, cycle_interval_s=60.0).run()
    assert seen[0][1] == {}
    assert any(made for _, _, made in seen), "no cycle made a binding reservation"
    since: dict[str, float] = {}
    for (t_s, _, made), (_, kept, _) in pairwise(seen):
        since = {gid: since.get(gid, t_s) for gid in made}
        assert kept == since
