"""Only events that can let a cycle decide something new poke the scheduling loop."""

from __future__ import annotations

import dataclasses

from phalanx.k8s.records import group_record, node_record, pod_record, queue_record
from phalanx.k8s.wake import group_wakes, held_pod_released, node_wakes, pod_wakes, queue_wakes
from tests.unit.k8s.test_records_and_view import group, node, pod


def test_a_pod_of_ours_wakes_when_new_unplaced_finishing_or_deleted_not_when_bound_or_running() -> (
    None
):
    pending = pod_record(pod("a", group="g"))
    assert pod_wakes(None, pending), "a new pod is new work"
    assert not pod_wakes(pending, pending), "an unchanged record (a resync) is not news"
    ungated = dataclasses.replace(pending, gated=True)
    assert pod_wakes(ungated, pending), "a gate lifted on an unplaced pod is new work"
    bound = pod_record(pod("a", group="g", node_name="n1"))
    assert not pod_wakes(pending, bound), "our own bind coming back places nothing"
    running = pod_record(pod("a", group="g", node_name="n1", phase="Running"))
    assert not pod_wakes(bound, running)
    failed = pod_record(pod("a", group="g", node_name="n1", phase="Failed"))
    assert pod_wakes(running, failed), "a finished pod frees capacity"
    deleting = dataclasses.replace(running, deleting=True)
    assert pod_wakes(running, deleting)


def test_another_schedulers_pod_wakes_only_when_it_stops_holding_capacity() -> None:
    held = pod_record(pod("x", node_name="n1", scheduler="default-scheduler", phase="Running"))
    assert held_pod_released(held, holds_now=False)
    assert not held_pod_released(held, holds_now=True)
    assert not held_pod_released(None, holds_now=False)


def test_a_node_heartbeat_is_not_news_but_capacity_labels_and_cordons_are() -> None:
    before = node_record(node("n1"))
    assert not node_wakes(before, node_record(node("n1")))
    assert node_wakes(before, node_record(node("n1", gpus=4)))
    assert node_wakes(before, node_record(node("n1", labels={"leaf": "l2"})))
    assert node_wakes(None, before)
    cordoned = node("n1")
    cordoned["spec"]["unschedulable"] = True
    assert node_wakes(before, node_record(cordoned))


def test_our_status_patches_on_groups_and_queues_are_not_news_spec_changes_are() -> None:
    g = group_record(group("g", 2))
    with_status = group("g", 2)
    with_status["status"] = {"phase": "Running", "bound": 2}
    assert not group_wakes(g, group_record(with_status))
    assert group_wakes(g, group_record(group("g", 2, queue="other")))
    assert group_wakes(None, g)

    q = queue_record({"metadata": {"name": "a"}, "spec": {"weight": 1}})
    used = queue_record(
        {
            "metadata": {"name": "a"},
            "spec": {"weight": 1},
            "status": {"usage": 1234.5, "usageUpdatedAt": "2026-11-30T06:00:00Z"},
        }
    )
    assert not queue_wakes(q, used)
    assert queue_wakes(q, queue_record({"metadata": {"name": "a"}, "spec": {"weight": 3}}))
    assert queue_wakes(None, q)
