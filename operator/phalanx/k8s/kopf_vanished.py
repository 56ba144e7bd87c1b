"""A watched kind whose CRD is deleted while the operator runs does not stop the operator.

kopf watches each kind it serves in a stream that reconnects for ever; a stream that fails with
anything but "too many requests" ends the operator ("Multidimensional multitasker has failed").
When a CRD is deleted, its objects go first, then the kind: kopf's watch of it reconnects, the
API server answers 404, and that 404 reaches kopf's orchestrator before kopf's own observation
of the CRD's deletion has stopped the watch. Walked on the dev cluster: `kubectl delete crd
mpijobs.kubeflow.org` (as uninstalling the Training Operator does) while the operator ran — the
operator exited 2 s later with `APINotFoundError: 404 page not found`: binds in flight cut off,
and outside a Deployment nothing started it again.

So kopf's stream (`kopf._cogs.clients.watching.infinite_watch`, which its queueing calls through
the module) is wrapped: a 404 is said once and the stream waits `RETRY_S` and reconnects, until
kopf stops it (its observation of the deletion) or the kind is served again (the CRD applied
again: the stream goes on as after any reconnect). It is a private kopf function, hence the
guard: if this kopf has none of that shape, one warning says so and nothing is wrapped.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import AsyncIterator
from typing import Any

log = logging.getLogger("phalanx.kopf")

RETRY_S = 5.0
"""How often a vanished kind is tried again until kopf stops watching it: one 404 per interval."""
PARAMETERS = ("settings", "resource", "namespace", "operator_paused")
"""The keyword parameters of kopf's `infinite_watch` the wrapper passes on."""
MARK = "_phalanx_tolerates_vanished"


def tolerant(original: Any, not_found: type[BaseException], retry_s: float = RETRY_S) -> Any:
    """`original` (kopf's `infinite_watch`), reconnecting after a 404 instead of failing."""

    async def infinite_watch(**kwargs: Any) -> AsyncIterator[Any]:
        said = False
        while True:
            try:
                async for event in original(**kwargs):
                    said = False
                    yield event
                return
            except not_found as exc:
                if not said:
                    log.warning(
                        "%s is not served any more (its CRD deleted?): %s; not watched until it "
                        "is served again",
                        kwargs.get("resource"),
                        exc,
                    )
                    said = True
            await asyncio.sleep(retry_s)

    setattr(infinite_watch, MARK, True)
    return infinite_watch


def tolerate_vanished_kinds() -> bool:
    """Wrap kopf's watch stream (once); False, with one warning, when this kopf has none."""
    try:
        from kopf._cogs.clients import errors, watching
    except ImportError as exc:
        log.warning(
            "kopf's watch stream is not where it was (%s): a CRD deleted while the operator runs "
            "stops it",
            exc,
        )
        return False
    original = getattr(watching, "infinite_watch", None)
    if original is None or getattr(original, MARK, False):
        return original is not None
    found = set(inspect.signature(original).parameters)
    if not set(PARAMETERS) <= found:
        log.warning(
            "kopf's watch stream takes %s, not %s: a CRD deleted while the operator runs stops it",
            sorted(found),
            list(PARAMETERS),
        )
        return False
    watching.infinite_watch = tolerant(original, errors.APINotFoundError)
    return True
