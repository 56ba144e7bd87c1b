"""Background tasks tracked by key: how the adapter runs a gang's writes without waiting for them.

Every per-gang task (a bind, a rollback, an eviction, a status write) is tracked under the gang's
uid, so "is something under way for this gang?" is a dictionary lookup, and a task that ends —
however it ends — leaves the dictionary.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

log = logging.getLogger("phalanx.scheduler")


def spawn(
    tracked: dict[str, asyncio.Task[None]],
    key: str,
    work: Coroutine[Any, Any, None],
    what: str,
    then: Callable[[bool], None] | None = None,
) -> None:
    """Run `work` as a task tracked under `key` in `tracked` until it ends; log a failure.
    `then(failed)` runs when it has ended."""

    def done(task: asyncio.Task[None]) -> None:
        if tracked.get(key) is task:
            tracked.pop(key, None)
        failed = not task.cancelled() and task.exception() is not None
        if failed:
            log.error("%s of gang %s failed", what, key, exc_info=task.exception())
        if then is not None:
            then(failed)

    tracked[key] = task = asyncio.create_task(work, name=f"{what} {key}")
    task.add_done_callback(done)


async def limited(slots: asyncio.Semaphore, work: Coroutine[Any, Any, None]) -> None:
    """`work`, once one of `slots` is free."""
    async with slots:
        await work


def pod_ref(namespace: str, name: str, uid: str) -> dict[str, str]:
    return {"apiVersion": "v1", "kind": "Pod", "name": name, "namespace": namespace, "uid": uid}
