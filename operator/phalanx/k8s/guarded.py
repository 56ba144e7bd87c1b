"""The scheduler's writes, each one guarded: only by the leader, and never longer than a deadline.

Why one wrapper rather than checks at every call site: "a deposed leader writes nothing" and
"no API call can hold the loop" are properties of *every* write — binds, rollbacks, evictions,
status, Events, pod conditions. Put at the seam, no write path can forget them (before, the bind
loop checked leadership and a rollback did not). A refused write raises `ApiError` like any
other failure, so callers handle it the way they already handle a failed call.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Mapping
from typing import Any, Protocol, TypeVar

from phalanx.k8s.api import ApiError, ClusterWrites

T = TypeVar("T")
log = logging.getLogger("phalanx.writes")

NOT_LEADER = -1
"""`ApiError.status` of a write refused because this replica does not hold the lease."""
TIMED_OUT = -2
"""`ApiError.status` of a call that did not answer within its deadline."""


class LeaderGate(Protocol):
    def may_act(self) -> bool: ...


class AlwaysLeader:
    """Leader election off: this replica is the only one."""

    def may_act(self) -> bool:
        return True


class GuardedWrites:
    """`ClusterWrites` that asks `leader` before each write and bounds each call by
    `timeout_s` (the bind deadline: no single call may outlast the bind round it serves)."""

    def __init__(self, api: ClusterWrites, leader: LeaderGate, timeout_s: float) -> None:
        self.api = api
        self.leader = leader
        self.timeout_s = timeout_s
        self.refused = 0
        """Writes refused for want of the lease (tests read it)."""
        self._refused_reported = 0

    async def _write(self, call: Awaitable[T], what: str) -> T:
        if not self.leader.may_act():
            if self.refused == self._refused_reported:
                log.warning("not the leader (lease lost or not held): refusing every write")
            self.refused += 1
            self._refused_reported = self.refused
            if asyncio.iscoroutine(call):
                call.close()  # never started: no "was never awaited" warning
            raise ApiError(NOT_LEADER, f"{what}: not the leader")
        return await self._bounded(call, what)

    async def _bounded(self, call: Awaitable[T], what: str) -> T:
        try:
            async with asyncio.timeout(self.timeout_s):
                return await call
        except TimeoutError as exc:
            raise ApiError(TIMED_OUT, f"{what}: no answer within {self.timeout_s:g}s") from exc

    async def bind(self, namespace: str, pod: str, uid: str, node: str) -> None:
        await self._write(self.api.bind(namespace, pod, uid, node), "bind")

    async def evict(self, namespace: str, pod: str, grace_s: int) -> None:
        await self._write(self.api.evict(namespace, pod, grace_s), "evict")

    async def read_pod(self, namespace: str, pod: str) -> dict[str, Any]:
        return await self._bounded(self.api.read_pod(namespace, pod), "read pod")

    async def delete_pod(
        self, namespace: str, pod: str, uid: str | None = None, grace_s: int = 0
    ) -> None:
        await self._write(self.api.delete_pod(namespace, pod, uid, grace_s), "delete pod")

    async def create_pod(self, namespace: str, body: Mapping[str, Any]) -> None:
        await self._write(self.api.create_pod(namespace, body), "create pod")

    async def patch_group_status(
        self, namespace: str, name: str, status: Mapping[str, Any]
    ) -> None:
        await self._write(self.api.patch_group_status(namespace, name, status), "status")

    async def patch_native_group_status(
        self, namespace: str, name: str, conditions: list[Mapping[str, Any]]
    ) -> None:
        await self._write(
            self.api.patch_native_group_status(namespace, name, conditions), "native status"
        )

    async def patch_queue_status(self, name: str, status: Mapping[str, Any]) -> None:
        await self._write(self.api.patch_queue_status(name, status), "queue status")

    async def create_group(self, namespace: str, body: Mapping[str, Any]) -> None:
        await self._write(self.api.create_group(namespace, body), "create PodGroup")

    async def delete_group(self, namespace: str, name: str, uid: str) -> None:
        await self._write(self.api.delete_group(namespace, name, uid), "delete PodGroup")

    async def patch_workload(
        self, api_version: str, plural: str, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> None:
        await self._write(
            self.api.patch_workload(api_version, plural, namespace, name, patch), f"patch {plural}"
        )

    async def patch_pod_condition(
        self, namespace: str, pod: str, condition: Mapping[str, Any]
    ) -> None:
        await self._write(self.api.patch_pod_condition(namespace, pod, condition), "pod condition")

    async def event(
        self,
        involved: Mapping[str, str],
        reason: str,
        message: str,
        kind_of_event: str = "Normal",
    ) -> None:
        """Best effort, as `Api.event`: a refused or late Event is dropped, never raised."""
        try:
            await self._write(self.api.event(involved, reason, message, kind_of_event), "event")
        except ApiError:
            return
