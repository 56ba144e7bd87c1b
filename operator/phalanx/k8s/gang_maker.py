"""Makes the managed PodGroups `core.autogang` decided on: one per workload (per LWS group).

The view says which gangs lack their PodGroup (`View.to_make`) and which managed ones must be
made again because their workload changed while they waited (`View.remake`: the spec is
immutable, so delete, then create on a later cycle once the deletion is seen). This module only
carries that out, in background tasks (a create never holds the cycle), through the guarded
writes (leader only, bounded by the bind deadline).

Each PodGroup is owned by its workload (`ownerReferences`, `controller: true`), so the garbage
collector removes it with the workload; `blockOwnerDeletion` stays false, which needs no right
to the workload's finalizers. A create that fails is reported once on a pod of the gang (an
Event naming the error) and tried again on a later cycle; 409 means it exists already (the
watch will show it).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any

from phalanx.core.autogang import MANAGED_LABEL, AutoGang
from phalanx.k8s.api import GROUP, VERSION, ApiError
from phalanx.k8s.guarded import GuardedWrites
from phalanx.k8s.records import GroupRec, PodRec
from phalanx.k8s.tasks import pod_ref, spawn

log = logging.getLogger("phalanx.gangs")

Emit = Callable[[Mapping[str, str], str, str, str], None]


def managed_group_body(namespace: str, auto: AutoGang, pod: PodRec) -> dict[str, Any]:
    """The PodGroup for `auto`, the automatic gang `pod` belongs to."""
    assert auto.owner is not None
    spec: dict[str, Any] = {"minMember": auto.min_member, "queue": auto.queue}
    topology = {
        k: v
        for k, v in (("required", auto.topology_required), ("preferred", auto.topology_preferred))
        if v is not None
    }
    if topology:
        spec["topology"] = topology
    if auto.time_limit is not None:
        spec["timeLimitSeconds"] = auto.time_limit
    if auto.member_failure is not None:
        spec["memberFailure"] = auto.member_failure
    if auto.schedule_timeout is not None:
        spec["scheduleTimeoutSeconds"] = auto.schedule_timeout
    if auto.priority_class or pod.priority_class:
        spec["priorityClassName"] = auto.priority_class or pod.priority_class
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "PodGroup",
        "metadata": {
            "name": auto.name,
            "namespace": namespace,
            "labels": {MANAGED_LABEL: "true"},
            "ownerReferences": [
                {
                    "apiVersion": auto.owner.api_version,
                    "kind": auto.owner.kind,
                    "name": auto.owner.name,
                    "uid": auto.owner.uid,
                    "controller": True,
                    "blockOwnerDeletion": False,
                }
            ],
        },
        "spec": spec,
    }


class GangMaker:
    """Creates and re-creates managed PodGroups, one task per gang key at a time."""

    def __init__(self, api: GuardedWrites, emit: Emit) -> None:
        self.api = api
        self.emit = emit
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.failures: dict[str, str] = {}
        """Gang key → the last error reported for it (reported once per distinct error)."""
        self.made = 0
        self.remade = 0

    def act(
        self,
        to_make: Mapping[str, tuple[AutoGang, PodRec]],
        remake: list[tuple[GroupRec, AutoGang]],
    ) -> None:
        for key, (auto, pod) in to_make.items():
            if key not in self.tasks:
                spawn(self.tasks, key, self._create(key, auto, pod), "create PodGroup")
        for group, auto in remake:
            if group.key not in self.tasks:
                spawn(self.tasks, group.key, self._delete(group, auto), "re-make PodGroup")
        for key in set(self.failures) - set(to_make):
            del self.failures[key]

    async def _create(self, key: str, auto: AutoGang, pod: PodRec) -> None:
        body = managed_group_body(pod.namespace, auto, pod)
        try:
            await self.api.create_group(pod.namespace, body)
        except ApiError as exc:
            if exc.status == 409:
                return  # made already (by us a moment ago, or by hand): the watch shows it
            message = (
                f"cannot create PodGroup {key} for {auto.owner.kind if auto.owner else 'its'} "
                f"{auto.owner.name if auto.owner else ''}: {exc}"
            )
            if self.failures.get(key) != message:
                self.failures[key] = message
                log.warning("%s", message)
                self.emit(
                    pod_ref(pod.namespace, pod.name, pod.uid),
                    "PodGroupNotCreated",
                    message,
                    "Warning",
                )
            return
        self.made += 1
        self.failures.pop(key, None)
        log.info(
            "made PodGroup %s for %s %s (minMember %d, queue %s)",
            key,
            auto.owner.kind if auto.owner else "",
            auto.owner.name if auto.owner else "",
            auto.min_member,
            auto.queue,
        )

    async def _delete(self, group: GroupRec, auto: AutoGang) -> None:
        try:
            await self.api.delete_group(group.namespace, group.name, group.uid)
        except ApiError as exc:
            if exc.status in (404, 409):
                return  # gone already, or another object by now
            log.warning("cannot delete PodGroup %s to make it again: %s", group.key, exc)
            return
        self.remade += 1
        log.info(
            "PodGroup %s deleted to be made again: its workload now says minMember %d "
            "(was %d), queue %s",
            group.key,
            auto.min_member,
            group.min_member,
            auto.queue,
        )
