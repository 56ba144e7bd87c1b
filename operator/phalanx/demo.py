"""`make demo`: the whole story on a fresh machine.

1. the local cluster with the `small` shape (built and started if needed);
2. the CRDs applied with kubectl, exactly as a user would;
3. the operator (`phalanx run`) started in the background against it;
4. the example queues and gangs of `deploy/examples/` submitted;
5. where every gang landed (nodes, leaves) or why it waits, with numbers and ETA.

The cluster and the operator keep running afterwards so you can poke at them with the printed
KUBECONFIG; `make down` stops both (the operator's command line names the cluster's folder, so
`phalanx dev-cluster down` finds and stops it with the control plane).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from phalanx.devcluster.binaries import ensure_binaries
from phalanx.devcluster.cluster import (
    cluster_dir,
    describe_nodes,
    kubeconfig_path,
    processes_under,
    status,
    up,
)
from phalanx.devcluster.shapes import LEAF_LABEL, load_shape

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "deploy" / "examples"
GANGS = ("llm-pretrain", "pair", "finetune", "giant", "job-sweep")
"""The gangs the demo waits for: four hand-written PodGroups, and one the operator made for an
unmodified Job in a namespace labelled with its queue (deploy/examples/auto-gang-job.yaml)."""
EXAMPLE_FILES = {
    "queues.yaml": None,
    "training-job.yaml": "llm-pretrain",
    "gang-bare.yaml": "pair",
    "finetune-job.yaml": "finetune",
    "giant-waiting.yaml": "giant",
    "auto-gang-job.yaml": "job-sweep",
}
"""The example files in the order they are applied, each with the gang it makes."""
POLICY_KINDS = ("MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding")
console = Console(width=None if sys.stdout.isatty() else 150)


def run_kubectl(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The cache's kubectl against `kubeconfig`, its output captured, whatever its exit code."""
    bins = ensure_binaries(lambda m: console.print(f"[dim]{m}[/dim]"))
    return subprocess.run(
        [str(bins.path("kubectl")), "--kubeconfig", str(kubeconfig), *args],
        capture_output=True,
        text=True,
        check=False,
    )


def kubectl(kubeconfig: Path, *args: str) -> str:
    out = run_kubectl(kubeconfig, *args)
    if out.returncode != 0:
        raise SystemExit(f"kubectl {' '.join(args)} failed: {out.stderr.strip()}")
    return out.stdout


def apply_admission_policies(kubeconfig: Path) -> None:
    """The chart's MutatingAdmissionPolicies (opt-in with one label), taken from the plain
    manifests the chart renders: the operator runs as a local process here, not from the chart."""
    import yaml

    docs = [
        d
        for d in yaml.safe_load_all((REPO / "deploy" / "manifests" / "phalanx.yaml").read_text())
        if d and d.get("kind") in POLICY_KINDS
    ]
    path = cluster_dir() / "admission-policies.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    console.print("$ kubectl apply -f <the admission policies of deploy/manifests/phalanx.yaml>")
    console.print(kubectl(kubeconfig, "apply", "--server-side", "-f", str(path)).strip())
    wait_for_admission_policies(kubeconfig)


PROBE = """apiVersion: v1
kind: Pod
metadata: {name: phalanx-demo-probe, namespace: default, labels: {phalanx.dev/queue: default}}
spec: {containers: [{name: probe, image: busybox}]}
"""


def wait_for_admission_policies(kubeconfig: Path, timeout: float = 60.0) -> None:
    """Until a dry-run pod labelled with a queue comes back with `schedulerName: phalanx`.

    The API server acts on a new policy only once its informer has loaded it (about a second
    here): the Job of `auto-gang-job.yaml` created before that would have its pods run by
    `default-scheduler`, not ganged. A dry run also fails while the controller-manager has not
    yet made the namespace's default ServiceAccount, so a failure is retried too.
    """
    probe = cluster_dir() / "admission-probe.yaml"
    probe.write_text(PROBE)
    args = ("create", "--dry-run=server", "-f", str(probe), "-o", "jsonpath={.spec.schedulerName}")
    deadline = time.monotonic() + timeout
    while True:
        out = run_kubectl(kubeconfig, *args)
        if out.returncode == 0 and out.stdout.strip() == "phalanx":
            return
        if time.monotonic() > deadline:
            raise SystemExit(
                f"the admission policies did not act within {timeout:.0f}s: a dry-run pod "
                f"labelled phalanx.dev/queue got {out.stdout.strip() or out.stderr.strip()!r}"
            )
        time.sleep(0.5)


HEALTH_PORT = 18081


def _healthy() -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{HEALTH_PORT}/healthz", timeout=1) as r:
            return bool(r.status == 200)
    except OSError:
        return False


def _running_operators() -> list[int]:
    return [
        p
        for p in processes_under(cluster_dir())
        if "phalanx" in _cmdline(p) and " run" in _cmdline(p)
    ]


def operator_left_running(timeout: float = 30.0) -> bool:
    """Whether an operator of this cluster runs and stays: one that answers /healthz. One that
    does not is stopping (it stops serving /healthz at once, then takes seconds to exit: 7 s
    measured) or still starting; wait until it exits or answers. Before, `make demo` right after
    the operator was stopped said "already running" and started none."""
    deadline = time.monotonic() + timeout
    said = False
    while _running_operators():
        if _healthy():
            return True
        if time.monotonic() > deadline:
            raise SystemExit(
                f"an operator of this cluster neither answers /healthz on port {HEALTH_PORT} "
                f"nor exits after {timeout:.0f}s (pids {_running_operators()}); stop it "
                "(make down) and run make demo again"
            )
        if not said:
            console.print("an operator of this cluster is stopping or starting: waiting for it")
            said = True
        time.sleep(0.5)
    return False


def start_operator(kubeconfig: Path) -> None:
    if operator_left_running():
        console.print("the operator is already running")
        return
    log = cluster_dir() / "operator.log"
    subprocess.Popen(
        [
            sys.executable,
            "-m",
            "phalanx",
            "run",
            "--kubeconfig",
            str(kubeconfig),
            "--metrics-port",
            "18080",
            "--health-port",
            str(HEALTH_PORT),
            "--cycle-interval",
            "2",
        ],
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    console.print(f"operator started (log: {log}; metrics: http://127.0.0.1:18080/metrics)")


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def gangs(kubeconfig: Path) -> list[dict[str, Any]]:
    import json

    data = json.loads(kubectl(kubeconfig, "get", "podgroups.phalanx.dev", "-A", "-o", "json"))
    items: list[dict[str, Any]] = data["items"]
    return items


def settled(items: list[dict[str, Any]]) -> bool:
    by_name = {g["metadata"]["name"]: g.get("status", {}) for g in items}
    if set(GANGS) - set(by_name):
        return False
    # Succeeded counts: a short example Job may finish before the wait is over (it waited for
    # `Running` and failed "did not all settle"). Failed too: an example Job whose member
    # someone failed by hand stays failed (it waited 90 s and failed); `failed_examples` says
    # so, and the next run starts every example that ended afresh (`ended_examples`).
    return all(
        by_name[g].get("phase") in ("Running", "Succeeded", "Failed") for g in GANGS if g != "giant"
    ) and bool(by_name["giant"].get("conditions"))


def unsettled(items: list[dict[str, Any]]) -> list[str]:
    """The example gangs `settled` still waits for, each with what its PodGroup says (walked: a
    rerun after the user had suspended the example Job failed "did not all settle" and pointed
    at the operator's log, where nothing was wrong; `job-sweep` said why in its own status)."""
    by_name = {g["metadata"]["name"]: g for g in items}
    out: list[str] = []
    for name in GANGS:
        gang = by_name.get(name)
        if gang is None:
            out.append(f"{name}: no PodGroup yet")
            continue
        status = gang.get("status") or {}
        conditions = status.get("conditions") or []
        if name == "giant":
            if not conditions:
                out.append(f"{name}: no decision yet")
            continue
        phase = status.get("phase") or "no phase"
        if phase in ("Running", "Succeeded", "Failed"):
            continue
        said = next((c for c in conditions if c.get("type") == "Scheduled"), None)
        why = f" ({said.get('reason')}: {said.get('message')})" if said else ""
        out.append(f"{gang['metadata'].get('namespace', '')}/{name}: {phase}{why}")
    return out


def ended_examples(items: list[dict[str, Any]]) -> dict[str, str]:
    """The example gangs an earlier run left `Succeeded` or `Failed`, by name, with their phase.
    Why they matter: a gang that ended takes no new pods (terminal stays terminal), so applying
    its example again beside it made a Job whose pods waited for ever with `PodGroupFinished`
    (walked: `make demo` run twice, `finetune` said `Succeeded` while its new Job sat pending)."""
    return {
        g["metadata"]["name"]: phase
        for g in items
        if g["metadata"]["name"] in GANGS
        and (phase := (g.get("status") or {}).get("phase")) in ("Succeeded", "Failed")
    }


def delete_example(kubeconfig: Path, path: Path) -> None:
    """Delete what an example file made but a Namespace (its other objects may be the user's,
    and deleting one takes its whole contents with it), waiting until each and its dependents
    are gone."""
    import yaml

    for doc in yaml.safe_load_all(path.read_text()):
        if not doc or doc.get("kind") == "Namespace":
            continue
        meta = doc["metadata"]
        kubectl(
            kubeconfig,
            "delete",
            doc["kind"],
            meta["name"],
            "-n",
            meta.get("namespace", "default"),
            "--ignore-not-found",
            # Its dependents first: a Job's ended pods, left behind, would count as members of
            # the PodGroup made again (already succeeded), and a managed PodGroup left by
            # the garbage collector would be found instead of made.
            "--cascade=foreground",
            "--wait=true",
            "--timeout=60s",
        )


def failed_examples(items: list[dict[str, Any]]) -> list[str]:
    """The example gangs that are `Failed` once the demo's wait is over."""
    return sorted(
        f"{g['metadata'].get('namespace', 'default')}/{g['metadata']['name']}"
        for g in items
        if g["metadata"]["name"] in GANGS and (g.get("status") or {}).get("phase") == "Failed"
    )


def show(kubeconfig: Path, items: list[dict[str, Any]]) -> None:
    leaf_of = {r["name"]: r["leaf"] for r in describe_nodes(kubeconfig)}
    table = Table(
        "NAMESPACE",
        "GANG",
        "QUEUE",
        "PHASE",
        "BOUND/MIN",
        "REASON",
        "LEAVES",
        "ETA / WHY",
        title="gangs (job-sweep: made by the operator for an unmodified Job)",
    )
    for g in sorted(items, key=lambda g: g["metadata"]["name"]):
        st, spec = g.get("status", {}), g["spec"]
        cond: dict[str, Any] = next(
            (c for c in st.get("conditions", []) if c["type"] == "Scheduled"), {}
        )
        nodes = st.get("placement", {}).get("nodes", [])
        leaves = sorted({leaf_of.get(n, "?") for n in nodes})
        why = cond.get("message", "") if cond.get("status") != "True" else ""
        if st.get("estimatedStartTime"):
            why = f"ETA {st['estimatedStartTime']}: {why}"
        table.add_row(
            g["metadata"]["namespace"],
            g["metadata"]["name"],
            spec.get("queue", "default"),
            st.get("phase", "-"),
            f"{st.get('bound', 0)}/{spec['minMember']}",
            cond.get("reason", "-"),
            ",".join(leaves) or "-",
            why,
        )
    console.print(table)


def main() -> None:
    shape = os.environ.get("PHALANX_DEMO_SHAPE", "small")
    if status().up:
        console.print(f"reusing the dev cluster that is up (shape {status().shape})")
        kubeconfig = kubeconfig_path()
    else:
        kubeconfig = up(load_shape(shape), log=lambda m: console.print(f"[dim]{m}[/dim]"))
    nodes = describe_nodes(kubeconfig)
    table = Table("NODE", "SPINE", "LEAF", "GPUS", "PRODUCT", "STATUS", title="fake GPU nodes")
    for r in nodes:
        table.add_row(r["name"], r["spine"], r["leaf"], r["gpus"], r["product"], r["ready"])
    console.print(table)
    console.print(
        f"{len(nodes)} nodes, {sum(int(r['gpus']) for r in nodes)} GPUs "
        f"(topology label {LEAF_LABEL})"
    )

    console.print("$ kubectl apply -f crds/")
    console.print(kubectl(kubeconfig, "apply", "-f", str(REPO / "crds")).strip())
    kubectl(
        kubeconfig,
        "wait",
        "--for=condition=established",
        "--timeout=60s",
        "crd/podgroups.phalanx.dev",
        "crd/queues.phalanx.dev",
    )
    # Established is not yet served: the API server's cache of a new CRD's storage answers 429
    # "storage is (re)initializing" for a moment, which kopf logged as an ERROR at every first
    # start. kubectl's client waits out a 429 (it honours Retry-After), so one list of each waits.
    kubectl(kubeconfig, "get", "queues.phalanx.dev,podgroups.phalanx.dev", "-A", "-o", "name")
    start_operator(kubeconfig)
    apply_admission_policies(kubeconfig)
    ended = ended_examples(gangs(kubeconfig))
    for name, gang in EXAMPLE_FILES.items():
        if gang in ended:
            console.print(
                f"{gang} ended {ended[gang]} in an earlier run and would take no new pods; "
                f"deleting its objects to run it afresh, as $ kubectl delete -f "
                f"deploy/examples/{name} does (its Namespace kept)"
            )
            delete_example(kubeconfig, EXAMPLES / name)
        console.print(f"$ kubectl apply -f deploy/examples/{name}")
        console.print(kubectl(kubeconfig, "apply", "-f", str(EXAMPLES / name)).strip())

    deadline = time.monotonic() + 90
    items = gangs(kubeconfig)
    while not settled(items) and time.monotonic() < deadline:
        time.sleep(1)
        items = gangs(kubeconfig)
    show(kubeconfig, items)
    if not settled(items):
        waiting = "".join(f"\n  {line}" for line in unsettled(items))
        raise SystemExit(
            f"the example gangs did not all settle within 90s:{waiting}\n"
            f"(phalanx explain NAME -n NAMESPACE says more; the operator's log: "
            f"{cluster_dir() / 'operator.log'})"
        )
    for gang in failed_examples(items):
        console.print(
            f"{gang} is Failed (its workload failed, see phalanx explain); the next make demo "
            "runs it afresh"
        )
    console.print(kubectl(kubeconfig, "get", "queues"))
    print(f"KUBECONFIG={kubeconfig}")
    # Commands that work as printed in a fresh clone's shell: kubectl is the one built into the
    # cache (not on PATH), phalanx the one in .venv (not activated).
    bin_dir = ensure_binaries(lambda m: console.print(f"[dim]{m}[/dim]")).bin_dir
    console.print(
        f'try: export KUBECONFIG={kubeconfig} PATH="{bin_dir}:$PATH"\n'
        "     kubectl get gang -A; kubectl describe gang giant\n"
        "     kubectl get gang -n research job-sweep -o yaml   # made for the Job\n"
        "     .venv/bin/phalanx queue -A; .venv/bin/phalanx explain giant\n"
        "     .venv/bin/phalanx share\n"
        "Stop all: make down",
        highlight=False,
        soft_wrap=True,
    )


if __name__ == "__main__":
    main()
