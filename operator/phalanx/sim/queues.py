"""Queue specs for a simulation: derived from a trace (Philly VCs, or one `default` queue) or
read from a YAML file of Queue specs as in PRODUCT.md section 3.

The records are plain validated pydantic models, not core types: the simulator converts them,
so this module does not depend on the core's internals while it is being written.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from phalanx.sim.traces import Trace, TraceJob, load_philly_vc_sizes

GPU = "nvidia.com/gpu"
"""The fair-share resource by default (PRODUCT.md section 5)."""

DEFAULT_QUEUE = "default"

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUANTITY = re.compile(
    r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?$"
)
_SUFFIX = {
    "n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15,
    "E": 1e18, "Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50,
    "Ei": 2.0**60,
}  # fmt: skip


class QueueFileError(ValueError):
    """A queue file that cannot be used; the message names the file and the bad queue/field."""


def parse_quantity(value: object) -> float:
    """A Kubernetes quantity (`64`, `500m`, `1.5Gi`, `2e3`) as a plain number.

    Floats are exact for GPU and CPU counts and for memory up to 8 PiB, which is all a queue
    spec needs; the core may keep its own exact representation.
    """
    if isinstance(value, bool):
        raise ValueError(f"not a quantity: {value!r}")
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        match = _QUANTITY.match(value.strip())
        if not match:
            raise ValueError(f"not a quantity: {value!r}")
        mantissa, exponent, suffix = match.groups()
        number = float(mantissa + (exponent or "")) * (_SUFFIX[suffix] if suffix else 1.0)
    else:
        raise ValueError(f"not a quantity: {value!r}")
    if not math.isfinite(number):
        raise ValueError(f"not a finite quantity: {value!r}")
    return number


def _resource_list(raw: object) -> dict[str, float]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ValueError("must be a mapping of resource name to quantity")
    out: dict[str, float] = {}
    for name, quantity in raw.items():
        number = parse_quantity(quantity)
        if number < 0:
            raise ValueError(f"{name}: must be non-negative, got {quantity!r}")
        out[str(name)] = number
    return out


ResourceList = dict[str, float]


class QueueSpec(BaseModel):
    """One Queue's spec (PRODUCT.md section 3), with its name.

    Field names are the snake_case of the API's; YAML may use either spelling. Resource lists
    map resource names (`nvidia.com/gpu`, `cpu`, `memory`) to numbers; quantities like `500m`
    or `64Gi` are accepted and converted.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    name: str
    weight: Annotated[int, Field(ge=1, strict=True)] = 1
    guarantee: ResourceList = Field(default_factory=dict)
    limit: ResourceList | None = None
    reclaimable: bool = True
    namespaces: tuple[str, ...] | None = None
    priority: Annotated[int, Field(strict=True)] = 0
    default_time_limit_seconds: Annotated[int, Field(gt=0, strict=True)] | None = Field(
        default=None, alias="defaultTimeLimitSeconds"
    )
    max_time_limit_seconds: Annotated[int, Field(gt=0, strict=True)] | None = Field(
        default=None, alias="maxTimeLimitSeconds"
    )

    @field_validator("name")
    @classmethod
    def _dns_name(cls, name: str) -> str:
        if len(name) > 253 or not _DNS_SUBDOMAIN.match(name):
            raise ValueError(f"{name!r} is not a valid Kubernetes name (lowercase DNS subdomain)")
        return name

    @field_validator("guarantee", mode="before")
    @classmethod
    def _guarantee(cls, raw: object) -> dict[str, float]:
        return _resource_list(raw)

    @field_validator("limit", mode="before")
    @classmethod
    def _limit(cls, raw: object) -> dict[str, float] | None:
        return None if raw is None else _resource_list(raw)

    @model_validator(mode="after")
    def _consistent(self) -> QueueSpec:
        for resource, cap in (self.limit or {}).items():
            floor = self.guarantee.get(resource, 0.0)
            if cap < floor:
                raise ValueError(f"limit {resource}={cap:g} is below its guarantee {floor:g}")
        default, most = self.default_time_limit_seconds, self.max_time_limit_seconds
        if default is not None and most is not None and default > most:
            raise ValueError(
                f"defaultTimeLimitSeconds {default} exceeds maxTimeLimitSeconds {most}"
            )
        return self

    @property
    def guaranteed_gpus(self) -> float:
        """The queue's GPU guarantee (0 when it has none)."""
        return self.guarantee.get(GPU, 0.0)


def single_queue(name: str = DEFAULT_QUEUE) -> list[QueueSpec]:
    """The queues for a trace without tenants (ITP, openb): one queue with weight 1 and no
    guarantee, like the `default` queue the chart creates, so the whole cluster is shared FIFO
    by the in-queue order."""
    return [QueueSpec(name=name)]


def proportional_guarantees(sizes: Mapping[str, int], total_gpus: int) -> dict[str, int]:
    """Split `total_gpus` whole GPUs in proportion to `sizes`, by largest remainder.

    Each gets floor(total x size / sum); the GPUs left by rounding down go one each to the
    largest fractional parts (ties by name), so the guarantees sum to exactly `total_gpus`
    - never more than the cluster - and no one is off by more than one GPU from its share.
    """
    if total_gpus < 0:
        raise ValueError(f"total GPUs must be >= 0, got {total_gpus}")
    whole = sum(sizes.values())
    if whole <= 0:
        return dict.fromkeys(sizes, 0)
    shares = {name: total_gpus * size / whole for name, size in sizes.items()}
    out = {name: math.floor(share) for name, share in shares.items()}
    left = total_gpus - sum(out.values())
    by_remainder = sorted(shares, key=lambda name: (-(shares[name] - out[name]), name))
    for name in by_remainder[:left]:
        out[name] += 1
    return out


def philly_queues(
    vc_sizes: Mapping[str, int], tenants: Iterable[str], cluster_gpus: int
) -> list[QueueSpec]:
    """One queue per Philly virtual cluster, for a simulated cluster of `cluster_gpus` GPUs.

    A VC listed in `philly_vc.csv` (`vc_sizes`, in nodes) gets a GPU guarantee proportional to
    its node count, scaled to the simulated cluster (`proportional_guarantees`: they sum to the
    cluster), and weight = its node count, so spare capacity is also shared in the real
    proportions. A tenant of the trace without a size (four tiny VCs in philly.csv) gets weight 1
    and no guarantee: it may only borrow. Sized VCs come first in file order, then the others
    sorted by name; a sized VC with no jobs still gets its queue (its guarantee is lent out).
    """
    guarantees = proportional_guarantees(vc_sizes, cluster_gpus)
    queues = [
        QueueSpec(name=vc, weight=nodes, guarantee={GPU: guarantees[vc]})
        for vc, nodes in vc_sizes.items()
    ]
    unsized = sorted(set(tenants) - set(vc_sizes))
    queues.extend(QueueSpec(name=vc) for vc in unsized)
    return queues


def queues_for_trace(
    trace: Trace, cluster_gpus: int, vc_sizes: Mapping[str, int] | None = None
) -> list[QueueSpec]:
    """The derived queues for `trace`: Philly VCs (sizes from `vc_sizes`, else from the
    `philly_vc.csv` beside the trace file), or one `default` queue for the other kinds."""
    if trace.kind != "philly":
        return single_queue()
    if vc_sizes is None:
        vc_sizes = load_philly_vc_sizes(trace.source.parent / "philly_vc.csv")
    return philly_queues(vc_sizes, {job.tenant for job in trace.jobs if job.tenant}, cluster_gpus)


def queue_of(job: TraceJob) -> str:
    """The queue a trace job is charged to: its tenant (Philly VC), else `default`."""
    return job.tenant or DEFAULT_QUEUE


def load_queue_file(path: Path | str) -> list[QueueSpec]:
    """Read a YAML file of Queue specs (PRODUCT.md section 3), validated, in file order.

    Accepted: a YAML list whose items are flat specs (`name`, `weight`, `guarantee`, ...) or
    Queue objects (`kind: Queue`, `metadata.name`, `spec`), or a multi-document stream of Queue
    objects (so the same manifests can be applied to a cluster). Errors are one line:
    `FILE: queue N (NAME): FIELD: problem; ...`. Names must be unique; the file must hold at
    least one queue.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise QueueFileError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    try:
        documents = [doc for doc in yaml.safe_load_all(text) if doc is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise QueueFileError(f"{where}: invalid YAML: {problem}") from None
    items: list[Any] = (
        documents[0] if len(documents) == 1 and isinstance(documents[0], list) else documents
    )
    if not items:
        raise QueueFileError(f"{path}: no queues (expected a YAML list of Queue specs)")
    queues: list[QueueSpec] = []
    seen: set[str] = set()
    for index, item in enumerate(items, start=1):
        spec = _flatten(item)
        name = spec.get("name")
        label = f"queue {index}" + (f" ({name})" if isinstance(name, str) else "")
        if not isinstance(item, Mapping):
            raise QueueFileError(f"{path}: {label}: expected a mapping, got {type(item).__name__}")
        if item.get("kind", "Queue") != "Queue":
            raise QueueFileError(f"{path}: {label}: kind is {item['kind']!r}, expected Queue")
        try:
            queue = QueueSpec.model_validate(spec)
        except ValidationError as exc:
            raise QueueFileError(f"{path}: {label}: {_describe(exc)}") from None
        if queue.name in seen:
            raise QueueFileError(f"{path}: {label}: duplicate queue name {queue.name!r}")
        seen.add(queue.name)
        queues.append(queue)
    return queues


def _flatten(item: object) -> dict[str, Any]:
    """A flat spec from either form: `{name, ...}` or `{kind: Queue, metadata, spec}`.

    `apiVersion` is not checked: the simulator reads specs, it does not talk to an API server.
    """
    if not isinstance(item, Mapping):
        return {}
    if "spec" in item or "metadata" in item or "kind" in item:
        metadata = item.get("metadata") or {}
        spec = dict(item.get("spec") or {})
        spec["name"] = metadata.get("name") if isinstance(metadata, Mapping) else None
        return spec
    return dict(item)


def _describe(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors():
        field = ".".join(str(p) for p in error["loc"]) or "spec"
        message = str(error["msg"]).removeprefix("Value error, ")
        parts.append(f"{field}: {message}")
    return "; ".join(parts)
