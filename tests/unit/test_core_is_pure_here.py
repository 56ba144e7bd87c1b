"""A development install runs the core from its sources, never a compiled copy.

The compiled core lives out of tree (`tools/build_core.py`, used by `make test-core-compiled` and
the image's wheel); an extension module next to the sources would shadow every later edit of
them. (This file is not part of the compiled run, where the opposite holds.)
"""

from __future__ import annotations

from pathlib import Path

import phalanx.core.cycle


def test_the_core_is_imported_from_its_sources() -> None:
    assert Path(phalanx.core.cycle.__file__ or "").suffix == ".py"
    sources = Path(__file__).resolve().parents[2] / "operator" / "phalanx" / "core"
    assert not list(sources.glob("*.so")), "a compiled module next to the sources shadows them"


def test_the_operator_says_it_runs_the_pure_core() -> None:
    from phalanx.k8s.operator import core_build

    assert core_build() == "pure Python"
