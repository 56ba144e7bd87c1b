"""`phalanx run`: kopf watches, the scheduler loop acts.

Why kopf indexes are the cache: kopf lists every indexed resource before it invokes any other
handler (its `operator_indexed` gate), and keeps the indexes current from the watch streams. So
the first call of an ordinary handler proves the view is fully synced — exactly the gate a
scheduler needs before its first cycle (deciding on a partial view overcommits nodes). We watch
namespaces for that first call because a namespace always exists, even on an empty cluster.

The index functions store compact records (`records.py`) rather than bodies, and poke the loop,
so a burst of pod events becomes one debounced cycle.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Mapping
from typing import Any

import kopf

from phalanx.config import OperatorConfig
from phalanx.k8s.api import Api, connect
from phalanx.k8s.leader import LeaseElector
from phalanx.k8s.metrics import Metrics
from phalanx.k8s.records import (
    BudgetRec,
    GroupRec,
    NodeRec,
    PodRec,
    QueueRec,
    budget_record,
    group_record,
    node_record,
    pod_record,
    queue_record,
)
from phalanx.k8s.scheduler import AlwaysLeader, FaultInjection, LeaderGate, Records, Scheduler
from phalanx.k8s.wake import group_wakes, held_pod_released, node_wakes, pod_wakes, queue_wakes

log = logging.getLogger("phalanx.operator")


class NoDiffBase(kopf.DiffBaseStorage):
    """No diff base: we have no create/update handlers, so nothing ever needs one.

    kopf builds a diff base (a deep copy of the body) for every event of every watched resource,
    handlers or not; with thousands of pod events a second during a bind burst that copy was
    about a tenth of the operator's CPU. Returning none skips it (and the essence clean-up after).
    """

    def build(self, *, body: Any, extra_fields: Any = None) -> Any:
        return None

    def fetch(self, *, body: Any) -> Any:
        return None

    def store(self, *, body: Any, patch: Any, essence: Any) -> None:
        return None


class IndexSource:
    """Reads the kopf indexes captured at the first post-sync handler call."""

    def __init__(self) -> None:
        self.indexes: Mapping[str, Any] | None = None
        self.synced = asyncio.Event()

    def capture(self, indexes: Mapping[str, Any]) -> None:
        if self.indexes is None:
            self.indexes = indexes
            self.synced.set()

    def _values(self, name: str) -> list[Any]:
        assert self.indexes is not None
        return [v for _key, store in self.indexes[name].items() for v in store]

    def records(self) -> Records:
        nodes: list[NodeRec] = self._values("phalanx_nodes")
        pods: list[PodRec] = self._values("phalanx_pods")
        groups: list[GroupRec] = self._values("phalanx_groups")
        queues: list[QueueRec] = self._values("phalanx_queues")
        classes = dict(self._values("phalanx_priority_classes"))
        budgets: list[BudgetRec] = self._values("phalanx_budgets")
        return Records(nodes, pods, groups, queues, classes, budgets)


def _previous(kwargs: Mapping[str, Any], index: str, key: str) -> Any:
    """The record an index holds for `key` before this event (None if new)."""
    store = kwargs.get(index, {}).get(key)
    return next(iter(store), None) if store else None


def build_registry(
    config: OperatorConfig, source: IndexSource, poke: Any, kubeconfig: str | None = None
) -> kopf.OperatorRegistry:
    registry = kopf.OperatorRegistry()
    ours = config.scheduler_name

    @kopf.on.startup(registry=registry)
    def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.posting.enabled = False  # our Events say what matters; kopf's would be noise
        settings.watching.server_timeout = 300
        settings.watching.client_timeout = 330
        settings.networking.request_timeout = 60
        settings.batching.worker_limit = 2000
        settings.persistence.diffbase_storage = NoDiffBase()

    @kopf.on.login(registry=registry)
    def login(**kwargs: Any) -> Any:
        # A custom registry gets no default login handlers: use the kubernetes client's config
        # (in-cluster, or the kubeconfig), the same source as our write client. Its loader reads
        # $KUBECONFIG once, at import: an explicit --kubeconfig must be handed to it, or kopf's
        # watches would go to another cluster than our writes.
        if kubeconfig:
            import kubernetes.config.kube_config

            kubernetes.config.kube_config.KUBE_CONFIG_DEFAULT_LOCATION = kubeconfig
        return kopf.login_via_client(**kwargs)

    # The index functions are coroutines on purpose: kopf runs a plain function in a thread pool,
    # and a thread hop per watch event cost more than the record it builds.
    # Each one pokes the loop only for changes that can let a cycle decide something new
    # (wake.py); the previous record comes from the index itself, as kopf passes every index to
    # every handler (and drops an object's entries on deletion, so nothing else must be kept).
    @kopf.index("", "v1", "nodes", registry=registry, id="phalanx_nodes")
    async def phalanx_nodes(body: kopf.Body, name: str, **kw: Any) -> dict[str, NodeRec]:
        rec = node_record(body)
        if node_wakes(_previous(kw, "phalanx_nodes", name), rec):
            poke()
        return {name: rec}

    @kopf.index("", "v1", "pods", registry=registry, id="phalanx_pods")
    async def phalanx_pods(body: kopf.Body, **kw: Any) -> dict[str, PodRec] | None:
        spec, status = body.get("spec", {}), body.get("status", {})
        mine = spec.get("schedulerName") == ours
        holds = bool(spec.get("nodeName")) and status.get("phase") not in ("Succeeded", "Failed")
        if not mine:
            meta = body.get("metadata", {})
            before = _previous(kw, "phalanx_pods", f"{meta.get('namespace')}/{meta.get('name')}")
            if held_pod_released(before, holds):
                poke()
            if not holds:
                return None
        rec = pod_record(body)
        if mine and pod_wakes(_previous(kw, "phalanx_pods", rec.key), rec):
            poke()
        return {rec.key: rec}

    @kopf.index("phalanx.dev", "v1alpha1", "podgroups", registry=registry, id="phalanx_groups")
    async def phalanx_groups(body: kopf.Body, **kw: Any) -> dict[str, GroupRec]:
        rec = group_record(body)
        if group_wakes(_previous(kw, "phalanx_groups", rec.key), rec):
            poke()
        return {rec.key: rec}

    @kopf.index("phalanx.dev", "v1alpha1", "queues", registry=registry, id="phalanx_queues")
    async def phalanx_queues(body: kopf.Body, name: str, **kw: Any) -> dict[str, QueueRec]:
        rec = queue_record(body)
        if queue_wakes(_previous(kw, "phalanx_queues", name), rec):
            poke()
        return {name: rec}

    @kopf.index(
        "scheduling.k8s.io",
        "v1",
        "priorityclasses",
        registry=registry,
        id="phalanx_priority_classes",
    )
    async def phalanx_priority_classes(
        body: kopf.Body, name: str, **_: Any
    ) -> dict[str, tuple[str, int]]:
        return {name: (name, int(body.get("value") or 0))}

    @kopf.index("policy", "v1", "poddisruptionbudgets", registry=registry, id="phalanx_budgets")
    async def phalanx_budgets(body: kopf.Body, **_: Any) -> dict[str, BudgetRec]:
        rec = budget_record(body)
        return {f"{rec.namespace}/{rec.name}": rec}

    @kopf.on.event("", "v1", "namespaces", registry=registry)
    async def synced(**kwargs: Any) -> None:
        source.capture({k: v for k, v in kwargs.items() if k.startswith("phalanx_")})

    return registry


async def run_operator(
    config: OperatorConfig,
    kubeconfig: str | None = None,
    stop: asyncio.Event | None = None,
) -> None:
    """Run until stopped: kopf, the scheduler loop, metrics, and (optionally) the elector."""
    # Room for every bind in flight plus status writes, evictions and the lease.
    api_client = await connect(kubeconfig, pool=config.bind_concurrency + 32)
    api = Api(api_client, component=config.scheduler_name)
    metrics = Metrics()
    metrics.serve(config.metrics_port)
    identity = f"{socket.gethostname()}-{os.getpid()}"
    leader: LeaderGate = AlwaysLeader()
    tasks: list[asyncio.Task[Any]] = []
    if config.leader_election:
        elector = LeaseElector(api, config, identity)
        leader = elector
        tasks.append(asyncio.create_task(elector.run(), name="leader-election"))
    faults = FaultInjection()
    if os.environ.get("PHALANX_FAULT_DIE_AFTER_BINDS"):
        faults.die_after_binds = int(os.environ["PHALANX_FAULT_DIE_AFTER_BINDS"])
    if os.environ.get("PHALANX_FAULT_BIND_DELAY_S"):
        faults.bind_delay_s = float(os.environ["PHALANX_FAULT_BIND_DELAY_S"])
    source = IndexSource()
    scheduler = Scheduler(config, api, source, metrics, leader, faults=faults)
    registry = build_registry(config, source, scheduler.poke, kubeconfig)
    stop_flag: asyncio.Event = stop or asyncio.Event()
    health = f"http://0.0.0.0:{config.health_port}/healthz" if config.health_port else None
    kopf_task = asyncio.create_task(
        kopf.operator(
            registry=registry,
            clusterwide=not config.namespaces,
            namespaces=list(config.namespaces),
            standalone=True,
            liveness_endpoint=health,
            stop_flag=stop_flag,
        ),
        name="kopf",
    )
    tasks.append(asyncio.create_task(scheduler.run(source.synced), name="scheduler"))
    try:
        await kopf_task
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await api_client.close()
