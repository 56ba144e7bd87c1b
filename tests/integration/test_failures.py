"""Failure injection: a pod deleted mid-bind, a node lost under a running gang, the API server
restarted, the leader killed. Each time the gang recovers whole or re-queues whole, and the
operator keeps working."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from phalanx.devcluster import cluster as devcluster
from tests.integration.conftest import TEST_CLUSTER, Cluster
from tests.integration.objects import gang_job, pod_group
from tests.integration.operator_fixture import LEASE_NAME, LEASE_NAMESPACE, OperatorProcess
from tests.integration.test_crash_safety import BindWatch, assert_no_overcommit
from tests.integration.test_operator_gangs import (
    group_status,
    nodes_of,
    submit_gang,
    wait_bound_whole,
)
from tests.integration.waiting import wait_for

pytestmark = pytest.mark.integration

APISERVER_GRACE_S = 30.0
"""What a kubelet gives a container between SIGTERM and SIGKILL by default
(terminationGracePeriodSeconds)."""


@pytest.fixture
def ns(namespace: str, phalanx_api: Any, no_shared_operator: None) -> Iterator[str]:
    yield namespace


def _evicted_reason(custom: Any, ns: str, name: str) -> str | None:
    cond = next(
        (c for c in group_status(custom, ns, name).get("conditions", []) if c["type"] == "Evicted"),
        None,
    )
    return cond["reason"] if cond and cond["status"] == "True" else None


def test_a_pod_deleted_mid_bind_rolls_the_gang_back_and_it_requeues_whole(
    cluster: Cluster, phalanx_api: Any, ns: str, tmp_path: Path
) -> None:
    custom = phalanx_api
    op = OperatorProcess(
        cluster.kubeconfig, tmp_path, env={"PHALANX_FAULT_BIND_DELAY_S": "2"}
    ).start()
    try:
        custom.create_namespaced_custom_object(
            "phalanx.dev", "v1alpha1", ns, "podgroups", pod_group("job", 4)
        )
        # A plain delete (unlike an eviction) may leave the pod Failed without a DisruptionTarget
        # condition — whether the pod GC marks it first is a race — and then it counts against
        # backoffLimit: allow for it, or the Job would give up and the gang never come back.
        cluster.batch.create_namespaced_job(ns, gang_job("job", "job", 4, 8, backoff_limit=3))
        wait_for(
            lambda: group_status(custom, ns, "job").get("phase") == "Binding",
            timeout=30,
            what="the gang to enter Binding (binds slowed to 2 s)",
        )
        victim = sorted(nodes_of(cluster, ns, "job"))[0]
        cluster.core.delete_namespaced_pod(victim, ns, grace_period_seconds=0)
        wait_for(
            lambda: _evicted_reason(custom, ns, "job") == "BindFailed",
            timeout=30,
            what="the gang to be rolled back with Evicted/BindFailed",
        )
        # The Job replaces the deleted and the rolled-back pods; the gang binds whole again.
        wait_for(
            lambda: (n := nodes_of(cluster, ns, "job")) and len(n) == 4 and all(n.values()),
            timeout=180,
            what="the re-queued gang to be bound whole",
        )
        assert_no_overcommit(cluster)
    finally:
        op.stop()


def test_a_node_lost_under_a_running_gang_evicts_it_whole_and_it_runs_again(
    cluster: Cluster, phalanx_api: Any, ns: str, tmp_path: Path
) -> None:
    custom = phalanx_api
    op = OperatorProcess(cluster.kubeconfig, tmp_path).start()
    lost_body: dict[str, Any] | None = None
    try:
        custom.create_namespaced_custom_object(
            "phalanx.dev", "v1alpha1", ns, "podgroups", pod_group("job", 4)
        )
        cluster.batch.create_namespaced_job(ns, gang_job("job", "job", 4, 8))
        placed = wait_bound_whole(cluster, ns, "job", 4)
        lost = sorted(placed.values())[0]
        node = cluster.api_client.sanitize_for_serialization(cluster.core.read_node(lost))
        lost_body = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                k: node["metadata"][k]
                for k in ("name", "labels", "annotations")
                if k in node["metadata"]
            },
            "spec": {k: v for k, v in node.get("spec", {}).items() if k == "taints"},
            "status": {
                "capacity": node["status"]["capacity"],
                "allocatable": node["status"]["allocatable"],
            },
        }
        cluster.core.delete_node(lost)
        wait_for(
            lambda: _evicted_reason(custom, ns, "job") == "MemberFailed",
            timeout=60,
            what="the gang to be evicted whole with Evicted/MemberFailed",
        )
        assert group_status(custom, ns, "job").get("memberFailures", 0) == 0, (
            "no failure of its own"
        )
        # Its pod on the gone node stays terminating (no kubelet confirms the delete) until the
        # pod garbage collector removes it: the wait says where it is, not just "terminating".
        wait_for(
            lambda: any(
                "1 on a lost node" in (c.get("message") or "")
                for c in group_status(custom, ns, "job").get("conditions", [])
            ),
            timeout=60,
            what="the gang's wait to say its member on the deleted node is on a lost node",
            describe=lambda: repr(group_status(custom, ns, "job").get("conditions")),
        )
        placed = wait_for(
            lambda: (
                (n := nodes_of(cluster, ns, "job"))
                and len(n) == 4
                and all(n.values())
                and lost not in n.values()
                and n
            ),
            timeout=180,
            what="the gang to run again, whole, without the lost node",
        )
        assert lost not in placed.values()
        assert_no_overcommit(cluster)
    finally:
        op.stop()
        if lost_body is not None:
            cluster.core.create_node(lost_body)
            wait_for(
                lambda: any(
                    c.type == "Ready" and c.status == "True"
                    for c in (
                        cluster.core.read_node(lost_body["metadata"]["name"]).status.conditions
                        or []
                    )
                ),
                timeout=60,
                what="the lost node to come back Ready",
            )


def _restart_apiserver(cluster: Cluster) -> None:
    """Kill the session cluster's kube-apiserver and start it again with the same command line.

    Only the API server: a `kwokctl stop/start` of the whole cluster brings kwok back without our
    Stages. The controller manager and scheduler exit when they lose their leader lease while the
    API server is away; like a kubelet would, we start any that exited again, so the tests after
    this one find a whole control plane.
    """
    import os
    import signal
    import subprocess

    cdir = devcluster.cluster_dir(TEST_CLUSTER)

    def argv_of(pid: int) -> list[str]:
        return [a.decode() for a in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") if a]

    def start(argv: list[str], cwd: str) -> None:
        name = Path(argv[0]).name
        log = (cdir / "logs" / f"{name}.log").open("ab")
        subprocess.Popen(
            argv, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )

    processes = {
        pid: (argv_of(pid), str(Path(f"/proc/{pid}/cwd").readlink()))
        for pid in devcluster.processes_under(cdir)
    }
    (apiserver,) = [p for p, (argv, _) in processes.items() if "kube-apiserver" in argv[0]]
    # As a kubelet stops a container: SIGTERM, a grace period, then SIGKILL. The kube-apiserver's
    # graceful shutdown may wait out its own 60 s server-shutdown and request timeouts on a loaded
    # 2-core machine (CI once saw it still running after 60 s); this test is about the operator
    # surviving the restart, not about how long the API server takes to drain.
    os.kill(apiserver, signal.SIGTERM)
    deadline = time.monotonic() + APISERVER_GRACE_S
    while devcluster.is_alive(apiserver) and time.monotonic() < deadline:
        time.sleep(0.5)
    if devcluster.is_alive(apiserver):
        os.kill(apiserver, signal.SIGKILL)
    wait_for(
        lambda: not devcluster.is_alive(apiserver),
        timeout=30,
        what="the kube-apiserver to exit after SIGTERM, a grace period and SIGKILL",
    )
    start(*processes[apiserver])
    wait_for(lambda: _api_answers(cluster), timeout=120, what="the API server to answer again")
    time.sleep(20)  # long enough for a component that lost its lease to have exited
    for pid, (argv, cwd) in processes.items():
        if pid != apiserver and not devcluster.is_alive(pid):
            start(argv, cwd)


def test_the_operator_keeps_working_across_an_api_server_restart(
    cluster: Cluster, phalanx_api: Any, ns: str, tmp_path: Path
) -> None:
    if cluster.kubeconfig != devcluster.kubeconfig_path(TEST_CLUSTER):
        pytest.fail("this test restarts the control plane: run it on the session's own cluster")
    custom = phalanx_api
    op = OperatorProcess(cluster.kubeconfig, tmp_path).start()
    try:
        submit_gang(cluster, custom, ns, "before", 2, 8)
        wait_bound_whole(cluster, ns, "before", 2)
        _restart_apiserver(cluster)
        submit_gang(cluster, custom, ns, "after", 2, 8)
        wait_bound_whole(cluster, ns, "after", 2)
        # The operator runs as the chart's ServiceAccount: a restarted kube-apiserver answers
        # before its RBAC authorizer has synced and refuses it for a moment (kopf retries).
        op.excuse_refusals("the kube-apiserver restarted; its RBAC cache was still filling")
        assert not op.exited(), op.tail()
        assert all(nodes_of(cluster, ns, "before").values())
        # The controllers are back too: a new namespace gets its default ServiceAccount.
        probe_ns = f"{ns}-probe"
        cluster.core.create_namespace({"metadata": {"name": probe_ns}})
        wait_for(
            lambda: any(
                sa.metadata.name == "default"
                for sa in cluster.core.list_namespaced_service_account(probe_ns).items
            ),
            timeout=90,
            what="the controller manager to create a ServiceAccount after the restart",
        )
        cluster.core.delete_namespace(probe_ns)
    finally:
        op.stop()


def _api_answers(cluster: Cluster) -> bool:
    """Core and our CRD endpoints both served (CRD paths come up last after a restart)."""
    try:
        cluster.core.list_namespace(limit=1)
        __import__("kubernetes").client.CustomObjectsApi(
            cluster.api_client
        ).list_cluster_custom_object("phalanx.dev", "v1alpha1", "queues")
    except Exception:
        return False
    return True


def test_two_replicas_one_leader_hands_over_when_killed(
    cluster: Cluster, phalanx_api: Any, ns: str, tmp_path: Path
) -> None:
    custom = phalanx_api
    # The Lease the chart's Role allows (the operators run with exactly the chart's RBAC); a
    # holder left by an earlier test is removed first.
    lease = FAST_LEASE
    coordination = __import__("kubernetes").client.CoordinationV1Api(cluster.api_client)
    delete_lease(coordination)
    ops = [
        OperatorProcess(cluster.kubeconfig, tmp_path, name=f"replica{i}", extra_args=lease).start()
        for i in range(2)
    ]

    def holder() -> str | None:
        try:
            spec = coordination.read_namespaced_lease(LEASE_NAME, LEASE_NAMESPACE).spec
        except Exception:
            return None
        return str(spec.holder_identity) if spec.holder_identity else None

    try:
        with BindWatch(cluster, ns):
            first = wait_for(holder, timeout=30, what="one replica to take the lease")
            leader = next(o for o in ops if o.proc and first.endswith(f"-{o.proc.pid}"))
            submit_gang(cluster, custom, ns, "one", 4, 8)
            wait_bound_whole(cluster, ns, "one", 4)

            leader.kill()
            killed_at = time.monotonic()
            second = wait_for(
                lambda: (h := holder()) and h != first and h,
                timeout=60,
                what="the other replica to take the lease over",
            )
            handover = time.monotonic() - killed_at
            print(f"leader handover after kill: {handover:.1f}s (lease duration 6 s)")
            assert handover <= 6 + 5, f"handover took {handover:.1f}s"
            submit_gang(cluster, custom, ns, "two", 4, 8)
            wait_bound_whole(cluster, ns, "two", 4)
            survivor = next(o for o in ops if o is not leader)
            assert f"-{survivor.proc.pid}" in second  # type: ignore[union-attr]
        metrics = survivor.metrics()
        ok = [
            line
            for line in metrics.splitlines()
            if line.startswith('phalanx_binds_total{result="ok"}')
        ]
        assert ok and float(ok[0].split()[-1]) == 4.0, f"the survivor bound {ok}: expected 4"
    finally:
        for o in ops:
            o.stop()
        delete_lease(coordination)


FAST_LEASE = (
    "--leader-election",
    "--lease-namespace",
    LEASE_NAMESPACE,
    "--lease-name",
    LEASE_NAME,
    "--lease-duration",
    "6",
    "--renew-deadline",
    "4",
    "--retry-period",
    "1",
)
"""The Lease the chart's Role allows (the operators run with exactly the chart's RBAC), with
timings short enough for a test: 6 s lease, 4 s renew deadline, 1 s retries."""


def delete_lease(coordination: Any) -> None:
    try:
        coordination.delete_namespaced_lease(LEASE_NAME, LEASE_NAMESPACE)
    except __import__("kubernetes").client.ApiException as exc:
        if exc.status != 404:
            raise


def _metric(op: OperatorProcess, name: str) -> float:
    for line in op.metrics().splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.split()[-1])
    return 0.0


def test_a_partitioned_leader_writes_nothing_after_losing_its_lease(
    cluster: Cluster, phalanx_api: Any, ns: str, tmp_path: Path
) -> None:
    """A leader whose lease renewals start failing (fault injection: 3 s after it wins) while it
    keeps running — watches, cycles and all — stops acting within its renew deadline (4 s): a
    gang submitted after that gets no bind and no status write over 5 of its standby cycles."""
    custom = phalanx_api
    lease = FAST_LEASE
    coordination = __import__("kubernetes").client.CoordinationV1Api(cluster.api_client)
    delete_lease(coordination)
    op = OperatorProcess(
        cluster.kubeconfig,
        tmp_path,
        name="partitioned",
        extra_args=lease,
        env={"PHALANX_FAULT_LEASE_PARTITION_AFTER_S": "3"},
    ).start()
    try:
        submit_gang(cluster, custom, ns, "before", 2, 8)
        wait_bound_whole(cluster, ns, "before", 2)  # it was the leader and acted
        wait_for(
            lambda: (
                "refusing every write" in op.log_since(op.start_offset)
                or _metric(op, 'phalanx_cycles_total{role="standby"}') > 0
            ),
            timeout=30,
            what="the partitioned leader to stop acting (renewals fail 3 s after it won)",
        )
        assert not op.exited(), "it keeps running: a partition, not a crash"
        standby = _metric(op, 'phalanx_cycles_total{role="standby"}')
        submit_gang(cluster, custom, ns, "after", 2, 8)
        wait_for(
            lambda: _metric(op, 'phalanx_cycles_total{role="standby"}') >= standby + 5,
            timeout=30,
            what="5 more cycles of the partitioned operator (it sees the new gang)",
        )
        assert not any(nodes_of(cluster, ns, "after").values()), "a deposed leader bound a pod"
        after = custom.get_namespaced_custom_object(
            "phalanx.dev", "v1alpha1", ns, "podgroups", "after"
        )
        assert not after.get("status"), f"a deposed leader wrote status: {after.get('status')}"
    finally:
        op.stop()
        delete_lease(coordination)
