"""The core's unit tests also run against the mypyc-compiled core (`make test-core-compiled`).

`tools/build_core.py --exec` sets PHALANX_CORE_BUILD; then every module of `phalanx.core` must
be the compiled one from that build, so the compiled run can never silently test pure Python.
These tests live outside `tests/unit` (the pure run) because they mean something only there;
run without a build, they fail.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import os
import shutil
import subprocess
import sys
from pathlib import Path

import phalanx.core

BUILD = os.environ.get("PHALANX_CORE_BUILD")
SOURCES = Path(__file__).resolve().parents[2] / "operator" / "phalanx" / "core"


def test_every_core_module_is_the_compiled_one() -> None:
    assert BUILD, "run through `tools/build_core.py --exec` (make test-core-compiled)"
    build = Path(BUILD).resolve()
    names = sorted(p.stem for p in SOURCES.glob("*.py"))
    assert "cycle" in names
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    for name in names:
        module = (
            phalanx.core if name == "__init__" else importlib.import_module(f"phalanx.core.{name}")
        )
        path = Path(module.__file__ or "")
        assert path.name.endswith(suffixes), f"{module.__name__} is not compiled: {path}"
        assert path.resolve().is_relative_to(build), f"{module.__name__} is from {path}"


def test_the_operator_says_it_runs_the_compiled_core() -> None:
    from phalanx.k8s.operator import core_build

    assert core_build() == "compiled (mypyc)"


def test_a_stale_build_refuses_to_load(tmp_path: Path) -> None:
    """Sources edited after the build: importing `phalanx` from the build fails loudly."""
    assert BUILD, "run through `tools/build_core.py --exec` (make test-core-compiled)"
    src = tmp_path / "src" / "phalanx"
    shutil.copytree(SOURCES.parent, src, ignore=shutil.ignore_patterns("__pycache__"))
    with (src / "core" / "cycle.py").open("a") as f:
        f.write("\n# edited after the build\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(BUILD), str(src.parent)])}
    done = subprocess.run(
        [sys.executable, "-c", "import phalanx.core"],
        env=env,
        cwd=tmp_path,  # not the sources' parent: the working directory comes first
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0
    assert "stale" in done.stderr
