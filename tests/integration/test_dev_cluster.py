"""The local control plane is a real Kubernetes: real scheduler, real controllers, fake kubelets
that follow our pod lifecycle (Running when bound; `phalanx.dev/run-for` pods succeed on time;
Job pods run until deleted)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from phalanx.devcluster import cluster as devcluster
from phalanx.devcluster import kubectl_cache
from phalanx.devcluster.binaries import ensure_binaries
from phalanx.devcluster.errors import DevClusterError
from phalanx.devcluster.shapes import GPU_RESOURCE, LEAF_LABEL, SPINE_LABEL, Shape, load_shape
from tests.integration.conftest import Cluster
from tests.integration.objects import TOLERATE_KWOK, container, gang_pod
from tests.integration.waiting import wait_for

pytestmark = pytest.mark.integration


def _phase(cluster: Cluster, ns: str, name: str) -> str:
    return str(cluster.core.read_namespaced_pod(name, ns).status.phase)


def test_nodes_report_allocatable_gpus_and_topology(cluster: Cluster) -> None:
    nodes = cluster.core.list_node(label_selector="phalanx.dev/dev-cluster-shape").items
    assert nodes, "the dev cluster has no fake GPU nodes"
    for node in nodes:
        assert int(node.status.allocatable[GPU_RESOURCE]) == 8, node.metadata.name
        assert node.metadata.labels[SPINE_LABEL].startswith("spine-")
        assert node.metadata.labels[LEAF_LABEL].startswith("leaf-")
        assert any(c.type == "Ready" and c.status == "True" for c in node.status.conditions)


def test_default_scheduler_binds_a_gpu_pod_which_then_runs(
    cluster: Cluster, namespace: str
) -> None:
    cluster.core.create_namespaced_pod(
        namespace, gang_pod("plain", None, 4, scheduler="default-scheduler")
    )
    pod = wait_for(
        lambda: (
            p
            if (p := cluster.core.read_namespaced_pod("plain", namespace)).status.phase == "Running"
            else None
        ),
        timeout=60,
        what="kube-scheduler to bind pod `plain` and kwok to make it Running",
    )
    node = cluster.core.read_node(pod.spec.node_name)
    assert int(node.status.allocatable[GPU_RESOURCE]) >= 4


def test_run_for_pods_succeed_on_time_and_job_pods_run_until_deleted(
    cluster: Cluster, namespace: str
) -> None:
    job = {
        "metadata": {"name": "forever"},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [container(1)],
                    "tolerations": TOLERATE_KWOK,
                }
            },
        },
    }
    cluster.batch.create_namespaced_job(namespace, job)
    cluster.core.create_namespaced_pod(
        namespace, gang_pod("short", None, 1, run_for="5s", scheduler="default-scheduler")
    )
    job_pod = wait_for(
        lambda: next(
            iter(cluster.core.list_namespaced_pod(namespace, label_selector="job-name").items),
            None,
        ),
        timeout=60,
        what="the job controller to create the pod of Job `forever`",
    )
    assert job_pod.metadata.owner_references[0].kind == "Job"

    wait_for(
        lambda: _phase(cluster, namespace, "short") == "Running",
        timeout=60,
        what="pod `short` to be Running",
    )
    running_at = time.monotonic()
    wait_for(
        lambda: _phase(cluster, namespace, "short") == "Succeeded",
        timeout=60,
        what="pod `short` (run-for 5s) to reach Succeeded",
    )
    elapsed = time.monotonic() - running_at
    assert elapsed >= 3.5, f"run-for 5s pod succeeded after only {elapsed:.1f}s"

    name = job_pod.metadata.name
    wait_for(
        lambda: _phase(cluster, namespace, name) == "Running",
        timeout=60,
        what=f"Job pod {name} to be Running",
    )
    started = cluster.core.read_namespaced_pod(name, namespace).status.start_time.timestamp()
    # The promise is "still Running a minute later": check until a minute after it started.
    while time.time() < started + 60:
        assert _phase(cluster, namespace, name) == "Running", "the Job pod stopped on its own"
        time.sleep(2)
    assert _phase(cluster, namespace, name) == "Running"


def test_a_run_for_pod_failed_by_hand_stays_failed(cluster: Cluster, namespace: str) -> None:
    """Tests and walks fail a member with a status patch; kwok must not turn it Succeeded when
    its run-for comes (it did: its pending stage outlived the patch). `twin` starts after
    `fails` with the same run-for, so once `twin` has succeeded, `fails`'s run-for has come."""
    for name in ("fails", "twin"):
        cluster.core.create_namespaced_pod(
            namespace, gang_pod(name, None, 1, run_for="6s", scheduler="default-scheduler")
        )
        wait_for(
            lambda name=name: _phase(cluster, namespace, name) == "Running",
            timeout=60,
            what=f"pod `{name}` to be Running",
        )
    cluster.core.patch_namespaced_pod_status("fails", namespace, {"status": {"phase": "Failed"}})
    wait_for(
        lambda: _phase(cluster, namespace, "twin") == "Succeeded",
        timeout=60,
        what="pod `twin` (run-for 6s, started after `fails`) to reach Succeeded",
    )
    assert _phase(cluster, namespace, "fails") == "Failed", (
        "kwok turned a pod failed by hand Succeeded at its run-for"
    )


@pytest.mark.slow
def test_large_shape_comes_up_with_all_nodes_ready() -> None:
    """The scale shape on a second cluster beside the session's one, then taken down again."""
    shape = load_shape("large")
    name = "phalanx-large-test"
    started = time.monotonic()
    kubeconfig = devcluster.up(shape, name=name, log=print, wait_s=420)
    try:
        print(f"large shape up in {time.monotonic() - started:.0f}s")
        st = devcluster.status(name)
        assert (st.nodes, st.ready_nodes, st.gpus) == (1024, 1024, 8192)
        assert kubeconfig == devcluster.kubeconfig_path(name)
    finally:
        devcluster.down(name=name)
    assert not devcluster.status(name).up


def _tiny_shape(tmp_path: Path, nodes: int) -> Shape:
    """A one-leaf shape of `nodes` 8-GPU nodes, for the tests that make clusters of their own."""
    shape_file = tmp_path / "tiny.yaml"
    shape_file.write_text(
        "name: tiny\nnodeGroups:\n- name: gpu\n  spines: 1\n  leavesPerSpine: 1\n"
        f"  nodesPerLeaf: {nodes}\n  gpus: 8\n"
    )
    return load_shape(str(shape_file))


def test_a_second_up_is_refused_and_down_leaves_no_process_or_port(tmp_path: Path) -> None:
    shape = _tiny_shape(tmp_path, nodes=2)
    name = "phalanx-updown-test"
    kubeconfig = devcluster.up(shape, name=name, log=print)
    try:
        server = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
        port = int(server.rsplit(":", 1)[1])
        assert devcluster.port_in_use(port)
        assert devcluster.processes_under(devcluster.cluster_dir(name)), (
            "no control-plane process found"
        )
        with pytest.raises(DevClusterError, match="a dev cluster is already up"):
            devcluster.up(shape, name=name, log=print)
    finally:
        devcluster.down(name=name, log=print)
    assert not devcluster.processes_under(devcluster.cluster_dir(name))
    assert not devcluster.port_in_use(port), f"port {port} still bound after down"


def test_a_new_cluster_at_a_port_kubectl_knew_is_not_read_from_its_stale_discovery(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kubectl keys its discovery cache by host and port only, and kwokctl reuses ports: after a
    cluster serving the native `scheduling.k8s.io` PodGroup, `kubectl get podgroups` on the next
    cluster at that port went to the kind no longer served (NotFound) for six hours. `up`
    forgets that cache; the stale copy put back shows the failure it prevents."""
    shape = _tiny_shape(tmp_path, nodes=1)
    cache = tmp_path / "kubectl-cache"
    monkeypatch.setenv("KUBECACHEDIR", str(cache))
    kubectl = str(ensure_binaries().path("kubectl"))
    name = "phalanx-kcache-test"
    crds = str(Path(__file__).resolve().parents[2] / "crds")

    def run(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
        return subprocess.run(
            [kubectl, *args], env=env, capture_output=True, text=True, timeout=60, check=False
        )

    def with_crds(kubeconfig: Path) -> None:
        for args in (
            ("apply", "-f", crds),
            ("wait", "--for=condition=Established", "crd/podgroups.phalanx.dev", "--timeout=30s"),
        ):
            done = run(kubeconfig, *args)
            assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"

    kubeconfig = devcluster.up(
        shape,
        name=name,
        log=print,
        feature_gates=devcluster.NATIVE_GANG_FEATURE_GATES,
        runtime_config=devcluster.NATIVE_GANG_RUNTIME_CONFIG,
    )
    try:
        server = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
        port = int(server.rsplit(":", 1)[1])
        with_crds(kubeconfig)
        listed = run(kubeconfig, "get", "podgroups", "-A")
        assert listed.returncode == 0, listed.stderr
        cached = kubectl_cache.discovery_dir(server, cache)
        assert (cached / "scheduling.k8s.io" / "v1alpha2").is_dir(), (
            f"kubectl did not cache the native group's discovery under {cached}: "
            f"{sorted(p.name for p in cache.glob('discovery/*'))}"
        )
        stale = tmp_path / "stale"
        shutil.copytree(cache, stale)
    finally:
        devcluster.down(name=name, log=print)

    said: list[str] = []
    kubeconfig = devcluster.up(shape, name=name, port=port, log=said.append)
    try:
        with_crds(kubeconfig)
        listed = run(kubeconfig, "get", "podgroups", "-A")
        assert listed.returncode == 0, f"kubectl get podgroups on the new cluster: {listed.stderr}"
        assert any(f"cleared kubectl's discovery cache {cached}" in line for line in said), said

        shutil.rmtree(cache)
        shutil.copytree(stale, cache)
        listed = run(kubeconfig, "get", "podgroups", "-A")
        assert listed.returncode != 0 and "scheduling.k8s.io/v1alpha2" in listed.stderr, (
            "with the previous cluster's discovery cache kubectl was expected to ask for the "
            f"native kind and be refused: rc {listed.returncode}, {listed.stderr!r}"
        )
    finally:
        devcluster.down(name=name, log=print)
