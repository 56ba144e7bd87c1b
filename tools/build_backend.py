"""The setuptools build backend, plus mypy in the build environment when PHALANX_MYPYC=1.

pyproject.toml names this module (`backend-path = ["tools"]`). With PHALANX_MYPYC=1, setup.py
compiles `phalanx.core` with mypyc, so the isolated build environment needs mypy (which ships
mypyc): `get_requires_for_build_wheel` adds it. Editable installs stay pure: a compiled module
next to the sources would shadow every later edit of them.
"""

from __future__ import annotations

import os

from setuptools import build_meta as _setuptools
from setuptools.build_meta import (
    build_sdist,
    get_requires_for_build_sdist,
    prepare_metadata_for_build_wheel,
)

__all__ = [
    "build_editable",
    "build_sdist",
    "build_wheel",
    "get_requires_for_build_editable",
    "get_requires_for_build_sdist",
    "get_requires_for_build_wheel",
    "prepare_metadata_for_build_editable",
    "prepare_metadata_for_build_wheel",
]

#: The mypy (and so mypyc) the compiled wheel is built with: keep it the version
#: `make test-core-compiled` ran with (.venv/bin/mypy --version).
MYPYC_REQUIREMENT = "mypy==2.4.1"
Settings = dict[str, str | list[str]] | None


def _compiled() -> bool:
    return os.environ.get("PHALANX_MYPYC") == "1"


def get_requires_for_build_wheel(config_settings: Settings = None) -> list[str]:
    if not _compiled():
        requires: list[str] = _setuptools.get_requires_for_build_wheel(config_settings)
        return requires
    # setuptools runs setup.py to answer, before mypy is installed: ask it for the pure build.
    del os.environ["PHALANX_MYPYC"]
    try:
        requires = _setuptools.get_requires_for_build_wheel(config_settings)
    finally:
        os.environ["PHALANX_MYPYC"] = "1"
    return [*requires, MYPYC_REQUIREMENT]


def build_wheel(
    wheel_directory: str, config_settings: Settings = None, metadata_directory: str | None = None
) -> str:
    name: str = _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)
    return name


def get_requires_for_build_editable(config_settings: Settings = None) -> list[str]:
    requires: list[str] = _setuptools.get_requires_for_build_editable(config_settings)
    return requires


def prepare_metadata_for_build_editable(
    metadata_directory: str, config_settings: Settings = None
) -> str:
    name: str = _setuptools.prepare_metadata_for_build_editable(metadata_directory, config_settings)
    return name


def build_editable(
    wheel_directory: str, config_settings: Settings = None, metadata_directory: str | None = None
) -> str:
    if _compiled():
        print("PHALANX_MYPYC=1 ignored for an editable install (it would shadow the sources)")
        os.environ.pop("PHALANX_MYPYC")
    name: str = _setuptools.build_editable(wheel_directory, config_settings, metadata_directory)
    return name
