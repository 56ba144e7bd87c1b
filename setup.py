"""Only for the optional compiled build; the metadata lives in pyproject.toml.

With PHALANX_MYPYC=1 the wheel carries `phalanx.core` compiled by mypyc (what the image ships;
see docs/design.md, "Compiled core"): `PHALANX_MYPYC=1 pip wheel .` — tools/build_backend.py adds
mypy to the isolated build environment then. Without it (the default, and always for editable
installs) the wheel is pure Python and builds in seconds.
"""

import os
from pathlib import Path

from setuptools import setup

ext_modules = []
if os.environ.get("PHALANX_MYPYC") == "1":
    from mypyc.build import mypycify

    core = sorted(str(p) for p in Path("operator", "phalanx", "core").glob("*.py"))
    # No config file: pyproject's [tool.mypy] is for linting (its pydantic plugin is not
    # installed here); tools/build_core.py compiles the same way.
    ext_modules = mypycify(["--config-file=", *core], group_name="phalanx_core")

setup(ext_modules=ext_modules)
