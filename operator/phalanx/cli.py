"""The `phalanx` command line (also installed as the kubectl plugin `kubectl-phalanx`).

Typer gives typed subcommands, help and completion for free; every user-caused failure is a
`DevClusterError` (or similar) printed as one line on stderr with exit code 1, never a traceback.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from phalanx.config import ConfigError, PeerMeasure
from phalanx.core.lifecycle import MemberFailure
from phalanx.devcluster.errors import DevClusterError
from phalanx.inspection.errors import ViewError
from phalanx.inspection.formats import Output, dump

if TYPE_CHECKING:
    from datetime import datetime

    from phalanx.inspection.rows import Explanation

app = typer.Typer(
    help="Phalanx: all-or-nothing, topology-aware, fair-share batch scheduling of GPU gangs.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    # Click's plain help: at 80 columns rich's option tables cut env var names and defaults.
    rich_markup_mode=None,
)
dev_cluster = typer.Typer(
    help="The local control plane (etcd, kube-apiserver, controllers, kwok) with fake GPU nodes.",
    no_args_is_help=True,
)
app.add_typer(dev_cluster, name="dev-cluster")


def _register_simulate() -> None:
    from phalanx.sim.cli import simulate

    app.command("simulate", help="Replay a trace through the scheduling core, no cluster.")(
        simulate
    )


_register_simulate()
err = Console(stderr=True, soft_wrap=True)
NameOpt = Annotated[str, typer.Option("--name", help="Cluster name, for running several.")]


def _log(message: str) -> None:
    err.print(f"[dim]phalanx:[/dim] {message}", highlight=False)


def _env(name: str) -> str:
    return f"PHALANX_{name.upper().replace('-', '_')}"


@app.command("run")
def run(
    topology_levels: Annotated[
        str,
        typer.Option(
            envvar=_env("topology-levels"),
            help="Topology levels from coarse to fine, as NAME=NODE_LABEL_KEY pairs separated "
            "by commas; PodGroups name the levels in spec.topology.",
        ),
    ] = "spine=network.topology.nvidia.com/spine,leaf=network.topology.nvidia.com/block",
    fair_share_resource: Annotated[
        str,
        typer.Option(
            envvar=_env("fair-share-resource"),
            help="The resource fair shares are computed on; other resources are constraints.",
        ),
    ] = "nvidia.com/gpu",
    scheduler_name: Annotated[
        str,
        typer.Option(
            envvar=_env("scheduler-name"), help="The spec.schedulerName pods opt in with."
        ),
    ] = "phalanx",
    namespaces: Annotated[
        str,
        typer.Option(
            envvar=_env("namespaces"),
            help="Namespaces whose pods and PodGroups are watched, comma-separated.",
            show_default="all namespaces",
        ),
    ] = "",
    cycle_interval: Annotated[
        float,
        typer.Option(
            envvar=_env("cycle-interval"),
            help="Seconds between scheduling cycles while nothing changes (a change starts one "
            "at once).",
        ),
    ] = 5.0,
    usage_half_life: Annotated[
        float,
        typer.Option(
            envvar=_env("usage-half-life"),
            help="Half-life in seconds of the decayed usage behind fair share (7 days).",
        ),
    ] = 7 * 24 * 3600,
    backfill: Annotated[
        bool,
        typer.Option(
            envvar=_env("backfill"),
            help="Time-limit backfill with reservations and expected start times (Slurm-style).",
        ),
    ] = True,
    backfill_depth: Annotated[
        int,
        typer.Option(
            envvar=_env("backfill-depth"),
            help="Waiting gangs, in queue order, that get a reservation and an expected start.",
        ),
    ] = 100,
    reclaim: Annotated[
        bool,
        typer.Option(
            envvar=_env("reclaim"),
            help="Evict whole gangs of queues above their deserved share when a queue below "
            "its share needs the GPUs it lent.",
        ),
    ] = True,
    preemption: Annotated[
        bool,
        typer.Option(
            envvar=_env("preemption"),
            help="Within a queue, let a higher-priority gang evict lower-priority gangs whole.",
        ),
    ] = True,
    priority_weight_age: Annotated[
        float,
        typer.Option(
            envvar=_env("priority-weight-age"),
            help="Multifactor weight of a gang's wait (normalised over the waiting gangs).",
        ),
    ] = 1.0,
    priority_weight_size: Annotated[
        float,
        typer.Option(
            envvar=_env("priority-weight-size"),
            help="Multifactor weight of a gang's GPUs (favours larger gangs).",
        ),
    ] = 0.0,
    priority_weight_work: Annotated[
        float,
        typer.Option(
            envvar=_env("priority-weight-work"),
            help="Multifactor weight of requested work, GPUs × time limit (favours less work).",
        ),
    ] = 1.0,
    priority_max_age: Annotated[
        float,
        typer.Option(
            envvar=_env("priority-max-age"),
            help="Seconds of waiting at which the age factor is full (Slurm's PriorityMaxAge; "
            "0: wait / the longest wait pending).",
        ),
    ] = 7 * 24 * 3600.0,
    reserve_after_limits: Annotated[
        float,
        typer.Option(
            envvar=_env("reserve-after-limits"),
            help="A gang holds a binding reservation once it has waited this many of its time "
            "limits (0: this bound off).",
        ),
    ] = 2.0,
    reserve_after: Annotated[
        float,
        typer.Option(
            envvar=_env("reserve-after"),
            help="...or once it has waited this many seconds (0: off; both 0: every gang "
            "within the depth reserves at once).",
        ),
    ] = 24 * 3600.0,
    reserve_after_peers: Annotated[
        float,
        typer.Option(
            envvar=_env("reserve-after-peers"),
            help="...but no sooner than when its slowdown, (wait + limit) / limit, is this many "
            "times the median slowdown of the gangs (of every queue) that started within the "
            "window (0: off).",
        ),
    ] = 1.0,
    reserve_after_peers_by: Annotated[
        PeerMeasure,
        typer.Option(
            envvar=_env("reserve-after-peers-by"),
            help="What of those gangs --reserve-after-peers takes: their slowdown (times the "
            "gang's own limit) or their wait.",
        ),
    ] = PeerMeasure.SLOWDOWN,
    reserve_after_peers_window: Annotated[
        float,
        typer.Option(
            envvar=_env("reserve-after-peers-window"),
            help="Seconds back from now whose starts --reserve-after-peers takes.",
        ),
    ] = 86400.0,
    reserve_after_peers_max: Annotated[
        float,
        typer.Option(
            envvar=_env("reserve-after-peers-max"),
            help="The longest bound --reserve-after-peers sets, in seconds (0: no ceiling).",
        ),
    ] = 7 * 24 * 3600.0,
    reserve_under_share: Annotated[
        bool,
        typer.Option(
            envvar=_env("reserve-under-share"),
            help="A gang of a queue below its deserved share (while another borrows) reserves "
            "before its bound.",
        ),
    ] = True,
    backfill_depth_per_queue: Annotated[
        int,
        typer.Option(
            envvar=_env("backfill-depth-per-queue"),
            help="Binding reservations per queue per cycle (0: no cap beyond --backfill-depth).",
        ),
    ] = 0,
    start_starving_leaves: Annotated[
        float,
        typer.Option(
            envvar=_env("start-starving-leaves"),
            help="A starving gang of at least this many leaves' worth of nodes that fits now "
            "starts before the order: its reservation is honoured (0: off).",
        ),
    ] = 0.5,
    reserve_least_idle: Annotated[
        bool,
        typer.Option(
            envvar=_env("reserve-least-idle"),
            help="Between equally good places for a reservation, take the nodes with the fewest "
            "GPUs free now (the least capacity held idle until it starts).",
        ),
    ] = True,
    bind_concurrency: Annotated[
        int,
        typer.Option(envvar=_env("bind-concurrency"), help="Binding calls in flight at once."),
    ] = 64,
    bind_deadline: Annotated[
        float,
        typer.Option(
            envvar=_env("bind-deadline"),
            help="Seconds a gang's binds may take, retries included, before the gang is rolled "
            "back whole.",
        ),
    ] = 5.0,
    eviction_grace: Annotated[
        int,
        typer.Option(
            envvar=_env("eviction-grace"),
            help="Grace period in seconds of pods evicted by reclaim, preemption or a time limit.",
        ),
    ] = 30,
    member_failure: Annotated[
        MemberFailure,
        typer.Option(
            envvar=_env("member-failure"),
            help="What a running gang that drops below minMember does: evict (whole, so its "
            "controller recreates it whole) or keep (running, marked Degraded); a PodGroup's "
            "spec.memberFailure overrides it.",
        ),
    ] = MemberFailure.EVICT,
    metrics_port: Annotated[
        int,
        typer.Option(
            envvar=_env("metrics-port"), help="Port of the Prometheus /metrics endpoint (0: none)."
        ),
    ] = 8080,
    health_port: Annotated[
        int,
        typer.Option(
            envvar=_env("health-port"), help="Port of the /healthz endpoint of probes (0: none)."
        ),
    ] = 8081,
    leader_election: Annotated[
        bool,
        typer.Option(
            envvar=_env("leader-election"),
            help="Leader election on a coordination.k8s.io Lease; needed for several replicas.",
        ),
    ] = False,
    lease_name: Annotated[
        str, typer.Option(envvar=_env("lease-name"), help="Name of the leader-election Lease.")
    ] = "phalanx-scheduler",
    lease_namespace: Annotated[
        str,
        typer.Option(
            envvar=_env("lease-namespace"), help="Namespace of the leader-election Lease."
        ),
    ] = "kube-system",
    lease_duration: Annotated[
        float,
        typer.Option(
            envvar=_env("lease-duration"),
            help="Seconds a non-leader waits after the last renewal it saw before taking over.",
        ),
    ] = 15.0,
    renew_deadline: Annotated[
        float,
        typer.Option(
            envvar=_env("renew-deadline"),
            help="Seconds after its last renewal that a leader stops acting (below the lease "
            "duration).",
        ),
    ] = 10.0,
    retry_period: Annotated[
        float,
        typer.Option(
            envvar=_env("retry-period"),
            help="Seconds between renewals, and between attempts to acquire the Lease (below "
            "the renew deadline).",
        ),
    ] = 2.0,
    node_lost_seconds: Annotated[
        float,
        typer.Option(
            envvar=_env("node-lost-seconds"),
            help="Seconds a node may be NotReady before the members bound to it count as lost "
            "(their gang is then short of them).",
        ),
    ] = 300.0,
    member_failure_backoff_max_seconds: Annotated[
        float,
        typer.Option(
            envvar=_env("member-failure-backoff-max-seconds"),
            help="Cap in seconds of the wait (10 s, doubling) of a gang evicted for "
            "MemberFailed again and again.",
        ),
    ] = 600.0,
    start_timeout_seconds: Annotated[
        float,
        typer.Option(
            envvar=_env("start-timeout-seconds"),
            help="Seconds a bound member of a running gang may take to start (an image that "
            "cannot be pulled never does) before the gang is evicted whole as a member failure; "
            "0 (the default): never.",
        ),
    ] = 0.0,
    member_failure_limit: Annotated[
        int,
        typer.Option(
            envvar=_env("member-failure-limit"),
            help="The eviction for a member failure that brings a gang's memberFailures to this "
            "is its last: the gang ends Failed (MemberFailuresExceeded) and its workload with "
            "it, instead of restarting again and again (a start timeout, which a Job does not "
            "count against its backoffLimit); 0 (the default): no limit.",
        ),
    ] = 0,
    phantom_grace_seconds: Annotated[
        float,
        typer.Option(
            envvar=_env("phantom-grace-seconds"),
            help="Seconds a PodGroup with minResources and no pods keeps its reservation once "
            "it comes due (then it waits WaitingForPods without one).",
        ),
    ] = 600.0,
    kubeconfig: Annotated[
        str | None,
        typer.Option(
            envvar="KUBECONFIG",
            help="Kubeconfig of the cluster to schedule.",
            show_default="in-cluster config, else ~/.kube/config",
        ),
    ] = None,
    verbose: Annotated[
        bool,
        typer.Option(
            "-v",
            "--verbose",
            envvar=_env("verbose"),
            help="Log at debug level (the operator's and kopf's).",
            show_default="off",
        ),
    ] = False,
) -> None:
    """Run the operator: watch PodGroups, Queues, pods and nodes; schedule gangs."""
    import asyncio
    import logging

    from phalanx.config import build_config, parse_topology
    from phalanx.k8s.operator import run_operator

    cfg = build_config(
        topology_levels=parse_topology(topology_levels),
        fair_share_resource=fair_share_resource,
        scheduler_name=scheduler_name,
        namespaces=tuple(n for n in namespaces.split(",") if n),
        cycle_interval_s=cycle_interval,
        usage_half_life_s=usage_half_life,
        backfill=backfill,
        backfill_depth=backfill_depth,
        reclaim=reclaim,
        preemption=preemption,
        priority_weight_age=priority_weight_age,
        priority_weight_size=priority_weight_size,
        priority_weight_work=priority_weight_work,
        priority_max_age_s=priority_max_age,
        reserve_after_limits=reserve_after_limits,
        reserve_after_s=reserve_after,
        reserve_after_peers=reserve_after_peers,
        reserve_after_peers_by=reserve_after_peers_by.value,
        reserve_after_peers_window_s=reserve_after_peers_window,
        reserve_after_peers_max_s=reserve_after_peers_max,
        reserve_under_share=reserve_under_share,
        backfill_depth_per_queue=backfill_depth_per_queue,
        start_starving_leaves=start_starving_leaves,
        reserve_least_idle=reserve_least_idle,
        bind_concurrency=bind_concurrency,
        bind_deadline_s=bind_deadline,
        eviction_grace_s=eviction_grace,
        member_failure=member_failure.value,
        metrics_port=metrics_port,
        health_port=health_port,
        leader_election=leader_election,
        lease_name=lease_name,
        lease_namespace=lease_namespace,
        lease_duration_s=lease_duration,
        renew_deadline_s=renew_deadline,
        retry_period_s=retry_period,
        node_lost_seconds=node_lost_seconds,
        member_failure_backoff_max_seconds=member_failure_backoff_max_seconds,
        start_timeout_seconds=start_timeout_seconds,
        member_failure_limit=member_failure_limit,
        phantom_grace_seconds=phantom_grace_seconds,
    )
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("kopf").setLevel(logging.INFO if verbose else logging.WARNING)
    asyncio.run(run_operator(cfg, kubeconfig))


@dev_cluster.command("build")
def dev_cluster_build() -> None:
    """Build the control-plane binaries from Go modules (a no-op when they are cached)."""
    from phalanx.devcluster.binaries import ensure_binaries

    bins = ensure_binaries(_log)
    _log(f"binaries ready in {bins.bin_dir}")


@dev_cluster.command("up")
def dev_cluster_up(
    shape: Annotated[str, typer.Option(help="Shape name (deploy/clusters/NAME.yaml) or path.")] = (
        "small"
    ),
    port: Annotated[
        int | None, typer.Option(help="kube-apiserver port on 127.0.0.1 (default: a free one).")
    ] = None,
    name: NameOpt = "phalanx",
    feature_gates: Annotated[
        str,
        typer.Option(
            help="Kubernetes feature gates for every component, NAME=true|false,… "
            "(kwokctl's kubeFeatureGates)."
        ),
    ] = "",
    runtime_config: Annotated[
        str,
        typer.Option(
            help="kube-apiserver --runtime-config, GROUP/VERSION=true,… "
            "(kwokctl's kubeRuntimeConfig)."
        ),
    ] = "",
    native_gangs: Annotated[
        bool,
        typer.Option(
            help="kube-scheduler's own gang scheduling: the gates GenericWorkload, "
            "GangScheduling, TopologyAwareWorkloadScheduling and scheduling.k8s.io/v1alpha2 "
            "(added to --feature-gates / --runtime-config)."
        ),
    ] = False,
) -> None:
    """Start the local cluster with fake GPU nodes; prints KUBECONFIG=<path>."""
    from phalanx.devcluster.cluster import (
        NATIVE_GANG_FEATURE_GATES,
        NATIVE_GANG_RUNTIME_CONFIG,
        up,
    )
    from phalanx.devcluster.shapes import load_shape

    if native_gangs:
        feature_gates = ",".join(v for v in (NATIVE_GANG_FEATURE_GATES, feature_gates) if v)
        runtime_config = ",".join(v for v in (NATIVE_GANG_RUNTIME_CONFIG, runtime_config) if v)
    kubeconfig = up(
        load_shape(shape),
        port=port,
        log=_log,
        name=name,
        feature_gates=feature_gates,
        runtime_config=runtime_config,
    )
    print(f"KUBECONFIG={kubeconfig}")


@dev_cluster.command("down")
def dev_cluster_down(name: NameOpt = "phalanx") -> None:
    """Stop the local cluster and delete its state (the binary cache stays)."""
    from phalanx.devcluster.cluster import down

    if not down(_log, name=name):
        _log("no dev cluster to bring down")


@dev_cluster.command("status")
def dev_cluster_status(
    output: Annotated[str, typer.Option("-o", "--output", help="table or json")] = "table",
    name: NameOpt = "phalanx",
) -> None:
    """Whether the local cluster is up, its shape, and its Ready nodes and GPUs."""
    from phalanx.devcluster.cluster import status

    st = status(name)
    data = {
        "up": st.up,
        "kubeconfig": str(st.kubeconfig),
        "shape": st.shape,
        "nodes": st.nodes,
        "readyNodes": st.ready_nodes,
        "gpus": st.gpus,
    }
    if output == "json":
        print(json.dumps(data))
    elif st.up:
        print(f"up: shape {st.shape}, {st.ready_nodes}/{st.nodes} nodes Ready, {st.gpus} GPUs")
        print(f"KUBECONFIG={st.kubeconfig}")
    else:
        print("down")
    if not st.up:
        raise typer.Exit(3)


@dev_cluster.command("nodes")
def dev_cluster_nodes(name: NameOpt = "phalanx") -> None:
    """List the cluster's nodes with their topology and GPUs."""
    from phalanx.devcluster.cluster import describe_nodes, kubeconfig_path

    rows = describe_nodes(kubeconfig_path(name))
    table = Table("NODE", "SPINE", "LEAF", "GPUS", "PRODUCT", "STATUS")
    for r in rows:
        table.add_row(r["name"], r["spine"], r["leaf"], r["gpus"], r["product"], r["ready"])
    Console().print(table)


@dev_cluster.command("render")
def dev_cluster_render(
    shape: Annotated[str, typer.Option(help="Shape name or path.")] = "small",
    output: Annotated[
        str, typer.Option("-o", "--output", help="json (Node bodies) or lines (for kind)")
    ] = "json",
) -> None:
    """Print a shape's nodes without starting anything (used by deploy/kind/apply-shape.sh)."""
    from phalanx.devcluster.shapes import GPU_RESOURCE, load_shape

    nodes = load_shape(shape).nodes()
    if output == "json":
        print(json.dumps(nodes, indent=1))
        return
    if output != "lines":
        raise DevClusterError(f"unknown output {output!r}: use json or lines")
    skip = {"kubernetes.io/hostname", "kubernetes.io/os", "kubernetes.io/arch", "type"}
    for n in nodes:
        labels = " ".join(f"{k}={v}" for k, v in n["metadata"]["labels"].items() if k not in skip)
        taints = ",".join(
            f"{t['key']}={t['value']}:{t['effect']}" for t in n["spec"].get("taints", [])
        )
        print(n["status"]["allocatable"][GPU_RESOURCE], taints or "-", labels)


# -- the views: `phalanx queue`, `share`, `explain` (logic in phalanx.inspection) ---------

OutputOpt = Annotated[
    Output, typer.Option("-o", "--output", help="table (for people), json or yaml (for scripts).")
]
KubeconfigOpt = Annotated[
    str | None,
    typer.Option("--kubeconfig", envvar="KUBECONFIG", help="Kubeconfig path(s), as kubectl."),
]
ContextOpt = Annotated[str | None, typer.Option("--context", help="Kubeconfig context to use.")]
NamespaceOpt = Annotated[
    str | None,
    typer.Option("-n", "--namespace", help="Namespace (default: the kubeconfig context's)."),
]


@app.command("queue")
def queue_view(
    namespace: NamespaceOpt = None,
    all_namespaces: Annotated[
        bool, typer.Option("-A", "--all-namespaces", help="Gangs of every namespace.")
    ] = False,
    start: Annotated[
        bool, typer.Option("--start", help="Only waiting gangs, soonest expected start first.")
    ] = False,
    output: OutputOpt = Output.TABLE,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
) -> None:
    """Gangs with queue, phase, bound/min, reason, position and ETA (like squeue [--start])."""
    from datetime import UTC, datetime

    from phalanx.inspection import render
    from phalanx.inspection.fetch import Reader
    from phalanx.inspection.pod_gang import alone_note, waiting_alone
    from phalanx.inspection.rows import queue_rows

    if namespace and all_namespaces:
        raise ViewError("-n/--namespace and -A/--all-namespaces exclude each other")
    reader = Reader.connect(kubeconfig, context)
    ns = None if all_namespaces else (namespace or reader.namespace)
    rows = queue_rows(reader.podgroups(ns), start=start)
    if output is not Output.TABLE:
        print(dump([r.to_json() for r in rows], output))
        return
    try:  # pods waiting as gangs of one have no PodGroup, so no row: a line says they wait
        alone = waiting_alone(reader.pending_pods(ns))
    except ViewError:
        alone = []  # may not list pods
    if not rows and not alone:
        err.print(f"no PodGroups{'' if ns is None else f' in namespace {ns}'}", highlight=False)
    if rows:
        render.show(render.queue_table(rows, datetime.now(UTC), ns is None))
    if alone:
        print(alone_note(alone, ns is not None))


@app.command("share")
def share_view(
    output: OutputOpt = Output.TABLE,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
) -> None:
    """Per queue: weight, guarantee, deserved, allocated, borrowed GPUs, usage, fair share."""
    from phalanx.inspection import render
    from phalanx.inspection.fetch import Reader
    from phalanx.inspection.rows import queueless, share_rows

    reader = Reader.connect(kubeconfig, context)
    queues = reader.queues()
    rows = share_rows(queues)
    if output is not Output.TABLE:
        print(dump([r.to_json() for r in rows], output))
        return
    try:
        orphans = queueless(reader.podgroups(None), queues)
    except ViewError:
        orphans = {}  # may not list PodGroups in every namespace: the queues are still shown
    render.show(render.share_table(rows))
    for note in render.share_notes(rows, orphans):
        print(note)


@app.command("explain")
def explain_view(
    podgroup: Annotated[
        str,
        typer.Argument(
            help="The PodGroup's name, or NAMESPACE/NAME as this view prints it; or a pod's "
            "name: its gang's PodGroup, or the pod itself for a gang of one."
        ),
    ],
    namespace: NamespaceOpt = None,
    output: OutputOpt = Output.TABLE,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
) -> None:
    """Why a gang waits, in numbers, and what would let it start."""
    from datetime import UTC, datetime

    from phalanx.inspection.errors import PodGroupNotFound
    from phalanx.inspection.fetch import Reader
    from phalanx.inspection.pod_gang import explain_pod, readable_pod
    from phalanx.inspection.rows import (
        Explanation,
        explanation,
        missing_group,
        recent_events,
        split_name,
        unfinished,
    )

    # Before connecting: a malformed name is the user's to fix whatever the cluster holds.
    given_ns, name = split_name(podgroup, namespace)
    reader = Reader.connect(kubeconfig, context)
    member_of: str | None = None
    now = datetime.now(UTC)
    try:
        obj = reader.podgroup(given_ns or reader.namespace, name)
    except PodGroupNotFound as missing:
        try:  # the pods that still name it (deleted under its running gang?)
            pods = reader.pods_naming(missing.namespace, missing.name)
        except ViewError:
            raise missing from None  # may not list pods: the plain "not found"
        # Pods still naming it are what to say; else the name may be a pod's own.
        pod = None if unfinished(pods) else readable_pod(reader, missing.namespace, name)
        if pod is None:
            raise ViewError(missing_group(missing.namespace, missing.name, pods)) from None
        found_pod = explain_pod(reader, pod, missing.namespace)
        if isinstance(found_pod, Explanation):
            _print_explanation(found_pod, output, now)
            return
        obj, member_of = found_pod, name
    try:  # whose borrowed GPUs could be reclaimed for it; a user may not be allowed to list them
        queues: list[dict[str, Any]] | None = reader.queues()
    except ViewError:
        queues = None
    found = explanation(obj, now, queues)
    uid = str((obj.get("metadata") or {}).get("uid") or "")
    try:  # its history; a user who may not list Events still gets the rest
        events = reader.events(found.namespace, uid) if uid else []
    except ViewError:
        events = []
    found = dataclasses.replace(found, events=recent_events(events), member_of=member_of)
    _print_explanation(found, output, now)


def _print_explanation(found: Explanation, output: Output, now: datetime) -> None:
    from phalanx.inspection import render

    if output is not Output.TABLE:
        print(dump(found.to_json(), output))
    else:
        render.show(render.explanation_text(found, now))


def main() -> None:
    """Entry point: one-line errors for everything a user can cause."""
    # As the kubectl plugin (`kubectl phalanx …` runs `kubectl-phalanx …`), name it so in help.
    invoked_as = sys.argv[0].rsplit("/", 1)[-1] if sys.argv else ""
    prog = "kubectl phalanx" if invoked_as.startswith("kubectl-") else None
    try:
        app(prog_name=prog)
    except (DevClusterError, ConfigError, ViewError) as exc:
        print(f"phalanx: error: {exc}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
