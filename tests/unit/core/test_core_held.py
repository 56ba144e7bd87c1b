"""A gang whose workload its user holds (`PendingGang.held`: a Job suspended by `spec.suspend`)
waits outside the order, as Slurm's held job (`JobHeldUser`) is not ranked.

Two 8-GPU nodes under one leaf; queue `default`. One cycle at `NOW`.
"""

from __future__ import annotations

from core_builders import fabric, gang, queue, running, snapshot

from phalanx.core import Policy, Reason, schedule

NOW = 10_000.0
HELD = "its Job sweep is suspended (spec.suspend): it makes no pods until resumed"


def test_a_held_gang_has_no_position_and_the_gang_behind_it_moves_up() -> None:
    """`r` runs on both nodes until NOW + 540 (its limit). `sweep` (minMember 2, no pod left,
    created 600 s ago) and `big` (2 × 8 GPUs, limit 600 s, created 60 s ago) wait. Unheld,
    `sweep` is first by age (position 1) and `big` second. Held: `sweep` says so after its
    count and has no position or ETA; `big` is position 1, starting at NOW + 540."""
    held = gang("sweep").min(2).created(NOW - 600)
    big = gang("big").pods(2).created(NOW - 60).time_limit(600)
    run = [running("r").on("s0-l0-n00").on("s0-l0-n01").started(NOW - 60).time_limit(600)]
    nodes, queues = fabric(1, 1, 2), [queue("default")]

    before = schedule(snapshot(nodes, queues, run, [held, big]), Policy(), NOW)
    assert before.gangs["ns/sweep"].queue_position == 1
    assert before.gangs["ns/big"].queue_position == 2

    after = schedule(snapshot(nodes, queues, run, [held.held(HELD), big]), Policy(), NOW)
    sweep = after.gangs["ns/sweep"]
    assert sweep.reason is Reason.WAITING_FOR_PODS
    assert sweep.message == f"0 of 2 pods exist; {HELD}"
    assert (sweep.queue_position, sweep.estimated_start) == (None, None)
    assert after.gangs["ns/big"].queue_position == 1
    assert after.gangs["ns/big"].estimated_start == NOW + 540


def test_a_held_gang_still_counts_among_its_queues_pending_gangs() -> None:
    """The same cycle: `sweep` held and `big` waiting are both `Pending`, so the queue's
    `pendingGangs` is 2, as `kubectl get gang` lists them, though only `big` is ranked; `r`
    is its one running gang."""
    held = gang("sweep").min(2).created(NOW - 600).held(HELD)
    big = gang("big").pods(2).created(NOW - 60).time_limit(600)
    run = [running("r").on("s0-l0-n00").on("s0-l0-n01").started(NOW - 60).time_limit(600)]
    result = schedule(
        snapshot(fabric(1, 1, 2), [queue("default")], run, [held, big]), Policy(), NOW
    )
    status = result.queues["default"]
    assert (status.pending_gangs, status.running_gangs) == (2, 1)
