"""Loaders for the Alibaba PAI "openb" trace: the default pod list and the GPU node inventory.

Pod list format (see `alibaba-openb-2023/README.md`): `name, cpu_milli, memory_mib, num_gpu,
gpu_milli, gpu_spec, qos, pod_phase, creation_time, deletion_time, scheduled_time`, times in
seconds from the trace start, rows sorted by `creation_time`.

Decisions for pods:
- Each pod is one job (the trace has no gang information): id = `name`, submit =
  `creation_time`, duration = `deletion_time - scheduled_time`, GPUs = `num_gpu` (<= 8, so one
  pod), CPU and memory as requested. `observed_wait_s` keeps the real queueing delay.
- `Pending` pods (no `scheduled_time`, 897 in the default list) never ran, so their run time is
  unknown: skipped, counted as `never_scheduled`.
- `Running` pods were cut off at trace end: kept, with `truncated=True` (duration is a lower
  bound). `Failed` and `Succeeded` pods are kept as they ran.
- 0-GPU pods (1,088) are kept by default: they hold CPU and memory on the GPU nodes, which is
  what makes this trace a bin-packing benchmark. `include_cpu_only=False` skips them (counted as
  `zero_gpus`).
- GPU-sharing pods (`gpu_milli` < 1000) take one whole GPU in Phalanx, which allocates whole
  `nvidia.com/gpu`s; `gpu_milli` is kept so a report can say how much sharing this hides.
- A start before creation, an end before start, or anything unparsable is a `TraceFormatError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from phalanx.sim.traces._csv import CsvRows, parse_count, parse_number
from phalanx.sim.traces.records import Trace, TraceFormatError, TraceJob

_POD_COLUMNS = (
    "name",
    "cpu_milli",
    "memory_mib",
    "num_gpu",
    "gpu_milli",
    "qos",
    "pod_phase",
    "creation_time",
    "deletion_time",
    "scheduled_time",
)
_NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")


@dataclass(frozen=True, slots=True)
class NodeGroup:
    """Identical GPU nodes of the openb inventory: same model, GPUs, CPU and memory.

    openb has no network topology, so a group is a node shape, not a leaf or a rack.
    `nodes` are the inventory's node names (`sn`) in file order.
    """

    model: str
    gpus_per_node: int
    cpu_milli: int
    memory_mib: int
    nodes: tuple[str, ...]

    @property
    def count(self) -> int:
        """Number of nodes in the group."""
        return len(self.nodes)

    @property
    def total_gpus(self) -> int:
        """GPUs in the whole group."""
        return self.gpus_per_node * len(self.nodes)


def load_openb_pods(path: Path | str, *, include_cpu_only: bool = True) -> Trace:
    """Read `openb_pod_list_*.csv` into one job per pod that ran, sorted by creation time."""
    path = Path(path)
    raw: list[tuple[float, int, TraceJob]] = []
    never_scheduled = zero_gpus = 0
    with CsvRows(path, _POD_COLUMNS) as rows:
        c = rows.col
        for line, fields in rows:
            name = fields[c["name"]].strip()
            if not name:
                raise TraceFormatError(path, line, "name: empty")
            created = parse_number(path, line, "creation_time", fields[c["creation_time"]])
            deleted = parse_number(path, line, "deletion_time", fields[c["deletion_time"]])
            gpus = parse_count(path, line, "num_gpu", fields[c["num_gpu"]])
            cpu = parse_count(path, line, "cpu_milli", fields[c["cpu_milli"]])
            memory = parse_count(path, line, "memory_mib", fields[c["memory_mib"]])
            gpu_milli = parse_count(path, line, "gpu_milli", fields[c["gpu_milli"]])
            phase = fields[c["pod_phase"]].strip()
            scheduled_text = fields[c["scheduled_time"]].strip()
            if not scheduled_text:
                never_scheduled += 1
                continue
            if gpus == 0 and not include_cpu_only:
                zero_gpus += 1
                continue
            scheduled = parse_number(path, line, "scheduled_time", scheduled_text)
            if scheduled < created:
                raise TraceFormatError(path, line, "scheduled_time before creation_time")
            if deleted < scheduled:
                raise TraceFormatError(path, line, "deletion_time before scheduled_time")
            job = TraceJob(
                id=name,
                submit_s=created,
                gpus=gpus,
                duration_s=deleted - scheduled,
                cpu_milli=cpu,
                memory_mib=memory,
                gpu_milli=gpu_milli,
                qos=fields[c["qos"]].strip() or None,
                observed_wait_s=scheduled - created,
                truncated=phase == "Running",
            )
            raw.append((created, line, job))
    raw.sort(key=lambda item: (item[0], item[1]))
    skipped = {
        reason: count
        for reason, count in (("never_scheduled", never_scheduled), ("zero_gpus", zero_gpus))
        if count
    }
    return Trace(kind="openb", source=path, jobs=[job for _, _, job in raw], skipped=skipped)


def load_openb_nodes(path: Path | str) -> list[NodeGroup]:
    """Read `openb_node_list_gpu_node.csv` into node groups, in order of first appearance.

    Nodes with the same (model, GPUs, CPU, memory) form one group, e.g. 549 x 8-GPU "G2";
    a repeated node name is a `TraceFormatError`.
    """
    path = Path(path)
    groups: dict[tuple[str, int, int, int], list[str]] = {}
    seen: set[str] = set()
    with CsvRows(path, _NODE_COLUMNS) as rows:
        c = rows.col
        for line, fields in rows:
            name = fields[c["sn"]].strip()
            if not name:
                raise TraceFormatError(path, line, "sn: empty node name")
            if name in seen:
                raise TraceFormatError(path, line, f"sn: {name!r} appears twice")
            seen.add(name)
            key = (
                fields[c["model"]].strip(),
                parse_count(path, line, "gpu", fields[c["gpu"]]),
                parse_count(path, line, "cpu_milli", fields[c["cpu_milli"]]),
                parse_count(path, line, "memory_mib", fields[c["memory_mib"]]),
            )
            groups.setdefault(key, []).append(name)
    return [
        NodeGroup(model=m, gpus_per_node=g, cpu_milli=cpu, memory_mib=mem, nodes=tuple(names))
        for (m, g, cpu, mem), names in groups.items()
    ]
