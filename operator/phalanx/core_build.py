"""Which build of the scheduling core this process imported: compiled with mypyc or plain Python.

The two make the same decisions (`bench/core_equivalence.py`) and differ in speed only, so
nothing else shows which one ran: the operator logs it at start and every simulator summary
records it beside its wall time.
"""

from __future__ import annotations

import importlib.machinery


def core_build() -> str:
    """The build of `phalanx.core` imported here: "compiled (mypyc)" when its modules are
    extension modules, else "pure Python" (the image ships the compiled core; a source checkout
    runs Python unless started through `tools/build_core.py --exec`)."""
    from phalanx.core import cycle

    compiled = (cycle.__file__ or "").endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))
    return "compiled (mypyc)" if compiled else "pure Python"
