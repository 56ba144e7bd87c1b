"""Run `phalanx run` as a real subprocess against the test cluster.

A subprocess, not an in-process task: crash tests kill it with SIGKILL, the leader tests run two,
and what is tested is the command users run. Its log goes to a file that a failing test prints.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.integration.waiting import wait_for

REPO = Path(__file__).resolve().parents[2]
CRDS = REPO / "crds"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class OperatorProcess:
    def __init__(
        self,
        kubeconfig: Path,
        log_dir: Path,
        name: str = "op",
        extra_args: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
    ) -> None:
        self.kubeconfig = kubeconfig
        self.log_path = log_dir / f"{name}.log"
        self.extra_args = extra_args
        self.env = env or {}
        self.proc: subprocess.Popen[bytes] | None = None
        self.health_port = free_port()
        self.metrics_port = free_port()

    def start(self) -> OperatorProcess:
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig), **self.env}
        cmd = [
            sys.executable,
            "-m",
            "phalanx",
            "run",
            "--metrics-port",
            str(self.metrics_port),
            "--health-port",
            str(self.health_port),
            "--cycle-interval",
            "1",
            *self.extra_args,
        ]
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        wait_for(
            lambda: "view synced" in self.log_path.read_text(errors="replace") or self.exited(),
            timeout=60,
            what=f"operator {self.log_path.stem} to sync its view",
        )
        if self.exited():
            pytest.fail(f"operator exited at start:\n{self.tail()}")
        return self

    def exited(self) -> bool:
        return self.proc is not None and self.proc.poll() is not None

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()

    def tail(self, lines: int = 40) -> str:
        if not self.log_path.exists():
            return "(no log)"
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def metrics(self) -> str:
        import urllib.request

        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics") as r:
            text: str = r.read().decode()
        return text


def apply_crds(custom: Any, ext: Any) -> None:
    """Apply the CRDs from crds/ (create or replace) and wait until they are served."""
    import yaml

    for path in sorted(CRDS.glob("*.yaml")):
        body = yaml.safe_load(path.read_text())
        name = body["metadata"]["name"]
        try:
            current = ext.read_custom_resource_definition(name)
            body["metadata"]["resourceVersion"] = current.metadata.resource_version
            ext.replace_custom_resource_definition(name, body)
        except Exception as exc:
            if getattr(exc, "status", None) != 404:
                raise
            ext.create_custom_resource_definition(body)
        wait_for(
            lambda name=name: any(
                c.type == "Established" and c.status == "True"
                for c in (ext.read_custom_resource_definition(name).status.conditions or [])
            ),
            timeout=30,
            what=f"CRD {name} to be established",
        )
    # Served right after Established can still 404 for a moment: probe the list endpoint.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            custom.list_cluster_custom_object("phalanx.dev", "v1alpha1", "queues")
            return
        except Exception:
            time.sleep(0.3)
    pytest.fail("the phalanx.dev API did not become servable within 30s")
