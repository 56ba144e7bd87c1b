"""The typed records every trace loader returns, and the job -> pods split.

One record type for all trace kinds, so the simulator has a single input path; the fields a
kind does not have are `None` (Philly has no CPU/memory, ITP and openb no tenant).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

GPUS_PER_POD = 8
"""The widest pod a job is split into: one 8-GPU node's worth (see `pod_gpu_split`)."""


class TraceFormatError(ValueError):
    """A trace file that cannot be read as its documented format.

    The message is one line that names the file and, when there is one, the line number
    (1-based, the header is line 1), so a user can open the file at the culprit, and ends with
    what to do about it. It pickles with its three fields (`__reduce__`): a replay's worker
    process raises it, and an exception that cannot be rebuilt on the other side breaks the
    whole process pool, hiding this message behind a `BrokenProcessPool`.
    """

    def __init__(self, path: Path | str, line: int | None, problem: str) -> None:
        where = f"{path}:{line}" if line is not None else str(path)
        if line is None:
            todo = "check the path, and that the file is a trace of the kind given (KIND:PATH)"
        elif line == 1:  # the header
            todo = "check that the file is a trace of the kind given (KIND:PATH)"
        else:
            todo = "fix or remove that row, or check that the file is a trace of the kind given"
        super().__init__(f"{where}: {problem}; {todo}")
        self.path = Path(path)
        self.line = line
        self.problem = problem

    def __reduce__(self) -> tuple[type[TraceFormatError], tuple[Path, int | None, str]]:
        return type(self), (self.path, self.line, self.problem)


@dataclass(frozen=True, slots=True)
class TraceJob:
    """One job of a trace, as the simulator will submit it.

    Times are seconds. `submit_s` is relative to the trace's own origin (see each loader), so
    the first job need not be at 0; `duration_s` is the real run time, which the simulator
    uses to end the job and must never show to the scheduler (see `time_limits`).
    `gpus` is the job's total GPU count across all its pods (`pod_gpu_split`).
    """

    id: str
    submit_s: float
    gpus: int
    duration_s: float
    tenant: str | None = None
    """Philly virtual cluster (the queue it is charged to); None for traces without one."""
    cpu_milli: int | None = None
    """openb only: CPU request in millicores (per pod; openb jobs are single pods)."""
    memory_mib: int | None = None
    """openb only: memory request in MiB (per pod)."""
    gpu_milli: int | None = None
    """openb only: the share of each GPU the pod used, in thousandths (< 1000 = GPU sharing).
    Phalanx allocates whole GPUs, so this is informational: the pod still takes `gpus`."""
    qos: str | None = None
    """openb only: the pod's QoS class (LS, BE, Burstable, Guaranteed), a priority proxy."""
    observed_wait_s: float | None = None
    """openb only: the real queueing delay (scheduled - created) in the production cluster."""
    truncated: bool = False
    """openb only: the pod was still running at trace end, so `duration_s` is a lower bound."""

    @property
    def pod_gpus(self) -> list[int]:
        """GPUs per pod of this job; see `pod_gpu_split`."""
        return pod_gpu_split(self.gpus)


@dataclass(frozen=True, slots=True)
class Trace:
    """A loaded trace: the jobs in submit order, plus what was left out and why.

    `jobs` is sorted by `(submit_s, file order)`, so replays are deterministic even where
    submit times tie. `skipped` counts rows deliberately not turned into jobs, by reason
    (e.g. `"zero_gpus": 3`); loaders never drop a row silently.
    """

    kind: str
    source: Path
    jobs: list[TraceJob]
    skipped: Mapping[str, int] = field(default_factory=dict)
    malformed: tuple[str, ...] = ()
    """One line per data row skipped because it did not parse (`file:line: problem`); their
    count is `skipped["malformed"]`."""


def skipped_counts(counts: dict[str, int], malformed: list[TraceFormatError]) -> dict[str, int]:
    """`counts` without zero entries, plus `malformed` when rows were rejected."""
    out = {k: v for k, v in counts.items() if v}
    if malformed:
        out["malformed"] = len(malformed)
    return out


def pod_gpu_split(gpus: int) -> list[int]:
    """GPUs per pod for a job of `gpus` GPUs: full 8-GPU pods, then one remainder pod.

    Assumption (none of the traces records per-node placement): every node has 8 GPUs and a
    job of g GPUs runs as ceil(g/8) pods, one per node, so 12 GPUs -> [8, 4] and 64 -> [8] * 8.
    Philly had 2- and 8-GPU servers and openb has 1-, 2-, 4- and 8-GPU nodes, so this is our
    model of the jobs on the simulated shapes (8-GPU nodes), not a record of how they ran.
    A job with 0 GPUs (openb CPU-only pods) is still one pod: [0].
    """
    if gpus < 0:
        raise ValueError(f"GPU count must be >= 0, got {gpus}")
    if gpus == 0:
        return [0]
    full, rest = divmod(gpus, GPUS_PER_POD)
    return [GPUS_PER_POD] * full + ([rest] if rest else [])
