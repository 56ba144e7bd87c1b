"""Leader election on a coordination.k8s.io Lease (two replicas, one active).

The algorithm of client-go's leaderelection, kept small: the holder renews every retry period;
another replica takes over only after it has seen the same `renewTime` for a whole lease duration
*by its own clock* (never comparing clocks across machines); every write carries the
resourceVersion it read, so two replicas cannot both win a race.

`may_act()` is what the scheduler asks before every bind round and eviction: true only while this
replica holds the lease and its last successful renewal is younger than the renew deadline. A
deposed or partitioned leader therefore stops binding before anyone else may start.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from datetime import UTC, datetime
from typing import Any

from phalanx.config import OperatorConfig
from phalanx.k8s.api import Api, ApiError, drain

log = logging.getLogger("phalanx.leader")


def _micro_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaseElector:
    def __init__(
        self,
        api: Api,
        config: OperatorConfig,
        identity: str,
        partition_after_s: float | None = None,
    ) -> None:
        self.api = api
        self.config = config
        self.identity = identity
        self.partition_after_s = partition_after_s
        """Test-only (PHALANX_FAULT_LEASE_PARTITION_AFTER_S): this long after it first wins the
        lease, every renewal fails as if the API server could not be reached, while the rest of
        the process — watches, the loop, its writes — keeps going. The partitioned-leader test
        shows that it then writes nothing."""
        self._won_at: float | None = None
        self.renewed_at: float | None = None
        self.observed: tuple[str | None, str | None] = (None, None)
        self.observed_at = time.monotonic()
        self.became_leader = asyncio.Event()

    def may_act(self) -> bool:
        return (
            self.renewed_at is not None
            and time.monotonic() - self.renewed_at < self.config.renew_deadline_s
        )

    async def run(self) -> None:
        while True:
            try:
                await self._try_once()
            except Exception:
                log.exception("leader election round failed")
            await asyncio.sleep(self.config.retry_period_s)

    async def _try_once(self) -> None:
        ns, name = self.config.lease_namespace, self.config.lease_name
        cut = self.partition_after_s
        if cut is not None and self._won_at is not None and time.monotonic() - self._won_at > cut:
            raise ApiError(0, "lease renewal unreachable (fault injection: partitioned)")
        coord = self.api.coordination
        try:
            lease: dict[str, Any] = json.loads(
                await drain(coord.read_namespaced_lease(name, ns, _preload_content=False))
            )
        except ApiError as exc:
            if exc.status != 404:
                raise
            await self._write(None)
            return
        spec = lease.get("spec") or {}
        holder, renew = spec.get("holderIdentity"), spec.get("renewTime")
        if (holder, renew) != self.observed:
            self.observed = (holder, renew)
            self.observed_at = time.monotonic()
        if holder == self.identity:
            await self._write(lease)
            return
        if self.renewed_at is not None:
            log.warning("lost the lease to %s; stopping", holder)
            self.renewed_at = None
        expired = time.monotonic() - self.observed_at > self.config.lease_duration_s
        if not holder or expired:
            await self._write(lease)

    async def _write(self, lease: dict[str, Any] | None) -> None:
        ns, name = self.config.lease_namespace, self.config.lease_name
        now = _micro_now()
        spec = dict((lease or {}).get("spec") or {})
        taking_over = spec.get("holderIdentity") != self.identity
        if taking_over:
            spec["acquireTime"] = now
            spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + (1 if lease else 0)
        spec.update(
            holderIdentity=self.identity,
            leaseDurationSeconds=int(self.config.lease_duration_s),
            renewTime=now,
        )
        body: dict[str, Any] = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": name, "namespace": ns},
            "spec": spec,
        }
        started = time.monotonic()
        try:
            if lease is None:
                await drain(
                    self.api.coordination.create_namespaced_lease(ns, body, _preload_content=False)
                )
            else:
                body["metadata"]["resourceVersion"] = lease["metadata"]["resourceVersion"]
                await drain(
                    self.api.coordination.replace_namespaced_lease(
                        name, ns, body, _preload_content=False
                    )
                )
        except ApiError as exc:
            if exc.status in (409, 422):
                return  # someone else wrote first; we read again next round
            raise
        if taking_over:
            log.info("acquired the lease %s/%s as %s", ns, name, self.identity)
            if self._won_at is None:
                self._won_at = time.monotonic()
        self.renewed_at = started
        self.became_leader.set()
