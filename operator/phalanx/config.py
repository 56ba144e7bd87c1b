"""The operator's one configuration (PRODUCT.md §5), validated at start with clear errors.

Helm values become flags (or `PHALANX_*` environment variables); both end here, in a pydantic
model, so a bad value stops the operator before it touches the cluster, with a message that names
the setting. The scheduling knobs are turned into the core's `Policy` by `to_policy`.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from phalanx.core import Policy, TopologyLevel
from phalanx.core.lifecycle import LifecyclePolicy, MemberFailure

DEFAULT_TOPOLOGY = "spine=network.topology.nvidia.com/spine,leaf=network.topology.nvidia.com/block"
_LABEL_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)


class PeerMeasure(StrEnum):
    """What of the recently started gangs `--reserve-after-peers` takes (`Policy.
    peers_by_slowdown`): their slowdown, scaled by the waiting gang's own limit, or their wait."""

    SLOWDOWN = "slowdown"
    WAIT = "wait"


class ConfigError(ValueError):
    """A bad setting; the message names it."""


class OperatorConfig(BaseModel):
    """Everything `phalanx run` can be told."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    topology_levels: tuple[tuple[str, str], ...] = Field(
        default=(
            ("spine", "network.topology.nvidia.com/spine"),
            ("leaf", "network.topology.nvidia.com/block"),
        ),
        description="(name, node label key) from coarse to fine.",
    )
    fair_share_resource: str = "nvidia.com/gpu"
    scheduler_name: str = Field(default="phalanx", min_length=1, max_length=63)
    namespaces: tuple[str, ...] = ()
    cycle_interval_s: float = Field(default=5.0, gt=0, le=3600)
    debounce_s: float = Field(default=0.2, ge=0, le=10)
    """The longest a change waits for its cycle while more changes keep coming (a burst)."""
    debounce_quiet_s: float = Field(default=0.05, ge=0, le=10)
    """A cycle starts once no change has come for this long (a lone change waits no more)."""
    usage_half_life_s: float = Field(default=7 * 24 * 3600, gt=0)
    backfill: bool = True
    backfill_depth: int = Field(default=100, ge=0, le=100_000)
    reclaim: bool = True
    preemption: bool = True
    # 64, not 32: at 32 the binds in flight, not the API server, set the pace (Little's law: the
    # operator's round trip per bind is longer than a bare loop's); 64 bound 24% more pods/s
    # on the same cluster, 128 no more (bench/README.md, "How many binds in flight").
    bind_concurrency: int = Field(default=64, ge=1, le=1024)
    bind_deadline_s: float = Field(default=5.0, gt=0, le=300)
    eviction_grace_s: int = Field(default=30, ge=0)
    member_failure: Literal["evict", "keep"] = "evict"
    node_lost_seconds: float = Field(default=300.0, gt=0, le=86_400)
    """A bound member whose node is NotReady longer than this is lost (its gang is short of it)."""
    member_failure_backoff_max_seconds: float = Field(default=600.0, ge=0, le=86_400)
    """The longest a gang evicted for `MemberFailed` again and again waits before it is placed
    again (the wait doubles from 10 s with each such eviction)."""
    start_timeout_seconds: float = Field(default=0.0, ge=0, le=7 * 86_400)
    """A running gang one of whose bound members has not started this long after its bind is
    evicted whole as a member failure (an image that cannot be pulled); 0: never."""
    member_failure_limit: int = Field(default=0, ge=0, le=1000)
    """The `MemberFailed` eviction that brings a gang's `memberFailures` to this is its last:
    the gang ends `Failed` (`MemberFailuresExceeded`) and its workload with it; 0: no limit."""
    phantom_grace_seconds: float = Field(default=600.0, ge=0, le=7 * 86_400)
    """How long a PodGroup with `minResources` and no pods keeps its reservation (and its share
    of its queue's demand) once the reservation comes due."""
    pod_condition_refresh_s: float = Field(default=60.0, ge=0, le=3600)
    """Least interval between rewrites of a pending pod's `PodScheduled` message when only its
    numbers drift (a reason that turns is written at the next cycle)."""
    metrics_port: int = Field(default=8080, ge=0, le=65535)
    health_port: int = Field(default=8081, ge=0, le=65535)
    leader_election: bool = False
    lease_name: str = "phalanx-scheduler"
    lease_namespace: str = "kube-system"
    lease_duration_s: float = Field(default=15.0, gt=0)
    renew_deadline_s: float = Field(default=10.0, gt=0)
    retry_period_s: float = Field(default=2.0, gt=0)
    usage_persist_interval_s: float = Field(default=30.0, gt=0)
    status_refresh_s: float = Field(default=5.0, ge=0, le=300)
    """Least interval between writes of a pending gang's drifting figures (position, ETA)."""
    status_refresh_busy_s: float = Field(default=20.0, ge=0, le=600)
    """The same while gangs are binding: binds come first (each refresh is an API write that
    competes with them), so drifting figures wait longer in a burst. Also the longest a gang
    bound whole waits, in a burst, for its `Running` status and `Scheduled` Event."""
    status_quiet_s: float = Field(default=0.5, ge=0, le=60)
    """How long after the last gang's binds end the operator still counts as binding. Gangs
    that arrive one after another (a controller creating pods, gates lifted one by one) leave no
    gang in flight for moments between them; reports written in those moments land in the
    middle of the next gang's binds (measured: 2 more writes per gang, ~12% fewer pods/s)."""

    # -- order and reservations (issue 19): why each default is what it is, in bench/SIM.md
    # ("The shipped policy"); `phalanx simulate --policy phalanx` replays exactly these.
    priority_weight_age: float = Field(default=1.0, ge=0, allow_inf_nan=False)
    """Multifactor weight of a gang's wait (normalised by the longest wait pending)."""
    priority_weight_size: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    """Multifactor weight of a gang's GPUs (positive favours large gangs)."""
    priority_weight_work: float = Field(default=1.0, ge=0, allow_inf_nan=False)
    """Multifactor weight of requested work, GPUs × time limit on a log scale (favours less)."""
    priority_max_age_s: float = Field(default=7 * 24 * 3600.0, ge=0, allow_inf_nan=False)
    """Age as wait / this many seconds, saturating at 1 (Slurm's `PriorityMaxAge`; 0: wait / the
    longest wait pending). An hour of waiting then weighs the same however long the queue is, so
    a burst of new gangs does not devalue the age of the ones already waiting. Seven days, Slurm's
    documented default, is also the fair-share usage half-life: age saturates on the horizon over
    which usage is remembered (bench/SIM.md, tenth and eleventh rounds)."""
    reserve_after_limits: float = Field(default=2.0, ge=0, allow_inf_nan=False)
    """Starvation bound: a gang holds a binding reservation once it has waited this many times
    its time limit (0: off). Twice: bounded slowdown 3, (wait + run) / run ≤ 3 for a gang that
    runs its limit; with the absolute age, once its limit left cluster04's p95 above the greedy
    policy's and twice meets it (bench/SIM.md, rule 2)."""
    reserve_after_s: float = Field(default=24 * 3600.0, ge=0, allow_inf_nan=False)
    """...or once it has waited this long, whichever comes first (0: off; both 0: every gang
    within the depth reserves at once, conservative backfill)."""
    reserve_after_peers: float = Field(default=1.0, ge=0, allow_inf_nan=False)
    """...but no sooner than when its slowdown, (wait + time limit) / time limit, is this many
    times the median slowdown of the gangs (of every queue) that started within
    `reserve_after_peers_window_s` (0: off): a gang of limit L starves after (k × S − 1) × L.
    Starvation is being passed over while the others are served: under overload every gang
    waits, and a reservation for one treated like its peers for its length holds capacity idle
    for no one starved, while a short gang's bound stays short (bench/SIM.md, rule 2 and the
    fourteenth round: cluster03's mean and cluster04's p95 goals met, the others kept).
    `reserve_after_peers_by` "wait": this many times the peers' median wait instead, whatever
    the gang's limit."""
    reserve_after_peers_by: PeerMeasure = PeerMeasure.SLOWDOWN
    """What of the peers `reserve_after_peers` takes: their slowdown (scaled by the gang's own
    limit) or their wait. A gang without a time limit keeps its own bound under "slowdown"."""
    reserve_after_peers_window_s: float = Field(default=86400.0, gt=0, allow_inf_nan=False)
    """How far back those starts are taken from (seconds)."""
    reserve_after_peers_max_s: float = Field(default=7 * 24 * 3600.0, ge=0, allow_inf_nan=False)
    """The longest bound `reserve_after_peers` sets (seconds; 0: no ceiling): past it a gang
    starves whatever its peers wait. Seven days, `priority_max_age_s`: by then a gang's age
    is full and nothing in the order favours it more, so only its reservation can start it
    (uncapped, a 64-GPU gang on cluster03 waited 494.7 h at one cycle grid; capped 191.2 h;
    bench/SIM.md, fourteenth round)."""
    reserve_under_share: bool = True
    """A gang of a queue below its deserved share reserves before its bound."""
    backfill_depth_per_queue: int = Field(default=0, ge=0, le=100_000)
    """Binding reservations per queue per cycle (0: only `backfill_depth` caps them)."""
    start_starving_leaves: float = Field(default=0.5, ge=0, allow_inf_nan=False)
    """A starving gang of at least this many leaves' worth of nodes (and 2 pods) that fits now
    starts before the order: its binding reservation is honoured (0: off). Half a leaf: such a
    gang needs that much of a leaf drained at once, which gangs of less work undo node by node
    the cycle it is free; with the absolute age the whole-leaf threshold cost 0.9 points of
    utilisation on two ITP traces, half a leaf 0.1-0.3 (bench/SIM.md, rule 4)."""
    reserve_least_idle: bool = True
    """Between equally good places for a reservation, take the nodes with the fewest GPUs
    free now (the least capacity held idle until it starts)."""

    @field_validator("topology_levels")
    @classmethod
    def _levels(cls, levels: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
        if not levels:
            raise ValueError("at least one topology level is needed")
        names = [n for n, _ in levels]
        if len(set(names)) != len(names):
            raise ValueError(f"topology level names must be unique, got {names}")
        for name, key in levels:
            if not re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name):
                raise ValueError(f"topology level name {name!r} must be a DNS label")
            if not _LABEL_KEY.fullmatch(key):
                raise ValueError(f"topology level {name!r}: {key!r} is not a node label key")
        return levels

    @model_validator(mode="after")
    def _lease_timings(self) -> OperatorConfig:
        if not self.retry_period_s < self.renew_deadline_s < self.lease_duration_s:
            raise ValueError(
                "leader election needs retry period < renew deadline < lease duration, got "
                f"{self.retry_period_s} / {self.renew_deadline_s} / {self.lease_duration_s}"
            )
        if self.metrics_port and self.metrics_port == self.health_port:
            raise ValueError("metrics and health ports must differ")
        return self

    def to_policy(self) -> Policy:
        return Policy(
            topology_levels=tuple(TopologyLevel(n, k) for n, k in self.topology_levels),
            fair_share_resource=self.fair_share_resource,
            backfill=self.backfill,
            backfill_depth=self.backfill_depth,
            reclaim=self.reclaim,
            preemption=self.preemption,
            usage_half_life=self.usage_half_life_s,
            age_weight=self.priority_weight_age,
            size_weight=self.priority_weight_size,
            work_weight=self.priority_weight_work,
            age_max=self.priority_max_age_s,
            reserve_after_limits=self.reserve_after_limits,
            reserve_after_s=self.reserve_after_s,
            reserve_after_peers=self.reserve_after_peers,
            peers_by_slowdown=self.reserve_after_peers_by is PeerMeasure.SLOWDOWN,
            peer_window_s=self.reserve_after_peers_window_s,
            peer_max_s=self.reserve_after_peers_max_s,
            reserve_under_share=self.reserve_under_share,
            backfill_depth_per_queue=self.backfill_depth_per_queue,
            start_starving_leaves=self.start_starving_leaves,
            reserve_least_idle=self.reserve_least_idle,
            phantom_grace=self.phantom_grace_seconds,
        )

    def to_lifecycle(self) -> LifecyclePolicy:
        return LifecyclePolicy(
            member_failure=MemberFailure(self.member_failure),
            node_lost_seconds=self.node_lost_seconds,
            backoff_base=min(10.0, self.member_failure_backoff_max_seconds),
            backoff_max=self.member_failure_backoff_max_seconds,
            start_timeout=self.start_timeout_seconds,
            member_failure_limit=self.member_failure_limit,
        )


def parse_topology(text: str) -> tuple[tuple[str, str], ...]:
    """`spine=key1,leaf=key2` → (("spine", "key1"), ("leaf", "key2"))."""
    levels = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, key = part.partition("=")
        if not sep:
            raise ConfigError(f"--topology-levels: {part!r} is not NAME=LABEL_KEY")
        levels.append((name.strip(), key.strip()))
    return tuple(levels)


def build_config(**values: object) -> OperatorConfig:
    """Validate settings; raise `ConfigError` with one line per bad setting."""
    try:
        return OperatorConfig.model_validate(values)
    except ValidationError as exc:
        problems = "; ".join(
            f"{_setting('.'.join(str(p) for p in e['loc']))}: {e['msg']}" for e in exc.errors()
        )
        raise ConfigError(f"invalid configuration: {problems}") from exc


_FLAG_FIELDS = {
    "priority_weight_age": "--priority-weight-age",
    "priority_weight_size": "--priority-weight-size",
    "priority_weight_work": "--priority-weight-work",
    "priority_max_age_s": "--priority-max-age",
    "reserve_after_limits": "--reserve-after-limits",
    "reserve_after_s": "--reserve-after",
    "reserve_after_peers": "--reserve-after-peers",
    "reserve_after_peers_by": "--reserve-after-peers-by",
    "reserve_after_peers_window_s": "--reserve-after-peers-window",
    "reserve_after_peers_max_s": "--reserve-after-peers-max",
    "reserve_under_share": "--reserve-under-share",
    "backfill_depth_per_queue": "--backfill-depth-per-queue",
    "start_starving_leaves": "--start-starving-leaves",
    "reserve_least_idle": "--reserve-least-idle",
}
"""The order and reservation settings by the flag that sets them (errors name the flag)."""


def _setting(loc: str) -> str:
    return _FLAG_FIELDS.get(loc, loc) or "config"
