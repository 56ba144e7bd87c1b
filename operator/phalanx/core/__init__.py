"""The pure scheduling core of Phalanx: snapshot + policy + now in, cycle result out.

No Kubernetes, no asyncio, no clock, no I/O (an import-linter contract enforces it): the operator,
the simulator and the benchmarks all call `schedule` the same way. `decay_usage`, `accrue_usage`
and `fair_share_factor` are exported because the operator keeps decayed usage in Queue status
between cycles.
"""

from phalanx.core.cycle import schedule
from phalanx.core.fairshare import accrue_usage, decay_usage, fair_share_factor
from phalanx.core.model import (
    DEFAULT_TOPOLOGY_LEVELS,
    BareEviction,
    CycleResult,
    Eviction,
    GangDecision,
    MatchExpression,
    Member,
    Node,
    NodeSelectorTerm,
    PendingDetail,
    PendingGang,
    Placement,
    Policy,
    Queue,
    QueueStatus,
    Reservation,
    RunningGang,
    RunningMember,
    Snapshot,
    Taint,
    Toleration,
    TopologyLevel,
    WorkloadCap,
)
from phalanx.core.reasons import EvictionReason, Reason, format_duration
from phalanx.core.resources import CPU, GPU, MEMORY, PODS

__all__ = [
    "CPU",
    "DEFAULT_TOPOLOGY_LEVELS",
    "GPU",
    "MEMORY",
    "PODS",
    "BareEviction",
    "CycleResult",
    "Eviction",
    "EvictionReason",
    "GangDecision",
    "MatchExpression",
    "Member",
    "Node",
    "NodeSelectorTerm",
    "PendingDetail",
    "PendingGang",
    "Placement",
    "Policy",
    "Queue",
    "QueueStatus",
    "Reason",
    "Reservation",
    "RunningGang",
    "RunningMember",
    "Snapshot",
    "Taint",
    "Toleration",
    "TopologyLevel",
    "WorkloadCap",
    "accrue_usage",
    "decay_usage",
    "fair_share_factor",
    "format_duration",
    "schedule",
]
