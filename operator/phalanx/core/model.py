"""The types the core takes and returns: snapshot, policy, cycle result.

They are frozen slotted dataclasses rather than pydantic models: the adapter and the simulator build
thousands of them per cycle, and plain dataclasses cost nothing to construct and nothing to read.
Validation of *values* (negative quantities, unknown levels, zero weights) happens in the cycle
and turns into a typed reason on the gang concerned, never into an exception, because one bad
object must not stop scheduling for everybody else.

Quantities are integers: cpu in millicores, memory in bytes, GPUs and pods as counts, extended
resources as the API counts them. Times are float seconds since the epoch (`now` is an argument of
the cycle; the core never reads a clock).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from phalanx.core.reasons import EvictionReason, Reason
from phalanx.core.resources import GPU, ResourceList

# ---------------------------------------------------------------------------------------------
# Snapshot


@dataclass(frozen=True, slots=True)
class Taint:
    """A node taint. `NoSchedule` and `NoExecute` keep pods off unless tolerated."""

    key: str
    value: str = ""
    effect: str = "NoSchedule"


@dataclass(frozen=True, slots=True)
class Toleration:
    """A pod toleration, with Kubernetes semantics.

    `operator` is `Equal` or `Exists`; an empty `key` with `Exists` tolerates every taint; an empty
    `effect` matches every effect.
    """

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""


@dataclass(frozen=True, slots=True)
class MatchExpression:
    """One node-label requirement: `In`, `NotIn`, `Exists`, `DoesNotExist`, `Gt`, `Lt`."""

    key: str
    operator: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """Expressions that must all hold (a term of required node affinity)."""

    match_expressions: tuple[MatchExpression, ...] = ()


@dataclass(frozen=True, slots=True)
class Node:
    """A node as the scheduler sees it.

    `used` holds the requests of pods on this node that are *not* members of a running gang listed
    in the snapshot (pods bound by other schedulers, daemon sets, pods still terminating after their
    gang left the snapshot). Running gang members are added by the core from `RunningGang.members`,
    so an eviction decided in the cycle knows exactly what it frees. GPUs come from allocatable
    `nvidia.com/gpu`, else from the label `nvidia.com/gpu.count`.
    """

    name: str
    allocatable: ResourceList
    used: ResourceList = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False


@dataclass(frozen=True, slots=True)
class Member:
    """A pod of a pending gang: what it requests and where it may go.

    `affinity` holds the terms of required node affinity (any term may match; an empty tuple means
    no constraint).
    """

    pod: str
    requests: ResourceList
    node_selector: Mapping[str, str] = field(default_factory=dict)
    affinity: tuple[NodeSelectorTerm, ...] = ()
    tolerations: tuple[Toleration, ...] = ()


@dataclass(frozen=True, slots=True)
class RunningMember:
    """A bound pod of a running gang."""

    pod: str
    node: str
    requests: ResourceList


@dataclass(frozen=True, slots=True)
class RunningGang:
    """A gang that holds capacity now.

    `time_limit` (seconds from `start_time`) is what backfill plans with; `None` means it may run
    forever, so its capacity never shows up in any reservation. `protected` is set by the adapter
    when a PodDisruptionBudget forbids evicting it now: reclaim and preemption take it only when
    no unprotected victims would do (a budget orders victims, never vetoes them). `evicting` marks
    a gang whose eviction was decided earlier and whose pods are terminating: its capacity is
    counted as used now and free from `now` on in plans, it is not charged to its queue, and it is
    never chosen as a victim again (so a waiting reclaimer does not evict twice).
    """

    id: str
    queue: str
    members: tuple[RunningMember, ...]
    priority: int = 0
    start_time: float = 0.0
    time_limit: float | None = None
    protected: bool = False
    evicting: bool = False
    waiting: tuple[Member, ...] = ()
    """Its pods not bound yet (beyond `minMember`, or replacements of failed members under
    `memberFailure: keep`): placed where they fit after the cycle's walk, one by one, under its
    required topology domain, never a reason to move or roll back the gang."""
    topology_required: str | None = None
    intended: tuple[tuple[Member, str], ...] = ()
    """A partly bound gang's members not bound yet, each with the node its decision record
    names: the cycle rolls the gang forward (`CycleResult.roll_forward`) when they all still fit
    there, and back (`CycleResult.roll_back`) otherwise."""
    yield_by: float | None = None
    """A speculative start (`Policy.speculate`): from this time on its capacity is held for a
    reservation, so plans count it free from then, and a gang whose start is due on it then
    evicts it (`EvictionReason.RESERVATION_DUE`). None: it runs to its end or time limit."""
    creation_time: float | None = None
    """When its PodGroup was created (None: unknown). With its `start_time` this is the wait it
    had before it started, which `Policy.preempt_starving` weighs (a gang that waited long is
    not taken for one that waited less, relative to their time limits)."""
    over: bool = False
    """Its gang is over (`Succeeded`, `Failed`) but these members are still bound
    (`LifecycleDecision.lingering`): they hold capacity, charged to its queue, and may be taken
    as victims like any; the queue's `runningGangs` does not count it."""


@dataclass(frozen=True, slots=True)
class BareEviction:
    """Members the gang's last eviction deleted that had no controller (bare pods): nothing makes
    them again (PRODUCT.md §4), so a gang waiting for them waits until someone applies them again.

    `reason` is the eviction's (`Reclaimed`, `Preempted`, …), `since` when it was marked;
    `failed`: its bare members that failed and still exist (a `MemberFailed` eviction's cause),
    which have to be deleted before they can be applied again."""

    pods: int
    reason: str
    since: float
    failed: int = 0


@dataclass(frozen=True, slots=True)
class WorkloadCap:
    """The one workload that makes a hand-written PodGroup's pods, and the most pods it runs at
    once (a Job: the lesser of its parallelism and completions). Fewer than the gang needs, and
    its `WaitingForPods` would otherwise read as if the rest were coming: Volcano's users meet
    a `minAvailable` above a Job's parallelism as a gang that waits for ever, saying only 2/4."""

    kind: str
    name: str
    pods: int


@dataclass(frozen=True, slots=True)
class PendingGang:
    """A PodGroup waiting to be scheduled.

    `id` is "namespace/name". `members` are the pods that exist; the first `min_member` of them (in
    pod-id order) must be placed together, the rest are placed when they fit. `min_resources`, when
    the pods do not exist yet, lets the gang get a queue position and an estimated start.
    """

    id: str
    min_member: int
    members: tuple[Member, ...] = ()
    queue: str = "default"
    namespace: str = ""
    priority: int = 0
    creation_time: float = 0.0
    topology_required: str | None = None
    topology_preferred: str | None = None
    time_limit: float | None = None
    min_resources: ResourceList | None = None
    not_before: float | None = None
    """Not placed before this time (a `MemberFailed` backoff); it keeps its queue position."""
    priority_class: str | None = None
    """The PriorityClass its priority comes from (the PodGroup's, else its pods'), checked
    against its queue's `priority_classes`."""
    invalid: str = ""
    """A problem the adapter found reading it (a malformed quantity, a bad field): the gang
    waits `Invalid` with this message, naming the field and the value."""
    due_since: float | None = None
    """When its reservation first came due while its pods did not exist (`minResources` only):
    it keeps the reservation `Policy.phantom_grace` seconds from then, no longer."""
    queue_source: str = ""
    """Where its queue's name came from, when not its own PodGroup spec (an automatic gang: "label
    phalanx.dev/queue of Job ns/x"): a queue that does not exist says which label to fix."""
    pods_note: str = ""
    """Why some of its pods do not exist yet, as its workload tells (a Job's pod-failure
    back-off): `WaitingForPods` says it after the count, so a gang waiting for pods its
    controller holds back says for how long."""
    workload: WorkloadCap | None = None
    """The single workload making its pods (hand-written PodGroups only), whose size the
    `WaitingForPods` message compares with what the gang needs."""
    bare_evicted: BareEviction | None = None
    """Its last eviction deleted bare pods (no controller) and it has not started since: its
    `WaitingForPods` says that nothing makes them again and what to do, instead of a count that
    reads as if they were on their way."""
    held: str = ""
    """Its workload is held by its user (a Job suspended by `spec.suspend`, as Kueue holds one
    it has not admitted): why, in the adapter's words. It makes no pods until released, so the
    gang waits `WaitingForPods` saying so, outside the order — no queue position, no plan, no
    reservation — as Slurm's held job (`JobHeldUser`) is not ranked: the gangs behind it move
    up (walked: a suspended Job's gang stayed first in its queue, the giant behind it said
    position 2)."""

    @property
    def ns(self) -> str:
        """Namespace, from the field or else from the id."""
        return self.namespace or self.id.partition("/")[0]


@dataclass(frozen=True, slots=True)
class Queue:
    """A fair-share queue (PRODUCT.md §3). `usage` is the decayed GPU-seconds the operator keeps.

    `namespaces` empty means every namespace may submit.
    """

    name: str
    weight: int = 1
    guarantee: ResourceList = field(default_factory=dict)
    limit: ResourceList | None = None
    reclaimable: bool = True
    namespaces: tuple[str, ...] = ()
    priority: int = 0
    usage: float = 0.0
    default_time_limit: float | None = None
    max_time_limit: float | None = None
    priority_classes: tuple[str, ...] | None = None
    """PriorityClass names its gangs may use; None: any class below the system classes."""
    invalid: str = ""
    """A problem the adapter found reading its spec (field and value): the queue is not used."""


SYSTEM_PRIORITY = 1_000_000_000
"""PriorityClass values from here up are Kubernetes' system classes (`system-node-critical`…)."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Everything one cycle decides from."""

    nodes: tuple[Node, ...]
    queues: tuple[Queue, ...]
    running: tuple[RunningGang, ...] = ()
    pending: tuple[PendingGang, ...] = ()
    kept: Mapping[str, float] = field(default_factory=dict)
    """Gang id → since when it has held a binding reservation, cycle after cycle, for the gangs
    that held one at the last cycle (`CycleResult.reservations`), for
    `Policy.keep_reservations`; empty after a restart."""


# ---------------------------------------------------------------------------------------------
# Policy


@dataclass(frozen=True, slots=True)
class TopologyLevel:
    """A topology level: its name (used in PodGroup `topology`) and the node label holding it."""

    name: str
    label: str


DEFAULT_TOPOLOGY_LEVELS: tuple[TopologyLevel, ...] = (
    TopologyLevel("spine", "network.topology.nvidia.com/spine"),
    TopologyLevel("leaf", "network.topology.nvidia.com/block"),
)

SEVEN_DAYS = 7 * 24 * 3600.0


@dataclass(frozen=True, slots=True)
class Policy:
    """Operator configuration the core depends on (PRODUCT.md §5).

    `topology_levels` go from coarse to fine; the finest is what placement calls a leaf. Gang order
    within a queue is by priority, then `age_weight × age + size_weight × size` (both normalised to
    [0, 1] over the pending gangs), then creation time: the default (1, 0) is FIFO.
    """

    topology_levels: tuple[TopologyLevel, ...] = DEFAULT_TOPOLOGY_LEVELS
    fair_share_resource: str = GPU
    backfill: bool = True
    backfill_depth: int = 100
    reclaim: bool = True
    preemption: bool = True
    age_weight: float = 1.0
    size_weight: float = 0.0
    usage_half_life: float = SEVEN_DAYS
    phantom_grace: float = 600.0
    """Seconds a gang with `minResources` and no pods keeps its reservation (and its share of its
    queue's demand) after the reservation came due (`--phantom-grace-seconds`)."""
    # -- reservation and order policy (issue 19); these defaults are the neutral ones (FIFO,
    # every gang within the depth holds a binding reservation); the shipped defaults are the
    # operator's (`phalanx.config`), which the simulator's `phalanx` policy uses too.
    work_weight: float = 0.0
    """Multifactor weight of requested work (GPUs × time limit, log scale; favours less)."""
    reserve_after_limits: float = 0.0
    """Starvation bound, relative: a gang holds a binding reservation only once it has waited
    this many times its time limit (0: this part off). See `ordering.starving`."""
    reserve_after_s: float = 0.0
    """Starvation bound, absolute cap in seconds (0: off). Both 0: every gang reserves."""
    reserve_after_peers: float = 0.0
    """Starvation bound, relative to the other gangs: a gang starves no sooner than this many
    times the median wait of the gangs that started within the last `peer_window_s` (their
    wait before they started; 0: off). Starvation is being passed over while others are
    served; under overload every job waits, and a gang that has waited what the others wait
    is not starving, so its reservation would only hold capacity idle for a gang treated like
    its peers (issue 19, thirteenth round; the shipped default takes the peers' slowdown,
    `peers_by_slowdown`). Over every queue: a queue kept below its share
    waits long as a whole, and its own waits would lengthen its gangs' bounds (rule 3,
    `reserve_under_share`, is what serves it)."""
    peers_per_queue: bool = False
    """`reserve_after_peers` over the starts of the gang's own queue only (for measuring: on
    Philly its VC below its share waited long as a whole, and its 64-GPU gang's bound grew with
    it, 28 → 75 h)."""
    peer_window_s: float = 86400.0
    """How far back `reserve_after_peers` looks for the starts whose waits it takes."""
    peers_by_slowdown: bool = False
    """`reserve_after_peers` on the peers' bounded slowdown instead of their wait: a gang of time
    limit L starves once it has waited (k × S − 1) × L, S the median of (wait + limit) / limit
    over the gangs that started within `peer_window_s` (their own limits; gangs without one are
    not counted, and a gang without one keeps its own bound). Slowdown is the HPC measure of
    fairness across job lengths: a gang is passed over when it is treated k times worse than
    its peers for its length, so under overload a long gang's bound grows with its length and a
    short gang's stays short. The peers' wait alone (thirteenth round) gave a 64-GPU gang of an
    hour's limit on Philly the bound of the day-long waits around it (28 → 75 h); by slowdown its
    bound stays a multiple of its hour (fourteenth round, shipped with k = 1)."""
    peer_max_s: float = 0.0
    """The longest bound `reserve_after_peers` sets, in seconds (0: no cap): past it a gang
    starves whatever its peers wait (`--reserve-after-peers-max`)."""
    peers_below_leaves: float = 0.0
    """`reserve_after_peers` only for gangs of fewer pods than this many leaves' worth of
    nodes (and 2; 0: every gang): a gang within a leaf is passed over only relative to its
    peers, while a gang that needs a leaf drained never starts under greedy placement however
    long the others wait, so its bound stays its own (for measuring; 0.5 is the size whose
    reservation the shipped default honours)."""
    reserve_under_share: bool = False
    """A gang of a queue below its deserved share reserves before its bound."""
    backfill_depth_per_queue: int = 0
    """Binding reservations per queue per cycle (0: no cap beyond `backfill_depth`)."""
    cap_min_members: int = 0
    """`backfill_depth_per_queue` caps and counts only gangs of at least this many members
    (0 or 1: every gang). A gang of one pod drains one node for its reservation; a gang of many
    drains many, and several such reservations at once are conservative backfill, which the
    HPC literature finds costs the mean wait against one at a time (EASY) (for measuring)."""
    reserve_min_members: int = 0
    """Only gangs of at least this many members (pods placed at once) hold binding
    reservations (0 or 1: any gang)."""
    owed_small: bool = False
    """Gangs below `reserve_min_members` still hold binding reservations when their queue is
    owed its deserved share (`reserve_under_share`): size decides whether a gang needs
    capacity gathered to escape starvation, not whether its queue is owed (for measuring)."""
    reserve_per_member: bool = False
    """Divide the starvation bound by the gang's members (pods placed at once)."""
    reserve_by_deadline: bool = False
    """Plan the binding reservations of starving gangs in the order of the moment each one
    starved (creation + its starvation bound: earliest deadline first) rather than oldest
    first."""
    start_starving_leaves: float = 0.0
    """A starving gang of at least this many leaves' worth of nodes (pods placed at once ≥
    this × the nodes under the largest leaf, and at least 2) that fits now starts before the
    walk, ahead of the order: its binding reservation is honoured (0: off; the walk starts it
    in its turn)."""
    honour_within_share: bool = True
    """Honour a reservation (`start_starving_leaves`) only when the gang keeps its queue within
    its deserved share (off: the first replays of the rule; a borrowing gang started first was
    reclaimed and started first again, cycle after cycle)."""
    honour_below_share: bool = False
    """Also honour it when its queue holds less than its deserved share before the gang
    starts, though the gang takes it beyond: reclaim never takes a victim queue below its
    deserved share, so a gang started from below cannot be reclaimed back at once (the
    livelock `honour_within_share` prevents needs a gang that can). For gangs larger than
    their queue's share, which `honour_within_share` never honours (off: measuring)."""
    honour_below_share_oversize: bool = False
    """`honour_below_share` only for a gang larger than its queue's whole deserved share: the
    gangs no rule within the share can ever honour (off: measuring)."""
    owed_uncapped: bool = False
    """Gangs owed their queue's share (`reserve_under_share`) are neither held back by
    `backfill_depth_per_queue` nor counted against it (off: they are)."""
    owed_first: bool = False
    """Stop planning starving gangs before the walk at the first one that could reclaim or
    preempt (left to the walk, which evicts in fair-share order): the gangs of the queues after
    it in fair-share order get their reservations in the walk, after it. Off: they are planned
    before the walk and a queue owed its share reserves last (for measuring)."""
    reserve_least_idle: bool = False
    """Between places where a reservation starts equally early and equally well (the
    topology objective's ties), take the leaves and nodes with the fewest GPUs free now: their
    capacity is what the reservation holds idle until it starts (unless short gangs backfill
    it), and the free capacity it leaves alone can start other gangs at once. Off: the lower
    leaf and node index."""
    charge_reservations: bool = False
    """Within a cycle, the binding reservations a queue gets count toward what it is owed
    (`reserve_under_share`): together, not each alone, its owed reservations fit within
    deserved − allocated. Off: a queue below its share reserved for every gang that fit
    within what it was owed alone (for measuring)."""
    reservations_in_walk_order: bool = False
    """With `charge_reservations`, they also count in the walk's queue order: a queue that
    reserved is served after the queues now further below their share. Measured on Philly
    (issue 19, fourth round): reclaims went from 7,304 to 126,121 (for measuring)."""
    align_ends: bool = False
    """Between nodes that hold a gang starting now equally well (the same count of its pods
    fits), take the one where it ends, by its time limit, before the pods already running
    there end by theirs, else the one it keeps busy the least beyond them: the node's GPUs then
    come back together, as a whole node for a gang of a node's size, instead of one GPU at a
    time (end-time alignment). Off: the lower node index."""
    pack_borrowed: bool = False
    """A gang starting now does not mix borrowed with kept work on a node where it can help it:
    reclaim evicts only gangs of queues above their deserved share, so it can free a whole
    node for a queue below its share only where every gang is of such a queue. A gang that
    takes its queue beyond its share (borrowing) prefers nodes without work of queues at or
    within their shares, a gang that keeps its queue within its share prefers nodes without
    work of queues above theirs: among the leaves that hold the gang alone, those where it fits
    on such nodes; among the nodes that finish it, those, then the tightest (the topology
    objective and the fewest nodes come first; mixed members keep first-fit). Off: the
    tightest, then the lower index (issue 19, twenty-sixth round; for measuring)."""
    keep_whole_nodes: bool = False
    """A gang starting now does not take GPUs of a whole free node where nodes already partly
    used can hold it: among the leaves that hold the gang alone (fewest leaves and spines stay
    first), those where it fits on partly used nodes come first, then the tightest as before;
    within the leaf, the partly used nodes hold it if they can. Best fit by leaf alone sends a
    1-GPU job to the fullest leaf, even when all that leaf has free is one whole node and
    another leaf has holes: the whole node is broken, and the gangs that need whole nodes (on
    Philly most of the worst queue's GPU-hours are in 8-GPU jobs) wait for another to drain.
    Fragmentation-aware placement (Weng et al., "Beware of Fragmentation: Scheduling
    GPU-Sharing Workloads with Fragmentation Gradient Descent", USENIX ATC 2023; the node
    scoring of Kubernetes' `MostAllocated` strategy): keep the count of whole free nodes as high
    as the fit allows. Reservations, reclaim's trial placements and mixed members are
    unchanged. Off: best fit by leaf (issue 19, twenty-seventh round; for measuring)."""
    owed_whole_nodes: bool = False
    """While a gang owed its queue's deserved share waits undecided in the cycle (it fits within
    that share and another queue borrows beyond its own: the condition for reclaim), the
    binding reservation of a gang that is not owed its share is planned without the nodes whole
    free now (all their GPUs free): it starts on capacity that frees later instead.

    Why: a binding reservation that starts later holds the free node it is planned on idle to
    everything that cannot end before it, and a whole node is what a gang of a node's size
    needs. Owed gangs are walked in fair-share order after the starving gangs' reservations
    were planned (they may reclaim there), so a free whole node goes to whichever reservation
    is planned first, however far below its share the owed queue is. In Slurm's backfill the
    reservations are planned in priority order, and the fair-share factor puts the jobs of the
    account furthest below its share first (`PriorityWeightFairshare`); capacity free now is
    the one resource whose owner is decided by who plans first, so it goes to the owed queue
    first and a reservation of a queue at its share waits for capacity that frees later (a
    reservation only bounds starvation; it need not be the earliest possible start). Owed
    gangs' own reservations, the starting of gangs now and reclaim are unchanged. Off: every
    reservation is planned on the earliest capacity, free now included (issue 19,
    twenty-eighth round; for measuring)."""
    owed_whole_needed: bool = False
    """`owed_whole_nodes` only while the owed gang that waits has a pod that no node holds now
    but a whole free one (more GPUs than any partly used node has free): a gang that fits in
    the holes does not need the whole node, and shielding it for such a gang hands it to
    whichever gang the walk reaches first, a borrowing queue's too (for measuring)."""
    owed_whole_overused: bool = False
    """`owed_whole_nodes` shields the whole free nodes only from gangs of queues that already
    hold their deserved share (Volcano's "overused": allocated ≥ deserved), not from a gang of a
    queue below its share that is larger than what it is owed: reservations are planned afresh
    every cycle, so a gang shielded from every node as it frees never gathers the nodes it
    needs while any owed gang waits, and a queue whose gangs are larger than its share would
    never run one (issue 19, twenty-eighth round; for measuring)."""
    reserve_borrowing_last: bool = False
    """A starving gang of a queue that already holds its deserved share (Volcano's
    "overused": allocated ≥ deserved) is not planned before the walk while another queue is
    below its own: it reserves in the walk, in its queue's turn, after the gangs of the queues
    below their share were walked (a reservation for borrowed capacity does not hold what
    another queue is owed). A queue below its share reserves first even for a gang larger
    than what it is owed, or a queue whose share is smaller than its gangs would never run
    one. Off: every starving gang is planned before the walk."""
    owed_start_first: bool = False
    """Before the walk, after each queue's starving gangs are planned (queues furthest below
    their share first): that queue's gangs that fit now and within its deserved share start,
    before the starving gangs of the queues after it reserve the capacity they could use. Off:
    they start in the walk, after every queue's starving gangs were planned."""
    reclaim_by_gpu_time: bool = False
    """Reclaim's victims of equal protection and priority are ordered by the run they would throw
    away, GPUs × time run so far (evicted gangs restart from zero), least first. Off: by time run
    so far alone, so a young 8-GPU gang goes before an older 1-GPU one only if it started later.
    Measured in issue 19's eighteenth round, not shipped: on Philly it threw away more run, not
    less (85,034 GPU-h against 76,373, 7,245 evictions against 6,830) and cost the mean wait
    (6.18 → 6.67 h)."""
    borrow_max_limit: float = 0.0
    """Seconds: a gang whose time limit (none: infinite) is longer than this does not start
    beyond its queue's deserved share while another queue has demand (`QueueOverLimit`, with
    why): lent capacity is reclaimed as soon as its owner asks, and on Philly a 271-h job
    started beyond its VC's share was reclaimed 105 times (issue 19, nineteenth round). 0:
    off, any gang may borrow idle capacity. Measuring."""
    reclaim_newest_first: bool = False
    """Reclaim's victims of equal protection and priority are the gangs created last, newest
    first (Volcano's job order, reversed), instead of the least run so far. By run, a gang
    evicted once restarts with the least run of its queue and is the first victim of the next
    reclaim, again and again: on Philly a 1-GPU job of 271 h was reclaimed 105 times and
    waited 1,982 h, 1,573 h of it in runs thrown away (issue 19, nineteenth round). By
    creation, a gang's standing as a victim only improves while it waits. Off: measuring."""
    reclaim_tolerance: float = 0.0
    """Reclaim takes nothing from a queue that holds at most (1 + this) × its deserved share: a
    dead zone around the share (Hadoop YARN's capacity-scheduler preemption,
    `max_ignored_over_capacity`, default 0.1). Deserved shares move with every queue's demand,
    so a queue a GPU or two over its share is usually over because its share just fell, and
    the smallest gang that takes it back to its share is often a long run: on Philly a 1-GPU
    job of 271 h was reclaimed 105 times, 100 of them alone, 97 for one GPU of another queue
    (issue 19, twentieth round). The owed queue gets its share as capacity frees instead.
    Measured there at 0.1: evictions halved, mean and p95 wait −10%, but utilisation 1.1
    points lower (less run thrown away counted as busy), so not shipped. 0: any queue over
    its share lends."""
    keep_reservations: bool = False
    """A gang that held a binding reservation at the last cycle keeps it (Maui's
    `RESERVATIONPOLICY HIGHEST`: once a job has a priority reservation it keeps one until it
    runs, even when other jobs come before it in priority): before any other gang is planned,
    the kept gangs still starving (or owed) are planned again, the longest held first
    (`Snapshot.kept`; a first replay ordered them by planned start instead, which only
    re-planned in another order: see `bench/SIM.md`, twenty-first round).
    Off, every cycle plans its reservations afresh in the queues' fair-share order, which
    moves with every start and end: on Philly the 32-GPU `philly-31450` held a binding
    reservation 1,635 h of its 1,807-h wait, but it slipped later or was lost 4,698 times,
    3,368 of them to gangs of other queues planned before it on the same nodes, 820 to gangs
    started on the capacity drained for it (issue 19, twenty-first round). Measuring."""
    preempt_starving: float = 0.0
    """Selective preemption (Kettimuthu et al., "Selective preemption strategies for parallel
    job scheduling", ICPP 2002) with this suspension factor SF (0: off; measured in issue 19's
    sixth round, not shipped). A starving gang of the size whose reservation is honoured
    (`start_starving_leaves`), with a time limit, its queue not borrowing, that cannot start
    now may evict gangs of its own queue (priority no higher) whose expansion factor is at most
    1/SF of its own — expansion factor = (wait + time limit) / time limit, a running gang's
    wait being the one it had when it started — that have run no longer than SF times its
    time limit, and that would not, evicted, wait as starving gangs that start first (they
    would take the capacity back at once), and only if its queue stays within its deserved
    share once they are gone (else it would not start first). Only when the victims' run thrown
    away (they restart from zero) is no more GPU-time than the gang would otherwise wait: its
    GPUs × the time to its earliest start without evicting. A large gang stuck behind a long
    gang that started just before it arrived then runs first."""
    owed_slip: float = 0.0
    """Slack-based backfilling for queues below their share (Talby & Feitelson, "Supporting
    priorities and improving utilization of the IBM SP scheduler using slack-based
    backfilling", IPPS 1999), with this factor k (0: off; measured in issue 19's seventh
    round). A gang of a queue below its deserved share, fitting within that share, that fits
    now only on capacity binding reservations hold starts before them, if every reservation it
    pushes back still starts no later than its gang's creation + k × its starvation bound (or
    no later than it did, if it was already due after that): with k = 2 and the bound at the
    gang's time limit, a starving gang still starts by a bounded slowdown of 3. The cycle is
    walked a second time with that gang started first and the reservations compared; the walk
    that breaks a promise is thrown away. A lone queue is owed nothing: no effect."""
    slip_any: bool = False
    """`owed_slip` for every gang, not only those of queues below their share (Talby and
    Feitelson's slack for all jobs; for measuring): within a queue too, a gang that fits now
    only on held capacity starts first if every reservation it pushes back keeps its slack."""
    share_over_holds: bool = False
    """Reservations bind across queues in fair-share order (max-min fairness on the share
    ratio; issue 19, sixteenth round, for measuring): a gang of a queue below its deserved
    share, fitting within it, that fits now only on capacity held for reservations starts there
    when every gang it overruns belongs to a queue holding a larger part of its own deserved
    share (allocated / deserved) than the gang's queue does. Within a queue, and against a
    queue as far below its share or further, a reservation stays binding; a lone queue is owed
    nothing: no effect. The overrun reservation is planned again next cycle, later."""
    share_over_holds_after: bool = False
    """`share_over_holds` comparing the gang's queue's part of its share once the gang runs,
    (allocated + the gang) / deserved, with the holders' queues' now: it overruns only while its
    queue stays further below its share than theirs, so the order of the two queues does not
    flip (for measuring)."""
    speculate: float = 0.0
    """Speculative backfilling (Perkovic & Keleher, "Randomization, speculation, and
    adaptation in batch schedulers", SC 2000) with this fraction f of a gang's time limit (0:
    off; measured in issue 19's eighth round; the operator has no flag for it). A gang that
    holds no binding reservation and cannot start now only because capacity is held for
    reservations may start on that capacity when every hold it overlaps starts at least f × its
    time limit from now: time limits are upper bounds, and a gang may end well within its own
    (on the simulator's traces too few do: bench/SIM.md, eighth round). Its capacity counts as
    free from the first such hold's start in every plan (`RunningGang.yield_by`), so no
    reservation moves; if it still runs when a gang's start is due on that capacity, it is
    evicted whole (`ReservationDue`) and restarts from zero."""
    aged_first: bool = False
    """Within a queue, gangs that have waited `age_max` or longer (their age factor full) come
    before every gang that has not, ordered among themselves as before: a bound on how long
    least-work-first can pass a gang of much work over inside its own queue (measured in issue
    19's eighteenth round). Off: a gang of full age only ties with a fresh gang of least work."""
    honour_after_peers: bool = False
    """`honour_after` waits at least as long as the peers' bound of `reserve_after_peers`
    without its ceiling `peer_max_s`: under overload, where its peers' slowdown is high, a gang
    treated no worse than they are is not honoured ahead of them (measured in issue 19's
    eighteenth round)."""
    honour_after_beyond_share: bool = False
    """A gang past `honour_after` is honoured even beyond its queue's deserved share
    (`honour_within_share` aside for it), and reclaim never takes a running gang that would be
    honoured so again if evicted: what else holds a gang of a busy queue back for months
    (issue 19, nineteenth round) is that its queue borrows whenever its reservation falls due.
    The guard is what `honour_within_share` was for: without it, reclaim would evict the gang
    and it would start first again the next cycle. Off: measuring."""
    start_starving_min_members: int = 0
    """The same for starving gangs of at least this many members (0: off; for measuring)."""
    honour_after: float = 0.0
    """A starving gang of any size that has waited this many times the absolute starvation
    bound (`reserve_after_s`; its own bound when that is 0) and fits now starts before the
    walk, as `start_starving_leaves` starts the large ones (0: off; measured in issue 19's
    ninth round). A second rung of the starvation ladder: past its bound a gang holds a
    binding reservation; past this the reservation is honoured, so the capacity it drained is
    not handed to a gang of less work first, which is what keeps long-limit gangs below a
    leaf in the default's queue many times longer than under `volcano` (bench/SIM.md, ninth
    round). Counted on the absolute bound, not the relative one: a 30-minute job is past twice
    its own bound within an hour. For measuring: under overload the order cascades into FIFO
    (k = 2: cluster04 mean 11.56 → 21.24 h)."""
    age_max: float = 0.0
    """Seconds of wait at which the age factor of the order saturates at 1 (Slurm's
    `PriorityMaxAge`, 7 days by default there; 0: off, the age is normalised by the longest
    wait pending in the cycle). For measuring (issue 19, tenth round; no operator flag): the
    relative age weighs an hour of wait more when the pending gangs are young, so the order
    leans towards FIFO on a lightly queued cluster and towards least work under overload; the
    absolute one gives an hour the same weight at any load. Measured at 7 days: more of the
    order goes to least work (cluster04 mean 11.56 → 4.32 h, p95 36.89 → 16.58 h) and the
    starving multi-node gangs it leaves behind hold more capacity idle while they drain
    (utilisation 96.17 → 95.64%, outside the goal's half point of `volcano`'s 96.56%)."""
    evict_before_walk: bool = False
    """Let gangs planned before the walk (starving, or owed their queue's share) reclaim and
    preempt there (the code before issue 19's churn fix; for measuring). Off: a gang that
    could evict is left to the walk, which evicts for it in fair-share order, after the gangs
    of its queue that start now were charged."""
    charge_promised: bool = True
    """Within a cycle, a queue is charged for capacity held now for its gangs that reclaimed
    (or wait for capacity being freed now), so later gangs of the queue are checked against
    the share that includes them (off: the code before issue 19's churn fix; for measuring)."""
    estimate_unreserved: bool = True
    """Give gangs within the depth that hold no reservation a non-binding ETA (a plan that
    holds nothing). Decisions are the same either way; the simulator turns it off for speed."""


# ---------------------------------------------------------------------------------------------
# Result


@dataclass(frozen=True, slots=True)
class Eviction:
    """Evict this whole gang (`Reclaimed` or `Preempted`) so that `for_gang` can start."""

    gang: str
    reason: EvictionReason
    for_gang: str
    message: str


@dataclass(frozen=True, slots=True)
class Reservation:
    """Where and when a waiting gang will start; the capacity is held against later gangs."""

    gang: str
    start: float
    nodes: tuple[str, ...]
    pods: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a gang is (or is planned to be): domain names per topology level, and nodes."""

    domains: Mapping[str, tuple[str, ...]]
    nodes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PendingDetail:
    """The numbers behind a pending gang's message (`pendingDetail` in PodGroup status)."""

    requested_gpus: int
    free_gpus: int
    best_domain: str | None
    best_domain_free_gpus: int | None
    queue_deserved_gpus: int
    queue_allocated_gpus: int

    def to_status(self) -> dict[str, int | str]:
        """The camelCase form written to PodGroup status (absent fields left out)."""
        out: dict[str, int | str] = {
            "requestedGPUs": self.requested_gpus,
            "freeGPUs": self.free_gpus,
            "queueDeservedGPUs": self.queue_deserved_gpus,
            "queueAllocatedGPUs": self.queue_allocated_gpus,
        }
        if self.best_domain is not None:
            out["bestDomain"] = self.best_domain
        if self.best_domain_free_gpus is not None:
            out["bestDomainFreeGPUs"] = self.best_domain_free_gpus
        return out


@dataclass(frozen=True, slots=True)
class GangDecision:
    """The cycle's verdict on one pending gang.

    `reason` is `Scheduled`/`Backfilled` when the gang is in `CycleResult.bindings`, otherwise one
    of the `Scheduled=False` reasons of PRODUCT.md §2. `estimated_start` is set when a reservation
    (or a plan, for `WaitingForPods` with `minResources`) exists within the backfill depth.
    """

    reason: Reason
    message: str
    detail: PendingDetail | None = None
    queue_position: int | None = None
    estimated_start: float | None = None
    placement: Placement | None = None
    due_without_pods: bool = False
    """Its reservation is due now but its pods do not exist (`minResources` only): the adapter
    records since when (`status.phantomDueAt`), which starts `Policy.phantom_grace`."""


@dataclass(frozen=True, slots=True)
class QueueStatus:
    """Per-queue figures for Queue status and `phalanx share`.

    `deserved` is computed on the fair-share resource only (other resources are constraints).
    `guarantee_scaled` is true when the guarantees add up to more than the cluster and were scaled
    down in proportion; `message` says so in words.
    """

    deserved: Mapping[str, int]
    allocated: Mapping[str, int]
    borrowed: Mapping[str, int]
    pending_gangs: int
    running_gangs: int
    fair_share: float
    guarantee_scaled: bool = False
    message: str = ""
    invalid: bool = False
    """Its spec cannot be used (`message` says which field and value): its gangs wait `Invalid`."""


@dataclass(frozen=True, slots=True)
class CycleResult:
    """What one cycle decided.

    `bindings` maps gang id → pod id → node name and holds whole gangs only (at least `min_member`
    pods) of the pending ones. `gangs` has a decision for every pending gang of the snapshot.
    """

    bindings: Mapping[str, Mapping[str, str]]
    evictions: tuple[Eviction, ...]
    reservations: Mapping[str, Reservation]
    gangs: Mapping[str, GangDecision]
    queues: Mapping[str, QueueStatus]
    roll_forward: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """Gang id → pod id → node: partly bound gangs whose recorded placement still fits; bind
    the rest there."""
    roll_back: Mapping[str, str] = field(default_factory=dict)
    """Gang id → why its recorded placement no longer fits: roll it back whole."""
    extra_bindings: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """Gang id → pod id → node for waiting members of gangs that already run: each bind stands
    alone (one that fails leaves that pod pending, never rolls the gang back)."""
    extras_waiting: Mapping[str, str] = field(default_factory=dict)
    """Gang id → why its waiting members (beyond `minMember`, or replacements) were not placed
    this cycle, for gangs that already run: said on those pods."""
    speculative: Mapping[str, float] = field(default_factory=dict)
    """Gang id → `RunningGang.yield_by` for gangs of `bindings` started speculatively on
    capacity held for reservations (`Policy.speculate`): the simulator keeps it with the gang.
    The operator has no flag for `speculate`, so its adapter never gets one."""
