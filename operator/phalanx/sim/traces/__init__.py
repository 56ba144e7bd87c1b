"""Trace loaders: real GPU-cluster job logs turned into typed, submit-ordered job records.

Kinds: `philly` (Microsoft Philly via Pollux, with tenants), `itp` (Microsoft ITP, one cluster
per file), `openb` (Alibaba PAI pods, plus its GPU node inventory). `load_trace("KIND:PATH")`
is the entry point of `phalanx simulate --trace`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from phalanx.sim.traces.itp import load_itp
from phalanx.sim.traces.openb import NodeGroup, load_openb_nodes, load_openb_pods
from phalanx.sim.traces.philly import load_philly, load_philly_vc_sizes
from phalanx.sim.traces.records import (
    GPUS_PER_POD,
    Trace,
    TraceFormatError,
    TraceJob,
    pod_gpu_split,
)

LOADERS: dict[str, Callable[[Path], Trace]] = {
    "philly": load_philly,
    "itp": load_itp,
    "openb": load_openb_pods,
}
"""Trace kinds by name, as accepted by `load_trace`."""


def load_trace(spec: str) -> Trace:
    """Load a trace given as `KIND:PATH` (e.g. `itp:path/to/cluster04.csv`).

    An unknown kind or a spec without a colon raises `ValueError` with the valid kinds.
    """
    kind, sep, path = spec.partition(":")
    if not sep or not path or kind not in LOADERS:
        raise ValueError(f"trace must be KIND:PATH with KIND one of {', '.join(LOADERS)}: {spec!r}")
    return LOADERS[kind](Path(path))


__all__ = [
    "GPUS_PER_POD",
    "LOADERS",
    "NodeGroup",
    "Trace",
    "TraceFormatError",
    "TraceJob",
    "load_itp",
    "load_openb_nodes",
    "load_openb_pods",
    "load_philly",
    "load_philly_vc_sizes",
    "load_trace",
    "pod_gpu_split",
]
