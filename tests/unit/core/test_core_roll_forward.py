"""Roll forward or back: a partly bound gang's recorded placement against the snapshot.

Fabric: 1 spine × 1 leaf × 2 nodes × 8 GPUs (s0-l0-n00, s0-l0-n01). The gang `half` has one
4-GPU member bound on s0-l0-n00 and one recorded for s0-l0-n01, not bound yet.
"""

from __future__ import annotations

from dataclasses import replace

from core_builders import DEFAULT_POLICY, fabric, gang, node, running, snapshot

from phalanx.core import GPU, Member, schedule

NOW = 1000.0


def half(node_name: str = "s0-l0-n01", gpus: int = 4) -> object:
    r = running("half").on("s0-l0-n00", gpu=4).build()
    return replace(r, intended=((Member("half-w", {GPU: gpus}), node_name),))


def test_the_record_fits_and_the_gang_is_rolled_forward() -> None:
    result = schedule(snapshot(fabric(1, 1, 2), running=[half()]), DEFAULT_POLICY, NOW)
    assert result.roll_forward == {"ns/half": {"half-w": "s0-l0-n01"}}
    assert result.roll_back == {}


def test_a_recorded_node_that_is_gone_rolls_it_back() -> None:
    result = schedule(snapshot(fabric(1, 1, 2), running=[half("s0-l0-n07")]), DEFAULT_POLICY, NOW)
    assert result.roll_forward == {}
    assert "s0-l0-n07 is gone" in result.roll_back["ns/half"]


def test_capacity_taken_by_another_schedulers_pod_rolls_it_back() -> None:
    nodes = [fabric(1, 1, 2)[0], node("s0-l0-n01").leaf("s0-l0", "s0").used(gpu=6)]
    result = schedule(snapshot(nodes, running=[half()]), DEFAULT_POLICY, NOW)
    assert "no longer has room (nvidia.com/gpu" in result.roll_back["ns/half"]


def test_a_cordoned_recorded_node_rolls_it_back() -> None:
    nodes = [fabric(1, 1, 2)[0], node("s0-l0-n01").leaf("s0-l0", "s0").cordoned()]
    result = schedule(snapshot(nodes, running=[half()]), DEFAULT_POLICY, NOW)
    assert "not schedulable" in result.roll_back["ns/half"]


def test_its_own_bound_member_is_counted_once_and_room_beside_it_is_enough() -> None:
    """Both members recorded on s0-l0-n00 (8 GPUs): the bound one holds 4, the other fits."""
    result = schedule(snapshot(fabric(1, 1, 2), running=[half("s0-l0-n00")]), DEFAULT_POLICY, NOW)
    assert result.roll_forward == {"ns/half": {"half-w": "s0-l0-n00"}}


def test_rolled_forward_capacity_is_not_given_to_a_pending_gang() -> None:
    """`next` needs 8 GPUs on one node: s0-l0-n01 is promised to `half`, s0-l0-n00 has 4 left."""
    snap = snapshot(fabric(1, 1, 2), running=[half()], pending=[gang("next").pods(1, gpu=8)])
    result = schedule(snap, DEFAULT_POLICY, NOW)
    assert "ns/half" in result.roll_forward
    assert result.bindings == {}


def test_rolled_back_capacity_is_free_for_plans_at_once() -> None:
    """Rolled back (its node gone), its 4 GPUs on s0-l0-n00 come back now: `next`, which needs
    the whole node, is planned to start now, not at `half`'s end."""
    snap = snapshot(
        fabric(1, 1, 2),
        running=[half("gone")],
        pending=[gang("next").pods(2, gpu=8)],
    )
    result = schedule(snap, DEFAULT_POLICY, NOW)
    assert "ns/half" in result.roll_back
    assert result.gangs["ns/next"].estimated_start == NOW
