"""`phalanx run`: kopf and the informers watch, the scheduler loop acts.

Pods, nodes and PodGroups — the resources with many events — are kept by plain list/watch
informers (`informer.py`): kopf's per-event machinery was the operator's largest cost during a
bind burst. Queues, PriorityClasses and PodDisruptionBudgets stay kopf indexes: few events, and
kopf gives them retries, login and the liveness endpoint.

Why the view is known to be synced: kopf lists every indexed resource before it invokes any other
handler (its `operator_indexed` gate), so the first call of an ordinary handler proves its indexes
are complete — we watch namespaces for that first call because a namespace always exists, even on
an empty cluster — and each informer sets its own `synced` after its first full list. The first
cycle waits for all of them: deciding on a partial view overcommits nodes.

The index functions and informers store compact records (`records.py`) rather than bodies, and
poke the loop only for changes that can let a cycle decide something new (`wake.py`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from collections.abc import Callable, Mapping
from typing import Any

import kopf
from kopf._cogs.structs import references  # Insights: not re-exported by kopf

from phalanx.config import OperatorConfig
from phalanx.core.autogang import QUEUE_LABEL, Workload
from phalanx.core_build import core_build
from phalanx.k8s import stop_signals
from phalanx.k8s.api import GROUP, VERSION, Api, ApiError, connect, drain
from phalanx.k8s.cluster_view import Workloads
from phalanx.k8s.informer import Informer
from phalanx.k8s.kopf_rescan import rescan_unserved
from phalanx.k8s.kopf_vanished import tolerate_vanished_kinds
from phalanx.k8s.leader import LeaseElector
from phalanx.k8s.metrics import Metrics, listen_error
from phalanx.k8s.records import (
    NATIVE_GROUP,
    NATIVE_VERSION,
    BudgetRec,
    GroupRec,
    JobRec,
    NodeRec,
    PodRec,
    QueueRec,
    budget_record,
    group_record,
    job_record,
    native_group_record,
    node_record,
    pod_record,
    queue_record,
)
from phalanx.k8s.scheduler import AlwaysLeader, FaultInjection, LeaderGate, Records, Scheduler
from phalanx.k8s.wake import group_wakes, held_pod_released, node_wakes, pod_wakes, queue_wakes
from phalanx.k8s.workload_records import WATCHED, workload_record

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


GONE_MEMORY_S = 600.0
"""How long a vanished, disrupted pod is remembered: a cycle runs within a second of it going
(and at least every `cycle_interval_s`), so this only has to outlast a slow cycle; longer would
count it against a gang restarted since, which `cluster_view` also rules out by time."""


class IndexSource:
    """The watched records: kopf's indexes (captured at the first post-sync handler call) and
    the informers of nodes, pods and PodGroups."""

    def __init__(self) -> None:
        self.indexes: Mapping[str, Any] | None = None
        self.kopf_synced = asyncio.Event()
        self.synced = asyncio.Event()
        self.nodes: list[Informer[NodeRec]] = []
        self.pods: list[Informer[PodRec]] = []
        self.groups: list[Informer[GroupRec]] = []
        self.gone: dict[str, tuple[PodRec, float]] = {}
        """Bound pods of ours that left the API evicted from outside (`DisruptionTarget`), by
        uid, with when the watch saw them go (`Records.gone`)."""

    def note_gone(self, pod: PodRec, now: float) -> None:
        """Remember a bound pod of ours that vanished with a `DisruptionTarget` condition, for
        `GONE_MEMORY_S`: a Job's drained pod can be Failed, released by its controller and
        deleted before a cycle (debounced 50–200 ms) sees it, and would then count as deleted
        by someone, a failure of the gang's own."""
        for uid in [u for u, (_, at) in self.gone.items() if now - at > GONE_MEMORY_S]:
            del self.gone[uid]
        if pod.disruption and pod.node_name:
            self.gone[pod.uid] = (pod, now)

    def capture(self, indexes: Mapping[str, Any]) -> None:
        if self.indexes is None:
            self.indexes = indexes
            self.kopf_synced.set()

    async def wait_synced(self) -> None:
        """Set `synced` once kopf and every informer have listed everything."""
        await self.kopf_synced.wait()
        for informer in self.informers():
            await informer.synced.wait()
        self.synced.set()

    def informers(self) -> list[Informer[Any]]:
        return [*self.nodes, *self.pods, *self.groups]

    def _values(self, name: str) -> list[Any]:
        assert self.indexes is not None
        index = self.indexes.get(name)
        return [v for _key, store in index.items() for v in store] if index is not None else []

    def records(self) -> Records:
        nodes = [n for informer in self.nodes for n in informer.records.values()]
        pods = [p for informer in self.pods for p in informer.records.values()]
        groups = [g for informer in self.groups for g in informer.records.values()]
        queues: list[QueueRec] = self._values("phalanx_queues")
        classes = dict(self._values("phalanx_priority_classes"))
        budgets: list[BudgetRec] = self._values("phalanx_budgets")
        jobs: dict[str, JobRec] = {j.uid: j for j in self._values("phalanx_jobs")}
        return Records(
            nodes,
            pods,
            groups,
            queues,
            classes,
            budgets,
            jobs,
            self._workloads(jobs),
            gone=list(self.gone.values()),
        )

    def _workloads(self, jobs: Mapping[str, JobRec]) -> Workloads:
        by_uid: dict[str, Workload] = {
            j.uid: j.workload for j in jobs.values() if j.workload is not None
        }
        lws: dict[tuple[str, str], Workload] = {}
        for _group, plural in WATCHED:
            for w in self._values(f"phalanx_workloads_{plural}"):
                by_uid[w.ref.uid] = w
                if w.ref.kind == "LeaderWorkerSet":
                    lws[(w.namespace, w.ref.name)] = w
        return Workloads(by_uid, lws, dict(self._values("phalanx_namespace_queues")))


def _node_key(body: Mapping[str, Any]) -> tuple[str, NodeRec]:
    return str(body.get("metadata", {}).get("name", "")), node_record(body)


def _pod_key(body: Mapping[str, Any]) -> tuple[str, PodRec]:
    rec = pod_record(body)
    return rec.key, rec


def _group_key(body: Mapping[str, Any]) -> tuple[str, GroupRec]:
    rec = group_record(body)
    return rec.key, rec


def _held_pod_key(body: Mapping[str, Any]) -> tuple[str, PodRec | None]:
    """Another scheduler's pod, kept only while it holds capacity (the field selector already
    asks for that; a pod that stops matching arrives as a deletion)."""
    rec = pod_record(body)
    return rec.key, rec if rec.holds_capacity else None


async def native_groups_served(api: Api, config: OperatorConfig) -> bool:
    """Whether native `scheduling.k8s.io/v1alpha2` PodGroups can be watched: the API server
    serves them (Kubernetes 1.36 with GenericWorkload and the runtime config on) and we may list
    them. Probed once, at start, with a one-item list: an informer of a kind that is not served
    would never sync and hold the first cycle for ever."""
    ns = config.namespaces[0] if config.namespaces else None
    try:
        if ns is None:
            call = api.custom.list_cluster_custom_object(
                NATIVE_GROUP, NATIVE_VERSION, "podgroups", limit=1, _preload_content=False
            )
        else:
            call = api.custom.list_namespaced_custom_object(
                NATIVE_GROUP, NATIVE_VERSION, ns, "podgroups", limit=1, _preload_content=False
            )
        await drain(call)
    except ApiError as exc:
        why = "not served" if exc.status == 404 else f"refused ({exc.status})"
        log.info(
            "native PodGroups (%s/%s) %s: pods naming one (spec.schedulingGroup) wait as orphans",
            NATIVE_GROUP,
            NATIVE_VERSION,
            why,
        )
        return False
    return True


def build_informers(
    config: OperatorConfig,
    api: Api,
    source: IndexSource,
    poke: Callable[[], None],
    native: bool = False,
) -> None:
    """The node, pod and PodGroup informers, with the wake rules of `wake.py` as their change
    hooks; `native`: native `scheduling.k8s.io` PodGroups too (`native_groups_served`)."""
    ours = config.scheduler_name

    def node_changed(before: NodeRec | None, after: NodeRec | None) -> None:
        if after is None or node_wakes(before, after):
            poke()

    def pod_changed(before: PodRec | None, after: PodRec | None) -> None:
        if after is None and before is not None and before.disruption:
            source.note_gone(before, time.time())
        # A pod of ours gone frees its capacity or breaks its gang: always news.
        if after is None or pod_wakes(before, after):
            poke()

    def held_changed(before: PodRec | None, after: PodRec | None) -> None:
        if held_pod_released(before, after is not None):
            poke()

    def group_changed(before: GroupRec | None, after: GroupRec | None) -> None:
        # A PodGroup deleted leaves its pods orphaned (and may free a queue's share): news.
        if after is None or group_wakes(before, after):
            poke()

    source.nodes.append(Informer("nodes", api.core.list_node, _node_key, node_changed))
    mine = f"spec.schedulerName={ours}"
    # Other schedulers' pods only while bound and not finished: their pending ones (and their
    # whole lives on a busy cluster) never reach us.
    held = (
        f"spec.schedulerName!={ours},spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"
    )
    # PodGroups: every bind writes their status twice, and each echo came through kopf too.
    group_scopes: list[tuple[str, Any, tuple[str, ...]]] = (
        [
            (f" in {ns}", api.custom.list_namespaced_custom_object, (GROUP, VERSION, ns))
            for ns in config.namespaces
        ]
        if config.namespaces
        else [("", api.custom.list_cluster_custom_object, (GROUP, VERSION))]
    )
    if native:
        # Before ours in `groups`: a PodGroup of ours with the same namespace and name wins.
        levels = {key: name for name, key in config.topology_levels}

        def native_key(body: Mapping[str, Any]) -> tuple[str, GroupRec]:
            rec = native_group_record(body, levels)
            return rec.key, rec

        native_scopes: list[tuple[str, Any, tuple[str, ...]]] = (
            [
                (
                    f" in {ns}",
                    api.custom.list_namespaced_custom_object,
                    (NATIVE_GROUP, NATIVE_VERSION, ns),
                )
                for ns in config.namespaces
            ]
            if config.namespaces
            else [("", api.custom.list_cluster_custom_object, (NATIVE_GROUP, NATIVE_VERSION))]
        )
        for where, call, args in native_scopes:
            source.groups.append(
                Informer(
                    f"native podgroups{where}",
                    call,
                    native_key,
                    group_changed,
                    args=(*args, "podgroups"),
                )
            )
    for where, call, args in group_scopes:
        source.groups.append(
            Informer(
                f"podgroups{where}", call, _group_key, group_changed, args=(*args, "podgroups")
            )
        )
    scopes: list[tuple[str, Any, tuple[str, ...]]] = (
        [(f" in {ns}", api.core.list_namespaced_pod, (ns,)) for ns in config.namespaces]
        if config.namespaces
        else [("", api.core.list_pod_for_all_namespaces, ())]
    )
    for where, call, args in scopes:
        source.pods.append(
            Informer(
                f"pods of ours{where}",
                call,
                _pod_key,
                pod_changed,
                field_selector=mine,
                args=args,
            )
        )
    # Other schedulers' bound pods on *every* namespace, whatever `namespaces` says: what
    # `namespaces` limits is which gangs Phalanx schedules, not which pods use a node's capacity
    # (DaemonSets and other teams' pods share the nodes; watched in our namespaces only, they
    # were not counted and nodes were overcommitted).
    source.pods.append(
        Informer(
            "pods of others",
            api.core.list_pod_for_all_namespaces,
            _held_pod_key,
            held_changed,
            field_selector=held,
        )
    )


def _previous(kwargs: Mapping[str, Any], index: str, key: str) -> Any:
    """The record an index holds for `key` before this event (None if new)."""
    store = kwargs.get(index, {}).get(key)
    return next(iter(store), None) if store else None


def build_registry(
    config: OperatorConfig, source: IndexSource, poke: Any, kubeconfig: str | None = None
) -> kopf.OperatorRegistry:
    registry = kopf.OperatorRegistry()

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

    @kopf.index("batch", "v1", "jobs", registry=registry, id="phalanx_jobs")
    async def phalanx_jobs(body: kopf.Body, **kw: Any) -> dict[str, JobRec]:
        rec = job_record(body)
        previous = _previous(kw, "phalanx_jobs", rec.uid)
        if previous is None or previous.state != rec.state or previous.workload != rec.workload:
            poke()  # a Job that ends ends its gang; a Job resized re-makes its pending gang
        return {rec.uid: rec}

    # Workloads of the kinds automatic ganging knows (core.autogang): only when installed (kopf
    # watches a kind once its CRD exists). A change of size or annotations may re-make a gang.
    def workload_index(group: str, plural: str) -> None:
        index_id = f"phalanx_workloads_{plural}"

        @kopf.index(group, plural, registry=registry, id=index_id)
        async def index(body: kopf.Body, **kw: Any) -> dict[str, Workload]:
            rec = workload_record(body)
            if rec is None:
                return {}
            if _previous(kw, index_id, rec.ref.uid) != rec:
                poke()
            return {rec.ref.uid: rec}

    for group, plural in WATCHED:
        workload_index(group, plural)

    @kopf.index("", "v1", "namespaces", registry=registry, id="phalanx_namespace_queues")
    async def phalanx_namespace_queues(
        body: kopf.Body, name: str, **kw: Any
    ) -> dict[str, tuple[str, str]]:
        """A namespace's `phalanx.dev/queue` label: the queue of its pods' automatic gangs."""
        queue = (body.get("metadata", {}).get("labels") or {}).get(QUEUE_LABEL)
        if queue is None:
            return {}
        previous = _previous(kw, "phalanx_namespace_queues", name)
        if previous is None or previous[1] != queue:
            poke()
        return {name: (name, queue)}

    @kopf.on.event("", "v1", "namespaces", registry=registry)
    async def synced(**kwargs: Any) -> None:
        source.capture({k: v for k, v in kwargs.items() if k.startswith("phalanx_")})

    return registry


def check_port_free(flag: str, port: int) -> None:
    """Refuse at start a port kopf's liveness server could not bind (it would otherwise fail
    inside kopf, after the informers started, as a traceback). 0: not served."""
    if not port:
        return
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("0.0.0.0", port))
        except OSError as exc:
            raise listen_error(flag, port, exc) from exc


async def _own_signals(kopf_ready: asyncio.Event, stop_flag: asyncio.Event) -> None:
    """Once kopf has installed its signal handlers (it raises `kopf_ready` after), replace them
    with ours (`stop_signals`): the same stop, without kopf's traceback on a repeat."""
    await kopf_ready.wait()
    stop_signals.install(stop_flag)


async def run_operator(
    config: OperatorConfig,
    kubeconfig: str | None = None,
    stop: asyncio.Event | None = None,
) -> None:
    """Run until stopped: kopf, the scheduler loop, metrics, and (optionally) the elector."""
    log.info("scheduling core: %s", core_build())
    # The ports first: one that is taken is a one-line error before anything connects.
    metrics = Metrics()
    metrics.serve(config.metrics_port)
    check_port_free("--health-port", config.health_port)
    # Room for every bind in flight plus status writes, evictions and the lease.
    api_client = await connect(kubeconfig, pool=config.bind_concurrency + 32)
    api = Api(api_client, component=config.scheduler_name)
    identity = f"{socket.gethostname()}-{os.getpid()}"
    leader: LeaderGate = AlwaysLeader()
    tasks: list[asyncio.Task[Any]] = []
    if config.leader_election:
        partition = os.environ.get("PHALANX_FAULT_LEASE_PARTITION_AFTER_S")
        elector = LeaseElector(
            api, config, identity, float(partition) if partition is not None else None
        )
        leader = elector
        tasks.append(asyncio.create_task(elector.run(), name="leader-election"))
    faults = FaultInjection()
    if os.environ.get("PHALANX_FAULT_DIE_AFTER_BINDS"):
        faults.die_after_binds = int(os.environ["PHALANX_FAULT_DIE_AFTER_BINDS"])
    if os.environ.get("PHALANX_FAULT_DIE_AFTER_RECORDS"):
        faults.die_after_records = int(os.environ["PHALANX_FAULT_DIE_AFTER_RECORDS"])
    faults.die_in_rollback = os.environ.get("PHALANX_FAULT_DIE_IN_ROLLBACK") == "1"
    faults.die_when_whole = os.environ.get("PHALANX_FAULT_DIE_WHEN_WHOLE") == "1"
    if os.environ.get("PHALANX_FAULT_BIND_DELAY_S"):
        faults.bind_delay_s = float(os.environ["PHALANX_FAULT_BIND_DELAY_S"])
    source = IndexSource()
    scheduler = Scheduler(config, api, source, metrics, leader, faults=faults)
    registry = build_registry(config, source, scheduler.poke, kubeconfig)
    native = await native_groups_served(api, config)
    if native:
        log.info("watching native PodGroups (%s/%s)", NATIVE_GROUP, NATIVE_VERSION)
    build_informers(config, api, source, scheduler.poke, native=native)
    for informer in source.informers():
        tasks.append(asyncio.create_task(informer.run(), name=f"informer {informer.what}"))
    tasks.append(asyncio.create_task(source.wait_synced(), name="sync gate"))
    stop_flag: asyncio.Event = stop or asyncio.Event()
    kopf_ready = asyncio.Event()
    health = f"http://0.0.0.0:{config.health_port}/healthz" if config.health_port else None
    # Kinds whose CRD is deleted while we run must not end kopf (`kopf_vanished.py`).
    tolerate_vanished_kinds()
    # Ours, so that the rescan of kinds installed later (`kopf_rescan.py`) works on kopf's own.
    settings = kopf.OperatorSettings()
    insights = references.Insights()

    @kopf.on.startup(registry=registry)
    async def start_rescan(**_: Any) -> None:
        # Started from kopf's startup, not here: kopf's API calls read their credentials from a
        # context variable kopf sets in its own task (a task made here had none, and every
        # rescan failed unseen).
        tasks.append(
            asyncio.create_task(
                rescan_unserved(WATCHED, registry, settings, insights), name="kopf rescan"
            )
        )

    kopf_task = asyncio.create_task(
        kopf.operator(
            registry=registry,
            settings=settings,
            insights=insights,
            clusterwide=not config.namespaces,
            namespaces=list(config.namespaces),
            standalone=True,
            liveness_endpoint=health,
            stop_flag=stop_flag,
            ready_flag=kopf_ready,
        ),
        name="kopf",
    )
    tasks.append(asyncio.create_task(_own_signals(kopf_ready, stop_flag), name="signals"))
    tasks.append(asyncio.create_task(scheduler.run(source.synced), name="scheduler"))
    try:
        await kopf_task
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await scheduler.stop()
        await api_client.close()
