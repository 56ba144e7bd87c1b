"""`make bench-peers`' bad input: a Volcano binary that is not there is one line, and the run goes
on without it (the cluster parts are exercised by running the bench itself)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def peers() -> ModuleType:
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    return importlib.import_module("peers_bench")


def _line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_unset_volcano_is_skipped_in_one_line(
    peers: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("VOLCANO_SCHEDULER", raising=False)
    assert peers.volcano_binary() is None
    assert "Volcano skipped: VOLCANO_SCHEDULER is not set" in _line(capsys)


def test_a_missing_volcano_binary_is_one_line(
    peers: ModuleType,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("VOLCANO_SCHEDULER", str(tmp_path / "vc-scheduler"))
    assert peers.volcano_binary() is None
    assert "is not an executable file" in _line(capsys)


def test_a_file_that_is_not_executable_is_one_line(
    peers: ModuleType,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    binary = tmp_path / "vc-scheduler"
    binary.write_text("not a program")
    monkeypatch.setenv("VOLCANO_SCHEDULER", str(binary))
    assert peers.volcano_binary() is None
    assert "is not an executable file" in _line(capsys)


def test_volcano_without_its_crds_is_one_line(
    peers: ModuleType,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    binary = tmp_path / "vc-scheduler"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    monkeypatch.setenv("VOLCANO_SCHEDULER", str(binary))
    monkeypatch.setenv("VOLCANO_CRDS", str(tmp_path / "nowhere"))
    assert peers.volcano_binary() is None
    assert "VOLCANO_CRDS must name" in _line(capsys)
