"""Members of gangs that already run (extras that came late, replacements under
`memberFailure: keep`) and gangs backing off: what the cycle does with them.

Fabric: 1 spine × 2 leaves × 2 nodes × 8 GPUs (s0-l0-n00, s0-l0-n01, s0-l1-n00, s0-l1-n01),
`now` = 1000.
"""

from __future__ import annotations

from core_builders import DEFAULT_POLICY, fabric, gang, queue, running, snapshot

from phalanx.core import Reason, schedule

NOW = 1000.0


def test_a_running_gangs_late_member_is_placed_beside_it() -> None:
    """el runs 1 pod on s0-l0-n00 (8 GPUs); its second pod arrives later and goes to the same
    leaf (s0-l0-n01), not to the other one."""
    snap = snapshot(fabric(1, 2, 2), running=[running("el").on("s0-l0-n00").waiting(1)])
    result = schedule(snap, DEFAULT_POLICY, NOW)
    assert result.extra_bindings == {"ns/el": {"el-w000": "s0-l0-n01"}}
    assert result.bindings == {}


def test_a_late_member_waits_when_nothing_fits_and_nothing_is_rolled_back() -> None:
    """Every node is full: the waiting pod stays waiting; the gang keeps running untouched."""
    snap = snapshot(
        fabric(1, 1, 2),
        running=[running("el").on("s0-l0-n00").on("s0-l0-n01").waiting(1)],
    )
    result = schedule(snap, DEFAULT_POLICY, NOW)
    assert result.extra_bindings == {}
    assert result.evictions == ()
    assert result.extras_waiting == {
        "ns/el": "needs 8 GPUs on one node; the most free on a node it may use is 0"
    }


def test_a_required_leaf_keeps_replacements_under_it() -> None:
    """el requires one leaf and runs on s0-l0-n00; s0-l0-n01 is full (another gang), so its
    replacement may not go to s0-l1 and waits."""
    snap = snapshot(
        fabric(1, 2, 2),
        running=[
            running("el").on("s0-l0-n00").waiting(1).required("leaf"),
            running("other").on("s0-l0-n01"),
        ],
    )
    result = schedule(snap, DEFAULT_POLICY, NOW)
    assert result.extra_bindings == {}
    # s0-l1's nodes have 8 free each, but the gang may not leave its leaf.
    assert result.extras_waiting == {
        "ns/el": "needs 8 GPUs on one node; the most free on a node it may use is 0"
    }


def test_a_required_leaf_keeps_the_next_wave_under_one_leaf_when_none_runs() -> None:
    """el requires one leaf; its first members all succeeded, so none is bound, and 3 more
    (a Job of 6 completions, 3 at a time) wait. s0-l0-n00 is full (another gang): s0-l0 fits 1
    of them, s0-l1 both its nodes' worth, 2. The wave goes under s0-l1, the leaf where most of it
    fits, and the third waits for that leaf, not for any node. Walked on the demo cluster: the
    second wave of such a Job was bound across two leaves, one member per free node."""
    snap = snapshot(
        fabric(1, 2, 2),
        running=[running("el").waiting(3).required("leaf"), running("other").on("s0-l0-n00")],
    )
    result = schedule(snap, DEFAULT_POLICY, NOW)
    assert result.extra_bindings == {"ns/el": {"el-w000": "s0-l1-n00", "el-w001": "s0-l1-n01"}}
    assert result.extras_waiting == {
        "ns/el": "needs 8 GPUs on one node; the most free on a node it may use is 0"
    }


def test_a_required_spine_wave_goes_under_the_spine_where_it_all_fits() -> None:
    """The same at the spine level: el requires one spine, none of it is bound, 4 members
    wait. Spine s0 (2 leaves × 2 nodes) has 3 free nodes (s0-l0-n00 is taken), s1 all 4: the
    wave goes under s1, over both its leaves (the level required is the spine, not the leaf)."""
    snap = snapshot(
        fabric(2, 2, 2),
        running=[running("el").waiting(4).required("spine"), running("other").on("s0-l0-n00")],
    )
    result = schedule(snap, DEFAULT_POLICY, NOW)
    assert result.extra_bindings == {
        "ns/el": {
            "el-w000": "s1-l0-n00",
            "el-w001": "s1-l0-n01",
            "el-w002": "s1-l1-n00",
            "el-w003": "s1-l1-n01",
        }
    }
    assert result.extras_waiting == {}


def test_a_wave_of_mixed_members_is_counted_member_by_member_in_each_leaf() -> None:
    """el requires one leaf, none bound; an 8-GPU member and a 4-GPU one wait. s0-l0 has one
    free node, s0-l0-n01: the 8-GPU member fits there and the 4-GPU one then fits nowhere (1 of
    2). On s0-l1, s0-l1-n00 has 4 GPUs free (another gang holds 4) and s0-l1-n01 8: the 8-GPU
    member skips n00 for n01, and the 4-GPU one fits on n00 (2 of 2), so s0-l1 takes the wave.
    The count of the 4-GPU member starts again from the leaf's first node: resumed from where
    the 8-GPU one fitted, as for a member of the same shape, it would miss n00, count s0-l1 at
    1 like s0-l0, and the wave would go to s0-l0, where its second member cannot fit."""
    snap = snapshot(
        fabric(1, 2, 2),
        running=[
            running("el").waiting(1, gpu=8).waiting(1, gpu=4).required("leaf"),
            running("other").on("s0-l0-n00"),
            running("half").on("s0-l1-n00", gpu=4),
        ],
    )
    result = schedule(snap, DEFAULT_POLICY, NOW)
    assert result.extra_bindings == {"ns/el": {"el-w000": "s0-l1-n01", "el-w001": "s0-l1-n00"}}
    assert result.extras_waiting == {}


def test_a_running_gangs_waiting_members_take_their_turn_among_the_pending_gangs() -> None:
    """One free node (s0-l0-n01). el, created at t=100, runs and has a member waiting; `next`
    (one pod) was created at t=500: el's member comes first in the queue's order (older) and
    takes the node. Created at t=50, `next` comes first and takes it; el's member waits.
    Walked when every running gang's members came after every pending gang: a Job of 5
    completions, 2 at a time, ran 2 pods, and its next ones waited for the reservation of a gang
    planned after a new Job of the same size, which started at once."""
    el = running("el").created(100.0).on("s0-l0-n00").waiting(1)
    snap = snapshot(fabric(1, 1, 2), running=[el], pending=[gang("next").created(500.0).pods(1)])
    result = schedule(snap, DEFAULT_POLICY, NOW)
    assert result.extra_bindings == {"ns/el": {"el-w000": "s0-l0-n01"}}
    assert result.bindings == {}
    snap = snapshot(fabric(1, 1, 2), running=[el], pending=[gang("next").created(50.0).pods(1)])
    result = schedule(snap, DEFAULT_POLICY, NOW)
    assert result.bindings == {"ns/next": {"next-000": "s0-l0-n01"}}
    assert result.extra_bindings == {}


def test_extras_count_in_their_queues_allocation() -> None:
    snap = snapshot(fabric(1, 1, 2), running=[running("el").on("s0-l0-n00").waiting(1)])
    result = schedule(snap, DEFAULT_POLICY, NOW)
    assert result.queues["default"].allocated["nvidia.com/gpu"] == 16


def test_a_gang_backing_off_is_not_placed_and_says_until_when() -> None:
    """Backoff ends at t=1040: at t=1000 it waits 40 s with its ETA there, though it fits."""
    snap = snapshot(fabric(1, 1, 2), pending=[gang("crashy").pods(1).not_before(1040.0)])
    result = schedule(snap, DEFAULT_POLICY, NOW)
    assert result.bindings == {}
    d = result.gangs["ns/crashy"]
    assert d.reason is Reason.BACKING_OFF
    assert d.estimated_start == 1040.0
    assert "40s" in d.message
    later = schedule(snap, DEFAULT_POLICY, 1041.0)
    assert later.bindings == {"ns/crashy": {"crashy-000": "s0-l0-n00"}}


def test_a_finished_gangs_members_still_bound_are_charged_but_not_a_running_gang() -> None:
    """A PyTorchJob failed by one worker keeps its other pods running (its Training Operator's
    `cleanPodPolicy: None`): those 8 GPUs are its queue's allocation, but the queue runs one
    gang, not two."""
    snap = snapshot(
        fabric(1, 1, 2),
        running=[running("live").on("s0-l0-n00"), running("failed").on("s0-l0-n01").over()],
    )
    q = schedule(snap, DEFAULT_POLICY, NOW).queues["default"]
    assert q.allocated["nvidia.com/gpu"] == 16
    assert q.running_gangs == 1


def test_a_late_member_past_its_queues_limit_waits_and_says_so() -> None:
    """Queue `capped` may hold 8 GPUs and el holds 8 on s0-l0-n00: its second pod, though
    s0-l0-n01 is free, waits, naming the limit."""
    snap = snapshot(
        fabric(1, 1, 2),
        queues=[queue("capped").limit(gpu=8)],
        running=[running("el").queue("capped").on("s0-l0-n00").waiting(1)],
    )
    result = schedule(snap, DEFAULT_POLICY, NOW)
    assert result.extra_bindings == {}
    assert result.extras_waiting == {
        "ns/el": "its queue capped holds 8 of its limit of 8 nvidia.com/gpu; this member "
        "needs 8 more"
    }


def test_a_late_member_that_fits_says_nothing() -> None:
    snap = snapshot(fabric(1, 2, 2), running=[running("el").on("s0-l0-n00").waiting(1)])
    assert schedule(snap, DEFAULT_POLICY, NOW).extras_waiting == {}
