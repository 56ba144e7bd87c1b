"""`phalanx run` flags that decide where the operator talks to."""

from __future__ import annotations

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
