"""Turning a `Snapshot` into the cycle's working state, and refusing bad input gang by gang.

Everything the snapshot says is checked here once: duplicate names, negative quantities, unknown
or invalid queues, namespaces, topology levels, time limits. A problem with one gang becomes a
typed decision for that gang (`Invalid`, `QueueNotFound`, `QueueForbidden`) and the cycle goes on
for the others; a problem with a node (negative or missing quantities) is clamped so the node is
simply not usable for what it lacks. Nothing here raises on odd values.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from operator import attrgetter
from typing import TYPE_CHECKING

from phalanx.core.capacity import ClusterState
from phalanx.core.fit import Signature, node_accepts, signature
from phalanx.core.model import (
    SYSTEM_PRIORITY,
    GangDecision,
    Member,
    Node,
    PendingGang,
    Policy,
    Queue,
    Snapshot,
)
from phalanx.core.placement import Feasible, Shape
from phalanx.core.reasons import Reason, bare_evicted_phrase
from phalanx.core.resources import (
    GPU,
    GPU_COUNT_LABEL,
    PODS,
    UNLIMITED,
    ResourceIndex,
    SparseRequest,
    dense,
    negative_entries,
)
from phalanx.core.topology import Topology, build_topology
from phalanx.core.work import GangWork, QueueState, RunningExtras, RunState

if TYPE_CHECKING:  # never_fits imports this module
    from phalanx.core.never_fits import EmptyFit


@dataclass(slots=True)
class Prepared:
    """The working state of one cycle, before any decision."""

    index: ResourceIndex
    nodes: list[Node]
    topo: Topology
    state: ClusterState
    queues: dict[str, QueueState]
    running: list[RunState]
    works: list[GangWork]
    decisions: dict[str, GangDecision]
    fair_pos: int
    capacity_gpu: int
    capacity_fair: int
    pending_ids: list[str]
    running_extras: list[RunningExtras]
    roll_forward: dict[str, dict[str, str]]
    roll_back: dict[str, str]
    kept: Mapping[str, float]
    """`Snapshot.kept`: the gangs holding a binding reservation at the last cycle, each with
    since when it has held one (`Policy.keep_reservations`)."""
    allocatable: list[list[int]] = field(default_factory=list)
    """Each node's allocatable resources (dense, as `state.free`): what it holds empty."""
    never_fits: dict[int, EmptyFit] = field(default_factory=dict)
    """Shape id → what the nodes accepting it could hold of it empty (`core.never_fits`),
    filled as explanations ask."""
    never_fits_together: dict[
        tuple[int | None, tuple[tuple[int, int], ...]], tuple[str, int | None]
    ] = field(default_factory=dict)
    """(required level, ((shape id, pods), …)) → whether a gang of several shapes can never fit
    together, and why (`core.never_fits`), filled as explanations ask."""


def _names(snapshot: Snapshot, policy: Policy) -> set[str]:
    names = {GPU, PODS, policy.fair_share_resource}
    for node in snapshot.nodes:
        names.update(node.allocatable)
        names.update(node.used)
    for q in snapshot.queues:
        names.update(q.guarantee)
        if q.limit:
            names.update(q.limit)
    for r in snapshot.running:
        for rm in r.members:
            names.update(rm.requests)
    for p in snapshot.pending:
        for m in p.members:
            names.update(m.requests)
        if p.min_resources:
            names.update(p.min_resources)
    return names


def _node_vectors(node: Node, index: ResourceIndex) -> tuple[list[int], list[int]]:
    alloc = [max(0, v) for v in index.vector(node.allocatable)]
    if GPU not in node.allocatable:
        try:
            alloc[0] = max(0, int(node.labels.get(GPU_COUNT_LABEL, "0")))
        except ValueError:
            alloc[0] = 0
    if PODS not in node.allocatable:
        alloc[1] = UNLIMITED
    used = [max(0, v) for v in index.vector(node.used)]
    return alloc, used


def _queue_state(q: Queue, index: ResourceIndex) -> QueueState:
    problems: list[str] = [q.invalid] if q.invalid else []
    if q.weight < 1:
        problems.append(f"weight {q.weight} (must be at least 1)")
    bad = negative_entries(q.guarantee) + (negative_entries(q.limit) if q.limit else [])
    if bad:
        problems.append("negative quantities for " + ", ".join(sorted(set(bad))))
    limit = index.vector(q.limit) if q.limit is not None else None
    if q.limit is not None:
        over = sorted(n for n, g in q.guarantee.items() if n in q.limit and g > q.limit[n])
        if over:
            problems.append("guarantee above limit for " + ", ".join(over))
    invalid = f"queue {q.name} is invalid: " + "; ".join(problems) if problems else ""
    if limit is not None:
        for name in index.names:
            if name not in q.limit:  # type: ignore[operator]
                limit[index.pos[name]] = UNLIMITED
    return QueueState(name=q.name, queue=q, invalid=invalid, alloc=[0] * len(index), limit=limit)


def _gang_problem(
    p: PendingGang,
    policy: Policy,
    q: Queue | None,
    duration: float | None,
    levels: set[str] | None = None,
) -> str:
    """Why a pending gang is `Invalid`, or '' when it is well-formed. `levels` are the policy's
    level names (computed once by the caller)."""
    if levels is None:
        levels = {lv.name for lv in policy.topology_levels}
    if p.invalid:
        return p.invalid
    if p.min_member < 1:
        return f"minMember is {p.min_member}; it must be at least 1"
    pods = {m.pod for m in p.members}
    if len(pods) != len(p.members):
        return "the same pod is listed twice among the members"
    for m in p.members:
        if m.requests and min(m.requests.values()) < 0:
            bad = negative_entries(m.requests)
            return f"pod {m.pod} requests a negative quantity of {', '.join(bad)}"
    if p.min_resources is not None and negative_entries(p.min_resources):
        return "minResources has a negative quantity of " + ", ".join(
            negative_entries(p.min_resources)
        )
    for kind, level in (("required", p.topology_required), ("preferred", p.topology_preferred)):
        if level is not None and level not in levels:
            known = ", ".join(lv.name for lv in policy.topology_levels) or "none"
            return f"topology {kind} level {level!r} is not configured (levels: {known})"
    if duration is not None and not (duration > 0 and math.isfinite(duration)):
        return f"timeLimitSeconds must be positive, got {duration}"
    if q is not None and p.priority_class is not None:
        allowed = q.priority_classes
        if allowed is not None and p.priority_class not in allowed:
            return (
                f"priority class {p.priority_class!r} is not allowed in queue {q.name} "
                f"(allowed: {', '.join(allowed) or 'none'})"
            )
        if allowed is None and p.priority >= SYSTEM_PRIORITY:
            return (
                f"priority class {p.priority_class!r} is a system class (value {p.priority:,}); "
                f"queue {q.name} allows only classes below {SYSTEM_PRIORITY:,} unless its "
                "priorityClasses lists it"
            )
    if (
        duration is not None
        and q is not None
        and q.max_time_limit is not None
        and duration > q.max_time_limit
    ):
        return (
            f"timeLimitSeconds {duration:g} exceeds the queue's maxTimeLimitSeconds "
            f"{q.max_time_limit:g}"
        )
    return ""


def prepare(snapshot: Snapshot, policy: Policy, now: float) -> Prepared:
    """Build the cycle's working state from the snapshot (see the module docstring)."""
    index = ResourceIndex(_names(snapshot, policy))
    fair_pos = index.pos[policy.fair_share_resource]
    width = len(index)

    by_name: dict[str, Node] = {}
    for node in snapshot.nodes:
        by_name.setdefault(node.name, node)
    nodes = [by_name[n] for n in sorted(by_name)]
    node_pos = {node.name: i for i, node in enumerate(nodes)}
    topo = build_topology(nodes, policy.topology_levels)

    free: list[list[int]] = []
    allocatable: list[list[int]] = []
    usable: list[bool] = []
    capacity_gpu = 0
    capacity_fair = 0
    max_node_gpus = 0
    for node in nodes:
        alloc, used = _node_vectors(node, index)
        allocatable.append(alloc)
        max_node_gpus = max(max_node_gpus, alloc[0])
        vec = [a - u for a, u in zip(alloc, used, strict=True)]
        free.append(vec)
        usable.append(not node.unschedulable)
        if not node.unschedulable:
            capacity_gpu += max(0, vec[0])
            capacity_fair += max(0, vec[fair_pos])

    queues: dict[str, QueueState] = {}
    for q in sorted(snapshot.queues, key=lambda q: q.name):
        queues.setdefault(q.name, _queue_state(q, index))

    # Running gangs: occupy their nodes, charge their queues, release at their time limit.
    running: list[RunState] = []
    releases: list[tuple[float, int, list[int], str]] = []
    seen_running: set[str] = set()
    run_vecs: dict[tuple[tuple[str, int], ...], list[int]] = {}
    for g in sorted(snapshot.running, key=lambda g: g.id):
        if g.id in seen_running:
            continue
        seen_running.add(g.id)
        per_node: dict[int, list[int]] = {}
        total = [0] * width
        for rm in g.members:
            # Members mostly repeat a few requests: convert each distinct one once.
            rkey = tuple(rm.requests.items())
            known = run_vecs.get(rkey)
            if known is None:
                known = [max(0, v) for v in index.vector(rm.requests)]
                known[1] = max(known[1], 1)
                run_vecs[rkey] = known
            vec = known  # only read below
            for i, v in enumerate(vec):
                total[i] += v
            n = node_pos.get(rm.node)
            if n is None:
                continue
            acc = per_node.setdefault(n, [0] * width)
            for i, v in enumerate(vec):
                acc[i] += v
        rs = RunState(gang=g, nodes=sorted(per_node.items()), fair=total[fair_pos])
        running.append(rs)
        for n, vec in rs.nodes:
            cur = free[n]
            for i, v in enumerate(vec):
                cur[i] -= v
        if g.evicting:
            releases.extend((now, n, vec, g.id) for n, vec in rs.nodes)
        elif rs.end < math.inf:
            releases.extend((max(now, rs.end), n, vec, g.id) for n, vec in rs.nodes)
        owner = queues.get(g.queue)
        if owner is not None and not g.evicting:
            for i, v in enumerate(total):
                owner.alloc[i] += v
            owner.alloc_fair += total[fair_pos]
            owner.running += 1

    roll_forward, roll_back = _repair_partial(
        running, queues, free, usable, nodes, node_pos, index, fair_pos, releases, now
    )

    state = ClusterState(topo, free, usable)
    for t, n, vec, gid in sorted(releases, key=lambda r: (r[0], r[1], r[3])):
        state.add_release(t, n, vec, gid)
    for rs in running:
        if rs.end == math.inf and not rs.gang.evicting and not rs.evicted:
            for n, vec in rs.nodes:
                state.unlimited_gpu[n] += vec[0]

    # Pending gangs: validate, group identical members into shapes.
    feasible_cache: dict[Signature, Feasible] = {}
    shape_ids: dict[tuple[SparseRequest, Signature], int] = {}
    #: Sparse requests by the requests' items (pods mostly repeat a few requests).
    requests: dict[tuple[tuple[str, int], ...], SparseRequest] = {}
    decisions: dict[str, GangDecision] = {}
    works: list[GangWork] = []
    pending_ids: list[str] = []

    def feasible_for(sig: Signature, member: Member) -> Feasible:
        hit = feasible_cache.get(sig)
        if hit is None:
            level = sig[3]
            leaf_nodes: dict[int, list[int]] = {}
            count = 0
            for n, node in enumerate(nodes):
                if level is not None and not topo.node_labelled[level][n]:
                    continue
                if node_accepts(node, member):
                    leaf_nodes.setdefault(topo.leaf_of[n], []).append(n)
                    count += 1
            hit = feasible_cache[sig] = Feasible(leaf_nodes, sorted(leaf_nodes), count)
        return hit

    def shapes_for(members: list[Member], required_level: int | None) -> list[Shape]:
        groups: dict[int, Shape] = {}
        for m in members:
            rkey = tuple(m.requests.items())
            req = requests.get(rkey)
            if req is None:
                req = requests[rkey] = index.pod_request(m.requests)
            sig = signature(m, required_level)
            sid = shape_ids.setdefault((req, sig), len(shape_ids))
            shape = groups.get(sid)
            if shape is None:
                vec = dense(req, width)
                shape = groups[sid] = Shape(sid, req, vec, vec[0], feasible_for(sig, m))
            shape.pods.append(m.pod)
        # Content order, not id order: ids depend on the order gangs appear in the snapshot.
        return sorted(groups.values(), key=lambda s: (s.req, s.pods[0]))

    seen_pending: set[str] = set()  # (membership in the list was quadratic in pending gangs)
    level_names = {lv.name for lv in policy.topology_levels}
    by_pod = attrgetter("pod")
    for p in snapshot.pending:
        if p.id in decisions or p.id in seen_pending:
            continue
        seen_pending.add(p.id)
        pending_ids.append(p.id)
        qs = queues.get(p.queue)
        spec = qs.queue if qs is not None else None
        duration = p.time_limit
        if duration is None and spec is not None:
            duration = spec.default_time_limit
        problem = _gang_problem(p, policy, spec, duration, level_names)
        if problem:
            decisions[p.id] = GangDecision(Reason.INVALID, problem)
            continue
        if qs is None:
            decisions[p.id] = GangDecision(
                Reason.QUEUE_NOT_FOUND,
                f"queue {p.queue!r} does not exist"
                + (f" (named by {p.queue_source})" if p.queue_source else ""),
            )
            continue
        if qs.invalid:
            decisions[p.id] = GangDecision(Reason.INVALID, qs.invalid)
            continue
        if qs.queue.namespaces and p.ns not in qs.queue.namespaces:
            decisions[p.id] = GangDecision(
                Reason.QUEUE_FORBIDDEN,
                f"namespace {p.ns!r} may not submit to queue {p.queue!r} "
                f"(its spec.namespaces: {', '.join(qs.queue.namespaces)})"
                + (f"; the queue was named by {p.queue_source}" if p.queue_source else ""),
            )
            continue
        held = p.held or _bare_evicted(p, now)
        if held:
            # Its user holds it, or must apply its pods again: outside the order, no position,
            # plan or reservation, as Slurm's held job is not ranked; still one of its queue's
            # pending gangs.
            decisions[p.id] = GangDecision(
                Reason.WAITING_FOR_PODS, f"{len(p.members)} of {p.min_member} pods exist; {held}"
            )
            qs.held += 1
            continue
        level_pos = topo.level_pos
        req_level = level_pos[p.topology_required] if p.topology_required else None
        pref_level = level_pos[p.topology_preferred] if p.topology_preferred else None
        members = sorted(p.members, key=by_pod)
        waiting = len(members) < p.min_member
        phantom = waiting and p.min_resources is not None and not _phantom_expired(p, policy, now)
        if phantom:
            assert p.min_resources is not None
            # Stand-in members so the gang can be planned before its pods exist: as few as the
            # gang could ever need nodes, never one per `minMember` (a PodGroup of 10,000
            # members must not cost 10,000 of anything each cycle).
            stand_ins = _stand_ins(p.min_member, p.min_resources, max_node_gpus, len(nodes))
            per_pod = {name: -(-amount // stand_ins) for name, amount in p.min_resources.items()}
            members = [Member(f"{p.id}#{i}", per_pod) for i in range(stand_ins)]
        required = members if phantom else members[: p.min_member]
        extras = members[p.min_member :] if not waiting else []
        shapes = shapes_for(required, req_level)
        total = [0] * width
        for s in shapes:
            for i, v in enumerate(s.vec):
                total[i] += v * len(s.pods)
        extra_shapes = [(m, shapes_for([m], req_level)[0]) for m in extras]
        works.append(
            GangWork(
                gang=p,
                queue=qs,
                shapes=shapes,
                extras=extra_shapes,
                gpus=total[0],
                fair=total[fair_pos],
                total=total,
                duration=math.inf if duration is None else float(duration),
                required_level=req_level,
                preferred_level=pref_level,
                waiting_for_pods=waiting,
                phantom=phantom,
            )
        )
        qs.pending += 1

    running_extras: list[RunningExtras] = []
    for rs in running:
        g = rs.gang
        if not g.waiting or g.evicting:
            continue
        req_level = topo.level_pos.get(g.topology_required) if g.topology_required else None
        to_place: list[tuple[Member, Shape]] = []
        for m in sorted(g.waiting, key=by_pod):
            if m.requests and min(m.requests.values()) < 0:
                continue  # a bad pod waits; the gang goes on
            to_place.append((m, shapes_for([m], req_level)[0]))
        created = g.creation_time if g.creation_time is not None else g.start_time
        running_extras.append(
            RunningExtras(
                gang_id=g.id,
                queue=queues.get(g.queue),
                extras=to_place,
                required_level=req_level,
                nodes=[n for n, _ in rs.nodes],
                end=rs.end,
                order_as=PendingGang(
                    id=g.id,
                    min_member=1,
                    queue=g.queue,
                    priority=g.priority,
                    creation_time=created,
                ),
                fair=sum(shape.vec[fair_pos] for _, shape in to_place),
            )
        )

    return Prepared(
        index=index,
        nodes=nodes,
        topo=topo,
        state=state,
        queues=queues,
        running=running,
        works=works,
        decisions=decisions,
        fair_pos=fair_pos,
        capacity_gpu=capacity_gpu,
        capacity_fair=capacity_fair,
        pending_ids=pending_ids,
        running_extras=running_extras,
        roll_forward=roll_forward,
        roll_back=roll_back,
        kept=snapshot.kept,
        allocatable=allocatable,
    )


def _repair_partial(
    running: list[RunState],
    queues: dict[str, QueueState],
    free: list[list[int]],
    usable: list[bool],
    nodes: list[Node],
    node_pos: dict[str, int],
    index: ResourceIndex,
    fair_pos: int,
    releases: list[tuple[float, int, list[int], str]],
    now: float,
) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """Roll each partly bound gang forward or back, before anything else is placed.

    Forward when every member its decision record names, not bound yet, still fits on its
    recorded node: the node exists, is schedulable and Ready, has the member's requests free
    with every bound pod counted (its own gang's bound members included, which are already on
    their nodes) and passes the member's selectors and tolerations. Then that capacity is taken
    and charged as the gang's. Back otherwise: the gang's capacity comes back now, as an
    eviction's does, and is charged to no queue. Decided first, because a gang already partly
    bound holds a promise no later gang may take from it.
    """
    forward: dict[str, dict[str, str]] = {}
    back: dict[str, str] = {}
    width = len(index)
    for k, rs in enumerate(running):
        g = rs.gang
        if not g.intended or g.evicting:
            continue
        need: dict[int, list[int]] = {}
        problem = ""
        for member, node_name in sorted(g.intended, key=lambda mn: mn[0].pod):
            n = node_pos.get(node_name)
            if n is None:
                problem = f"its recorded node {node_name} is gone"
                break
            if not usable[n]:
                problem = f"its recorded node {node_name} is not schedulable (cordoned or NotReady)"
                break
            if not node_accepts(nodes[n], member):
                problem = f"pod {member.pod} no longer matches its recorded node {node_name}"
                break
            vec = [max(0, v) for v in index.vector(member.requests)]
            vec[1] = max(vec[1], 1)
            acc = need.setdefault(n, [0] * width)
            for i, v in enumerate(vec):
                acc[i] += v
        if not problem:
            for n, vec in sorted(need.items()):
                short = [index.names[i] for i, v in enumerate(vec) if v > free[n][i]]
                if short:
                    problem = (
                        f"its recorded node {nodes[n].name} no longer has room "
                        f"({', '.join(short)} taken since)"
                    )
                    break
        owner = queues.get(g.queue)
        if problem:
            back[g.id] = problem
            releases[:] = [r for r in releases if r[3] != g.id]  # not at its end: now
            releases.extend((now, n, vec, g.id) for n, vec in rs.nodes)
            if owner is not None:
                for _n, vec in rs.nodes:
                    for i, v in enumerate(vec):
                        owner.alloc[i] -= v
                owner.alloc_fair -= rs.fair
                owner.running -= 1
            running[k] = RunState(gang=replace(g, evicting=True), nodes=rs.nodes, fair=rs.fair)
            continue
        held = dict(rs.nodes)
        for n, vec in sorted(need.items()):
            cur = free[n]
            for i, v in enumerate(vec):
                cur[i] -= v
            if n in held:
                held[n] = [a + b for a, b in zip(held[n], vec, strict=True)]
            else:
                held[n] = list(vec)
            if owner is not None:
                for i, v in enumerate(vec):
                    owner.alloc[i] += v
                owner.alloc_fair += vec[fair_pos]
            rs.fair += vec[fair_pos]
        rs.nodes = sorted(held.items())
        if rs.end < math.inf:
            releases.extend((max(now, rs.end), n, vec, g.id) for n, vec in sorted(need.items()))
        forward[g.id] = {m.pod: node for m, node in sorted(g.intended, key=lambda mn: mn[0].pod)}
    return forward, back


def _bare_evicted(p: PendingGang, now: float) -> str:
    """Why a gang waits for pods its last eviction deleted that nothing makes again ("" when it
    does not): held by its user in effect, until they are applied again (walked: such a gang
    said position 1 in its queue, every gang behind it one more than true)."""
    lost = p.bare_evicted
    if lost is None or len(p.members) >= p.min_member:
        return ""
    phrase = bare_evicted_phrase(lost.pods, lost.failed, lost.reason, now - lost.since)
    return f"{p.pods_note}; {phrase}" if p.pods_note else phrase


def _phantom_expired(p: PendingGang, policy: Policy, now: float) -> bool:
    """A gang with `minResources` whose reservation came due more than `phantom_grace` ago with
    its pods still missing: it waits without a reservation or a share of demand from now on."""
    return p.due_since is not None and now - p.due_since > policy.phantom_grace


def _stand_ins(min_member: int, resources: Mapping[str, int], node_gpus: int, nodes: int) -> int:
    """How many stand-in members plan a gang whose pods do not exist yet: `minMember`, but no
    more than its GPUs need nodes (at `node_gpus` a node), nor more than there are nodes."""
    gpus = max(0, resources.get(GPU, 0))
    need = -(-gpus // node_gpus) if gpus and node_gpus else 1
    return max(1, min(min_member, max(need, 1), max(nodes, 1)))
