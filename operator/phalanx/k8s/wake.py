"""Which watch events are worth a scheduling cycle.

Every cycle rebuilds the view and runs the core (a few hundred milliseconds of CPU on a large
cluster). Poking the loop on every event made it cycle back to back during a bind burst on the
echo of its own writes — each bind's pod update, each status patch, kwok's node heartbeats —
starving the event loop that carries the binds. A cycle can only decide something new when there
is new work (a pod or gang to place, a spec changed) or capacity was freed, so only those events
poke; the loop's timer still runs a cycle every `cycle_interval` whatever happens.

Each function compares the record an event produced with the one the cache (an informer or a
kopf index) held before it.
"""

from __future__ import annotations

import dataclasses

from phalanx.k8s.records import GroupRec, NodeRec, PodRec, QueueRec


def pod_wakes(before: PodRec | None, after: PodRec) -> bool:
    """A pod of ours: new, or changed while unplaced, or finishing / being deleted.

    A bound pod turning Running (or being bound: that is our own write coming back) places
    nothing and frees nothing.
    """
    if before is None:
        return True
    if before == after:
        return False
    return after.node_name is None or after.deleting or after.terminal


def held_pod_released(before: PodRec | None, holds_now: bool) -> bool:
    """Another scheduler's pod stopped holding capacity (finished or deleted): room may appear."""
    return before is not None and not holds_now


def node_wakes(before: NodeRec | None, after: NodeRec) -> bool:
    """Capacity, labels, taints, cordon or readiness changed; a heartbeat alone changes none."""
    return before != after


def group_wakes(before: GroupRec | None, after: GroupRec) -> bool:
    """A PodGroup is new or its spec changed; status patches (ours) are not news."""
    return before is None or dataclasses.replace(before, status=after.status) != after


def queue_wakes(before: QueueRec | None, after: QueueRec) -> bool:
    """A Queue is new or its spec changed; its status (ours, usage included) is not news."""
    if before is None:
        return True
    same_status = dataclasses.replace(
        before, status=after.status, usage=after.usage, usage_updated=after.usage_updated
    )
    return same_status != after
