"""Every exception type of the package survives pickling, with its message and fields.

Replays run in worker processes (`bench/sim_bench.py`), and an exception that cannot be rebuilt
on the parent's side breaks the whole pool with `BrokenProcessPool`, hiding the one-line message
the user needed. The default pickling of an exception re-calls its class with `self.args` (the
one formatted message), which any `__init__` with other parameters refuses. The test finds the
exception classes itself, so a new one without a sample here fails until it has one.
"""

from __future__ import annotations

import importlib
import inspect
import pickle
import pkgutil
from pathlib import Path

import phalanx
from phalanx.config import ConfigError
from phalanx.devcluster.errors import DevClusterError
from phalanx.inspection.errors import PodGroupNotFound, ViewError
from phalanx.k8s.api import ApiError
from phalanx.k8s.informer import Gone
from phalanx.quantity import QuantityError
from phalanx.sim.plots import PlotsUnavailable
from phalanx.sim.queues import QueueFileError
from phalanx.sim.traces import TraceFormatError

SAMPLES: list[BaseException] = [
    TraceFormatError(Path("traces/x.csv"), 7, "num_gpu: not a number: 'x'"),
    TraceFormatError("traces/missing.csv", None, "cannot open: No such file or directory"),
    ApiError(409, "the object has been modified"),
    ConfigError("--member-failure: must be evict or keep"),
    DevClusterError("helm is not built yet"),
    ViewError("no PodGroup ml/x"),
    PodGroupNotFound("ml", "x"),
    QuantityError("not a quantity: 'x'"),
    QueueFileError("queues.yaml: queue a: weight must be >= 1"),
    PlotsUnavailable("plots need matplotlib"),
    Gone("resourceVersion too old"),
]


def _exception_classes() -> set[type[BaseException]]:
    found: set[type[BaseException]] = set()
    for info in pkgutil.walk_packages(phalanx.__path__, "phalanx."):
        if info.name.endswith("__main__"):  # runs the CLI on import
            continue
        module = importlib.import_module(info.name)
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, BaseException) and obj.__module__ == info.name:
                found.add(obj)
    return found


def test_every_exception_class_of_the_package_has_a_sample_here() -> None:
    assert _exception_classes() == {type(e) for e in SAMPLES}


def test_every_exception_round_trips_through_pickle() -> None:
    for exc in SAMPLES:
        back = pickle.loads(pickle.dumps(exc))
        assert type(back) is type(exc)
        assert str(back) == str(exc)
        assert vars(back) == vars(exc), type(exc).__name__


def test_a_trace_error_is_one_line_naming_the_file_the_row_and_what_to_do() -> None:
    row = TraceFormatError(Path("t/c.csv"), 7, "num_gpu: not a number: 'x'")
    assert str(row) == (
        "t/c.csv:7: num_gpu: not a number: 'x'; fix or remove that row, or check that the "
        "file is a trace of the kind given"
    )
    missing = TraceFormatError("t/none.csv", None, "cannot open: No such file or directory")
    assert str(missing) == (
        "t/none.csv: cannot open: No such file or directory; check the path, and that the "
        "file is a trace of the kind given (KIND:PATH)"
    )
    assert (row.path, row.line, row.problem) == (Path("t/c.csv"), 7, "num_gpu: not a number: 'x'")
    header = TraceFormatError("t/c.csv", 1, "missing column(s) num_gpu")
    assert str(header).endswith("; check that the file is a trace of the kind given (KIND:PATH)")
