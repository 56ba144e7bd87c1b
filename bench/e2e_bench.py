"""End-to-end binding on the real API server: Phalanx against the physical limit and kube-scheduler.

Run with `make bench-e2e` (writes bench/results/e2e.json). On one `large` local cluster (1,024
nodes, 8,192 GPUs), in the same run, RUNS times each (medians reported):

- **bare**: the physical limit here — pre-created pods bound by a loop that only POSTs
  `pods/binding` (asyncio + aiohttp, 32 requests in flight, keep-alive, no scheduling logic);
- **phalanx**: the operator schedules gangs of 8 one-GPU pods (GANGS gangs); the pods are created
  with a scheduling gate, and the clock starts when the gates are lifted (32 patches in flight);
- **kube-scheduler**: the same pods with `schedulerName: default-scheduler` and no gangs, gated and
  released the same way (kwokctl runs it with client QPS limits disabled).

Throughput is pods bound per second between the first release and the last bind; gang latency is
per gang, from its last member's release to all its members bound. Afterwards the operator's
resident memory is read with 1,024 nodes and MEMORY_PODS pods in its view.
"""

from __future__ import annotations

import asyncio
import json
import os
import ssl
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import aiohttp
import yaml
from kubernetes import client, config, watch

from phalanx.devcluster import cluster as devcluster
from phalanx.devcluster.shapes import load_shape

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tests.integration.objects import TOLERATE_KWOK, container, pod_group  # noqa: E402
from tests.integration.operator_fixture import apply_crds, free_port  # noqa: E402

NAME = "phalanx-bench-e2e"
RUNS = int(os.environ.get("E2E_RUNS", "3"))
GANGS = int(os.environ.get("E2E_GANGS", "250"))
GANG_SIZE = 8
MEMORY_PODS = int(os.environ.get("E2E_MEMORY_PODS", "10000"))
GATE = "bench.phalanx.dev/hold"
OUT = REPO / "bench" / "results" / "e2e.json"


def log(msg: str) -> None:
    print(f"[e2e] {msg}", file=sys.stderr, flush=True)


class Cluster:
    def __init__(self, kubeconfig: Path) -> None:
        self.kubeconfig = kubeconfig
        self.api_client = config.new_client_from_config(config_file=str(kubeconfig))
        self.api_client.configuration.connection_pool_maxsize = 64
        self.core = client.CoreV1Api(self.api_client)
        self.custom = client.CustomObjectsApi(self.api_client)
        kc = yaml.safe_load(kubeconfig.read_text())
        self.server = kc["clusters"][0]["cluster"]["server"]
        self.ca = kc["clusters"][0]["cluster"]["certificate-authority"]
        self.cert = kc["users"][0]["user"]["client-certificate"]
        self.key = kc["users"][0]["user"]["client-key"]

    def ssl(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=self.ca)
        ctx.load_cert_chain(self.cert, self.key)
        return ctx


def pod_body(name: str, scheduler: str, group: str | None, gated: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "tolerations": TOLERATE_KWOK,
        "containers": [container(1, cpu="100m")],
    }
    if gated:
        spec["schedulingGates"] = [{"name": GATE}]
    labels = {"phalanx.dev/pod-group": group} if group else {}
    return {"metadata": {"name": name, "labels": labels}, "spec": spec}


def create_pods(c: Cluster, ns: str, bodies: list[dict[str, Any]]) -> None:
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda b: c.core.create_namespaced_pod(ns, b), bodies))


def fresh_namespace(c: Cluster, name: str) -> str:
    c.core.create_namespace({"metadata": {"name": name}})
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            c.core.read_namespaced_service_account("default", name)
            return name
        except client.ApiException:
            time.sleep(0.2)
    raise SystemExit(f"namespace {name} never got its default ServiceAccount")


def drop_namespace(c: Cluster, ns: str) -> None:
    try:
        c.core.delete_collection_namespaced_pod(ns, grace_period_seconds=0)
    except client.ApiException as exc:
        # Deleting thousands of pods can outlast the API server's request timeout (504); the
        # deletion goes on server-side, and the wait below sees it through.
        if exc.status != 504:
            raise
        log(f"deleting the pods of {ns} outlasted the request timeout; waiting for them to go")
    deadline = time.monotonic() + 300
    while c.core.list_namespaced_pod(ns, limit=1).items:
        if time.monotonic() > deadline:
            raise SystemExit(f"pods of {ns} not gone after 300 s")
        time.sleep(0.5)
    c.core.delete_namespace(ns)


class BindRecorder:
    """Watches a namespace and records when each pod got its node."""

    def __init__(self, c: Cluster, ns: str) -> None:
        self.c, self.ns = c, ns
        self.bound_at: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        w = watch.Watch()
        while not self._stop.is_set():
            try:
                for ev in w.stream(self.c.core.list_namespaced_pod, self.ns, timeout_seconds=2):
                    p = ev["object"]
                    if p.spec.node_name and p.metadata.name not in self.bound_at:
                        self.bound_at[p.metadata.name] = time.time()
                    if self._stop.is_set():
                        break
            except client.ApiException as exc:
                # A loaded API server can answer a resumed watch with 504 "too large resource
                # version": start over from a fresh list (already-recorded pods keep their time).
                log(f"bind recorder: watch ended with {exc.status}; listing again")
                w = watch.Watch()

    def start(self) -> BindRecorder:
        self._thread.start()
        time.sleep(1)
        return self

    def wait_all(self, count: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while len(self.bound_at) < count:
            if time.monotonic() > deadline:
                raise SystemExit(f"only {len(self.bound_at)}/{count} pods bound in {timeout} s")
            time.sleep(0.1)
        self._stop.set()


async def _release(c: Cluster, ns: str, names: list[str]) -> dict[str, float]:
    """Lift the scheduling gate of every pod, 32 patches in flight; when each was released."""
    released: dict[str, float] = {}
    sem = asyncio.Semaphore(32)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=c.ssl(), limit=32)) as s:

        async def one(name: str) -> None:
            async with sem:
                url = f"{c.server}/api/v1/namespaces/{ns}/pods/{name}"
                body = [{"op": "remove", "path": "/spec/schedulingGates"}]
                async with s.patch(
                    url, json=body, headers={"Content-Type": "application/json-patch+json"}
                ) as r:
                    await r.read()
                    if r.status >= 300:
                        raise SystemExit(f"ungate {name}: HTTP {r.status}")
                released[name] = time.time()

        await asyncio.gather(*(one(n) for n in names))
    return released


async def _bare_bind(c: Cluster, ns: str, names: list[str], nodes: list[str]) -> float:
    sem = asyncio.Semaphore(32)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=c.ssl(), limit=32)) as s:

        async def one(i: int, name: str) -> None:
            body = {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": name},
                "target": {"apiVersion": "v1", "kind": "Node", "name": nodes[i % len(nodes)]},
            }
            async with sem:
                url = f"{c.server}/api/v1/namespaces/{ns}/pods/{name}/binding"
                async with s.post(url, json=body) as r:
                    await r.read()
                    if r.status >= 300:
                        raise SystemExit(f"bind {name}: HTTP {r.status}")

        started = time.perf_counter()
        await asyncio.gather(*(one(i, n) for i, n in enumerate(names)))
        return time.perf_counter() - started


def run_bare(c: Cluster, run: int, nodes: list[str]) -> float:
    ns = fresh_namespace(c, f"bare-{run}")
    names = [f"p{i}" for i in range(GANGS * GANG_SIZE)]
    create_pods(c, ns, [pod_body(n, "nobody", None, False) for n in names])
    elapsed = asyncio.run(_bare_bind(c, ns, names, nodes))
    drop_namespace(c, ns)
    return len(names) / elapsed


def run_released(c: Cluster, run: int, scheduler: str) -> tuple[float, list[float]]:
    ns = fresh_namespace(c, f"{scheduler[:7]}-{run}")
    gangs = scheduler == "phalanx"
    if gangs:
        for g in range(GANGS):
            c.custom.create_namespaced_custom_object(
                "phalanx.dev",
                "v1alpha1",
                ns,
                "podgroups",
                pod_group(f"g{g}", GANG_SIZE),
            )
    names = [f"g{g}-{i}" for g in range(GANGS) for i in range(GANG_SIZE)]
    create_pods(
        c, ns, [pod_body(n, scheduler, n.split("-")[0] if gangs else None, True) for n in names]
    )
    time.sleep(3)  # let the scheduler see the (gated) pods
    rec = BindRecorder(c, ns).start()
    released = asyncio.run(_release(c, ns, names))
    rec.wait_all(len(names), timeout=600)
    first = min(released.values())
    last = max(rec.bound_at.values())
    latencies = []
    for g in range(GANGS):
        members = [f"g{g}-{i}" for i in range(GANG_SIZE)]
        latencies.append(max(rec.bound_at[m] for m in members) - max(released[m] for m in members))
    drop_namespace(c, ns)
    return len(names) / (last - first), latencies


def operator_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main() -> None:
    shape = load_shape("large")
    if devcluster.status(NAME).up:
        devcluster.down(name=NAME, log=log)
    kubeconfig = devcluster.up(shape, name=NAME, log=log, wait_s=600)
    op: subprocess.Popen[bytes] | None = None
    try:
        c = Cluster(kubeconfig)
        apply_crds(c.custom, client.ApiextensionsV1Api(c.api_client))
        c.custom.create_cluster_custom_object(
            "phalanx.dev",
            "v1alpha1",
            "queues",
            {
                "apiVersion": "phalanx.dev/v1alpha1",
                "kind": "Queue",
                "metadata": {"name": "default"},
                "spec": {},
            },
        )
        nodes = [n.metadata.name for n in c.core.list_node().items]
        log_file = (REPO / "bench" / "results" / "e2e-operator.log").open("wb")
        op = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "phalanx",
                "run",
                "--kubeconfig",
                str(kubeconfig),
                "--metrics-port",
                str(free_port()),
                "--health-port",
                str(free_port()),
            ],
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
        time.sleep(8)
        results: dict[str, list[float]] = {"bare": [], "phalanx": [], "kube": []}
        gang_lat: list[float] = []
        for run in range(RUNS):
            results["bare"].append(run_bare(c, run, nodes))
            ours, lat = run_released(c, run, "phalanx")
            results["phalanx"].append(ours)
            gang_lat.extend(lat)
            results["kube"].append(run_released(c, run, "default-scheduler")[0])
            log(
                f"run {run + 1}/{RUNS}: bare {results['bare'][-1]:.0f}/s, phalanx "
                f"{results['phalanx'][-1]:.0f}/s, kube-scheduler {results['kube'][-1]:.0f}/s"
            )

        ns = fresh_namespace(c, "memory")
        per_gang = 8
        for g in range(MEMORY_PODS // per_gang):
            c.custom.create_namespaced_custom_object(
                "phalanx.dev",
                "v1alpha1",
                ns,
                "podgroups",
                pod_group(f"m{g}", per_gang),
            )
        create_pods(
            c,
            ns,
            [
                pod_body(f"m{g}-{i}", "phalanx", f"m{g}", False)
                for g in range(MEMORY_PODS // per_gang)
                for i in range(per_gang)
            ],
        )
        time.sleep(20)
        rss = operator_rss_mib(op.pid)
        lat_sorted = sorted(gang_lat)
        out = {
            "shape": "large (1,024 nodes, 8,192 GPUs)",
            "runs": RUNS,
            "pods_per_run": GANGS * GANG_SIZE,
            "gang_size": GANG_SIZE,
            "bind_pods_per_s": round(statistics.median(results["phalanx"]), 1),
            "bare_bind_pods_per_s": round(statistics.median(results["bare"]), 1),
            "kube_scheduler_pods_per_s": round(statistics.median(results["kube"]), 1),
            "ratio_to_bare": round(
                statistics.median(results["phalanx"]) / statistics.median(results["bare"]), 3
            ),
            "ratio_to_kube_scheduler": round(
                statistics.median(results["phalanx"]) / statistics.median(results["kube"]), 3
            ),
            "gang_latency_p50_ms": round(1000 * lat_sorted[len(lat_sorted) // 2], 1),
            "gang_latency_p95_ms": round(1000 * lat_sorted[int(len(lat_sorted) * 0.95)], 1),
            "operator_rss_mib": round(rss, 1),
            "operator_rss_pods": MEMORY_PODS,
            "runs_raw": {k: [round(v, 1) for v in vs] for k, vs in results.items()},
        }
        OUT.write_text(json.dumps(out, indent=1) + "\n")
        print(json.dumps(out, indent=1))
    finally:
        if op is not None:
            op.terminate()
            op.wait(timeout=30)
        devcluster.down(name=NAME, log=log)


if __name__ == "__main__":
    main()
