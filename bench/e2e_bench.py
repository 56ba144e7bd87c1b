"""End-to-end binding on the real API server: Phalanx against the physical limit and kube-scheduler.

Run with `make bench-e2e` (writes bench/results/e2e.json). On one `large` local cluster (1,024
nodes, 8,192 GPUs), in the same run, RUNS times each (medians reported):

- **bare**: the reference the target is set against, called "the physical limit" in the issue —
  pre-created pods bound by a loop that only POSTs `pods/binding` (asyncio + aiohttp, 32 requests
  in flight, keep-alive, no scheduling logic);
- **bare, matched**: the same loop with as many requests in flight as the operator's bind
  concurrency (64 by default). Measured because 32 in flight is not the API server's limit here:
  the loop binds faster with more, so Phalanx is also compared at equal concurrency;
- **phalanx**: the operator schedules gangs of 8 one-GPU pods (GANGS gangs), created with their
  PodGroups in a Queue whose limit is 0 GPUs; once every gang reports `QueueOverLimit`, one patch
  lifts the limit and the clock starts. The timed window then holds what the scheduler causes
  (binds, status, Events) and kwok's reaction, as the bare loop's does;
- **phalanx, gated**: the same gangs with their pods created with a scheduling gate, released by
  lifting the gates (32 patches in flight): 2,000 extra writes inside the window, exactly what
  kube-scheduler's run below has too — the like-for-like comparison with kube-scheduler;
- **kube-scheduler**: the same pods with `schedulerName: default-scheduler` and no gangs, gated and
  released the same way (kwokctl runs it with client QPS limits disabled).

The operator runs as the image ships it: on the mypyc-compiled core when `make bench-e2e` starts
this through `tools/build_core.py --exec` (the default), on the pure-Python sources otherwise;
`core` in the results says which.

Throughput is pods bound per second between the (first) release and the last bind; gang latency
(of the gated run) is per gang, from its last member's release to all its members bound.
Afterwards the operator's resident memory is read with 1,024 nodes and MEMORY_PODS pods in its
view.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import signal
import ssl
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import urllib3
import yaml
from kubernetes import client, config

from phalanx.config import OperatorConfig
from phalanx.devcluster import cluster as devcluster
from phalanx.devcluster.shapes import load_shape

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tests.integration.conftest import ensure_queue  # noqa: E402
from tests.integration.objects import TOLERATE_KWOK, container, pod_group  # noqa: E402
from tests.integration.operator_fixture import apply_crds, free_port  # noqa: E402

NAME = "phalanx-bench-e2e"
# Five runs: on 2 noisy cores single windows swing by a third either way (the bare loop alone ran
# 392-657 pods/s in one session), and three runs left the verdict on the 0.8 target to chance.
RUNS = int(os.environ.get("E2E_RUNS", "5"))
GANGS = int(os.environ.get("E2E_GANGS", "250"))
# Pods per gang. The bind protocol's writes are per gang (the decision before the binds, Running
# after, one Event), so their share of the API server's work falls as gangs grow: E2E_GANG_SIZE=64
# E2E_GANGS=32 puts 2,048 pods in 32 gangs.
GANG_SIZE = int(os.environ.get("E2E_GANG_SIZE", "8"))
MEMORY_PODS = int(os.environ.get("E2E_MEMORY_PODS", "10000"))
GATE = "bench.phalanx.dev/hold"
OUT = REPO / "bench" / "results" / "e2e.json"
# For iterating on one side: E2E_ONLY=bare|bare-matched|phalanx|gated|kube (or a list, e.g.
# bare,phalanx) runs only that (no e2e.json is written), and E2E_REUSE=1 keeps the cluster up
# afterwards and reuses one that is already up.
ONLY = {side for side in os.environ.get("E2E_ONLY", "").split(",") if side}
REUSE = os.environ.get("E2E_REUSE") == "1"
# The bare loop's requests in flight: 32 is the reference the target is set against; the
# matched loop has as many as the operator's binds (PHALANX_BIND_CONCURRENCY, which the operator
# child inherits, else its default).
BARE_INFLIGHT = 32
MATCHED_INFLIGHT = int(
    os.environ.get("PHALANX_BIND_CONCURRENCY")
    or OperatorConfig.model_fields["bind_concurrency"].default
)
# E2E_PYSPY=FILE samples the operator with py-spy over each queue-released window (collapsed
# stacks in FILE.<run>): where the operator's CPU goes while it binds.
PYSPY = os.environ.get("E2E_PYSPY", "")
# The operator (a child process) inherits PYTHONPATH, so it imports the compiled core if set.
CORE = "compiled" if os.environ.get("PHALANX_CORE_BUILD") else "pure"
METRICS_PORT = free_port()
"""The operator's metrics port (the bench reads its cycle count around each window)."""
# E2E_APISERVER_PPROF=FILE: a CPU profile of the API server over each bare and queue-released
# window (its /debug/pprof, on by default), to read with `go tool pprof`: where the bottleneck's
# time goes.
APISERVER_PPROF = os.environ.get("E2E_APISERVER_PPROF", "")


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


def api_requests(c: Cluster) -> dict[str, float]:
    """The API server's request counts so far by verb and resource (its /metrics)."""
    with urllib.request.urlopen(f"{c.server}/metrics", context=c.ssl(), timeout=60) as resp:
        text = resp.read().decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("apiserver_request_total{"):
            labels = dict(re.findall(r'(\w+)="([^"]*)"', line))
            key = " ".join(
                x
                for x in (labels.get("verb"), labels.get("resource"), labels.get("subresource"))
                if x
            )
            out[key] = out.get(key, 0.0) + float(line.rsplit(" ", 1)[1])
    return out


def fresh_namespace(c: Cluster, name: str) -> str:
    deadline = time.monotonic() + 120
    while True:
        try:
            c.core.create_namespace({"metadata": {"name": name}})
            break
        except client.ApiException as exc:
            # Left over by an interrupted run on a reused cluster: remove it, then create anew.
            if exc.status != 409 or time.monotonic() > deadline:
                raise
            log(f"namespace {name} is left over from an earlier run; deleting it")
            drop_namespace(c, name)
            time.sleep(1)
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
    except urllib3.exceptions.ProtocolError as exc:
        # The answer (every deleted pod, megabytes) can be cut off on a loaded machine; the
        # deletion itself has happened or goes on server-side.
        log(f"the answer to deleting the pods of {ns} was cut off ({exc}); waiting for them to go")
    deadline = time.monotonic() + 300
    while c.core.list_namespaced_pod(ns, limit=1).items:
        if time.monotonic() > deadline:
            raise SystemExit(f"pods of {ns} not gone after 300 s")
        time.sleep(0.5)
    try:
        c.core.delete_namespace(ns)
    except client.ApiException as exc:
        if exc.status not in (404, 409):  # gone already, or already being deleted
            raise
    # Until the namespace is gone its controller deletes what is left (PodGroups, Events): API
    # work that would otherwise fall into the next run's timed window.
    deadline = time.monotonic() + 300
    while True:
        try:
            c.core.read_namespace(ns)
        except client.ApiException as exc:
            if exc.status == 404:
                return
            raise
        if time.monotonic() > deadline:
            raise SystemExit(f"namespace {ns} not gone 300 s after its deletion")
        time.sleep(0.5)


class WatchExpired(Exception):
    """The watch's resourceVersion is gone: list again."""


class BindRecorder:
    """Watches a namespace and records when each pod got its node.

    Every run, the bare loop's included, is timed by this same watcher, so the API server serves
    the same extra watch in each. It reads the raw stream and decodes each event with orjson: the
    client's model objects cost 4 s of CPU in a 12 s window, on a machine whose 2 cores the API
    server needs.
    """

    def __init__(self, c: Cluster, ns: str) -> None:
        self.c, self.ns = c, ns
        self.bound_at: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        version: str | None = None
        while not self._stop.is_set():
            kw: dict[str, Any] = {"watch": True, "timeout_seconds": 5, "_preload_content": False}
            if version:
                kw["resource_version"] = version
            try:
                resp = self.c.core.list_namespaced_pod(self.ns, **kw)
                buf = b""
                for chunk in resp.stream(65536):
                    buf += chunk
                    *lines, buf = buf.split(b"\n")
                    for line in lines:
                        version = self._record(orjson.loads(line), version) if line else version
                    if self._stop.is_set():
                        break
                resp.release_conn()
            except (client.ApiException, urllib3.exceptions.HTTPError, WatchExpired) as exc:
                # A loaded API server can end a resumed watch (504, 410): start over from a
                # fresh list (already-recorded pods keep their time).
                log(f"bind recorder: watch ended ({exc}); listing again")
                version = None

    def _record(self, event: dict[str, Any], version: str | None) -> str | None:
        obj = event.get("object") or {}
        if event.get("type") == "ERROR":
            raise WatchExpired(str(obj.get("message")))
        meta = obj.get("metadata") or {}
        name = meta.get("name")
        if (obj.get("spec") or {}).get("nodeName") and name not in self.bound_at:
            self.bound_at[name] = time.time()
        return meta.get("resourceVersion") or version

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


async def _bare_bind(
    c: Cluster, ns: str, names: list[str], nodes: list[str], inflight: int
) -> None:
    sem = asyncio.Semaphore(inflight)
    connector = aiohttp.TCPConnector(ssl=c.ssl(), limit=inflight)
    async with aiohttp.ClientSession(connector=connector) as s:

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

        await asyncio.gather(*(one(i, n) for i, n in enumerate(names)))


def log_pace(what: str, started: float, bound_at: dict[str, float]) -> None:
    """How the window's binds were spread: the first, the pace between the 10th and the 90th
    percentile bind (the steady middle), and the last tenth. Shows whether a difference in
    throughput is in the steady pace or at the window's edges."""
    times = sorted(bound_at.values())
    lo, hi = times[len(times) // 10], times[(9 * len(times)) // 10]
    middle = (len(times) * 8 / 10) / (hi - lo) if hi > lo else float("nan")
    log(
        f"{what}: first bind +{times[0] - started:.2f} s, middle 80% at {middle:.0f} pods/s, "
        f"the 10th percentile at +{lo - started:.2f} s, the 90th at +{hi - started:.2f} s, "
        f"the last at +{times[-1] - started:.2f} s"
    )


def run_bare(c: Cluster, run: int, nodes: list[str], op_pid: int, inflight: int) -> float:
    ns = fresh_namespace(c, f"bare{inflight}-{run}")
    names = [f"p{i}" for i in range(GANGS * GANG_SIZE)]
    create_pods(c, ns, [pod_body(n, "nobody", None, False) for n in names])
    rec = BindRecorder(c, ns).start()
    requests_before, cpu_before = api_requests(c), cluster_cpu(op_pid)
    with profiled(c, f"bare{inflight}-{run}"):
        started = time.time()
        asyncio.run(_bare_bind(c, ns, names, nodes, inflight))
        rec.wait_all(len(names), timeout=600)
    elapsed = max(rec.bound_at.values()) - started
    log_pace(f"bare loop, {inflight} in flight", started, rec.bound_at)
    cpu_after = cluster_cpu(op_pid)
    log_requests(c, f"bare loop, {inflight} in flight", requests_before, len(names))
    log_cpu(f"the bare loop's {elapsed:.1f} s ({inflight} in flight)", cpu_before, cpu_after)
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
    requests_before = api_requests(c)
    released = asyncio.run(_release(c, ns, names))
    rec.wait_all(len(names), timeout=600)
    log_requests(c, f"{scheduler}, gates lifted", requests_before, len(names))
    first = min(released.values())
    last = max(rec.bound_at.values())
    latencies = []
    for g in range(GANGS):
        members = [f"g{g}-{i}" for i in range(GANG_SIZE)]
        latencies.append(max(rec.bound_at[m] for m in members) - max(released[m] for m in members))
    drop_namespace(c, ns)
    return len(names) / (last - first), latencies


def log_cpu(what: str, before: dict[str, float], after: dict[str, float]) -> None:
    """CPU seconds each process spent between two `cluster_cpu` readings."""
    log(
        f"CPU s in {what}: "
        + ", ".join(f"{k} {after[k] - before.get(k, 0.0):.1f}" for k in sorted(after))
    )


def log_requests(c: Cluster, what: str, before: dict[str, float], pods: int) -> None:
    """The API server's busiest request kinds since `before`, per pod."""
    busiest = sorted((v - before.get(k, 0.0), k) for k, v in api_requests(c).items())[-8:]
    log(
        f"{what}: API requests per pod until the last bind: "
        + ", ".join(f"{k} {n / pods:.2f}" for n, k in reversed(busiest))
    )


def run_queue_released(c: Cluster, run: int, op_pid: int) -> tuple[float, list[float]]:
    """Phalanx, with its gangs held back by their Queue's limit (0 GPUs) and released by one
    write that lifts it.

    Lifting scheduling gates is an API write per pod inside the timed window (2,000 patches
    competing with the binds for the same API server), which the bare loop's window does not
    have; here the window holds only what the scheduler causes — binds, status, Events — and
    kwok's reaction to binds, as the bare loop's does. The gated run stays the comparison with
    kube-scheduler, which has no queues and is released the same way.
    """
    queue = f"hold-{run}"
    ensure_queue(c.custom, queue, {"limit": {"nvidia.com/gpu": "0"}})
    ns = fresh_namespace(c, f"held-{run}")
    for g in range(GANGS):
        c.custom.create_namespaced_custom_object(
            "phalanx.dev", "v1alpha1", ns, "podgroups", pod_group(f"g{g}", GANG_SIZE, queue=queue)
        )
    names = [f"g{g}-{i}" for g in range(GANGS) for i in range(GANG_SIZE)]
    create_pods(c, ns, [pod_body(n, "phalanx", n.split("-")[0], False) for n in names])

    def held() -> int:
        groups = c.custom.list_namespaced_custom_object("phalanx.dev", "v1alpha1", ns, "podgroups")
        return sum(
            any(
                cond.get("reason") == "QueueOverLimit"
                for cond in (g.get("status") or {}).get("conditions") or []
            )
            for g in groups["items"]
        )

    deadline = time.monotonic() + 300
    while (count := held()) < GANGS:  # the operator has seen every gang, and written its status
        if time.monotonic() > deadline:
            raise SystemExit(f"only {count}/{GANGS} gangs report QueueOverLimit after 300 s")
        time.sleep(1)
    rec = BindRecorder(c, ns).start()
    requests_before = api_requests(c)
    cpu_before = cluster_cpu(op_pid)
    cycles_before = operator_cycles()
    with profiled(c, str(run), op_pid):
        released = time.time()
        c.custom.patch_cluster_custom_object(
            "phalanx.dev", "v1alpha1", "queues", queue, {"spec": {"limit": None}}
        )
        rec.wait_all(len(names), timeout=600)
        cpu_after, window = cluster_cpu(op_pid), time.time() - released
    log_requests(c, "phalanx, queue limit lifted", requests_before, len(names))
    log_cpu(f"the {window:.1f} s from the lift to the last bind", cpu_before, cpu_after)
    cycles, cycle_s = (a - b for a, b in zip(operator_cycles(), cycles_before, strict=True))
    log(f"operator: {cycles:.0f} scheduling cycles in the window, {cycle_s:.1f} s in all")
    last = max(rec.bound_at.values())
    log_pace("phalanx", released, rec.bound_at)
    latencies = [
        max(rec.bound_at[f"g{g}-{i}"] for i in range(GANG_SIZE)) - released for g in range(GANGS)
    ]
    drop_namespace(c, ns)
    c.custom.delete_cluster_custom_object("phalanx.dev", "v1alpha1", "queues", queue)
    return len(names) / (last - released), latencies


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process so far (from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cluster_cpu(op_pid: int) -> dict[str, float]:
    """CPU seconds so far of each process of the bench cluster, the operator and this bench:
    where a run's CPU went (on 2 cores, whoever burns it slows everyone)."""
    out: dict[str, float] = {"operator": cpu_seconds(op_pid), "bench": cpu_seconds(os.getpid())}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            args = (proc / "cmdline").read_bytes().split(b"\0")
            if f"clusters/{NAME}/".encode() in args[0]:
                name = Path(args[0].decode()).name
                out[name] = out.get(name, 0.0) + cpu_seconds(int(proc.name))
        except OSError:
            continue
    return out


@contextlib.contextmanager
def profiled(c: Cluster, tag: str, op_pid: int | None = None) -> Iterator[None]:
    """Around a timed window: the API server's CPU profile (E2E_APISERVER_PPROF) and, given the
    operator's pid, a py-spy recording of it (E2E_PYSPY), each written to `<FILE>.<tag>`."""
    spy = None
    if PYSPY and op_pid is not None:
        spy = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "py-spy"),
                *("record", "--pid", str(op_pid), "--rate", "100", "--format", "raw"),
                *("--output", f"{PYSPY}.{tag}", "--nonblocking"),
            ],
            stdout=subprocess.DEVNULL,
        )
        time.sleep(1)  # py-spy attached
    profiler = None
    if APISERVER_PPROF:
        profiler = threading.Thread(target=apiserver_profile, args=(c, f"{APISERVER_PPROF}.{tag}"))
        profiler.start()
    try:
        yield
    finally:
        if profiler is not None:
            profiler.join()
        if spy is not None:
            spy.send_signal(signal.SIGINT)
            spy.wait(timeout=60)


def apiserver_profile(c: Cluster, out: str, seconds: int = 4) -> None:
    url = f"{c.server}/debug/pprof/profile?seconds={seconds}"
    with urllib.request.urlopen(url, context=c.ssl(), timeout=seconds + 60) as resp:
        Path(out).write_bytes(resp.read())
    log(f"API server CPU profile of the window's first {seconds} s: {out}")


def operator_cycles() -> tuple[float, float]:
    """The operator's scheduling cycles so far: how many, and their total seconds."""
    url = f"http://127.0.0.1:{METRICS_PORT}/metrics"
    with urllib.request.urlopen(url, timeout=30) as resp:
        text = resp.read().decode()
    count = total = 0.0
    for line in text.splitlines():
        if line.startswith("phalanx_scheduling_cycle_seconds_count"):
            count = float(line.rsplit(" ", 1)[1])
        elif line.startswith("phalanx_scheduling_cycle_seconds_sum"):
            total = float(line.rsplit(" ", 1)[1])
    return count, total


def operator_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main() -> None:
    shape = load_shape("large")
    reuse = REUSE and devcluster.status(NAME).up
    if devcluster.status(NAME).up and not reuse:
        devcluster.down(name=NAME, log=log)
    kubeconfig = (
        devcluster.status(NAME).kubeconfig
        if reuse
        else devcluster.up(shape, name=NAME, log=log, wait_s=600)
    )
    op: subprocess.Popen[bytes] | None = None
    try:
        c = Cluster(kubeconfig)
        apply_crds(c.custom, client.ApiextensionsV1Api(c.api_client))
        ensure_queue(c.custom, "default", {})
        nodes = [n.metadata.name for n in c.core.list_node().items]
        log(f"the operator runs on the {CORE} core")
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
                str(METRICS_PORT),
                "--health-port",
                str(free_port()),
            ],
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
        time.sleep(8)
        results: dict[str, list[float]] = {
            "bare": [],
            "bare-matched": [],
            "phalanx": [],
            "gated": [],
            "kube": [],
        }
        gang_lat: list[float] = []
        cpu: list[float] = []

        def bare(run: int) -> None:
            results["bare"].append(run_bare(c, run, nodes, op.pid, BARE_INFLIGHT))

        def bare_matched(run: int) -> None:
            results["bare-matched"].append(run_bare(c, run, nodes, op.pid, MATCHED_INFLIGHT))

        def phalanx(run: int) -> None:
            before = cluster_cpu(op.pid)
            results["phalanx"].append(run_queue_released(c, run, op.pid)[0])
            after = cluster_cpu(op.pid)
            cpu.append(after["operator"] - before["operator"])
            log_cpu("the queue-released phalanx run", before, after)

        for run in range(RUNS):
            # The sides whose ratios are the target, in turn first: whatever the cluster carries
            # over from the run before (the previous namespace's deletion, etcd growing until its
            # compaction) falls on each side alike.
            sides = [("bare", bare), ("phalanx", phalanx), ("bare-matched", bare_matched)]
            for side, measure in sides if run % 2 == 0 else reversed(sides):
                if not ONLY or side in ONLY:
                    measure(run)
            if not ONLY or "gated" in ONLY:
                ours, lat = run_released(c, run, "phalanx")
                results["gated"].append(ours)
                gang_lat.extend(lat)
            if not ONLY or "kube" in ONLY:
                results["kube"].append(run_released(c, run, "default-scheduler")[0])
            log(
                f"run {run + 1}/{RUNS}: "
                + ", ".join(f"{k} {v[-1]:.0f} pods/s" for k, v in results.items() if v)
                + (f"; operator CPU {cpu[-1]:.1f} s" if cpu else "")
                + "".join(
                    f"; Phalanx/{ref} {results['phalanx'][-1] / results[ref][-1]:.2f}"
                    for ref in ("bare", "bare-matched")
                    if results["phalanx"] and results[ref]
                )
            )
        if ONLY:
            return

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
        med = {k: statistics.median(v) for k, v in results.items()}

        def paired(ref: str) -> float:
            """Each run's Phalanx over the same run's `ref`, then the median: the pairs share
            the cluster's state, which drifts from run to run more than either side."""
            pairs = zip(results["phalanx"], results[ref], strict=True)
            return round(statistics.median(p / b for p, b in pairs), 3)

        out = {
            "shape": "large (1,024 nodes, 8,192 GPUs)",
            "runs": RUNS,
            "pods_per_run": GANGS * GANG_SIZE,
            "gang_size": GANG_SIZE,
            # Released by one Queue write: the same window content as the bare loop's.
            "bind_pods_per_s": round(med["phalanx"], 1),
            # Released by lifting each pod's scheduling gate, exactly as kube-scheduler's pods.
            "bind_pods_per_s_gated": round(med["gated"], 1),
            "bare_bind_pods_per_s": round(med["bare"], 1),
            "kube_scheduler_pods_per_s": round(med["kube"], 1),
            "ratio_to_bare": round(med["phalanx"] / med["bare"], 3),
            "ratio_to_bare_paired_median": paired("bare"),
            # The same loop with as many binds in flight as the operator (MATCHED_INFLIGHT).
            "bare_matched_inflight": MATCHED_INFLIGHT,
            "bare_matched_bind_pods_per_s": round(med["bare-matched"], 1),
            "ratio_to_bare_matched": round(med["phalanx"] / med["bare-matched"], 3),
            "ratio_to_bare_matched_paired_median": paired("bare-matched"),
            "ratio_to_kube_scheduler": round(med["gated"] / med["kube"], 3),
            "ratio_gated_to_bare": round(med["gated"] / med["bare"], 3),
            "gang_latency_p50_ms": round(1000 * lat_sorted[len(lat_sorted) // 2], 1),
            "gang_latency_p95_ms": round(1000 * lat_sorted[int(len(lat_sorted) * 0.95)], 1),
            "operator_rss_mib": round(rss, 1),
            "operator_rss_pods": MEMORY_PODS,
            "operator_cpu_s_per_run": round(statistics.median(cpu), 1),
            "core": CORE,
            "runs_raw": {k: [round(v, 1) for v in vs] for k, vs in results.items()},
        }
        OUT.write_text(json.dumps(out, indent=1) + "\n")
        print(json.dumps(out, indent=1))
        if REUSE:
            # Gone before the cluster is reused: 10,000 pods left in view would make the next run
            # a reclaim of the whole cluster instead of a bind burst. (Otherwise the cluster goes
            # down with them: deleting 10,000 pods outlasted 300 s once, and the results were lost.)
            drop_namespace(c, ns)
    finally:
        if op is not None:
            op.terminate()
            op.wait(timeout=30)
        if not REUSE:
            devcluster.down(name=NAME, log=log)


ENVIRONMENT = """\
It takes no arguments; these environment variables set it:
  E2E_RUNS=5               timed runs of each side (medians reported)
  E2E_GANGS=250            gangs per run
  E2E_GANG_SIZE=8          pods per gang
  E2E_MEMORY_PODS=10000    pods in the operator's view when its memory is read
  E2E_ONLY=SIDE[,SIDE]     only these of bare, bare-matched, phalanx, gated, kube (no e2e.json)
  E2E_REUSE=1              reuse a bench cluster that is up, and leave it up
  E2E_PYSPY=FILE           py-spy profiles of the operator per window (FILE.<run>)
  E2E_APISERVER_PPROF=FILE CPU profiles of the API server per window
  PHALANX_BIND_CONCURRENCY the operator's binds in flight (and the matched bare loop's)
`make bench-e2e` runs it on the compiled core; `make bench-e2e E2E_CORE=pure` on the sources.
"""


def parse_args(argv: list[str] | None = None) -> None:
    """`--help` prints what the bench does and the variables that set it, and exits: the bench
    takes a 1,024-node cluster up for about half an hour, so an unknown argument is refused
    rather than starting it."""
    argparse.ArgumentParser(
        prog="bench/e2e_bench.py",
        description=(__doc__ or "").split("\n\n", 1)[0],
        epilog=ENVIRONMENT,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    ).parse_args(argv)


if __name__ == "__main__":
    parse_args()
    main()
