"""`phalanx dev-cluster up --feature-gates/--runtime-config/--native-gangs`: what reaches kwokctl,
and bad input as one line before anything starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from phalanx.devcluster import cluster
from phalanx.devcluster.binaries import Binaries
from phalanx.devcluster.errors import DevClusterError
from phalanx.devcluster.shapes import load_shape


def _options(text: str) -> dict[str, object]:
    docs = [d for d in yaml.safe_load_all(text) if d]
    conf = next(d for d in docs if d.get("kind") == "KwokctlConfiguration")
    return dict(conf["options"])


def test_gates_and_runtime_config_reach_kwokctl_options(tmp_path: Path) -> None:
    text = cluster._kwokctl_config(
        Binaries(tmp_path),
        None,
        cluster.NATIVE_GANG_FEATURE_GATES,
        cluster.NATIVE_GANG_RUNTIME_CONFIG,
    )
    options = _options(text)
    assert options["kubeFeatureGates"] == (
        "GenericWorkload=true,GangScheduling=true,TopologyAwareWorkloadScheduling=true"
    )
    assert options["kubeRuntimeConfig"] == "scheduling.k8s.io/v1alpha2=true"
    assert options["runtime"] == "binary"


def test_without_gates_the_options_carry_none(tmp_path: Path) -> None:
    options = _options(cluster._kwokctl_config(Binaries(tmp_path), None))
    assert "kubeFeatureGates" not in options
    assert "kubeRuntimeConfig" not in options


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("", ""),
        (
            " GangScheduling=true , GenericWorkload=false,",
            "GangScheduling=true,GenericWorkload=false",
        ),
    ],
)
def test_feature_gates_are_normalised(given: str, expected: str) -> None:
    assert cluster.parse_feature_gates(given) == expected


@pytest.mark.parametrize(
    "given", ["scheduling.k8s.io/v1alpha2=true", "api/alpha=false", "batch/v1=true,api/all=true"]
)
def test_runtime_config_accepts_group_versions(given: str) -> None:
    assert cluster.parse_runtime_config(given) == given


@pytest.mark.parametrize(
    "bad", ["GangScheduling", "GangScheduling=yes", "gang=true", "A=true;B=true"]
)
def test_a_malformed_gate_is_one_clear_error(bad: str) -> None:
    with pytest.raises(DevClusterError, match="is not NAME=true\\|false"):
        cluster.parse_feature_gates(bad)


@pytest.mark.parametrize("bad", ["scheduling.k8s.io/v1alpha2", "Scheduling/v1=true", "x=on"])
def test_a_malformed_runtime_config_is_one_clear_error(bad: str) -> None:
    with pytest.raises(DevClusterError, match="is not GROUP/VERSION=true\\|false"):
        cluster.parse_runtime_config(bad)


def test_bad_gates_are_refused_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PHALANX_CACHE", str(tmp_path))
    with pytest.raises(DevClusterError, match="feature gate"):
        cluster.up(load_shape("small"), log=lambda _: None, feature_gates="GangScheduling")
    assert not (tmp_path / "kwok").exists() or not any((tmp_path / "kwok").iterdir())


def test_cli_bad_gate_is_one_line_and_exit_1(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "phalanx", "dev-cluster", "up", "--feature-gates", "Gang"],
        capture_output=True,
        text=True,
        env={**os.environ, "PHALANX_CACHE": str(tmp_path)},
        check=False,
        timeout=60,
    )
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "is not NAME=true|false" in result.stderr
