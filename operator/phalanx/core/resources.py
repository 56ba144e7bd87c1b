"""Resource names and the integer vectors the hot path works on.

Snapshots carry resources as name → integer maps (cpu in millicores, memory in bytes, GPUs and pods
as counts) because that is what the adapter reads from Kubernetes. Inside one cycle every map is
turned into a fixed-length list indexed by a `ResourceIndex`, because comparing and subtracting
short lists is several times cheaper in Python than merging dicts, and a cycle does it millions of
times. GPU is always position 0 so the topology aggregates can read it without a lookup.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

GPU = "nvidia.com/gpu"
CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
GPU_COUNT_LABEL = "nvidia.com/gpu.count"

#: Stands for "no limit" (a node without a `pods` allocatable, a queue without a limit).
UNLIMITED = 1 << 62

ResourceList = Mapping[str, int]
#: Per-pod request as (position, amount) pairs for the non-zero entries only: the fit test
#: iterates over what the pod asks for, not over every resource the cluster has.
SparseRequest = tuple[tuple[int, int], ...]


class ResourceIndex:
    """Positions of resource names in this cycle's vectors (GPU first, then pods, then sorted)."""

    __slots__ = ("names", "pos")

    def __init__(self, names: Iterable[str]) -> None:
        others = sorted(set(names) - {GPU, PODS})
        self.names: tuple[str, ...] = (GPU, PODS, *others)
        self.pos: dict[str, int] = {n: i for i, n in enumerate(self.names)}

    def __len__(self) -> int:
        return len(self.names)

    def vector(self, resources: ResourceList) -> list[int]:
        """Dense vector of `resources`; names not in the index are ignored (caller indexed them)."""
        vec = [0] * len(self.names)
        pos = self.pos
        for name, amount in resources.items():
            i = pos.get(name)
            if i is not None:
                vec[i] = int(amount)
        return vec

    def pod_request(self, requests: ResourceList) -> SparseRequest:
        """Sparse request of one pod; every pod takes one `pods` slot whether it says so or not."""
        dense = self.vector(requests)
        if dense[1] <= 0:
            dense[1] = 1
        return tuple((i, a) for i, a in enumerate(dense) if a > 0)

    def to_map(self, vec: Iterable[int]) -> dict[str, int]:
        """Name → amount for the non-zero entries, in index order (stable output)."""
        return {n: a for n, a in zip(self.names, vec, strict=True) if a}


def dense(req: SparseRequest, width: int) -> list[int]:
    """Dense vector of a sparse request."""
    vec = [0] * width
    for i, a in req:
        vec[i] = a
    return vec


def count_fit(free: list[int], req: SparseRequest) -> int:
    """How many pods with request `req` fit in `free` (0 when any resource is short)."""
    best = UNLIMITED
    for i, a in req:
        c = free[i] // a
        if c < best:
            if c <= 0:
                return 0
            best = c
    return best


def fits(free: list[int], vec: list[int]) -> bool:
    """Whether dense `vec` fits in `free` on every resource."""
    return all(f >= v for f, v in zip(free, vec, strict=True))


def add_into(target: list[int], vec: Iterable[int], sign: int = 1) -> None:
    """target += sign * vec, in place."""
    for i, v in enumerate(vec):
        if v:
            target[i] += sign * v


def sparse_add_into(target: list[int], req: SparseRequest, times: int) -> None:
    """target += times * req, in place (times may be negative)."""
    for i, a in req:
        target[i] += a * times


def negative_entries(resources: ResourceList) -> list[str]:
    """Names whose amount is negative (bad input the caller reports as `Invalid`)."""
    return sorted(n for n, a in resources.items() if a < 0)
