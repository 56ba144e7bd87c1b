"""Bring the local control plane up and down with kwokctl's binary runtime.

kwokctl (an existing, maintained tool) supervises etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and the kwok controller as local processes, makes the certificates and writes a
kubeconfig; we only give it our binaries, our Stages and a loopback bind address. What we add on
top: fake GPU nodes from a shape file, a wait until every node is Ready, and the dev-cluster
marker ConfigMap that tests require before they create fake nodes.

Every failure after kwokctl started anything deletes the cluster again, so a failed `up` leaves no
process, port or half-made cluster behind.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from phalanx.devcluster import versions
from phalanx.devcluster.binaries import Binaries, cache_root, ensure_binaries
from phalanx.devcluster.errors import DevClusterError
from phalanx.devcluster.kubectl_cache import forget_discovery
from phalanx.devcluster.shapes import GPU_RESOURCE, LEAF_LABEL, SHAPE_LABEL, SPINE_LABEL, Shape
from phalanx.devcluster.stages import stage_documents

CLUSTER_NAME = "phalanx"
MARKER_NAMESPACE = "kube-public"
MARKER_NAME = "phalanx-dev-cluster"
Log = Callable[[str], None]


def workdir() -> Path:
    return cache_root() / "kwok"


def cluster_dir(name: str = CLUSTER_NAME) -> Path:
    return workdir() / "clusters" / name


def kubeconfig_path(name: str = CLUSTER_NAME) -> Path:
    return cluster_dir(name) / "kubeconfig.yaml"


def _env(bins: Binaries) -> dict[str, str]:
    env = dict(os.environ)
    env["KWOK_WORKDIR"] = str(workdir())
    # kwokctl checks readiness with kubectl: ours first on PATH, the version we built.
    env["PATH"] = f"{bins.bin_dir}{os.pathsep}{env.get('PATH', '')}"
    return env


def _kwokctl(bins: Binaries, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(bins.path("kwokctl")), *args],
        env=_env(bins),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _api_ready(kubeconfig: Path, timeout: float = 3.0) -> bool:
    """True when the apiserver behind this kubeconfig answers /readyz."""
    if not kubeconfig.exists():
        return False
    try:
        from kubernetes import client

        api = _client(kubeconfig, timeout)
        client.VersionApi(api.api_client).get_code(_request_timeout=timeout)
    except Exception:
        return False
    return True


def _client(kubeconfig: Path, timeout: float = 30.0) -> Any:
    from kubernetes import client, config

    api_client = config.new_client_from_config(config_file=str(kubeconfig))  # type: ignore[no-untyped-call]
    api_client.configuration.retries = 0
    return client.CoreV1Api(api_client)


def port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


NATIVE_GANG_FEATURE_GATES = (
    "GenericWorkload=true,GangScheduling=true,TopologyAwareWorkloadScheduling=true"
)
"""kube-scheduler's own gang scheduling in Kubernetes 1.36 (alpha): the Workload and PodGroup kinds
of `scheduling.k8s.io/v1alpha2`, the pod field `spec.schedulingGroup`, the gang plugin and
topology-aware placement. Passed to every component (kwokctl gives the same gates to each)."""

NATIVE_GANG_RUNTIME_CONFIG = "scheduling.k8s.io/v1alpha2=true"
"""The alpha API group version that serves those kinds (alpha versions are off unless asked for)."""

_GATE = re.compile(r"^[A-Z][A-Za-z0-9]*=(true|false)$")
_RUNTIME = re.compile(r"^[a-z0-9][a-z0-9.\-]*(/[a-z0-9]+){0,2}=(true|false)$")


def parse_feature_gates(value: str) -> str:
    """`A=true,B=false` → the same, normalised; a malformed entry is one clear error."""
    items = [item.strip() for item in value.split(",") if item.strip()]
    for item in items:
        if not _GATE.match(item):
            raise DevClusterError(
                f"feature gate {item!r} is not NAME=true|false (e.g. GangScheduling=true); "
                "separate several with commas"
            )
    return ",".join(items)


def parse_runtime_config(value: str) -> str:
    """`group/version=true,…` → the same, normalised; a malformed entry is one clear error."""
    items = [item.strip() for item in value.split(",") if item.strip()]
    for item in items:
        if not _RUNTIME.match(item):
            raise DevClusterError(
                f"runtime config {item!r} is not GROUP/VERSION=true|false "
                "(e.g. scheduling.k8s.io/v1alpha2=true); separate several with commas"
            )
    return ",".join(items)


def _kwokctl_config(
    bins: Binaries, port: int | None, feature_gates: str = "", runtime_config: str = ""
) -> str:
    options: dict[str, Any] = {
        # Always set: a docker client exists on these machines and would otherwise be picked.
        "runtime": "binary",
        "bindAddress": "127.0.0.1",
        "kubeVersion": versions.KUBERNETES,
        "kubeBinaryPrefix": str(bins.bin_dir),
        "kubectlBinary": str(bins.path("kubectl")),
        "etcdBinary": str(bins.path("etcd")),
        "kwokControllerBinary": str(bins.path("kwok")),
        # Scale tests create thousands of objects; client-side throttling would only measure it.
        "disableQPSLimits": True,
    }
    if port is not None:
        options["kubeApiserverPort"] = port
        options.update(_other_ports(port))
    if feature_gates:
        # kwokctl passes --feature-gates to the apiserver, controller manager and scheduler.
        options["kubeFeatureGates"] = feature_gates
    if runtime_config:
        options["kubeRuntimeConfig"] = runtime_config
    conf = {
        "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
        "kind": "KwokctlConfiguration",
        "options": options,
    }
    return "---\n".join([yaml.safe_dump(conf), *stage_documents()])


#: The kwokctl options of every port a binary-runtime cluster listens on besides the apiserver's.
OTHER_PORT_OPTIONS = (
    "etcdPeerPort",
    "etcdPort",
    "kubeControllerManagerPort",
    "kubeSchedulerPort",
    "kwokControllerPort",
)


def _other_ports(pinned: int) -> dict[str, int]:
    """Distinct free loopback ports, none of them `pinned`, for `OTHER_PORT_OPTIONS`.

    kwokctl fills each port left at 0 by probing down from 32767 for one nothing listens on,
    skipping only the ports of the clusters it already knows. A pinned apiserver port is not
    listened on yet while it probes, so a `--port` in that range was handed out a second time
    (to the kwok controller, after a cluster at that port was taken down and made again): that
    component failed to bind and the nodes never turned Ready. Choosing the other ports here,
    from the kernel, keeps them apart; the sockets stay open until all are chosen so no two
    coincide. Called under `creation_lock`, like kwokctl's own probe.
    """
    held: list[socket.socket] = []
    ports: list[int] = []
    try:
        while len(ports) < len(OTHER_PORT_OPTIONS):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            held.append(s)
            s.bind(("127.0.0.1", 0))
            chosen = int(s.getsockname()[1])
            if chosen != pinned:
                ports.append(chosen)
    finally:
        for s in held:
            s.close()
    return dict(zip(OTHER_PORT_OPTIONS, ports, strict=True))


@dataclass(frozen=True)
class Status:
    up: bool
    kubeconfig: Path
    shape: str | None
    nodes: int
    ready_nodes: int
    gpus: int


def status(name: str = CLUSTER_NAME) -> Status:
    """What is running now (cheap; never starts or builds anything)."""
    kc = kubeconfig_path(name)
    shape = _recorded_shape(name)
    if not _api_ready(kc):
        return Status(False, kc, shape, 0, 0, 0)
    api = _client(kc)
    nodes = api.list_node(label_selector=SHAPE_LABEL).items
    ready = sum(1 for n in nodes if _is_ready(n))
    gpus = sum(int(n.status.allocatable.get(GPU_RESOURCE, "0")) for n in nodes)
    return Status(True, kc, shape, len(nodes), ready, gpus)


@contextlib.contextmanager
def creation_lock() -> Any:
    """Serialise cluster creation across processes on this machine.

    kwokctl picks its components' ports by probing for free ones and binds them only when the
    processes start; two clusters created at the same moment can pick the same port, and one of
    them then comes up without a working kwok controller (its nodes never turn Ready). Holding an
    exclusive lock from before the probe until kwokctl reports the components up closes that
    window; creating nodes and waiting for them happens outside it.
    """
    workdir().mkdir(parents=True, exist_ok=True)
    with (workdir() / ".create.lock").open("w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _recorded_shape(name: str) -> str | None:
    f = cluster_dir(name) / "phalanx-shape.json"
    if not f.exists():
        return None
    value = json.loads(f.read_text()).get("shape")
    return value if isinstance(value, str) else None


def _is_ready(node: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in (node.status.conditions or []))


def up(
    shape: Shape,
    port: int | None = None,
    log: Log = print,
    wait_s: float = 300,
    name: str = CLUSTER_NAME,
    feature_gates: str = "",
    runtime_config: str = "",
) -> Path:
    """Start the control plane, create the shape's nodes, wait until all are Ready.

    `name` lets a second cluster (e.g. the `large` scale check) run beside the default one.
    `feature_gates` (`A=true,B=false`) go to every component, `runtime_config`
    (`group/version=true,…`) to the apiserver: `NATIVE_GANG_*` turn on kube-scheduler's own
    gang scheduling.
    """
    feature_gates = parse_feature_gates(feature_gates)
    runtime_config = parse_runtime_config(runtime_config)
    kc = kubeconfig_path(name)
    if _api_ready(kc):
        raise DevClusterError(
            f"a dev cluster is already up (KUBECONFIG={kc}): use it, or run "
            "`phalanx dev-cluster down` first"
        )
    if port is not None and port_in_use(port):
        raise DevClusterError(
            f"port {port} on 127.0.0.1 is already in use: pick another with --port, "
            "or leave --port out to get a free one"
        )
    bins = ensure_binaries(log)
    if not shutil.which("kubectl", path=_env(bins)["PATH"]):
        raise DevClusterError(
            "kubectl is missing from the built binaries; run `make control-plane`"
        )
    if cluster_dir(name).exists():
        # A stale cluster (processes gone, e.g. after a reboot): clear it before creating anew.
        _kwokctl(bins, "delete", "cluster", "--name", name)
        shutil.rmtree(cluster_dir(name), ignore_errors=True)
    workdir().mkdir(parents=True, exist_ok=True)
    config_file = workdir() / f"{name}-kwokctl.yaml"

    started = time.monotonic()
    extra = "".join(
        f", {label} {value}"
        for label, value in (("feature gates", feature_gates), ("runtime config", runtime_config))
        if value
    )
    log(
        f"starting the control plane (Kubernetes {versions.KUBERNETES}, kwok {versions.KWOK}"
        f"{extra})"
    )
    try:
        with creation_lock():
            config_file.write_text(_kwokctl_config(bins, port, feature_gates, runtime_config))
            result = _kwokctl(
                bins,
                "create",
                "cluster",
                "--name",
                name,
                "--config",
                str(config_file),
                "--wait",
                "120s",
                "--timeout",
                "300s",
            )
        if result.returncode != 0:
            tail = " ".join((result.stdout + result.stderr).split())[-600:]
            raise DevClusterError(f"kwokctl could not create the cluster: {tail}")
        (cluster_dir(name) / "phalanx-shape.json").write_text(
            json.dumps(
                {
                    "shape": shape.name,
                    "featureGates": feature_gates,
                    "runtimeConfig": runtime_config,
                }
            )
        )
        for stale in forget_discovery(kc):
            log(f"cleared kubectl's discovery cache {stale} (kept from a cluster there before)")
        log(
            f"control plane up in {time.monotonic() - started:.1f}s; "
            f"creating {shape.node_count} fake GPU nodes ({shape.gpu_count} GPUs)"
        )
        api = _client(kc)
        create_nodes(api, shape)
        wait_nodes_ready(api, shape.node_count, deadline_s=wait_s, cluster=name)
        _mark(api, shape)
    except BaseException:
        log("bringing the half-started cluster down again")
        _kwokctl(bins, "delete", "cluster", "--name", name)
        raise
    log(f"cluster up with {shape.node_count} Ready nodes in {time.monotonic() - started:.1f}s")
    return kc


def create_nodes(api: Any, shape: Shape) -> None:
    """POST every node (status included: the apiserver accepts it on create)."""
    from kubernetes.client.exceptions import ApiException

    def create(body: dict[str, Any]) -> None:
        try:
            api.create_node(body)
        except ApiException as exc:
            if exc.status != 409:
                raise

    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(create, shape.nodes()))


def wait_nodes_ready(api: Any, expected: int, deadline_s: float, cluster: str) -> None:
    deadline = time.monotonic() + deadline_s
    ready = 0
    while time.monotonic() < deadline:
        nodes = api.list_node(label_selector=SHAPE_LABEL).items
        ready = sum(1 for n in nodes if _is_ready(n))
        if ready >= expected:
            return
        time.sleep(0.5)
    raise DevClusterError(
        f"only {ready} of {expected} fake nodes became Ready within {deadline_s:.0f}s; "
        f"see kwok's log with `KWOK_WORKDIR={workdir()} kwokctl logs kwok-controller "
        f"--name {cluster}`"
    )


def _mark(api: Any, shape: Shape) -> None:
    """The marker that lets tests create fake nodes here (and only here)."""
    api.create_namespaced_config_map(
        MARKER_NAMESPACE,
        {
            "metadata": {"name": MARKER_NAME},
            "data": {"shape": shape.name, "nodes": str(shape.node_count)},
        },
    )


def down(log: Log = print, name: str = CLUSTER_NAME) -> bool:
    """Stop and delete the cluster; True when there was one."""
    bins = Binaries(cache_root() / "bin")
    if not bins.path("kwokctl").exists() or not cluster_dir(name).exists():
        return False
    pids = processes_under(cluster_dir(name))
    result = _kwokctl(bins, "delete", "cluster", "--name", name)
    if result.returncode != 0:
        tail = " ".join((result.stdout + result.stderr).split())[-400:]
        raise DevClusterError(f"kwokctl could not delete the cluster: {tail}")
    # Processes kwokctl does not know (an operator started against this cluster, e.g. by
    # `make demo`) get a SIGTERM too; everything is then awaited, stragglers killed.
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    _reap(pids, grace_s=20)
    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(cluster_dir(name))
    log(f"cluster {name} deleted")
    return True


def processes_under(path: Path) -> list[int]:
    """PIDs of live processes whose command line names `path` (the cluster's own binaries)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        # With the separator: cluster `phalanx` must not match `phalanx-test`'s processes.
        if f"{path}{os.sep}" in cmdline and is_alive(int(proc.name)):
            found.append(int(proc.name))
    return found


def _reap(pids: list[int], grace_s: float) -> None:
    """kwokctl signals its processes and returns at once: wait for them, then kill stragglers,
    so that when `down` returns no process or port of the cluster is left."""
    deadline = time.monotonic() + grace_s
    alive = list(pids)
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive if is_alive(p)]
        time.sleep(0.1)
    for pid in alive:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def is_alive(pid: int) -> bool:
    """Running (not gone, not a zombie waiting for its parent)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def describe_nodes(kubeconfig: Path) -> list[dict[str, str]]:
    """One row per node: name, spine, leaf, GPUs, product, Ready."""
    api = _client(kubeconfig)
    rows = []
    for n in sorted(api.list_node().items, key=lambda n: n.metadata.name):
        labels = n.metadata.labels or {}
        rows.append(
            {
                "name": n.metadata.name,
                "spine": labels.get(SPINE_LABEL, "-"),
                "leaf": labels.get(LEAF_LABEL, "-"),
                "gpus": (n.status.allocatable or {}).get(GPU_RESOURCE, "0"),
                "product": labels.get("nvidia.com/gpu.product", "-"),
                "ready": "Ready" if _is_ready(n) else "NotReady",
            }
        )
    return rows
