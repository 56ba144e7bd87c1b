"""Phalanx side by side with the gang schedulers people choose between: `make bench-peers`.

On one local cluster (`large` by default: 1,024 nodes, 8,192 GPUs under 4 spines and 32 leaves),
brought up with kube-scheduler's own gang scheduling on (Kubernetes 1.36: feature gates
GenericWorkload, GangScheduling, TopologyAwareWorkloadScheduling and the runtime config
scheduling.k8s.io/v1alpha2=true, passed by `phalanx dev-cluster up`'s `--native-gangs`), the same
workloads go through each scheduler in turn, PEERS_RUNS times (3), the order alternating run by
run:

- **phalanx**: the operator (`phalanx run`, on the compiled core when `make bench-peers` starts
  this), each gang a `phalanx.dev` PodGroup, its pods `schedulerName: phalanx`;
- **native**: kube-scheduler (the same cluster's), each gang a `scheduling.k8s.io/v1alpha2`
  PodGroup (`schedulingPolicy.gang.minCount`), its pods naming it in
  `spec.schedulingGroup.podGroupName`;
- **volcano**: Volcano's vc-scheduler, only when VOLCANO_SCHEDULER names an executable and
  VOLCANO_CRDS the volcano repo's `config/crd/volcano/bases` (bench/README.md says how to build
  one); its CRDs are applied, its `default` Queue opened by hand (no vc-controller-manager), each
  gang a `scheduling.volcano.sh` PodGroup, its pods `schedulerName: volcano`; otherwise skipped
  with one line.

Workloads (each side gets the same pods; one-GPU pods unless said):
- `throughput-8`, `throughput-64`: 2,000 pods in gangs of 8 (250 gangs) and 1,984 in gangs of 64
  (31 gangs); each gang's PodGroup first, then its pods, 16 creates in flight. Figures: seconds
  from the last create to all bound (the issue's measure), pods per second from the first create
  to the last bind, gang latency p50/p95 (a gang's last member created → all its members bound),
  and the scheduler's CPU seconds per 1,000 pods over that window (its process, from /proc);
- `conflict`: two gangs of whole-node pods (8 GPUs) that cannot both fit (each needs just over
  half the nodes), created interleaved; the loser's bound pods are sampled every 0.2 s until the
  winner is bound whole and 5 s more: the most ever bound (all-or-nothing says 0);
- `leaves`: 16 gangs of 16 whole-node pods on an empty cluster (each fits in half a leaf), with
  and without a topology hint (Phalanx `topology.required: leaf`; native
  `schedulingConstraints.topology: [{key: network.topology.nvidia.com/block}]`): leaves spanned
  per gang, median and worst;
- `reclaim`: two queues of equal share (Phalanx: weight 1 and a guarantee of half the GPUs each;
  Volcano: two Queues of weight 1, `reclaimable: true`, opened by hand). The lender fills the
  whole cluster with gangs of 8 whole-node pods, half of it borrowed from the idle claimant; once
  every lender gang is reported Running (and 2 s more: a borrowed gang has run a while when it is
  reclaimed), the claimant asks for a gang of max(8, nodes/64) whole-node pods (16 on `large`),
  within its share. Figures: seconds from the claimant's last create to its gang bound whole,
  the lender's pods evicted, and the lender's gangs left running partly (some members evicted,
  the others still bound: all-or-nothing broken on the way out), read 5 s after the claimant is
  whole. Volcano reclaims only with its `reclaim` action, which the chart's default
  configuration leaves out: for this workload vc-scheduler is restarted with `enqueue, allocate,
  backfill, reclaim` (the order of Volcano's own CI configuration, without `preempt`), the same
  plugins.
  Native gang scheduling has no queues to lend or reclaim: not measured there.

Results: bench/results/peers.json (PEERS_SHAPE=small writes peers-small.json, for development).
"""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client

from phalanx.devcluster import cluster as devcluster
from phalanx.devcluster import versions
from phalanx.devcluster.shapes import load_shape

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
from tests.integration.conftest import ensure_queue  # noqa: E402
from tests.integration.objects import TOLERATE_KWOK, container  # noqa: E402
from tests.integration.operator_fixture import apply_crds, free_port  # noqa: E402

from e2e_bench import (  # noqa: E402
    BindRecorder,
    Cluster,
    cpu_seconds,
    drop_namespace,
    fresh_namespace,
)

NAME = "phalanx-bench-peers"
SHAPE = os.environ.get("PEERS_SHAPE", "large")
RUNS = int(os.environ.get("PEERS_RUNS", "3"))
ONLY = {w for w in os.environ.get("PEERS_ONLY", "").split(",") if w}
"""PEERS_ONLY=throughput-8,conflict…: only those workloads (the results file is still written)."""
OUT = REPO / "bench" / "results" / ("peers.json" if SHAPE == "large" else f"peers-{SHAPE}.json")
LEAF = "network.topology.nvidia.com/block"
NATIVE = ("scheduling.k8s.io", "v1alpha2")
VOLCANO = ("scheduling.volcano.sh", "v1beta1")
CREATES_IN_FLIGHT = 16
SAMPLE_S = 0.2


PIDS: dict[str, int] = {}
"""Scheduler processes we started (phalanx, volcano), by side."""


def log(msg: str) -> None:
    print(f"[peers] {msg}", file=sys.stderr, flush=True)


# -- the schedulers ----------------------------------------------------------------------------


def volcano_binary() -> tuple[Path, Path] | None:
    """VOLCANO_SCHEDULER (a vc-scheduler binary) and VOLCANO_CRDS (the volcano repo's
    config/crd/volcano/bases), if both are usable; otherwise one line and None."""
    value = os.environ.get("VOLCANO_SCHEDULER", "")
    if not value:
        log("Volcano skipped: VOLCANO_SCHEDULER is not set (bench/README.md says how to build one)")
        return None
    path = Path(value)
    if not path.is_file() or not os.access(path, os.X_OK):
        log(f"Volcano skipped: VOLCANO_SCHEDULER={value} is not an executable file")
        return None
    crds = Path(os.environ.get("VOLCANO_CRDS", ""))
    needed = [crds / f"scheduling.volcano.sh_{kind}.yaml" for kind in ("podgroups", "queues")]
    if not os.environ.get("VOLCANO_CRDS") or not all(f.is_file() for f in needed):
        log(
            "Volcano skipped: VOLCANO_CRDS must name the volcano repo's config/crd/volcano/bases "
            f"(with {', '.join(f.name for f in needed)})"
        )
        return None
    return path, crds


VOLCANO_ACTIONS = "enqueue, allocate, backfill"
"""The actions of Volcano's chart's default volcano-scheduler.conf (v1.15.1)."""
VOLCANO_RECLAIM_ACTIONS = "enqueue, allocate, backfill, reclaim"
"""With `reclaim`, in the order of Volcano's own CI configuration (volcano-scheduler-ci.conf,
which adds `preempt` after it): the default leaves reclaim out."""
VOLCANO_TIERS = """tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""
"""The plugins of Volcano's chart's default volcano-scheduler.conf (v1.15.1)."""


def install_volcano(c: Cluster, crds: Path) -> None:
    """Volcano's CRDs and its `default` Queue, opened by hand (no vc-controller-manager here)."""
    ext = client.ApiextensionsV1Api(c.api_client)
    # All of them: vc-scheduler waits for its informers (NUMA topologies, HyperNodes…) to sync
    # before it schedules anything, and a kind that is not served never syncs.
    for crd in sorted(crds.glob("*.yaml")):
        body = yaml.safe_load(crd.read_text())
        try:
            ext.create_custom_resource_definition(body)
        except client.ApiException as exc:
            if exc.status != 409:
                raise
    open_volcano_queue(c, "default", deadline_s=60)


def open_volcano_queue(c: Cluster, name: str, deadline_s: float = 10) -> None:
    """A Volcano Queue of weight 1 that may be reclaimed, its state set to Open by hand (the
    controller manager's job, not run here)."""
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            c.custom.create_cluster_custom_object(
                *VOLCANO,
                "queues",
                {
                    "apiVersion": "/".join(VOLCANO),
                    "kind": "Queue",
                    "metadata": {"name": name},
                    "spec": {"weight": 1, "reclaimable": True},
                },
            )
            break
        except client.ApiException as exc:
            if exc.status == 409:
                break
            if time.monotonic() > deadline:
                raise
            time.sleep(1)  # the CRD is not served yet
    c.custom.patch_cluster_custom_object_status(
        *VOLCANO, "queues", name, {"status": {"state": "Open"}}
    )


class VcScheduler:
    """vc-scheduler as a process of ours, restartable with other actions (same plugins)."""

    def __init__(self, kubeconfig: Path, binary: Path) -> None:
        self.kubeconfig, self.binary = kubeconfig, binary
        self.proc: subprocess.Popen[bytes] | None = None
        self.actions = ""

    def start(self, actions: str = VOLCANO_ACTIONS) -> None:
        if self.proc is not None and self.actions == actions:
            return
        self.stop()
        conf = Path(f"/tmp/{NAME}-volcano.conf")
        conf.write_text(f'actions: "{actions}"\n{VOLCANO_TIERS}')
        out = Path(f"/tmp/{NAME}-volcano.log").open("ab")  # noqa: SIM115 - the process keeps it
        self.proc = subprocess.Popen(
            [
                str(self.binary),
                f"--kubeconfig={self.kubeconfig}",
                f"--scheduler-conf={conf}",
                "--leader-elect=false",
                "--kube-api-qps=10000",
                "--kube-api-burst=10000",
                f"--listen-address=127.0.0.1:{free_port()}",
                f"--healthz-address=127.0.0.1:{free_port()}",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        self.actions = actions
        PIDS["volcano"] = self.proc.pid
        time.sleep(5)
        if self.proc.poll() is not None:
            code = self.proc.returncode
            raise SystemExit(f"vc-scheduler exited at once ({code}): see {out.name}")
        log(f"vc-scheduler running ({self.binary}, actions {actions}), log {out.name}")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
            self.proc = None


def native_served(c: Cluster) -> bool:
    try:
        c.custom.list_cluster_custom_object(*NATIVE, "podgroups", limit=1)
    except client.ApiException as exc:
        log(
            f"native gang scheduling skipped: the cluster does not serve {'/'.join(NATIVE)} "
            f"PodGroups (HTTP {exc.status})"
        )
        return False
    return True


def process_pid(name: str) -> int | None:
    """The pid of the bench cluster's `name` process (kube-scheduler)."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            args = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"clusters/{NAME}/".encode() in args[0] and Path(args[0].decode()).name == name:
            return int(proc.name)
    return None


# -- workloads ---------------------------------------------------------------------------------


def group_body(
    side: str, name: str, size: int, topology: bool, queue: str = "default"
) -> dict[str, Any]:
    if side == "phalanx":
        spec: dict[str, Any] = {"minMember": size, "queue": queue}
        if topology:
            spec["topology"] = {"required": "leaf"}
        return {
            "apiVersion": "phalanx.dev/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": name},
            "spec": spec,
        }
    if side == "volcano":
        # Volcano's topology-aware placement needs HyperNode objects (not made here): no hint.
        return {
            "apiVersion": "/".join(VOLCANO),
            "kind": "PodGroup",
            "metadata": {"name": name},
            "spec": {"minMember": size, "queue": queue},
        }
    native: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": size}}}
    if topology:
        native["schedulingConstraints"] = {"topology": [{"key": LEAF}]}
    return {
        "apiVersion": "/".join(NATIVE),
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": native,
    }


def pod_body(side: str, name: str, group: str, gpus: int) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "tolerations": TOLERATE_KWOK,
        "containers": [container(gpus, cpu="100m")],
    }
    labels = {"bench/gang": group}
    annotations: dict[str, str] = {}
    if side == "phalanx":
        spec["schedulerName"] = "phalanx"
        labels["phalanx.dev/pod-group"] = group
    elif side == "volcano":
        spec["schedulerName"] = "volcano"
        annotations["scheduling.k8s.io/group-name"] = group
    else:
        spec["schedulerName"] = "default-scheduler"
        spec["schedulingGroup"] = {"podGroupName": group}
    return {"metadata": {"name": name, "labels": labels, "annotations": annotations}, "spec": spec}


GROUP_API = {"phalanx": ("phalanx.dev", "v1alpha1"), "native": NATIVE, "volcano": VOLCANO}
"""Each side's PodGroup kind: (group, version)."""


def create_group(c: Cluster, ns: str, side: str, body: dict[str, Any]) -> None:
    c.custom.create_namespaced_custom_object(*GROUP_API[side], ns, "podgroups", body)


def create_timed(c: Cluster, ns: str, bodies: list[dict[str, Any]]) -> dict[str, float]:
    """Create the pods, CREATES_IN_FLIGHT at once, in order; when each create returned."""
    created: dict[str, float] = {}

    def one(body: dict[str, Any]) -> None:
        c.core.create_namespaced_pod(ns, body)
        created[body["metadata"]["name"]] = time.time()

    with ThreadPoolExecutor(CREATES_IN_FLIGHT) as pool:
        list(pool.map(one, bodies))
    return created


def teardown(c: Cluster, ns: str, side: str) -> None:
    """PodGroups first, then the pods: a gang whose pods are deleted under it is a member
    failure (or, with its `Running` report still deferred, a partly bound gang to roll back,
    which recreates bare pods), work that is no part of the next measurement."""
    api = GROUP_API[side]
    c.custom.delete_collection_namespaced_custom_object(*api, ns, "podgroups")
    deadline = time.monotonic() + 60
    # Native PodGroups keep a protection finalizer while pods name them: not awaited.
    while (
        side != "native"
        and c.custom.list_namespaced_custom_object(*api, ns, "podgroups", limit=1)["items"]
    ):
        if time.monotonic() > deadline:
            raise SystemExit(f"PodGroups of {ns} not gone after 60 s")
        time.sleep(0.2)
    time.sleep(1)  # the schedulers have seen them go
    drop_namespace(c, ns)


def scheduler_cpu(side: str, op_pid: int) -> float:
    pid = PIDS.get(side) if side != "native" else process_pid("kube-scheduler")
    return cpu_seconds(pid) if pid is not None else float("nan")


def throughput(
    c: Cluster, side: str, run: int, gang_size: int, pods: int, op_pid: int
) -> dict[str, Any]:
    gangs = pods // gang_size
    ns = fresh_namespace(c, f"{side[:7]}-t{gang_size}-{run}")
    rec = BindRecorder(c, ns).start()
    bodies = []
    for g in range(gangs):
        create_group(c, ns, side, group_body(side, f"g{g}", gang_size, topology=False))
        bodies += [pod_body(side, f"g{g}-{i}", f"g{g}", 1) for i in range(gang_size)]
    cpu_before = scheduler_cpu(side, op_pid)
    first = time.time()
    created = create_timed(c, ns, bodies)
    last_create = max(created.values())
    rec.wait_all(len(bodies), timeout=900)
    last_bind = max(rec.bound_at.values())
    cpu = scheduler_cpu(side, op_pid) - cpu_before
    latencies = sorted(
        max(rec.bound_at[f"g{g}-{i}"] for i in range(gang_size))
        - max(created[f"g{g}-{i}"] for i in range(gang_size))
        for g in range(gangs)
    )
    out = {
        "pods": len(bodies),
        "after_last_create_s": round(last_bind - last_create, 3),
        "pods_per_s": round(len(bodies) / (last_bind - first), 1),
        "create_s": round(last_create - first, 2),
        "gang_latency_p50_s": round(latencies[len(latencies) // 2], 3),
        "gang_latency_p95_s": round(latencies[int(len(latencies) * 0.95)], 3),
        "scheduler_cpu_s_per_1000_pods": round(1000 * cpu / len(bodies), 2),
    }
    log(f"{side} throughput, gangs of {gang_size}, run {run + 1}: {out}")
    teardown(c, ns, side)
    return out


def conflict(c: Cluster, side: str, run: int, nodes: int) -> dict[str, Any]:
    """Two gangs of whole-node pods, each needing just over half the nodes, created interleaved:
    how many pods of the one that cannot fit are ever bound."""
    size = nodes // 2 + max(1, nodes // 128)
    ns = fresh_namespace(c, f"{side[:7]}-c-{run}")
    rec = BindRecorder(c, ns).start()
    for g in ("a", "b"):
        create_group(c, ns, side, group_body(side, g, size, topology=False))
    bodies = [pod_body(side, f"{g}-{i}", g, 8) for i in range(size) for g in ("a", "b")]
    samples: list[tuple[int, int]] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            bound = list(rec.bound_at)
            samples.append(
                (sum(n.startswith("a-") for n in bound), sum(n.startswith("b-") for n in bound))
            )
            time.sleep(SAMPLE_S)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    create_timed(c, ns, bodies)
    deadline = time.monotonic() + 300
    winner_at: float | None = None
    while time.monotonic() < deadline:
        a, b = samples[-1] if samples else (0, 0)
        if max(a, b) >= size and winner_at is None:
            winner_at = time.monotonic()
        if winner_at is not None and time.monotonic() - winner_at >= 5:
            break
        time.sleep(SAMPLE_S)
    stop.set()
    sampler.join()
    a_end, b_end = samples[-1]
    loser = "b" if a_end >= b_end else "a"
    loser_max = max(s[1] if loser == "b" else s[0] for s in samples)
    out = {
        "gang_size": size,
        "winner_bound_whole": max(a_end, b_end) >= size,
        "loser_max_bound": loser_max,
        "samples": len(samples),
    }
    log(f"{side} conflict, run {run + 1}: {out}")
    rec.wait_all(0, timeout=1)
    teardown(c, ns, side)
    return out


def leaves(
    c: Cluster, side: str, run: int, topology: bool, gangs: int, size: int, leaf_of: dict[str, str]
) -> dict[str, Any]:
    ns = fresh_namespace(c, f"{side[:7]}-l{int(topology)}-{run}")
    rec = BindRecorder(c, ns).start()
    bodies = []
    for g in range(gangs):
        create_group(c, ns, side, group_body(side, f"g{g}", size, topology))
        bodies += [pod_body(side, f"g{g}-{i}", f"g{g}", 8) for i in range(size)]
    create_timed(c, ns, bodies)
    rec.wait_all(len(bodies), timeout=600)
    pods = c.core.list_namespaced_pod(ns).items
    spans: dict[str, set[str]] = {}
    for p in pods:
        spans.setdefault(p.metadata.labels["bench/gang"], set()).add(leaf_of[p.spec.node_name])
    counts = sorted(len(v) for v in spans.values())
    out = {"median": statistics.median(counts), "worst": counts[-1], "per_gang": counts}
    log(f"{side} leaves per gang, topology hint {topology}, run {run + 1}: {out}")
    teardown(c, ns, side)
    return out


class ExitRecorder(BindRecorder):
    """A BindRecorder that also records when each pod was first seen being deleted (its
    eviction issued) and when it was gone: where a reclaim's time goes."""

    def __init__(self, c: Cluster, ns: str) -> None:
        super().__init__(c, ns)
        self.deleting_at: dict[str, float] = {}
        self.gone_at: dict[str, float] = {}

    def _record(self, event: dict[str, Any], version: str | None) -> str | None:
        meta = (event.get("object") or {}).get("metadata") or {}
        name = meta.get("name")
        if meta.get("deletionTimestamp") and name not in self.deleting_at:
            self.deleting_at[name] = time.time()
        if event.get("type") == "DELETED" and name not in self.gone_at:
            self.gone_at[name] = time.time()
        return super()._record(event, version)


RECLAIM_QUEUES = ("peers-lend", "peers-claim")
LEND_GANG = 8
"""Pods per lender gang."""


def claim_size_for(nodes: int) -> int:
    """The claimant's gang: a lender gang's worth of whole nodes, or nodes/64 (16 on `large`)."""
    return max(LEND_GANG, nodes // 64)


def reclaim(c: Cluster, side: str, run: int, nodes: int, vc: VcScheduler | None) -> dict[str, Any]:
    """The lender fills the cluster (half of it borrowed), then the claimant asks for a gang
    within its share: how long until it is whole, and what the lender lost on the way."""
    lend, claim = RECLAIM_QUEUES
    lend_gangs, lend_size = nodes // LEND_GANG, LEND_GANG
    claim_size = claim_size_for(nodes)
    if side == "phalanx":
        for q in RECLAIM_QUEUES:
            ensure_queue(c.custom, q, {"weight": 1, "guarantee": {"nvidia.com/gpu": 4 * nodes}})
    else:
        assert vc is not None
        vc.start(VOLCANO_RECLAIM_ACTIONS)
        for q in RECLAIM_QUEUES:
            open_volcano_queue(c, q)
    ns = fresh_namespace(c, f"{side[:7]}-r-{run}")
    rec = BindRecorder(c, ns).start()
    bodies = []
    for g in range(lend_gangs):
        create_group(c, ns, side, group_body(side, f"l{g}", lend_size, False, queue=lend))
        bodies += [pod_body(side, f"l{g}-{i}", f"l{g}", 8) for i in range(lend_size)]
    create_timed(c, ns, bodies)
    rec.wait_all(len(bodies), timeout=600)
    rec = ExitRecorder(c, ns).start()  # the claimant's binds, the lender's exits
    # A borrowed gang has run a while when it is reclaimed: every lender PodGroup reported
    # Running by its scheduler (no status write of the burst still to go), and 2 s more.
    api = GROUP_API[side]
    deadline = time.monotonic() + 120
    while True:
        groups = c.custom.list_namespaced_custom_object(*api, ns, "podgroups")["items"]
        running = sum((g.get("status") or {}).get("phase") == "Running" for g in groups)
        if running == lend_gangs:
            break
        if time.monotonic() > deadline:
            raise SystemExit(f"{side} reclaim: {running}/{lend_gangs} lender gangs Running")
        time.sleep(0.5)
    time.sleep(2)
    create_group(c, ns, side, group_body(side, "claim", claim_size, False, queue=claim))
    claim_pods = [pod_body(side, f"claim-{i}", "claim", 8) for i in range(claim_size)]
    created = create_timed(c, ns, claim_pods)
    last_create = max(created.values())
    deadline = time.monotonic() + 300
    while sum(n.startswith("claim-") for n in rec.bound_at) < claim_size:
        if time.monotonic() > deadline:
            status = c.custom.get_namespaced_custom_object(*api, ns, "podgroups", "claim")
            raise SystemExit(
                f"{side} reclaim: the claimant's gang not whole after 300 s "
                f"({sum(n.startswith('claim-') for n in rec.bound_at)}/{claim_size} bound); "
                f"its PodGroup's status: {json.dumps(status.get('status'))}"
            )
        time.sleep(0.05)
    whole_at = max(rec.bound_at[f"claim-{i}"] for i in range(claim_size))
    time.sleep(5)
    evicted_at = min(rec.deleting_at.values(), default=math.nan)
    gone_at = max(rec.gone_at.values(), default=math.nan)
    live: dict[str, int] = {}
    for pod in c.core.list_namespaced_pod(ns).items:
        group = pod.metadata.labels["bench/gang"]
        if group != "claim" and pod.spec.node_name and pod.metadata.deletion_timestamp is None:
            live[group] = live.get(group, 0) + 1
    left = [live.get(f"l{g}", 0) for g in range(lend_gangs)]
    out = {
        "claim_pods": claim_size,
        "lend_pods": len(bodies),
        "after_last_create_s": round(whole_at - last_create, 3),
        "create_to_first_eviction_s": round(evicted_at - last_create, 3),
        "first_eviction_to_last_gone_s": round(gone_at - evicted_at, 3),
        "last_gone_to_whole_s": round(whole_at - gone_at, 3),
        "lend_pods_evicted": len(bodies) - sum(left),
        "lend_gangs_evicted_whole": sum(n == 0 for n in left),
        "lend_gangs_left_partial": sum(0 < n < lend_size for n in left),
    }
    log(f"{side} reclaim, run {run + 1}: {out}")
    rec.wait_all(0, timeout=1)
    teardown(c, ns, side)
    if side == "phalanx":
        for q in RECLAIM_QUEUES:
            c.custom.delete_cluster_custom_object("phalanx.dev", "v1alpha1", "queues", q)
    else:
        assert vc is not None
        for q in RECLAIM_QUEUES:
            c.custom.delete_cluster_custom_object(*VOLCANO, "queues", q)
        vc.start(VOLCANO_ACTIONS)
    return out


# -- the run -----------------------------------------------------------------------------------


def commit() -> str:
    try:
        return subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def median_of(runs: list[dict[str, Any]], key: str) -> float:
    return round(statistics.median(r[key] for r in runs), 3)


def main() -> None:
    shape = load_shape(SHAPE)
    volcano = volcano_binary()
    if devcluster.status(NAME).up:
        devcluster.down(name=NAME, log=log)
    kubeconfig = devcluster.up(
        shape,
        name=NAME,
        log=log,
        wait_s=600,
        feature_gates=devcluster.NATIVE_GANG_FEATURE_GATES,
        runtime_config=devcluster.NATIVE_GANG_RUNTIME_CONFIG,
    )
    op: subprocess.Popen[bytes] | None = None
    vc: VcScheduler | None = None
    try:
        c = Cluster(kubeconfig)
        apply_crds(c.custom, client.ApiextensionsV1Api(c.api_client))
        ensure_queue(c.custom, "default", {})
        node_items = c.core.list_node().items
        leaf_of = {n.metadata.name: n.metadata.labels.get(LEAF, "-") for n in node_items}
        nodes, gpus = len(node_items), 8 * len(node_items)
        sides = ["phalanx", *(["native"] if native_served(c) else [])]
        if volcano is not None:
            binary, crds = volcano
            install_volcano(c, crds)
            vc = VcScheduler(kubeconfig, binary)
            vc.start()
            sides.append("volcano")
        core = "compiled" if os.environ.get("PHALANX_CORE_BUILD") else "pure"
        log(f"sides: {', '.join(sides)}; the operator runs on the {core} core")
        op_log = Path(os.environ.get("PEERS_OPERATOR_LOG", f"/tmp/{NAME}-operator.log"))
        op = subprocess.Popen(
            [
                sys.executable,
                *("-m", "phalanx", "run", "--kubeconfig", str(kubeconfig)),
                *("--metrics-port", str(free_port()), "--health-port", str(free_port())),
            ],
            stdout=op_log.open("wb"),
            stderr=subprocess.STDOUT,
        )
        PIDS["phalanx"] = op.pid
        time.sleep(8)
        pods8 = min(2000, gpus // 2) // 8 * 8
        pods64 = min(2000, gpus // 2) // 64 * 64
        leaf_nodes = max(1, len(node_items) // max(1, len(set(leaf_of.values()))))
        leaf_gangs, leaf_size = (
            min(16, nodes // max(1, leaf_nodes // 2) // 2),
            max(1, leaf_nodes // 2),
        )
        workloads: dict[str, Any] = {
            "throughput-8": lambda side, run: throughput(c, side, run, 8, pods8, op.pid),
            "throughput-64": lambda side, run: throughput(c, side, run, 64, pods64, op.pid),
            "conflict": lambda side, run: conflict(c, side, run, nodes),
            "leaves-no-hint": lambda side, run: leaves(
                c, side, run, False, leaf_gangs, leaf_size, leaf_of
            ),
            "leaves-hint": lambda side, run: leaves(
                c, side, run, True, leaf_gangs, leaf_size, leaf_of
            ),
            "reclaim": lambda side, run: reclaim(c, side, run, nodes, vc),
        }
        raw: dict[str, dict[str, list[dict[str, Any]]]] = {
            w: {s: [] for s in sides} for w in workloads if not ONLY or w in ONLY
        }
        for run in range(RUNS):
            order = sides if run % 2 == 0 else list(reversed(sides))
            for w, measure in workloads.items():
                if w not in raw:
                    continue
                for side in order:
                    if w == "leaves-hint" and side == "volcano":
                        continue  # its topology hints need HyperNode objects, not made here
                    if w == "reclaim" and side == "native":
                        continue  # no queues to lend or reclaim
                    raw[w][side].append(measure(side, run))
        summary: dict[str, dict[str, Any]] = {}
        for w, by_side in raw.items():
            summary[w] = {}
            for side, runs in by_side.items():
                if not runs:
                    continue
                if w.startswith("throughput"):
                    keys = [
                        "after_last_create_s",
                        "pods_per_s",
                        "gang_latency_p50_s",
                        "gang_latency_p95_s",
                        "scheduler_cpu_s_per_1000_pods",
                    ]
                    summary[w][side] = {k: median_of(runs, k) for k in keys}
                elif w == "reclaim":
                    summary[w][side] = {
                        **{
                            k: median_of(runs, k)
                            for k in (
                                "after_last_create_s",
                                "create_to_first_eviction_s",
                                "first_eviction_to_last_gone_s",
                                "last_gone_to_whole_s",
                            )
                        },
                        "lend_pods_evicted": median_of(runs, "lend_pods_evicted"),
                        "lend_gangs_left_partial_max": max(
                            r["lend_gangs_left_partial"] for r in runs
                        ),
                    }
                elif w == "conflict":
                    summary[w][side] = {
                        "loser_max_bound": max(r["loser_max_bound"] for r in runs),
                        "winner_bound_whole": all(r["winner_bound_whole"] for r in runs),
                    }
                else:
                    summary[w][side] = {
                        "leaves_median": median_of(runs, "median"),
                        "leaves_worst": max(r["worst"] for r in runs),
                    }
        out = {
            "shape": f"{SHAPE} ({nodes} nodes, {gpus} GPUs)",
            "runs": RUNS,
            "kubernetes": versions.KUBERNETES,
            "feature_gates": devcluster.NATIVE_GANG_FEATURE_GATES,
            "runtime_config": devcluster.NATIVE_GANG_RUNTIME_CONFIG,
            "phalanx_core": core,
            "sides": sides,
            "volcano": (
                "vc-scheduler " + os.environ.get("VOLCANO_VERSION", "(version not given)")
                if volcano is not None
                else "skipped: VOLCANO_SCHEDULER unset or unusable (bench/README.md)"
            ),
            "pods": {"throughput-8": pods8, "throughput-64": pods64},
            "leaves_workload": {"gangs": leaf_gangs, "pods_per_gang": leaf_size, "gpus_per_pod": 8},
            "reclaim": "native gang scheduling has no queues to lend or reclaim: not measured",
            "reclaim_workload": {
                "lend_pods": nodes,
                "lend_gang_size": LEND_GANG,
                "claim_pods": claim_size_for(nodes),
                "gpus_per_pod": 8,
                "volcano_actions": VOLCANO_RECLAIM_ACTIONS,
            },
            "summary": summary,
            "runs_raw": raw,
        }
        stamp = {"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "commit": commit()}
        out["measured"] = dict.fromkeys(raw, stamp)
        if ONLY and OUT.is_file():
            # A narrowed run updates its workloads in the results and keeps the others' figures
            # (with when and on which commit each was measured).
            kept = json.loads(OUT.read_text())
            for key in ("summary", "runs_raw", "measured"):
                kept.setdefault(key, {}).update(out[key])
            out = {**out, **{k: kept[k] for k in ("summary", "runs_raw", "measured")}}
        OUT.write_text(json.dumps(out, indent=1) + "\n")
        print(json.dumps(summary, indent=1))
    finally:
        if vc is not None:
            vc.stop()
        if op is not None:
            op.terminate()
            op.wait(timeout=30)
        devcluster.down(name=NAME, log=log)


if __name__ == "__main__":
    main()
