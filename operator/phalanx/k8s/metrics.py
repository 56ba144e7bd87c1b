"""Prometheus metrics of PRODUCT.md §6, on their own registry.

A dedicated `CollectorRegistry` (not the global one) so two schedulers in one test process, or a
benchmark beside the operator, never collide on metric names.
"""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from phalanx.config import ConfigError
from phalanx.core.lifecycle import Phase

_WAIT_BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400)
_FAST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.cycle_seconds = Histogram(
            "phalanx_scheduling_cycle_seconds",
            "Time of one scheduling cycle (snapshot, decision, actions).",
            buckets=_FAST_BUCKETS,
            registry=r,
        )
        self.gang_wait_seconds = Histogram(
            "phalanx_gang_wait_seconds",
            "Time from a gang being queued to being bound whole.",
            ["queue"],
            buckets=_WAIT_BUCKETS,
            registry=r,
        )
        self.partial_bound_seconds = Histogram(
            "phalanx_gang_partial_bound_seconds",
            "Time a gang spent partly bound (first bind to whole, or to rollback).",
            buckets=_FAST_BUCKETS,
            registry=r,
        )
        self.binds_total = Counter(
            "phalanx_binds_total", "Pod bind calls by result.", ["result"], registry=r
        )
        self.evictions_total = Counter(
            "phalanx_evictions_total", "Gangs evicted, by reason.", ["reason"], registry=r
        )
        self.invalid_objects = Gauge(
            "phalanx_invalid_objects",
            "Objects whose spec cannot be used (PodGroups waiting Invalid, Queues not Ready).",
            ["kind"],
            registry=r,
        )
        self.cycles_total = Counter(
            "phalanx_cycles_total",
            "Scheduling cycles run, by whether this replica could act (leader) or not.",
            ["role"],
            registry=r,
        )
        self.repairs_total = Counter(
            "phalanx_gang_repairs_total",
            "Partly bound gangs found with no bind running (a crash), by how they were repaired: "
            "forward (from the decision record) or back (rolled back).",
            ["result"],
            registry=r,
        )
        self.queue_deserved = Gauge(
            "phalanx_queue_deserved", "Deserved share.", ["queue", "resource"], registry=r
        )
        self.queue_allocated = Gauge(
            "phalanx_queue_allocated", "Allocated.", ["queue", "resource"], registry=r
        )
        self.queue_pending = Gauge(
            "phalanx_queue_pending_gangs", "Pending gangs.", ["queue"], registry=r
        )
        self.gpus = Gauge("phalanx_gpus", "GPUs by state.", ["state"], registry=r)
        self.gangs = Gauge(
            "phalanx_gangs",
            "PodGroups by queue and phase, as kubectl get gang shows them (Degraded: running "
            "short of members; Failed: ended by its workload, a time limit or a schedule "
            "timeout).",
            ["queue", "phase"],
            registry=r,
        )
        self._gang_queues: set[str] = set()
        self.leaves_spanned = Histogram(
            "phalanx_gang_leaves_spanned",
            "Leaves a bound gang spans.",
            buckets=(1, 2, 3, 4, 6, 8, 16, 32),
            registry=r,
        )
        self._queue_series: dict[str, set[str]] = {}
        """Queue → the resources its deserved/allocated series were set for."""

    def set_queue(
        self,
        queue: str,
        deserved: Mapping[str, int],
        allocated: Mapping[str, int],
        pending_gangs: int,
    ) -> None:
        """One queue's gauges. A resource it no longer deserves or holds reads 0, not the last
        value it had (a series is only ever set, so it would stay where it was)."""
        resources = set(deserved) | set(allocated)
        for res in self._queue_series.get(queue, set()) | resources:
            self.queue_deserved.labels(queue=queue, resource=res).set(deserved.get(res, 0))
            self.queue_allocated.labels(queue=queue, resource=res).set(allocated.get(res, 0))
        self._queue_series[queue] = self._queue_series.get(queue, set()) | resources
        self.queue_pending.labels(queue=queue).set(pending_gangs)

    def forget_queues_except(self, queues: set[str]) -> None:
        """Drop the series of queues that no longer exist (deleted Queues)."""
        for queue in list(self._queue_series.keys() - queues):
            for res in self._queue_series.pop(queue):
                self.queue_deserved.remove(queue, res)
                self.queue_allocated.remove(queue, res)
            self.queue_pending.remove(queue)

    def set_gangs(self, counts: Mapping[tuple[str, str], int]) -> None:
        """(queue, phase) → PodGroups, every cycle. Each queue with a gang has a series for every
        phase, 0 included, so an alert on `phalanx_gangs{phase="Degraded"} > 0` or a graph sees
        a phase empty out; a queue left with no gang loses its series."""
        queues = {q for q, _ in counts}
        phases = [str(p) for p in Phase]  # the keys are plain strings, as the labels are
        for queue in self._gang_queues - queues:
            for phase in phases:
                self.gangs.remove(queue, phase)
        for queue in queues:
            for phase in phases:
                self.gangs.labels(queue=queue, phase=phase).set(counts.get((queue, phase), 0))
        self._gang_queues = queues

    def serve(self, port: int) -> None:
        """Serve /metrics on `port` (0: not at all); a port that cannot be bound is a bad
        setting, said in one line naming the flag, not a traceback from the socket layer."""
        if port:
            try:
                start_http_server(port, addr="0.0.0.0", registry=self.registry)
            except OSError as exc:
                raise listen_error("--metrics-port", port, exc) from exc


def listen_error(flag: str, port: int, exc: OSError) -> ConfigError:
    """The one line for a port the operator cannot listen on, naming the flag that set it."""
    return ConfigError(f"{flag} {port}: cannot listen on 0.0.0.0:{port}: {exc.strerror}")
