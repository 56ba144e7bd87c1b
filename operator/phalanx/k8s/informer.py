"""A list-then-watch cache of one resource, kept as compact records: pods and nodes.

Why not kopf for these two: kopf runs every watch event through its whole per-resource machinery
(a logger, a cause, handler selection, index bookkeeping), which is right for objects with
handlers but was the largest share of the operator's CPU during a bind burst — a pod produces
three or four events from creation to Running, and kwok's node heartbeats add a steady stream.
Measured on the `large` shape (bench/e2e_bench.py, py-spy): kopf's per-event processing plus the
JSON decoding of its streams was about a third of the operator's samples, and the operator was
the bottleneck (one core busy). Here an event costs one `orjson.loads` and one record build.

The protocol is the informer's, as in client-go:
- LIST (paged) gives the full state and a resourceVersion; the store is replaced wholesale, and
  every difference from the old store is reported, so a relist after a gap misses nothing;
- WATCH from that resourceVersion (with bookmarks, so a quiet watch still advances it);
- "410 Gone" (the version fell out of the API server's window) means LIST again; any other error
  or a dropped connection means WATCH again after a short backoff.

Everything runs on the event loop: `changed(before, after)` is called for every change (None for
a new or a deleted object) and must be cheap — it decides whether to poke the scheduler.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Generic, TypeVar

import aiohttp
import orjson

from phalanx.k8s.api import ApiError, drain

log = logging.getLogger("phalanx.informer")

R = TypeVar("R")

ListCall = Callable[..., Awaitable[Any]]
"""A kubernetes_asyncio list method (e.g. `CoreV1Api.list_pod_for_all_namespaces`), called with
`_preload_content=False` so we read and decode the raw body ourselves."""

PAGE = 500
WATCH_TIMEOUT_S = 300
BACKOFF_S = (0.2, 5.0)


class Gone(Exception):
    """The watch's resourceVersion is too old: list again."""


class Informer(Generic[R]):
    """The current records of one resource (key → record), kept up to date from the API server.

    `to_record` turns a raw body into the key and the record to keep, or a key and None for an
    object that is not worth keeping (it is then treated as absent, e.g. a finished pod of another
    scheduler).
    """

    def __init__(
        self,
        what: str,
        list_call: ListCall,
        to_record: Callable[[Mapping[str, Any]], tuple[str, R | None]],
        changed: Callable[[R | None, R | None], None],
        *,
        field_selector: str | None = None,
        args: tuple[Any, ...] = (),
    ) -> None:
        self.what = what
        self._list = list_call
        self._to_record = to_record
        self._changed = changed
        self._selector = field_selector
        self._args = args
        self.records: dict[str, R] = {}
        self.synced = asyncio.Event()
        self.version: str | None = None
        self.events = 0
        """Watch events applied (for tests and the log)."""

    def values(self) -> list[R]:
        return list(self.records.values())

    async def run(self) -> None:
        """List and watch until cancelled; never returns on an API error (it retries)."""
        failures = 0
        while True:
            try:
                if self.version is None:
                    await self._relist()
                await self._watch()
                failures = 0
            except asyncio.CancelledError:
                raise
            except Gone:
                log.info("%s: watch version expired; listing again", self.what)
                self.version = None
            except Exception as exc:
                # Whatever went wrong (an API error, a dropped connection, a malformed line), the
                # informer must not die: a dead one would leave the scheduler on a frozen view.
                failures += 1
                delay = min(BACKOFF_S[1], BACKOFF_S[0] * 2 ** min(failures, 8))
                delay *= random.uniform(0.8, 1.2)
                what = exc if isinstance(exc, ApiError) else f"{type(exc).__name__}: {exc}"
                log.warning("%s: %s; again in %.1f s", self.what, what, delay)
                await asyncio.sleep(delay)

    def _kwargs(self, **extra: Any) -> dict[str, Any]:
        kw: dict[str, Any] = {"_preload_content": False, **extra}
        if self._selector:
            kw["field_selector"] = self._selector
        return kw

    async def _relist(self) -> None:
        fresh: dict[str, R] = {}
        token: str | None = None
        version = ""
        while True:
            kw = self._kwargs(limit=PAGE)
            if token:
                kw["_continue"] = token
            page = orjson.loads(await drain(self._list(*self._args, **kw)))
            for body in page.get("items") or ():
                key, rec = self._to_record(body)
                if rec is not None:
                    fresh[key] = rec
            meta = page.get("metadata") or {}
            version = meta.get("resourceVersion") or version
            token = meta.get("continue")
            if not token:
                break
        old, self.records = self.records, fresh
        for key, before in old.items():
            after = fresh.get(key)
            if after != before:
                self._changed(before, after)
        for key, after in fresh.items():
            if key not in old:
                self._changed(None, after)
        self.version = version
        if not self.synced.is_set():
            log.info("%s: %d listed", self.what, len(fresh))
        self.synced.set()

    async def _watch(self) -> None:
        call = self._list(
            *self._args,
            **self._kwargs(
                watch=True,
                resource_version=self.version,
                allow_watch_bookmarks=True,
                timeout_seconds=WATCH_TIMEOUT_S,
                _request_timeout=WATCH_TIMEOUT_S + 30,
            ),
        )
        try:
            resp = await call
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise ApiError(0, f"connection: {exc}") from exc
        try:
            if resp.status == 410:
                raise Gone()
            if not 200 <= resp.status <= 299:
                raise ApiError(resp.status, (await resp.read()).decode(errors="replace")[:300])
            buf = bytearray()
            async for chunk in resp.content.iter_any():
                buf += chunk
                start = 0
                while (end := buf.find(b"\n", start)) >= 0:
                    if end > start:
                        self._apply(orjson.loads(buf[start:end]))
                    start = end + 1
                del buf[:start]
        finally:
            resp.release()

    def _apply(self, event: Mapping[str, Any]) -> None:
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise Gone()
            raise ApiError(int(obj.get("code") or 0), str(obj.get("message")))
        version = (obj.get("metadata") or {}).get("resourceVersion")
        if version:
            self.version = version
        if kind == "BOOKMARK":
            return
        self.events += 1
        key, rec = self._to_record(obj)
        before = self.records.get(key)
        if kind == "DELETED" or rec is None:
            if before is not None:
                del self.records[key]
                self._changed(before, None)
            return
        self.records[key] = rec
        if rec != before:
            self._changed(before, rec)
