"""Per-cycle working records: the snapshot's gangs and queues plus what the cycle learns.

Kept apart from the public model so the model stays a plain, frozen description of the world and
these can be mutable, slotted and index-based for the hot path.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from phalanx.core.model import Member, PendingGang, Queue, RunningGang
from phalanx.core.placement import Shape


@dataclass(slots=True, init=False)
class RunState:
    """A running gang: per-node capacity it holds (by node index) and its fair-share amount."""

    gang: RunningGang
    nodes: list[tuple[int, list[int]]]
    fair: int
    evicted: bool

    # Written out (init=False): mypyc compiles it, the generated one runs interpreted (CORE.md).
    def __init__(
        self,
        gang: RunningGang,
        nodes: list[tuple[int, list[int]]],
        fair: int,
        evicted: bool = False,
    ) -> None:
        self.gang = gang
        self.nodes = nodes
        self.fair = fair
        self.evicted = evicted

    @property
    def end(self) -> float:
        """When its time limit ends (inf without one), or when it yields its capacity to a
        reservation if it started speculatively and that comes first."""
        limit = self.gang.time_limit
        end = math.inf if limit is None else self.gang.start_time + limit
        y = self.gang.yield_by
        return end if y is None or y >= end else y


@dataclass(slots=True)
class QueueState:
    """A queue during the cycle. `alloc` counts running + bound now + promised to reclaimers."""

    name: str
    queue: Queue
    invalid: str = ""
    alloc: list[int] = field(default_factory=list)
    alloc_fair: int = 0
    deserved: int = 0
    limit: list[int] | None = None
    demand: int = 0
    fair_share: float = 1.0
    running: int = 0
    pending: int = 0
    #: Gangs its users hold (`PendingGang.held`): outside the order, yet still pending in it, so
    #: `status.pendingGangs` counts them as `kubectl get gang` shows them (phase `Pending`).
    held: int = 0

    @property
    def over_share(self) -> bool:
        """Whether it holds more than it deserves (so it is borrowing)."""
        return self.alloc_fair > self.deserved


@dataclass(slots=True, init=False)
class GangWork:
    """A valid pending gang: its grouped members and everything ordering and placement need."""

    gang: PendingGang
    queue: QueueState
    shapes: list[Shape]
    extras: list[tuple[Member, Shape]]
    gpus: int
    fair: int
    total: list[int]
    duration: float
    required_level: int | None
    preferred_level: int | None
    waiting_for_pods: bool
    position: int
    phantom: bool
    never_fits: bool

    # Written out (init=False): mypyc compiles it, the generated one runs interpreted (CORE.md).
    def __init__(
        self,
        gang: PendingGang,
        queue: QueueState,
        shapes: list[Shape],
        extras: list[tuple[Member, Shape]],
        gpus: int,
        fair: int,
        total: list[int],
        duration: float,
        required_level: int | None,
        preferred_level: int | None,
        waiting_for_pods: bool,
        position: int = 0,
        phantom: bool = False,
    ) -> None:
        self.gang = gang
        self.queue = queue
        self.shapes = shapes
        self.extras = extras
        self.gpus = gpus
        self.fair = fair
        self.total = total
        self.duration = duration
        self.required_level = required_level
        self.preferred_level = preferred_level
        self.waiting_for_pods = waiting_for_pods
        self.position = position
        self.phantom = phantom
        """Planned from `minResources` stand-ins (no pods yet, grace not over)."""
        self.never_fits = False
        """The walk found that nothing this cluster has could ever hold it: ranked nowhere."""


@dataclass(slots=True)
class RunningExtras:
    """Waiting members of a gang that already runs, ready for `place_extras`.

    `nodes` are the node indices its bound members are on (extras go there first, then to the
    same leaves, then within its required domain); `queue` is None when its queue is gone (its
    extras are then charged to no one, as the gang itself is not).
    """

    gang_id: str
    queue: QueueState | None
    extras: list[tuple[Member, Shape]]
    required_level: int | None
    nodes: list[int]
    end: float
    order_as: PendingGang
    """What orders its members among its queue's pending gangs (the running gang's priority
    and creation time; `Walk.run`)."""
    fair: int
    """Fair-share units its waiting members ask (for its place in the order by work)."""
