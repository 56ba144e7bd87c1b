"""Pods meant for Phalanx that another scheduler got: one Warning Event per workload.

A namespace labelled `phalanx.dev/queue` (or a pod labelled with it) opts its pods in, and the
chart's MutatingAdmissionPolicy is what gives them `schedulerName: phalanx`. Where it does not
act — not installed (Kubernetes < 1.36, `admissionPolicy.enabled=false`, `kubectl apply` of the
manifests refused) or created a moment before the pods (the API server loads a new policy about
a second later) — they go to `default-scheduler` and run un-ganged, and nothing told anyone: no
gang appears, and the pods look healthy. The operator already watches other schedulers' bound
pods (they use node capacity), so it can say so at no extra watch cost.

Only Phalanx's own opt-ins count. Kueue's queue label and Volcano's queue annotation are
redirected by the policy too, but a cluster may run Kueue or Volcano with other schedulers on
purpose, and a warning on each of their pods would be noise. Pods created before the operator
saw the opt-in (before it started, or before the namespace was labelled) are left alone: the
policy never acts on existing pods, as the README says.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from phalanx.core.autogang import QUEUE_LABEL
from phalanx.k8s.records import PodRec
from phalanx.k8s.tasks import pod_ref

DEFAULT_SCHEDULER = "default-scheduler"
NOT_WORKLOADS = frozenset({"DaemonSet", "Node"})
"""Controllers whose pods the policy never redirects: DaemonSet pods are bound to their node by
design; a mirror pod (owned by its Node) is the kubelet's."""
REASON = "BypassedPhalanx"


@dataclass(frozen=True)
class Bypass:
    """A workload (or a bare pod) whose pods went to another scheduler though opted in."""

    key: str
    """The workload's uid, or the pod's when it has no controller: told once each."""
    involved: Mapping[str, str]
    message: str


@dataclass
class BypassWatch:
    """When each opt-in was first seen, and which workloads were told (kept while their pods
    are)."""

    every: float = 0.0
    """Seconds between scans of the pods (each reads every pod, so not every cycle); the
    namespaces' labels are noted every call, so an opt-in is dated by the first cycle after it."""
    started: float | None = None
    labelled_since: dict[str, float] = field(default_factory=dict)
    told: set[str] = field(default_factory=set)
    scanned: float = -math.inf

    def check(
        self, pods: Iterable[PodRec], namespace_queues: Mapping[str, str], now: float
    ) -> list[Bypass]:
        """The workloads to tell now: a pod of each, bound by `default-scheduler`, opted in
        since before it was created."""
        if self.started is None:
            self.started = now
        since = self.labelled_since
        for ns in list(since):
            if ns not in namespace_queues:
                del since[ns]
        for ns in namespace_queues:
            since.setdefault(ns, now)
        if now - self.scanned < self.every:
            return []
        self.scanned = now
        out: list[Bypass] = []
        seen: set[str] = set()
        for pod in pods:
            if pod.scheduler_name != DEFAULT_SCHEDULER or pod.node_name is None:
                continue
            if pod.owner is not None and pod.owner[0] in NOT_WORKLOADS:
                continue
            queue, opted = _opt_in(pod, namespace_queues)
            if queue is None:
                continue
            from_ = self.started if opted == "pod" else since[pod.namespace]
            if pod.created < from_:
                continue
            key = pod.owner[2] if pod.owner is not None else pod.uid
            seen.add(key)
            if key in self.told:
                continue
            self.told.add(key)
            out.append(Bypass(key, _involved(pod), _message(pod, queue, opted)))
        # Forget workloads none of whose pods run any more: a workload made again with the
        # same name has a new uid anyway, and the set stays as small as what runs.
        self.told &= seen
        return out


def _opt_in(pod: PodRec, namespace_queues: Mapping[str, str]) -> tuple[str | None, str]:
    label = pod.labels.get(QUEUE_LABEL)
    if label:
        return label, "pod"
    ns = namespace_queues.get(pod.namespace)
    return (ns, "namespace") if ns else (None, "")


def _involved(pod: PodRec) -> Mapping[str, str]:
    if pod.owner is None or not pod.owner_api:
        return pod_ref(pod.namespace, pod.name, pod.uid)
    kind, name, uid = pod.owner
    return {
        "apiVersion": pod.owner_api,
        "kind": kind,
        "name": name,
        "namespace": pod.namespace,
        "uid": uid,
    }


def _message(pod: PodRec, queue: str, opted: str) -> str:
    why = (
        f"it is labelled {QUEUE_LABEL}={queue}"
        if opted == "pod"
        else f"namespace {pod.namespace} is labelled {QUEUE_LABEL}={queue}"
    )
    what = f"pods of {pod.owner[0]} {pod.owner[1]}" if pod.owner is not None else "this pod"
    return (
        f"{what} went to {DEFAULT_SCHEDULER}, not Phalanx, though {why} (pod {pod.name} on "
        f"{pod.node_name}): they run un-ganged, outside queue {queue}. The admission policy that "
        "sets schedulerName: phalanx did not act on them: it is not installed (Kubernetes "
        "older than 1.36, or admissionPolicy.enabled=false), or it was created a moment before "
        "them. Once `kubectl create --dry-run=server -o yaml` of a pod here shows schedulerName: "
        "phalanx, delete the workload and create it again, or set schedulerName: phalanx in its "
        "pod template."
    )
