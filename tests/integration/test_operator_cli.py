"""`phalanx run` flags that decide where the operator talks to."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.conftest import Cluster
from tests.integration.operator_fixture import OperatorProcess, chart_kubeconfig
from tests.integration.test_operator_gangs import submit_gang, wait_bound_whole

pytestmark = pytest.mark.integration


def test_kubeconfig_flag_is_used_by_the_watches_too_not_only_the_writes(
    cluster: Cluster,
    phalanx_api: Any,
    namespace: str,
    no_shared_operator: None,
    tmp_path: Path,
) -> None:
    """With `--kubeconfig X` and $KUBECONFIG naming another cluster, everything goes to X.

    (Once kopf's watches followed $KUBECONFIG while the writes followed the flag: an operator
    watching one cluster and binding in another.)
    """
    elsewhere = yaml.safe_load(chart_kubeconfig(cluster.kubeconfig).read_text())
    for entry in elsewhere["clusters"]:
        entry["cluster"]["server"] = "https://127.0.0.1:1"  # nothing listens there
    decoy = tmp_path / "elsewhere.yaml"
    decoy.write_text(yaml.safe_dump(elsewhere))

    op = OperatorProcess(
        cluster.kubeconfig,
        tmp_path,
        name="flag",
        extra_args=("--kubeconfig", str(chart_kubeconfig(cluster.kubeconfig))),
        env={"KUBECONFIG": str(decoy)},
    )
    op.start()  # waits for its view to sync: only possible if the watches reach the cluster
    try:
        submit_gang(cluster, phalanx_api, namespace, "flagged", 2, 1)
        wait_bound_whole(cluster, namespace, "flagged", 2)
    finally:
        op.stop()


def test_a_second_stop_signal_while_stopping_is_one_line_not_a_traceback(
    cluster: Cluster,
    no_shared_operator: None,
    tmp_path: Path,
) -> None:
    """SIGTERM, then SIGINT before it has stopped (a kubelet or `phalanx dev-cluster down`
    signalling, then Ctrl-C): the operator stops once, exits 0, and logs the second as one line.

    Both signals are sent while the process is SIGSTOPped, so both are pending when it goes on
    (Linux delivers them in signal-number order, SIGINT first) and the loop sees the second
    while it is stopping, however fast it stops. (kopf's own
    handler raised `InvalidStateError` on the second, which asyncio logged at ERROR with a
    traceback.)
    """
    op = OperatorProcess(cluster.kubeconfig, tmp_path, name="twice").start()
    assert op.proc is not None
    op.proc.send_signal(signal.SIGSTOP)
    op.proc.send_signal(signal.SIGTERM)
    op.proc.send_signal(signal.SIGINT)
    op.proc.send_signal(signal.SIGCONT)
    try:
        code = op.proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        op.kill()
        pytest.fail(f"the operator did not exit within 30 s of SIGTERM and SIGINT:\n{op.tail()}")
    logged = op.log_since(op.start_offset)
    assert "Traceback" not in logged and " ERROR " not in logged, logged
    assert code == 0, f"exit code {code}:\n{op.tail()}"
    assert logged.count("received; stopping") == 1, logged
    assert "received again while stopping" in logged, logged
