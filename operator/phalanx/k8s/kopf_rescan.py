"""A workload kind whose CRD is installed while the operator runs is watched within seconds.

kopf serves a kind once the API server's discovery (`/apis`) lists it: it reads discovery at
start, and again for a group each time a CRD of that group changes (its watch on CRDs). The API
server publishes a new CRD in discovery a moment after the CRD's own events, so all of them can
come first. Walked on the dev cluster: the PyTorchJob CRD applied while the operator ran; kopf
logged "Unresolved resources cannot be served" for `pytorchjobs` three times within 250 ms of it
(created, names accepted, established) and never looked again, and the pods of every PyTorchJob
waited `OwnerNotFound` ("PyTorchJob … is not found: the pod waits for it") until the operator
was restarted — as a platform team installing the Training Operator after Phalanx would see.
With this rescan, the RayCluster CRD applied at 16:33:33.1 (kopf's three reads at .145, .369 and
.837 all without it) was watched at 16:33:35.1, the next rescan, and its pods ganged 2 s later.

So every `INTERVAL_S`, each group of the watched workload kinds (`workload_records.WATCHED`)
with a kind kopf does not serve yet is read from discovery again, by kopf's own rescan of a group
(what a CRD event runs: `observation.process_discovered_resource_event`). That is a private kopf
function, hence the guard: if this kopf has no such function or it refuses the call, one warning
says so and kinds installed later are served after a restart, as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable, Iterator
from typing import Any

log = logging.getLogger("phalanx.kopf")

INTERVAL_S = 15.0
"""How often unserved kinds are looked for: a CRD installed now is served within this (plus the
API server's discovery lag), and a cluster without them costs one discovery read of each of their
groups per interval."""


KOPF_OBSERVATION = "kopf._core.reactor.observation"
"""kopf's logger of rescans: each says "Unresolved resources cannot be served" for every kind not
installed, which every interval would repeat for kinds a cluster never installs."""


@contextlib.contextmanager
def _quiet(name: str) -> Iterator[None]:
    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def unserved_groups(wanted: Iterable[tuple[str, str]], served: Iterable[Any]) -> list[str]:
    """The groups of the (group, plural) kinds in `wanted` that `served` (kopf's resources,
    each with `.group` and `.plural`) does not hold, sorted."""
    have = {(r.group, r.plural) for r in served}
    return sorted({group for group, plural in wanted if (group, plural) not in have})


def _served(group: str, plural: str, insights: Any) -> bool:
    return any(r.group == group and r.plural == plural for r in insights.indexed_resources)


async def rescan_unserved(
    wanted: Iterable[tuple[str, str]],
    registry: Any,
    settings: Any,
    insights: Any,
    interval_s: float = INTERVAL_S,
) -> None:
    """Run until cancelled: every `interval_s`, kopf's rescan of each group with a kind in
    `wanted` that `insights.indexed_resources` lacks."""
    try:
        from kopf._core.reactor.observation import process_discovered_resource_event
    except ImportError as exc:
        log.warning(
            "kopf has no rescan to call (%s): workload kinds installed after start are watched "
            "after a restart",
            exc,
        )
        return
    wanted = list(wanted)
    await insights.ready_resources.wait()
    warned = False
    while True:
        await asyncio.sleep(interval_s)
        for group in unserved_groups(wanted, insights.indexed_resources):
            missing = [(g, p) for g, p in wanted if g == group and not _served(g, p, insights)]
            # What kopf reads of a CRD event: the group (it rescans the whole group).
            event: Any = {"type": "MODIFIED", "object": {"spec": {"group": group}}}
            try:
                with _quiet(KOPF_OBSERVATION):
                    await process_discovered_resource_event(
                        raw_event=event, settings=settings, registry=registry, insights=insights
                    )
            except TypeError as exc:
                log.warning(
                    "kopf's rescan refused the call (%s): workload kinds installed after start "
                    "are watched after a restart",
                    exc,
                )
                return
            except Exception as exc:  # an API error: tried again next interval
                # Said once (then at debug): a rescan that keeps failing must not be silent.
                (log.debug if warned else log.warning)(
                    "rescanning %s for kinds installed after start: %s: %s",
                    group,
                    type(exc).__name__,
                    exc,
                )
                warned = True
                continue
            now = [p for g, p in missing if _served(g, p, insights)]
            if now:
                log.info("watching %s.%s now (installed after start)", ",".join(now), group)
