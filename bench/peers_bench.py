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
- reclaim of a borrowed gang: only Phalanx has queues that lend and reclaim (native gang
  scheduling has no queues, and Volcano's needs its controller manager): not measured here; the
  time Phalanx takes is in its integration tier (tests/integration/test_operator_queues.py).

Results: bench/results/peers.json (PEERS_SHAPE=small writes peers-small.json, for development).
"""

from __future__ import annotations

import json
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


VOLCANO_CONF = """actions: "enqueue, allocate, backfill"
tiers:
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
"""Volcano's default scheduler configuration (its chart's volcano-scheduler.conf, v1.15.1)."""


def start_volcano(
    c: Cluster, kubeconfig: Path, binary: Path, crds: Path
) -> subprocess.Popen[bytes]:
    """Volcano's CRDs, its `default` Queue opened by hand (no vc-controller-manager here), and
    vc-scheduler as a process of ours."""
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
    deadline = time.monotonic() + 60
    while True:
        try:
            c.custom.create_cluster_custom_object(
                *VOLCANO,
                "queues",
                {
                    "apiVersion": "/".join(VOLCANO),
                    "kind": "Queue",
                    "metadata": {"name": "default"},
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
        *VOLCANO, "queues", "default", {"status": {"state": "Open"}}
    )
    conf = Path(f"/tmp/{NAME}-volcano.conf")
    conf.write_text(VOLCANO_CONF)
    out = Path(f"/tmp/{NAME}-volcano.log").open("wb")  # noqa: SIM115 - the process keeps it
    proc = subprocess.Popen(
        [
            str(binary),
            f"--kubeconfig={kubeconfig}",
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
    time.sleep(5)
    if proc.poll() is not None:
        raise SystemExit(f"vc-scheduler exited at once ({proc.returncode}): see {out.name}")
    log(f"vc-scheduler running ({binary}), log {out.name}")
    return proc


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


def group_body(side: str, name: str, size: int, topology: bool) -> dict[str, Any]:
    if side == "phalanx":
        spec: dict[str, Any] = {"minMember": size, "queue": "default"}
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
            "spec": {"minMember": size, "queue": "default"},
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


def create_group(c: Cluster, ns: str, side: str, body: dict[str, Any]) -> None:
    if side == "phalanx":
        c.custom.create_namespaced_custom_object("phalanx.dev", "v1alpha1", ns, "podgroups", body)
    elif side == "volcano":
        c.custom.create_namespaced_custom_object(*VOLCANO, ns, "podgroups", body)
    else:
        c.custom.create_namespaced_custom_object(*NATIVE, ns, "podgroups", body)


def create_timed(c: Cluster, ns: str, bodies: list[dict[str, Any]]) -> dict[str, float]:
    """Create the pods, CREATES_IN_FLIGHT at once, in order; when each create returned."""
    created: dict[str, float] = {}

    def one(body: dict[str, Any]) -> None:
        c.core.create_namespaced_pod(ns, body)
        created[body["metadata"]["name"]] = time.time()

    with ThreadPoolExecutor(CREATES_IN_FLIGHT) as pool:
        list(pool.map(one, bodies))
    return created


PIDS: dict[str, int] = {}
"""Scheduler processes we started (phalanx, volcano), by side."""


def teardown(c: Cluster, ns: str, side: str) -> None:
    """PodGroups first, then the pods: a gang whose pods are deleted under it is a member
    failure (or, with its `Running` report still deferred, a partly bound gang to roll back,
    which recreates bare pods), work that is no part of the next measurement."""
    api = {"phalanx": ("phalanx.dev", "v1alpha1"), "native": NATIVE, "volcano": VOLCANO}[side]
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


# -- the run -----------------------------------------------------------------------------------


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
    vc: subprocess.Popen[bytes] | None = None
    try:
        c = Cluster(kubeconfig)
        apply_crds(c.custom, client.ApiextensionsV1Api(c.api_client))
        ensure_queue(c.custom, "default", {})
        node_items = c.core.list_node().items
        leaf_of = {n.metadata.name: n.metadata.labels.get(LEAF, "-") for n in node_items}
        nodes, gpus = len(node_items), 8 * len(node_items)
        sides = ["phalanx", *(["native"] if native_served(c) else [])]
        if volcano is not None:
            vc = start_volcano(c, kubeconfig, *volcano)
            PIDS["volcano"] = vc.pid
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
            "reclaim": "not measured: native gang scheduling has no queues to lend or reclaim",
            "summary": summary,
            "runs_raw": raw,
        }
        OUT.write_text(json.dumps(out, indent=1) + "\n")
        print(json.dumps(summary, indent=1))
    finally:
        for proc in (op, vc):
            if proc is not None:
                proc.terminate()
                proc.wait(timeout=30)
        devcluster.down(name=NAME, log=log)


if __name__ == "__main__":
    main()
