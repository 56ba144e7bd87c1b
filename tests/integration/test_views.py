"""`phalanx queue`, `share` and `explain` on a real API server, checked on their JSON output.

The scripted situation, on the `small` shape (128 GPUs, guarantees adding up to the cluster):

- queue `views-borrower` (guarantee 32, not reclaimable) runs `wide`: 12 pods × 8 GPUs = 96 GPUs,
  time limit 600 s. While `views-lender` is idle it deserves all 96; once the lender has demand,
  it deserves its guarantee, 32, and *borrows* the other 64.
- queue `views-lender` (guarantee 96): `big` (14 × 8 = 112 GPUs, a 6 s time limit, so that it
  starves and holds a binding reservation within seconds) cannot start before `wide` ends, so
  it waits with a reservation at `wide`'s time limit; `long` (4 × 8 = 32 GPUs, no time limit)
  would fit in the 32 free GPUs but would delay that reservation, so it waits for it; `short`
  (2 × 8 = 16 GPUs, time limit 300 s) ends before the reservation, so it is *backfilled*, and
  then `long` no longer fits at all.

The commands run as subprocesses, as users run them (and once as the kubectl plugin).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import Cluster, ensure_queue
from tests.integration.objects import gang_pod, pod_group
from tests.integration.operator_fixture import OperatorProcess
from tests.integration.test_operator_gangs import nodes_of, wait_bound_whole
from tests.integration.waiting import wait_for

pytestmark = pytest.mark.integration

GPU = "nvidia.com/gpu"
BIN = Path(sys.executable).parent
BORROWER, LENDER = "views-borrower", "views-lender"
WIDE_LIMIT = 600


def phalanx(cluster: Cluster, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}
    done = subprocess.run(
        [str(BIN / "phalanx"), *args],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if check:
        assert done.returncode == 0, f"phalanx {' '.join(args)} failed:\n{done.stderr}"
        assert done.stderr == "", done.stderr
    return done


def phalanx_json(cluster: Cluster, *args: str) -> Any:
    return json.loads(phalanx(cluster, *args, "-o", "json").stdout)


def mine(rows: list[dict[str, Any]], ns: str) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in rows if r["namespace"] == ns}


def ts(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def remove_gangs(cluster: Cluster, custom: Any, ns: str) -> None:
    """PodGroups first, then their pods: gangs without a group turn no reason, so the operator
    posts no Event into the namespace while the `namespace` fixture is deleting it."""
    custom.delete_collection_namespaced_custom_object("phalanx.dev", "v1alpha1", ns, "podgroups")
    wait_for(
        lambda: (
            not custom.list_namespaced_custom_object("phalanx.dev", "v1alpha1", ns, "podgroups")[
                "items"
            ]
        ),
        timeout=30,
        what=f"the PodGroups of {ns} to be deleted",
    )
    cluster.core.delete_collection_namespaced_pod(ns, grace_period_seconds=0)
    wait_for(
        lambda: not cluster.core.list_namespaced_pod(ns).items,
        timeout=60,
        what=f"the pods of {ns} to be deleted",
    )


@pytest.fixture
def queues(phalanx_api: Any) -> Iterator[None]:
    ensure_queue(phalanx_api, BORROWER, {"guarantee": {GPU: 32}, "reclaimable": False})
    ensure_queue(phalanx_api, LENDER, {"guarantee": {GPU: 96}})
    yield
    for name in (BORROWER, LENDER):
        phalanx_api.delete_cluster_custom_object("phalanx.dev", "v1alpha1", "queues", name)


@pytest.fixture
def ns(
    cluster: Cluster, phalanx_api: Any, namespace: str, operator: OperatorProcess
) -> Iterator[str]:
    yield namespace
    remove_gangs(cluster, phalanx_api, namespace)


@pytest.fixture
def lending_ns(
    cluster: Cluster, phalanx_api: Any, queues: None, namespace: str, operator: OperatorProcess
) -> Iterator[str]:
    """A namespace whose gangs are removed before the queues are (no QueueNotFound Events)."""
    yield namespace
    remove_gangs(cluster, phalanx_api, namespace)


def submit(
    cluster: Cluster, custom: Any, ns: str, name: str, pods: int, queue: str, limit: int | None
) -> None:
    custom.create_namespaced_custom_object(
        "phalanx.dev",
        "v1alpha1",
        ns,
        "podgroups",
        pod_group(name, pods, queue=queue, time_limit=limit),
    )
    for i in range(pods):
        cluster.core.create_namespaced_pod(ns, gang_pod(f"{name}-{i}", name, 8))


def test_queue_share_and_explain_show_the_figures_of_a_scripted_situation(
    cluster: Cluster, phalanx_api: Any, lending_ns: str
) -> None:
    custom, ns = phalanx_api, lending_ns
    before_wide = time.time()
    submit(cluster, custom, ns, "wide", 12, BORROWER, WIDE_LIMIT)
    wait_bound_whole(cluster, ns, "wide", 12)
    after_wide = time.time()

    # A 6 s limit: `big` starves (the shipped rule: a binding reservation once a gang has
    # waited twice its time limit) long before `wide` ends, and from then on holds its
    # reservation, which is what the rest of the scene is about.
    submit(cluster, custom, ns, "big", 14, LENDER, 6)
    wait_for(
        lambda: (r := mine(phalanx_json(cluster, "queue", "-n", ns), ns).get("big")) and r["eta"],
        timeout=60,
        what="`phalanx queue` to show an ETA for `big`",
    )
    wait_for(
        lambda: "not binding" not in phalanx_json(cluster, "explain", "big", "-n", ns)["message"],
        timeout=60,
        what="`big` to hold a binding reservation (once it has waited twice its 6 s limit)",
    )
    submit(cluster, custom, ns, "long", 4, LENDER, None)
    long = wait_for(
        lambda: (
            (e := phalanx_json(cluster, "explain", "long", "-n", ns))["reason"]
            == "WaitingForReservation"
            and e
        ),
        timeout=60,
        what="`phalanx explain long` to show it waiting for `big`'s reservation",
    )
    # -- phalanx explain of a gang that fits but would delay a reservation --------------------
    assert f"reserved for {ns}/big" in long["message"]
    assert long["message"].startswith("needs 32 GPUs; 32 free, but that capacity is reserved")
    assert long["detail"]["requestedGPUs"] == 32
    assert long["detail"]["freeGPUs"] == 32
    assert long["position"] == 2
    assert long["wouldStart"][0].startswith("32 GPUs are free but reserved for gangs ahead of it")

    submit(cluster, custom, ns, "short", 2, LENDER, 300)
    wait_bound_whole(cluster, ns, "short", 2)
    # -- phalanx explain lists the gang's Events: its bind --------------------------------------
    bound = wait_for(
        lambda: [
            e
            for e in phalanx_json(cluster, "explain", "short", "-n", ns)["events"]
            if e["reason"] in ("Scheduled", "Backfilled")
        ],
        timeout=30,
        what="`phalanx explain short` to list the Event of its bind",
    )
    assert bound[-1]["type"] == "Normal" and bound[-1]["message"].startswith("bound 2 pods"), bound

    # The operator refreshes figures that only drift (free GPUs, positions) every few seconds:
    # wait until every view shows the settled situation, then check each figure exactly.
    seen: dict[str, Any] = {}

    def settled() -> tuple[Any, Any, Any] | None:
        rows = mine(phalanx_json(cluster, "queue", "-A"), ns)
        share = {r["queue"]: r for r in phalanx_json(cluster, "share")}
        big = phalanx_json(cluster, "explain", "big", "-n", ns)
        seen.update(queue=rows, share=share, explain=big)
        ready = (
            rows.get("long", {}).get("reason") == "InsufficientCapacity"
            # Positions drift too: `short` (less work: 2 pods × 300 s) was ordered ahead of
            # `long` while it waited, so `long` shows 3 until its position is refreshed.
            and rows.get("long", {}).get("position") == 2
            and rows.get("short", {}).get("reason") == "Backfilled"
            and (big.get("detail") or {}).get("freeGPUs") == 16
            and (big.get("detail") or {}).get("queueAllocatedGPUs") == 16
            and share.get(LENDER, {}).get("allocated") == 16
            and share.get(BORROWER, {}).get("borrowed") == 64
            # One moment's figures: the ETA moves by a second once (see below).
            and rows.get("big", {}).get("eta") == big.get("eta")
        )
        return (rows, share, big) if ready else None

    try:
        rows, share, big = wait_for(
            settled,
            timeout=90,
            interval=1,
            what="the views to show `short` backfilled, 16 GPUs free, `long` not fitting",
        )
    except pytest.fail.Exception:
        print("last seen by the views:", json.dumps(seen, indent=1))
        raise

    # -- phalanx queue -A -o json ----------------------------------------------------------------
    assert set(rows) == {"wide", "big", "short", "long"}
    assert {k: rows["wide"][k] for k in ("queue", "phase", "bound", "min", "reason")} == {
        "queue": BORROWER,
        "phase": "Running",
        "bound": 12,
        "min": 12,
        "reason": "Scheduled",
    }
    assert rows["short"] == {
        "namespace": ns,
        "name": "short",
        "queue": LENDER,
        "phase": "Running",
        "bound": 2,
        "min": 2,
        "reason": "Backfilled",
        "position": None,
        "eta": None,
    }
    # `big` is bigger than the free capacity: the operator's reason is InsufficientCapacity, and
    # its reservation is its ETA — when `wide` reaches its time limit.
    assert {
        k: rows["big"][k] for k in ("queue", "phase", "bound", "min", "reason", "position")
    } == {
        "queue": LENDER,
        "phase": "Pending",
        "bound": 0,
        "min": 14,
        "reason": "InsufficientCapacity",
        "position": 1,
    }
    eta = ts(rows["big"]["eta"])
    assert before_wide + WIDE_LIMIT - 2 <= eta <= after_wide + WIDE_LIMIT + 2, rows["big"]["eta"]
    assert rows["long"]["phase"] == "Pending"
    assert rows["long"]["reason"] == "InsufficientCapacity"
    assert rows["long"]["position"] == 2
    for row in rows.values():
        assert list(row) == [
            "namespace",
            "name",
            "queue",
            "phase",
            "bound",
            "min",
            "reason",
            "position",
            "eta",
        ]

    # -- phalanx queue --start: only the waiting gangs, the reservation first ---------------------
    start = [r for r in phalanx_json(cluster, "queue", "-n", ns, "--start") if r["namespace"] == ns]
    assert [r["name"] for r in start] == ["big", "long"]
    # Read a moment later: the ETA may have moved by a second once, when the operator read back
    # `wide`'s scheduledAt (whole seconds) in place of the time of the cycle that bound it.
    assert abs(ts(start[0]["eta"]) - ts(rows["big"]["eta"])) <= 1

    # -- phalanx share -o json: the borrower holds 64 GPUs of the lender's guarantee -------------
    gpus = {
        name: 8 * sum(1 for node in nodes_of(cluster, ns, name).values() if node) for name in rows
    }
    assert share[BORROWER] | {"usage": None, "fairShare": None} == {
        "queue": BORROWER,
        "weight": 1,
        "guarantee": 32,
        "deserved": 32,
        "allocated": gpus["wide"],
        "borrowed": gpus["wide"] - 32,
        "pendingGangs": 0,
        "runningGangs": 1,
        "usage": None,
        "fairShare": None,
    }
    assert gpus["wide"] == 96
    assert share[BORROWER]["allocated"] > share[BORROWER]["deserved"]
    assert share[LENDER] | {"usage": None, "fairShare": None} == {
        "queue": LENDER,
        "weight": 1,
        "guarantee": 96,
        "deserved": 96,
        "allocated": gpus["short"],
        "borrowed": 0,
        "pendingGangs": 2,  # big, long
        "runningGangs": 1,  # short
        "usage": None,
        "fairShare": None,
    }
    assert gpus["short"] == 16 and gpus["big"] == gpus["long"] == 0
    for q in (BORROWER, LENDER):
        assert isinstance(share[q]["usage"], float) and share[q]["usage"] >= 0
        assert 0 < share[q]["fairShare"] <= 1

    # -- phalanx explain big -o json: the numbers behind the wait --------------------------------
    assert big["reason"] == "InsufficientCapacity"
    assert big["message"].startswith("needs 112 GPUs; 16 free; expected start in ")
    assert big["detail"] == {
        "requestedGPUs": 112,
        "freeGPUs": 16,
        "queueDeservedGPUs": 96,
        "queueAllocatedGPUs": 16,
    }
    assert (big["position"], big["eta"], big["phase"]) == (1, rows["big"]["eta"], "Pending")
    # Its pods as the status counts them: all 14 made, none bound, so all 14 wait.
    assert big["members"] == {
        "exist": 14,
        "min": 14,
        "bound": 0,
        "running": 0,
        "waiting": 14,
        "succeeded": 0,
        "failed": 0,
    }
    assert big["degraded"] is None
    assert (
        big["wouldStart"][0]
        == "needs 96 more free GPUs that it can use (112 requested, 16 free now)"
    )
    assert big["wouldStart"][-1].startswith(f"starts at {rows['big']['eta']} (in ")

    long = phalanx_json(cluster, "explain", "long", "-n", ns)
    assert long["reason"] == "InsufficientCapacity"
    assert long["detail"]["requestedGPUs"] == 32
    assert long["detail"]["freeGPUs"] == 16
    assert long["wouldStart"][0] == (
        "needs 16 more free GPUs that it can use (32 requested, 16 free now)"
    )
    # Within its queue's share, but the GPUs it could claim back are borrowed by a queue that is
    # not reclaimable.
    assert long["wouldStart"][1] == (
        f"its queue {LENDER} would hold 48 of its deserved 96 GPUs (allocated 16): within its "
        f"share, but the GPUs borrowed by {BORROWER} (64) are not reclaimable: it waits for those "
        "gangs to end"
    )

    # A running gang's pods, as the status counts them once its pods run on the fake nodes.
    short = wait_for(
        lambda: (
            ((e := phalanx_json(cluster, "explain", "short", "-n", ns)).get("members") or {}).get(
                "running"
            )
            == 2
            and e
        ),
        timeout=30,
        what="`phalanx explain short` to count its 2 pods running",
    )
    assert short["members"] == {
        "exist": 2,
        "min": 2,
        "bound": 2,
        "running": 2,
        "waiting": 0,
        "succeeded": 0,
        "failed": 0,
    }

    # -- the tables print the same gangs; a missing PodGroup is one line and exit code 1 ---------
    table = phalanx(cluster, "queue", "-n", ns).stdout
    assert table.splitlines()[0].split()[:3] == ["NAME", "QUEUE", "PHASE"]
    assert any(
        line.split()[:5] == ["short", LENDER, "Running", "2/2", "Backfilled"]
        for line in table.splitlines()
    )
    missing = phalanx(cluster, "explain", "nope", "-n", ns, check=False)
    assert missing.returncode == 1
    assert missing.stdout == ""
    assert missing.stderr == f'phalanx: error: PodGroup "nope" not found in namespace "{ns}"\n'

    # -- a PodGroup deleted under its running gang: its members still hold their GPUs ----------
    custom.delete_namespaced_custom_object("phalanx.dev", "v1alpha1", ns, "podgroups", "short")
    gone = wait_for(
        lambda: (r := phalanx(cluster, "explain", "short", "-n", ns, check=False)).returncode and r,
        timeout=30,
        what="`phalanx explain short` to find its PodGroup deleted",
        interval=1.0,
    )
    assert gone.stdout == ""
    assert gone.stderr == (
        f'phalanx: error: PodGroup "short" not found in namespace "{ns}"; 2 pods labelled '
        "phalanx.dev/pod-group=short name it: 2 bound, holding 16 GPUs charged to no queue and "
        "under no gang rule (time limit, member failure); apply the PodGroup again and its "
        "bound members are adopted, or delete them\n"
    )


def test_the_views_work_as_the_kubectl_plugin(cluster: Cluster, phalanx_api: Any, ns: str) -> None:
    """`kubectl phalanx …` finds `kubectl-phalanx` on PATH and passes the arguments as they are."""
    from phalanx.devcluster.binaries import ensure_binaries

    kubectl = ensure_binaries().path("kubectl")
    phalanx_api.create_namespaced_custom_object(
        "phalanx.dev", "v1alpha1", ns, "podgroups", pod_group("early", 3)
    )
    cluster.core.create_namespaced_pod(ns, gang_pod("early-0", "early", 8))
    env = {
        **os.environ,
        "KUBECONFIG": str(cluster.kubeconfig),
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    }

    def plugin(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(kubectl), "phalanx", *args],
            check=False,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def waiting() -> dict[str, Any] | None:
        done = plugin("explain", "early", "-n", ns, "-o", "json")
        assert done.returncode == 0, done.stderr
        out: dict[str, Any] = json.loads(done.stdout)
        # The pod is created just after its PodGroup: a first status may say "0 of 3" (true
        # when written); the count is refreshed with the next report.
        seen = out["reason"] == "WaitingForPods" and out["message"].startswith("1 of 3")
        return out if seen else None

    out = wait_for(
        waiting, timeout=30, interval=1, what="`early` to wait for its pods, 1 of 3 there"
    )
    assert out["message"].startswith("1 of 3 pods exist")
    assert out["wouldStart"][0] == (
        f"needs 2 more pod(s) labelled phalanx.dev/pod-group=early in namespace {ns} (1 of 3 exist)"
    )
    rows = json.loads(plugin("queue", "-n", ns, "-o", "json").stdout)
    assert [(r["name"], r["phase"], r["reason"]) for r in rows] == [
        ("early", "Pending", "WaitingForPods")
    ]
    usage = plugin("queue", "--help")
    assert usage.returncode == 0
    assert "Usage: kubectl phalanx queue" in usage.stdout


def test_explain_given_a_pods_name_explains_its_gang_or_the_gang_of_one_it_is(
    cluster: Cluster, phalanx_api: Any, ns: str
) -> None:
    """A user knows the pods they submitted, not always a PodGroup: `explain <pod>` explains
    the PodGroup a member pod names, and a pod with no PodGroup (a gang of one) from the pod
    itself: the reason its Events give, the operator's message from its condition. Walked: a
    Deployment's waiting pod got `PodGroup "<pod>" not found`."""
    phalanx_api.create_namespaced_custom_object(
        "phalanx.dev", "v1alpha1", ns, "podgroups", pod_group("pair", 2)
    )
    cluster.core.create_namespaced_pod(ns, gang_pod("pair-0", "pair", 8))
    # 16 GPUs in one pod: no node of the `small` shape (8 GPUs each) can ever hold it.
    cluster.core.create_namespaced_pod(ns, gang_pod("solo", None, 16))

    def explained(name: str, reason: str, message: str = "") -> dict[str, Any] | None:
        out: dict[str, Any] = phalanx_json(cluster, "explain", name, "-n", ns)
        said = out["reason"] == reason and (out["message"] or "").startswith(message)
        return out if said else None

    member = wait_for(
        lambda: explained("pair-0", "WaitingForPods"),
        timeout=30,
        interval=1,
        what="`explain pair-0` to explain its PodGroup pair, waiting for its pods",
    )
    assert (member["kind"], member["name"], member["memberOf"]) == ("PodGroup", "pair", "pair-0")
    lone = wait_for(
        # The reason from its Event, the message from its PodScheduled condition (unprefixed).
        lambda: explained("solo", "InsufficientCapacity", "needs 16 GPUs"),
        timeout=30,
        interval=1,
        what="`explain solo` to give its Event's InsufficientCapacity and its message",
    )
    assert (lone["kind"], lone["name"], lone["phase"]) == ("Pod", "solo", "Pending"), lone
    assert lone["memberOf"] is None and lone["position"] is None, lone
    text = phalanx(cluster, "explain", "solo", "-n", ns).stdout
    assert text.startswith(f"Pod       {ns}/solo (a gang of one, no PodGroup; queue "), text
    assert "InsufficientCapacity" in text, text
    listed = phalanx(cluster, "queue", "-n", ns).stdout
    assert listed.endswith(
        "1 pod with no PodGroup waits as a gang of one: solo (phalanx explain POD says why)\n"
    ), listed
    assert "pair" in listed and "pair-0" not in listed, listed  # a member is its gang's row
    missing = phalanx(cluster, "explain", "nothing", "-n", ns, check=False)
    assert missing.returncode == 1
    assert missing.stderr == f'phalanx: error: PodGroup "nothing" not found in namespace "{ns}"\n'
