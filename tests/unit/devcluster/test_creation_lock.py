"""Cluster creation is serialised across processes (kwokctl's port probing races otherwise)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from phalanx.devcluster.cluster import creation_lock

PROBE = """
import fcntl, sys
from phalanx.devcluster.cluster import workdir
with (workdir() / ".create.lock").open("w") as f:
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        sys.exit(3)
sys.exit(0)
"""


def _other_process_can_lock(env: dict[str, str]) -> bool:
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, timeout=60, check=False)
    assert done.returncode in (0, 3), f"probe failed with {done.returncode}"
    return done.returncode == 0


def test_a_second_process_waits_while_a_cluster_is_being_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PHALANX_CACHE", str(tmp_path))
    import os

    env = {**os.environ, "PHALANX_CACHE": str(tmp_path)}
    with creation_lock():
        assert not _other_process_can_lock(env), "another process could start creating too"
    assert _other_process_can_lock(env), "the lock was not released after creation"
