"""The `pod` baseline: pod-by-pod placement with no notion of gangs (the default scheduler).

Why its own routine: the core places whole gangs or nothing, and the point of this baseline is
what happens without that. The model, kept deliberately close to kube-scheduler's defaults:

- Pods wait in one queue ordered by creation time. Pods created in the same instant interleave
  across jobs (first pod of each job, then the second of each, ...), because Job controllers
  create their pods concurrently; that interleaving is what lets two gangs each grab half a
  cluster.
- Each pod goes, in that order, to a node where it fits, chosen at random (seeded): GPUs are an
  extended resource that the default scoring plugins do not look at, so among feasible nodes the
  choice is effectively arbitrary. A pod that fits nowhere stays queued; a later, smaller pod may
  go first.
- A job runs (its real duration starts) only once all its pods are bound. Until then its bound
  pods hold GPUs and do nothing: those GPU-hours are what the report calls deadlocked.
- A partly bound job does not wait forever: after `RENDEZVOUS_TIMEOUT_S` its processes give up
  (torchrun's default rendezvous join timeout), its pods are deleted and recreated after the Job
  controller's backoff (10 s doubling, capped at 6 min, with seeded jitter so two symmetric
  gangs do not retry in lockstep forever).
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from phalanx.core import CPU, GPU, MEMORY, PODS, Node

RENDEZVOUS_TIMEOUT_S = 600.0
BACKOFF_BASE_S = 10.0
BACKOFF_CAP_S = 360.0
_RESOURCES = (GPU, CPU, MEMORY, PODS)


def _fits(request: tuple[int, ...], free: list[int]) -> bool:
    return all(a <= b for a, b in zip(request, free, strict=True))


def backoff_s(restarts: int, rng: random.Random) -> float:
    """Delay before a timed-out job's pods are recreated (restarts counts from 1)."""
    base = min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2.0 ** max(0, restarts - 1))
    return base * (1.0 + 0.5 * rng.random())


@dataclass(slots=True)
class _Job:
    pods: list[tuple[int, ...]]
    generation: int = 0
    placed: list[tuple[int, int]] = field(default_factory=list)  # (pod index, node index)


@dataclass(frozen=True, slots=True)
class PodCycle:
    """What one placement pass did: jobs now complete (with pod -> node index), and jobs that
    became partly bound in this pass (they need a rendezvous timer)."""

    started: list[tuple[int, dict[int, int]]]
    partial: list[tuple[int, int]]  # (job, generation)


class PodPlacer:
    """Pod-level state of the `pod` baseline (see the module docstring)."""

    def __init__(self, nodes: Sequence[Node], rng: random.Random) -> None:
        self.rng = rng
        self.free: list[list[int]] = []
        for node in nodes:
            alloc = node.allocatable
            self.free.append([alloc.get(r, 1 << 62 if r == PODS else 0) for r in _RESOURCES])
        self.capacity_gpu = [f[0] for f in self.free]
        self.jobs: dict[int, _Job] = {}
        self.buckets: dict[tuple[int, ...], list[tuple[tuple[float, int, int], int, int, int]]]
        self.buckets = {}
        self.partial_gpus = 0

    def add(self, job: int, pod_requests: Sequence[tuple[int, int, int]], created: float) -> None:
        """Queue all pods of `job` (each as (gpus, cpu millicores, memory bytes))."""
        state = self.jobs.get(job)
        if state is None:
            state = self.jobs[job] = _Job([(g, c, m, 1) for g, c, m in pod_requests])
        for k, req in enumerate(state.pods):
            entry = ((created, k, job), job, k, state.generation)
            heapq.heappush(self.buckets.setdefault(req, []), entry)

    def _stale(self, job: int, generation: int) -> bool:
        state = self.jobs.get(job)
        return state is None or state.generation != generation

    def cycle(self) -> PodCycle:
        """Place queued pods in order until none of the remaining ones fits anywhere."""
        started: list[tuple[int, dict[int, int]]] = []
        partial: list[tuple[int, int]] = []
        blocked: set[tuple[int, ...]] = set()
        while True:
            best: tuple[int, ...] | None = None
            for req, heap in self.buckets.items():
                if req in blocked:
                    continue
                while heap and self._stale(heap[0][1], heap[0][3]):
                    heapq.heappop(heap)
                if heap and (best is None or heap[0] < self.buckets[best][0]):
                    best = req
            if best is None:
                break
            fits = [i for i, f in enumerate(self.free) if _fits(best, f)]
            if not fits:
                blocked.add(best)
                continue
            _, job, k, _ = heapq.heappop(self.buckets[best])
            node = fits[self.rng.randrange(len(fits))] if len(fits) > 1 else fits[0]
            for r, amount in enumerate(best):
                self.free[node][r] -= amount
            state = self.jobs[job]
            state.placed.append((k, node))
            if len(state.placed) == len(state.pods):
                self.partial_gpus -= sum(state.pods[i][0] for i, _ in state.placed[:-1])
                started.append((job, dict(state.placed)))
            else:
                self.partial_gpus += best[0]
                if len(state.placed) == 1:
                    partial.append((job, state.generation))
        return PodCycle(started, partial)

    def _free_pods(self, state: _Job) -> int:
        gpus = 0
        for k, node in state.placed:
            for r, amount in enumerate(state.pods[k]):
                self.free[node][r] += amount
            gpus += state.pods[k][0]
        state.placed.clear()
        return gpus

    def finish(self, job: int) -> None:
        """A running job ended: its pods leave their nodes."""
        state = self.jobs.pop(job)
        self._free_pods(state)

    def timeout(self, job: int, generation: int) -> bool:
        """The rendezvous timer of a partly bound job fired: if it is still partial (same
        generation), delete its pods and forget its queued ones; True if that happened."""
        state = self.jobs.get(job)
        if state is None or state.generation != generation:
            return False
        if not state.placed or len(state.placed) == len(state.pods):
            return False
        self.partial_gpus -= self._free_pods(state)
        state.generation += 1
        return True

    def node_free_gpus(self) -> list[int]:
        """Free GPUs per node (pods of partial jobs count as used)."""
        return [f[0] for f in self.free]
