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


@pytest.mark.parametrize(
    ("binary_text", "mode", "crds", "said"),
    [
        pytest.param(None, None, None, "is not an executable file", id="missing binary"),
        pytest.param("not a program", None, None, "is not an executable file", id="not executable"),
        pytest.param("#!/bin/sh\n", 0o755, "nowhere", "VOLCANO_CRDS must name", id="no CRDs"),
    ],
)
def test_an_unusable_volcano_is_one_line(
    peers: ModuleType,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    binary_text: str | None,
    mode: int | None,
    crds: str | None,
    said: str,
) -> None:
    binary = tmp_path / "vc-scheduler"
    if binary_text is not None:
        binary.write_text(binary_text)
    if mode is not None:
        binary.chmod(mode)
    monkeypatch.setenv("VOLCANO_SCHEDULER", str(binary))
    if crds is not None:
        monkeypatch.setenv("VOLCANO_CRDS", str(tmp_path / crds))
    assert peers.volcano_binary() is None
    assert said in _line(capsys)
