"""Crash safety: the operator dies abruptly mid-gang, is restarted, and the cluster heals.

A test-only switch (`PHALANX_FAULT_DIE_AFTER_BINDS=N`) makes the operator `_exit` right after its
N-th successful bind; N is drawn (seeded) below the gang size, so every kill lands while a gang is
partly bound. Each round restarts the operator with a new N; at the end a clean operator runs.
Throughout, a watcher checks that no pod is ever bound to two nodes; at the end, no gang is partly
bound, every gang is whole, and no node is overcommitted. The time from each restart until no gang
is partly bound is printed (and collected by `make chaos` into bench/results/chaos.json).
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import watch
from kubernetes.client.exceptions import ApiException

from tests.integration.conftest import Cluster
from tests.integration.objects import gang_pod, pod_group
from tests.integration.operator_fixture import OperatorProcess
from tests.integration.waiting import wait_for

pytestmark = pytest.mark.integration
ROUNDS = int(os.environ.get("PHALANX_CHAOS_ROUNDS", "5"))
SEED = int(os.environ.get("PHALANX_CHAOS_SEED", "20261130"))
PODS, GPUS = 8, 8  # one gang = 64 GPUs: two fit in the 128-GPU `small` cluster
RESULTS = os.environ.get("PHALANX_CHAOS_RESULTS")


class BindWatch:
    """Every (pod uid → node) ever seen; a second, different node for one uid is a double bind.

    It also notes each moment a gang stops being partly bound (`healed_at`): from the watch, which
    sees every transition in order, rather than by polling, which missed the moment when a
    restarted operator rolled a gang back and bound it again within one poll.
    """

    def __init__(self, cluster: Cluster, ns: str) -> None:
        self.cluster, self.ns = cluster, ns
        self.nodes: dict[str, str] = {}
        self.double: list[str] = []
        self.healed_at: list[float] = []
        self._live: dict[str, tuple[str, bool]] = {}  # uid → (gang, bound), not being deleted
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _partial(self) -> bool:
        bound: dict[str, int] = {}
        for gang, is_bound in self._live.values():
            bound[gang] = bound.get(gang, 0) + is_bound
        return any(0 < n < PODS for n in bound.values())

    def _run(self) -> None:
        w = watch.Watch()
        version: str | None = None
        while not self._stop.is_set():
            kwargs: dict[str, Any] = {"timeout_seconds": 2}
            if version:
                kwargs["resource_version"] = version  # go on where the last stream ended
            else:
                self._live.clear()  # a fresh stream begins with every pod ADDED
            try:
                for ev in w.stream(self.cluster.core.list_namespaced_pod, self.ns, **kwargs):
                    self._record(ev["type"], ev["object"])
                    if self._stop.is_set():
                        break
                version = w.resource_version
            except ApiException as exc:
                if exc.status != 410:
                    raise
                version = None  # too old: start over from a fresh list

    def _record(self, kind: str, pod: Any) -> None:
        uid, node = pod.metadata.uid, pod.spec.node_name
        if node:
            seen = self.nodes.setdefault(uid, node)
            if seen != node:
                self.double.append(f"{pod.metadata.name}: {seen} then {node}")
        was_partial = self._partial()
        gang = (pod.metadata.labels or {}).get("phalanx.dev/pod-group")
        if kind == "DELETED" or pod.metadata.deletion_timestamp is not None or not gang:
            self._live.pop(uid, None)
        else:
            self._live[uid] = (gang, bool(node))
        if was_partial and not self._partial():
            self.healed_at.append(time.monotonic())

    def healed_since(self, started: float) -> float | None:
        """Seconds from `started` to the first moment no gang was partly bound, if any."""
        return next((t - started for t in self.healed_at if t >= started), None)

    def __enter__(self) -> BindWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


def bound_counts(cluster: Cluster, ns: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for p in cluster.core.list_namespaced_pod(ns).items:
        group = (p.metadata.labels or {}).get("phalanx.dev/pod-group")
        if group and p.metadata.deletion_timestamp is None:
            counts.setdefault(group, 0)
            counts[group] += 1 if p.spec.node_name else 0
    return counts


def partial_gangs(cluster: Cluster, ns: str) -> list[str]:
    return [g for g, n in bound_counts(cluster, ns).items() if 0 < n < PODS]


def assert_no_overcommit(cluster: Cluster) -> None:
    used: dict[str, int] = {}
    for p in cluster.core.list_pod_for_all_namespaces().items:
        if p.spec.node_name and p.status.phase not in ("Succeeded", "Failed"):
            for c in p.spec.containers:
                gpus = int(((c.resources.requests or {}).get("nvidia.com/gpu")) or 0)
                used[p.spec.node_name] = used.get(p.spec.node_name, 0) + gpus
    for node in cluster.core.list_node().items:
        cap = int(node.status.allocatable.get("nvidia.com/gpu", "0"))
        assert used.get(node.metadata.name, 0) <= cap, f"{node.metadata.name} overcommitted"


@pytest.fixture
def ns(namespace: str, phalanx_api: Any, no_shared_operator: None) -> Iterator[str]:
    yield namespace


def test_killed_mid_gang_and_restarted_no_gang_stays_partly_bound(
    cluster: Cluster, phalanx_api: Any, ns: str, tmp_path: Path
) -> None:
    custom = phalanx_api
    rng = random.Random(SEED)
    heal_times: list[float] = []

    def submit(name: str) -> None:
        custom.create_namespaced_custom_object(
            "phalanx.dev", "v1alpha1", ns, "podgroups", pod_group(name, PODS)
        )
        for i in range(PODS):
            cluster.core.create_namespaced_pod(ns, gang_pod(f"{name}-{i}", name, GPUS))

    with BindWatch(cluster, ns) as binds:
        for round_no in range(ROUNDS):
            # Make room: keep only the partly bound gangs (for the restart to repair).
            for group, n in bound_counts(cluster, ns).items():
                if n in (0, PODS):
                    cluster.core.delete_collection_namespaced_pod(
                        ns, label_selector=f"phalanx.dev/pod-group={group}", grace_period_seconds=0
                    )
            wait_for(
                lambda: all(0 < n < PODS for n in bound_counts(cluster, ns).values()),
                timeout=60,
                what="whole and unbound gangs of earlier rounds to be deleted",
            )
            submit(f"g{round_no}")
            die_after = rng.randint(1, PODS - 1)
            op = OperatorProcess(
                cluster.kubeconfig,
                tmp_path,
                name=f"round{round_no}",
                env={"PHALANX_FAULT_DIE_AFTER_BINDS": str(die_after)},
            )
            started = time.monotonic()
            op.start()
            while not op.exited():
                if time.monotonic() - started > 90:
                    op.kill()
                    pytest.fail(f"round {round_no}: the operator never hit its fault\n{op.tail()}")
                time.sleep(0.05)
            assert op.proc is not None and op.proc.returncode == 137, op.tail()
            if (healed := binds.healed_since(started)) is not None:
                heal_times.append(healed)  # (a kill before the repair ended leaves none)
            partial = partial_gangs(cluster, ns)
            assert partial, (
                f"round {round_no}: the kill after {die_after} binds left no partial gang"
            )
            print(f"round {round_no}: died after {die_after} binds; partly bound: {partial}")

        final = OperatorProcess(cluster.kubeconfig, tmp_path, name="final")
        started = time.monotonic()
        final.start()
        try:
            wait_for(
                lambda: not partial_gangs(cluster, ns),
                timeout=60,
                what="no gang to be partly bound after the final restart",
            )
            wait_for(
                lambda: binds.healed_since(started) is not None,
                timeout=30,
                what="the pod watch to have seen the last partly bound gang end",
            )
            heal_times.append(binds.healed_since(started) or 0.0)
            # Two 64-GPU gangs fit the cluster: those bind whole, any other waits unbound.
            counts = wait_for(
                lambda: (
                    (c := bound_counts(cluster, ns))
                    and sum(1 for n in c.values() if n == PODS) == min(2, len(c))
                    and c
                ),
                timeout=90,
                what="as many gangs as fit (two) to be bound whole",
            )
            assert all(n in (0, PODS) for n in counts.values()), counts
            assert_no_overcommit(cluster)
        finally:
            final.stop()
    assert not binds.double, f"pods bound twice: {binds.double}"
    print(f"restart → no partial gang, seconds: {[round(t, 2) for t in heal_times]}")
    if RESULTS:
        Path(RESULTS).write_text(
            json.dumps(
                {
                    "rounds": ROUNDS,
                    "seed": SEED,
                    "restart_to_no_partial_s": [round(t, 3) for t in heal_times],
                    "restart_to_no_partial_s_max": round(max(heal_times), 3),
                },
                indent=1,
            )
            + "\n"
        )
