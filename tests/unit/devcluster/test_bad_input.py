"""Bad input to `phalanx dev-cluster`: one line that says what to do, nothing half-started."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from phalanx.devcluster import binaries, cluster
from phalanx.devcluster.errors import DevClusterError
from phalanx.devcluster.shapes import load_shape


@pytest.fixture
def empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache with no binaries and no cluster, so nothing real is touched."""
    monkeypatch.setenv("PHALANX_CACHE", str(tmp_path))
    return tmp_path


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def test_a_port_in_use_is_refused_before_anything_starts(empty_cache: Path, busy_port: int) -> None:
    with pytest.raises(DevClusterError, match=f"port {busy_port} on 127.0.0.1 is already in use"):
        cluster.up(load_shape("small"), port=busy_port, log=lambda _: None)
    assert not (empty_cache / "testenv").exists() or not cluster.cluster_dir().exists()


def test_a_missing_go_toolchain_says_what_to_install(
    empty_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(empty_cache))
    with pytest.raises(DevClusterError, match=r"no Go toolchain on PATH: install Go >= 1\.26"):
        binaries.ensure_binaries(log=lambda _: None)


def test_status_of_a_cluster_that_is_not_up_says_down(empty_cache: Path) -> None:
    st = cluster.status()
    assert not st.up
    assert st.nodes == 0


def test_down_without_a_cluster_is_a_quiet_no_op(empty_cache: Path) -> None:
    assert cluster.down(log=lambda _: None) is False


def test_cli_prints_one_line_and_exits_1_on_bad_input(empty_cache: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "phalanx", "dev-cluster", "up", "--shape", "no-such-shape"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("phalanx: error: unknown shape 'no-such-shape'")


def test_processes_of_one_cluster_are_never_taken_for_another_s(tmp_path: Path) -> None:
    """`down` of cluster `phalanx` must not kill `phalanx-test`: names share a prefix."""
    other = tmp_path / "clusters" / "phalanx-test"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time; print('up', flush=True); time.sleep(30)",
            f"{other}/bin/kube-apiserver",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        # Until the child has exec'd, /proc shows the parent's command line: wait for it to run.
        assert proc.stdout is not None and proc.stdout.readline().strip() == "up"
        assert proc.pid in cluster.processes_under(other)
        assert proc.pid not in cluster.processes_under(tmp_path / "clusters" / "phalanx")
    finally:
        proc.kill()
        proc.wait()
