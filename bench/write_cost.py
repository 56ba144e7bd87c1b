"""What one write of each kind the operator makes costs the API server (and etcd), in CPU.

    .venv/bin/python bench/write_cost.py          # on the e2e bench's cluster (started if down)

Why: on 2 cores the API server is the bottleneck of a bind burst, so the scheduler's throughput
is set by how much API-server CPU each bound pod costs — its binding plus its share of the
gang's writes (the decision recorded on the PodGroup before the binds, the `Running` status
after, the `Scheduled` Event). This measures each kind alone: N writes, 32 in flight, on pods
and PodGroups made beforehand, with the API server's and etcd's CPU read from /proc around each
batch. ROUNDS alternating rounds; medians. Writes bench/results/write_cost.json.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp

from phalanx.k8s.api import MERGE_PATCH, METADATA_ONLY

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
from e2e_bench import (  # noqa: E402
    NAME,
    Cluster,
    apply_crds,
    client,
    cluster_cpu,
    create_pods,
    devcluster,
    drop_namespace,
    ensure_queue,
    fresh_namespace,
    load_shape,
    log,
    pod_body,
    pod_group,
)

N = int(os.environ.get("WRITE_COST_N", "400"))
ROUNDS = int(os.environ.get("WRITE_COST_ROUNDS", "3"))
OUT = REPO / "bench" / "results" / "write_cost.json"
GROUP = "apis/phalanx.dev/v1alpha1"


def decision(i: int) -> dict[str, Any]:
    """The shape of the operator's decision record (before the binds) for a gang of 8."""
    nodes = {f"g{i}-{k}": f"kwok-node-{(8 * i + k) % 1024}" for k in range(8)}
    return {
        "status": {
            "phase": "Binding",
            "placement": {"domains": {"leaf": ["leaf-0"], "spine": ["spine-0"]}, "pods": nodes},
        }
    }


def running(i: int) -> dict[str, Any]:
    """The shape of the operator's `Running` write (after the binds)."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    cond = {"lastTransitionTime": now, "message": f"placed on 1 leaf ({i})", "status": "True"}
    return {
        "status": {
            "phase": "Running",
            "bound": 8,
            "pending": 0,
            "running": 0,
            "succeeded": 0,
            "failed": 0,
            "scheduledAt": now,
            "conditions": [
                {**cond, "type": "Scheduled", "reason": "Scheduled"},
                {**cond, "type": "Evicted", "status": "False", "reason": "Running", "message": ""},
            ],
        }
    }


def event(ns: str, i: int) -> dict[str, Any]:
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {
        "metadata": {"generateName": f"g{i}.", "namespace": ns},
        "involvedObject": {
            "apiVersion": "phalanx.dev/v1alpha1",
            "kind": "PodGroup",
            "name": f"g{i}",
            "namespace": ns,
        },
        "reason": "Scheduled",
        "message": f"placed on 1 leaf ({i})",
        "type": "Normal",
        "source": {"component": "phalanx"},
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
        "reportingComponent": "phalanx",
    }


async def _send(c: Cluster, requests: list[tuple[str, str, Any, str]], inflight: int = 32) -> None:
    sem = asyncio.Semaphore(inflight)
    conn = aiohttp.TCPConnector(ssl=c.ssl(), limit=inflight)
    async with aiohttp.ClientSession(connector=conn) as s:

        async def one(method: str, path: str, body: Any, ctype: str) -> None:
            async with sem:
                data = json.dumps(body).encode()
                headers = {"Content-Type": ctype}
                if ctype == MERGE_PATCH:
                    headers["Accept"] = METADATA_ONLY  # as the operator's status patches ask
                async with s.request(method, f"{c.server}/{path}", data=data, headers=headers) as r:
                    await r.read()
                    if r.status >= 300:
                        raise SystemExit(f"{method} {path}: HTTP {r.status}")

        await asyncio.gather(*(one(*r) for r in requests))


def measure(c: Cluster, what: str, requests: list[tuple[str, str, Any, str]]) -> dict[str, float]:
    before = cluster_cpu(os.getpid())
    started = time.perf_counter()
    asyncio.run(_send(c, requests))
    elapsed = time.perf_counter() - started
    after = cluster_cpu(os.getpid())
    out = {
        "apiserver_ms": 1000 * (after["kube-apiserver"] - before["kube-apiserver"]) / N,
        "etcd_ms": 1000 * (after["etcd"] - before["etcd"]) / N,
        "per_s": N / elapsed,
    }
    log(f"{what}: " + ", ".join(f"{k} {v:.2f}" for k, v in out.items()))
    return out


def one_round(c: Cluster, nodes: list[str], r: int) -> dict[str, dict[str, float]]:
    ns = fresh_namespace(c, f"cost-{r}")
    names = [f"g{i}-0" for i in range(N)]
    create_pods(c, ns, [pod_body(n, "nobody", f"g{i}", False) for i, n in enumerate(names)])
    for i in range(N):
        c.custom.create_namespaced_custom_object(
            "phalanx.dev", "v1alpha1", ns, "podgroups", pod_group(f"g{i}", 8)
        )
    time.sleep(3)
    merge = MERGE_PATCH
    pg = f"{GROUP}/namespaces/{ns}/podgroups"
    kinds: dict[str, Callable[[int], tuple[str, str, Any, str]]] = {
        "binding": lambda i: (
            "POST",
            f"api/v1/namespaces/{ns}/pods/{names[i]}/binding",
            {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": names[i]},
                "target": {"apiVersion": "v1", "kind": "Node", "name": nodes[i % len(nodes)]},
            },
            "application/json",
        ),
        "podgroup_decision_patch": lambda i: ("PATCH", f"{pg}/g{i}/status", decision(i), merge),
        "podgroup_running_patch": lambda i: ("PATCH", f"{pg}/g{i}/status", running(i), merge),
        "event_create": lambda i: (
            "POST",
            f"api/v1/namespaces/{ns}/events",
            event(ns, i),
            "application/json",
        ),
    }
    out = {what: measure(c, what, [make(i) for i in range(N)]) for what, make in kinds.items()}
    drop_namespace(c, ns)
    return out


def main() -> None:
    status = devcluster.status(NAME)
    kubeconfig = (
        status.kubeconfig
        if status.up
        else devcluster.up(load_shape("large"), name=NAME, log=log, wait_s=600)
    )
    c = Cluster(kubeconfig)
    apply_crds(c.custom, client.ApiextensionsV1Api(c.api_client))
    ensure_queue(c.custom, "default", {})
    nodes = [n.metadata.name for n in c.core.list_node().items]
    rounds = [one_round(c, nodes, r) for r in range(ROUNDS)]
    out: dict[str, Any] = {"n_per_kind": N, "rounds": ROUNDS}
    for what in rounds[0]:
        out[what] = {
            k: round(statistics.median(r[what][k] for r in rounds), 2) for k in rounds[0][what]
        }
    bind_ms = out["binding"]["apiserver_ms"]
    out["apiserver_cost_in_bindings"] = {
        what: round(v["apiserver_ms"] / bind_ms, 2)
        for what, v in out.items()
        if isinstance(v, dict)
    }
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
