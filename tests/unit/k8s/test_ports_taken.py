"""A port the operator cannot listen on is a bad setting: `phalanx run` says so in one line
naming the flag and exits 1, before it connects to anything (it used to die with a socket
traceback, and an unclosed API session warning after it)."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

from phalanx.config import ConfigError
from phalanx.k8s.metrics import Metrics
from phalanx.k8s.operator import check_port_free


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port some other process listens on, for the test's length."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("0.0.0.0", 0))
        holder.listen()
        yield int(holder.getsockname()[1])


def test_metrics_on_a_taken_port_is_a_config_error_naming_the_flag(taken_port: int) -> None:
    with pytest.raises(ConfigError, match=rf"^--metrics-port {taken_port}: cannot listen"):
        Metrics().serve(taken_port)


def test_a_taken_health_port_is_refused_and_a_free_one_or_zero_is_not(taken_port: int) -> None:
    with pytest.raises(ConfigError, match=rf"^--health-port {taken_port}: cannot listen"):
        check_port_free("--health-port", taken_port)
    check_port_free("--health-port", 0)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("0.0.0.0", 0))
        free = int(s.getsockname()[1])
    check_port_free("--health-port", free)


def test_run_with_a_taken_metrics_port_prints_one_line_and_exits_1(taken_port: int) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "phalanx", "run", "--metrics-port", str(taken_port)],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "KUBECONFIG": "/nonexistent/kubeconfig"},
    )
    assert done.returncode == 1, done.stderr
    lines = [line for line in done.stderr.splitlines() if "phalanx: error:" in line]
    assert lines == [
        f"phalanx: error: --metrics-port {taken_port}: cannot listen on 0.0.0.0:{taken_port}: "
        "Address already in use"
    ], done.stderr
    assert "Traceback" not in done.stderr
