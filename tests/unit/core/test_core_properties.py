"""Invariants over random clusters, queues and gangs (hypothesis).

Checked independently of the core's own bookkeeping: usage is recomputed from the snapshot and the
result (node `used` + running members + bound pods + reservations active at a given time) and
compared with allocatable.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phalanx.core import (
    CPU,
    GPU,
    PODS,
    CycleResult,
    Member,
    Node,
    PendingGang,
    Policy,
    Queue,
    RunningGang,
    RunningMember,
    Snapshot,
    Taint,
    Toleration,
    schedule,
)
from phalanx.core.never_fits import NEVER_ALL, NEVER_PHRASES

SPINE = "network.topology.nvidia.com/spine"
LEAF = "network.topology.nvidia.com/block"
NOW = 100_000.0
PROFILE = settings(
    max_examples=int(__import__("os").environ.get("CORE_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@st.composite
def snapshots(draw: st.DrawFn) -> Snapshot:
    spines = draw(st.integers(1, 2))
    leaves = draw(st.integers(1, 2))
    per_leaf = draw(st.integers(1, 3))
    nodes: list[Node] = []
    for s in range(spines):
        for lf in range(leaves):
            for n in range(per_leaf):
                gpus = draw(st.sampled_from([4, 8]))
                taints = (Taint("dedicated", "x"),) if draw(st.integers(0, 5)) == 0 else ()
                nodes.append(
                    Node(
                        name=f"s{s}-l{lf}-n{n}",
                        allocatable={GPU: gpus, CPU: draw(st.sampled_from([8000, 32000])), PODS: 8},
                        used={GPU: draw(st.integers(0, 2)), CPU: draw(st.sampled_from([0, 1000]))},
                        labels={SPINE: f"s{s}", LEAF: f"s{s}-l{lf}"},
                        taints=taints,
                    )
                )
    queues = []
    for i in range(draw(st.integers(1, 3))):
        queues.append(
            Queue(
                name=f"q{i}",
                weight=draw(st.integers(1, 3)),
                guarantee={GPU: draw(st.sampled_from([0, 0, 4, 8, 16]))},
                reclaimable=draw(st.booleans()),
                priority=draw(st.integers(0, 1)),
                usage=draw(st.sampled_from([0.0, 1e5, 1e6])),
            )
        )
    # Running gangs are placed where they fit so the snapshot itself is consistent.
    free = {
        n.name: {GPU: n.allocatable[GPU] - n.used[GPU], CPU: n.allocatable[CPU] - n.used[CPU]}
        for n in nodes
    }
    running: list[RunningGang] = []
    for i in range(draw(st.integers(0, 6))):
        gpu = draw(st.sampled_from([1, 2, 4]))
        count = draw(st.integers(1, 3))
        members = []
        for p in range(count):
            options = [n for n, f in sorted(free.items()) if f[GPU] >= gpu and f[CPU] >= 1000]
            if not options:
                break
            where = draw(st.sampled_from(options))
            free[where][GPU] -= gpu
            free[where][CPU] -= 1000
            members.append(RunningMember(f"r{i}-{p}", where, {GPU: gpu, CPU: 1000}))
        if not members:
            continue
        running.append(
            RunningGang(
                id=f"ns/r{i}",
                queue=draw(st.sampled_from([q.name for q in queues])),
                members=tuple(members),
                priority=draw(st.integers(0, 2)),
                start_time=NOW - draw(st.integers(0, 5000)),
                time_limit=draw(st.sampled_from([None, 600.0, 3000.0, 9000.0])),
                protected=draw(st.integers(0, 4)) == 0,
            )
        )
    pending: list[PendingGang] = []
    for i in range(draw(st.integers(1, 6))):
        gpu = draw(st.sampled_from([0, 1, 2, 4, 8]))
        count = draw(st.integers(1, 4))
        tolerate = draw(st.booleans())
        members = tuple(
            Member(
                f"p{i}-{p}",
                {GPU: gpu, CPU: draw(st.sampled_from([500, 4000]))},
                tolerations=(Toleration("dedicated", "Exists"),) if tolerate else (),
            )
            for p in range(count)
        )
        pending.append(
            PendingGang(
                id=f"ns/g{i}",
                min_member=draw(st.integers(1, count)),
                members=members,
                queue=draw(st.sampled_from([q.name for q in queues])),
                priority=draw(st.integers(0, 2)),
                creation_time=NOW - draw(st.integers(0, 1000)),
                topology_required=draw(st.sampled_from([None, None, "leaf", "spine"])),
                topology_preferred=draw(st.sampled_from([None, "leaf"])),
                time_limit=draw(st.sampled_from([None, 300.0, 1200.0, 6000.0])),
            )
        )
    return Snapshot(tuple(nodes), tuple(queues), tuple(running), tuple(pending))


policies = st.builds(
    Policy,
    backfill_depth=st.sampled_from([1, 100]),
    reclaim=st.booleans(),
    preemption=st.booleans(),
)


# -- independent accounting ----------------------------------------------------------------------


def _requests(snap: Snapshot) -> dict[str, dict[str, int]]:
    return {m.pod: dict(m.requests) for p in snap.pending for m in p.members}


def _add(usage: dict[str, dict[str, int]], node: str, req: dict[str, int]) -> None:
    u = usage.setdefault(node, {})
    for k, v in req.items():
        u[k] = u.get(k, 0) + v
    u[PODS] = u.get(PODS, 0) + 1


def _check_fits(snap: Snapshot, usage: dict[str, dict[str, int]], what: str) -> None:
    for node in snap.nodes:
        u = usage.get(node.name, {})
        for k, v in u.items():
            cap = node.allocatable.get(k, 0) - node.used.get(k, 0)
            assert v <= cap, f"{what}: {node.name} {k} {v} > {cap}"


def _usage_now(snap: Snapshot, result: CycleResult) -> dict[str, dict[str, int]]:
    reqs = _requests(snap)
    usage: dict[str, dict[str, int]] = {}
    for r in snap.running:  # evicted gangs still hold their nodes while they terminate
        for m in r.members:
            _add(usage, m.node, dict(m.requests))
    for pods in result.bindings.values():
        for pod, node in pods.items():
            _add(usage, node, reqs[pod])
    return usage


def _duration(snap: Snapshot, gid: str) -> float:
    gang = next(p for p in snap.pending if p.id == gid)
    return math.inf if gang.time_limit is None else gang.time_limit


def _usage_at(snap: Snapshot, result: CycleResult, t: float) -> dict[str, dict[str, int]]:
    """Usage at time t ≥ now: what is still running, what was bound, what is reserved."""
    reqs = _requests(snap)
    evicted = {e.gang for e in result.evictions}
    usage: dict[str, dict[str, int]] = {}
    for r in snap.running:
        end = math.inf if r.time_limit is None else max(NOW, r.start_time + r.time_limit)
        gone = r.id in evicted or r.evicting or end <= t
        if not gone:
            for m in r.members:
                _add(usage, m.node, dict(m.requests))
    for gid, pods in result.bindings.items():
        if NOW + _duration(snap, gid) > t:
            for pod, node in pods.items():
                _add(usage, node, reqs[pod])
    for gid, res in result.reservations.items():
        if res.start <= t < res.start + _duration(snap, gid):
            for pod, node in res.pods.items():
                _add(usage, node, reqs[pod])
    return usage


# -- properties ----------------------------------------------------------------------------------


@PROFILE
@given(snapshots(), policies)
def test_never_overcommits_any_resource_on_any_node(snap: Snapshot, policy: Policy) -> None:
    result = schedule(snap, policy, NOW)
    _check_fits(snap, _usage_now(snap, result), "now")


@PROFILE
@given(snapshots(), policies)
def test_every_gang_bound_whole_or_not_at_all(snap: Snapshot, policy: Policy) -> None:
    result = schedule(snap, policy, NOW)
    by_id = {p.id: p for p in snap.pending}
    assert set(result.gangs) == set(by_id)
    for gid, decision in result.gangs.items():
        bound = result.bindings.get(gid)
        if decision.reason in ("Scheduled", "Backfilled"):
            assert bound is not None
            gang = by_id[gid]
            assert len(bound) >= gang.min_member
            assert set(bound) <= {m.pod for m in gang.members}
        else:
            assert bound is None, (gid, decision)
            # Ranked unless invalid, or no capacity this cluster has could ever hold it.
            never = any(p in decision.message for p in (*NEVER_PHRASES, NEVER_ALL)) or (
                "but no node has the label" in decision.message
            )
            assert (
                decision.queue_position is not None
                or never
                or decision.reason in ("Invalid", "QueueNotFound", "QueueForbidden")
            ), decision


def _shuffled(snap: Snapshot, seed: int) -> Snapshot:
    rng = random.Random(seed)

    def shuf(items: Iterable[object]) -> tuple[object, ...]:
        out = list(items)
        rng.shuffle(out)
        return tuple(out)

    return Snapshot(
        nodes=shuf(snap.nodes),  # type: ignore[arg-type]
        queues=shuf(snap.queues),  # type: ignore[arg-type]
        running=shuf(snap.running),  # type: ignore[arg-type]
        pending=shuf(snap.pending),  # type: ignore[arg-type]
    )


@PROFILE
@given(snapshots(), policies, st.integers(0, 1000))
def test_deterministic_and_independent_of_input_order(
    snap: Snapshot, policy: Policy, seed: int
) -> None:
    first = schedule(snap, policy, NOW)
    assert schedule(snap, policy, NOW) == first
    assert schedule(_shuffled(snap, seed), policy, NOW) == first


@PROFILE
@given(snapshots(), policies)
def test_victims_are_whole_gangs_and_the_evictor_fits_afterwards(
    snap: Snapshot, policy: Policy
) -> None:
    result = schedule(snap, policy, NOW)
    running = {r.id: r for r in snap.running}
    pending = {p.id: p for p in snap.pending}
    queues = {q.name: q for q in snap.queues}
    for e in result.evictions:
        victim = running[e.gang]  # a whole running gang, by id
        evictor = pending[e.for_gang]
        if e.reason == "Preempted":
            assert victim.queue == evictor.queue
            assert victim.priority < evictor.priority
        else:
            assert victim.queue != evictor.queue
            assert queues[victim.queue].reclaimable
        res = result.reservations[e.for_gang]
        assert res.start == NOW
        assert len(res.pods) >= evictor.min_member
    # Once every victim has gone, what is bound and what is reserved from now fits.
    _check_fits(snap, _usage_at(snap, result, NOW), "after evictions")


@PROFILE
@given(snapshots(), st.sampled_from([1, 3, 100]))
def test_backfill_never_delays_a_reservation(snap: Snapshot, depth: int) -> None:
    result = schedule(snap, Policy(backfill_depth=depth), NOW)
    for res in result.reservations.values():
        _check_fits(snap, _usage_at(snap, result, res.start), f"at {res.start - NOW:+}")
