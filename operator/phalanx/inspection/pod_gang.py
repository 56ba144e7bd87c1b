"""`phalanx explain` given a pod's name: the gang the pod is a member of.

A user who submitted pods without writing a PodGroup (a Job's, ganged by the operator; a bare
pod or a Deployment's, each a gang of one) knows the pods' names, not the gang's, and `phalanx
explain <pod>` said only `PodGroup "<pod>" not found` (walked: a Deployment's waiting pod, whose
gang of one has no PodGroup at all). Which gang a pod is in, from what the pod and the PodGroups
carry, first found wins:

1. the PodGroup it names (label `phalanx.dev/pod-group` or `scheduling.x-k8s.io/pod-group`,
   annotation `scheduling.k8s.io/group-name`, PRODUCT.md §1);
2. the gang its `PodScheduled=False` condition names: the operator writes "gang NS/NAME: …" on
   every member that waits, the members of automatic gangs too;
3. the PodGroup whose decision record (`status.placement.pods`, by pod uid) holds it: a bound
   member of an automatic gang, which carries no label naming it.

A pod of ours found in none of them is a gang of one, and has no status but the pod's: its
`PodScheduled` condition carries the operator's message, its Events the reason.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Mapping
from typing import Any

from phalanx.core.reasons import Reason
from phalanx.inspection.errors import PodGroupNotFound, ViewError
from phalanx.inspection.fetch import Reader
from phalanx.inspection.rows import Explanation, condition, recent_events

Obj = Mapping[str, Any]

GROUP_LABELS = ("phalanx.dev/pod-group", "scheduling.x-k8s.io/pod-group")
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
QUEUE_LABELS = ("phalanx.dev/queue", "kueue.x-k8s.io/queue-name")
QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
#: How the operator's message on a waiting pod starts (`Reporter.write_pod_conditions`).
_GANG_PREFIX = re.compile(r"^gang (?P<ns>[^/\s]+)/(?P<name>[^:\s]+): ")
#: What a gang's `Scheduled=True` says (PRODUCT.md §2), as the Event on its pod's bind says it.
_PLACED = frozenset({str(Reason.SCHEDULED), str(Reason.BACKFILLED)})
#: What a gang's `Scheduled=False` can say, as its pod's Events say it.
_WAIT_REASONS = frozenset(str(r) for r in Reason) - _PLACED


def _dict(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _scheduled(pod: Obj) -> Mapping[str, Any]:
    """Its `PodScheduled` condition ({} when it has none)."""
    return condition(pod, "PodScheduled") or {}


def _named(pod: Obj, labels: tuple[str, ...], annotation: str) -> str | None:
    """The first of `labels`, else `annotation`, that the pod carries with a value."""
    meta = _dict(pod.get("metadata"))
    found = _dict(meta.get("labels"))
    for key in labels:
        if isinstance(found.get(key), str) and found[key]:
            return str(found[key])
    value = _dict(meta.get("annotations")).get(annotation)
    return value if isinstance(value, str) and value else None


def gang_of_pod(pod: Obj, podgroups: Iterable[Obj] = ()) -> str | None:
    """The name of the PodGroup (in the pod's namespace) the pod is a member of, or None when
    it is in none: a gang of one, or a pod this scheduler does not place."""
    meta = _dict(pod.get("metadata"))
    named = _named(pod, GROUP_LABELS, GROUP_ANNOTATION)
    if named is not None:
        return named
    cond = _scheduled(pod)
    said = (
        _GANG_PREFIX.match(str(cond.get("message") or ""))
        if cond.get("status") == "False"
        else None
    )
    if (
        said is not None
        and said["ns"] == meta.get("namespace")
        and said["name"] != meta.get("name")
    ):
        return said["name"]
    uid = meta.get("uid")
    for g in podgroups:
        pods = _dict(_dict(_dict(g.get("status")).get("placement")).get("pods"))
        if uid and uid in pods:
            return str(_dict(g.get("metadata")).get("name") or "") or None
    return None


def waiting_alone(pods: Iterable[Obj]) -> list[str]:
    """The pods (`NAMESPACE/NAME`) the operator reports waiting as gangs of one: unbound, naming
    no PodGroup, their `PodScheduled=False` message "gang NS/<the pod's own name>: …". A pod it
    has not reported on yet (its condition is written at a bounded rate) is not counted: a
    Job's pod without one could be a member of the gang being made for it."""
    out = []
    for pod in pods:
        meta, spec = _dict(pod.get("metadata")), _dict(pod.get("spec"))
        if spec.get("nodeName") or meta.get("deletionTimestamp"):
            continue
        if _named(pod, GROUP_LABELS, GROUP_ANNOTATION) is not None:
            continue
        cond = _scheduled(pod)
        said = _GANG_PREFIX.match(str(cond.get("message") or ""))
        if cond.get("status") != "False" or said is None:
            continue
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        if f"{said['ns']}/{said['name']}" == key:
            out.append(key)
    return sorted(out)


def alone_note(keys: list[str], namespaced: bool) -> str:
    """The line `phalanx queue` prints under its table for pods waiting as gangs of one, which
    have no PodGroup and so no row (walked: a Deployment's two waiting pods were in no view)."""
    shown = [k.split("/", 1)[1] if namespaced else k for k in keys]
    listed = ", ".join(shown[:5]) + (f" and {len(shown) - 5} more" if len(shown) > 5 else "")
    one = len(keys) == 1
    return (
        f"{len(keys)} pod{'' if one else 's'} with no PodGroup wait{'s' if one else ''} as a gang "
        f"of one{'' if one else ' each'}: {listed} (phalanx explain POD says why)"
    )


def queue_of_pod(pod: Obj, namespace_labels: Mapping[str, str] | None) -> str | None:
    """A gang of one's queue as far as the pod and its namespace say (PRODUCT.md §1: the pod's
    label, else its workload's, else its namespace's, else `default`); None when it could be a
    workload's label, which is not read here."""
    meta = _dict(pod.get("metadata"))
    named = _named(pod, QUEUE_LABELS, QUEUE_ANNOTATION)
    if named is not None:
        return named
    # A bare pod has no workload whose label could win over its namespace's.
    if not meta.get("ownerReferences") and namespace_labels is not None:
        return namespace_labels.get("phalanx.dev/queue") or "default"
    return None


def gang_of_one(
    pod: Obj, events: Iterable[Obj], queue: str | None, scheduler: str = "phalanx"
) -> Explanation:
    """What `explain` says of a pod that is a gang of one: its phase, the reason of the last
    wait the operator reported on it (its Events; the pod's own condition says only
    `Unschedulable`, kube-scheduler's word), and the operator's message without its "gang …: "
    prefix."""
    meta, spec = _dict(pod.get("metadata")), _dict(pod.get("spec"))
    status = _dict(pod.get("status"))
    cond = _scheduled(pod)
    listed = recent_events(events)
    waited = [e.reason for e in listed if e.reason in _WAIT_REASONS]
    bound = bool(spec.get("nodeName"))
    phase = str(status.get("phase") or "Pending")
    message = str(cond.get("message") or "") or None
    reason: str | None = str(cond.get("reason") or "") or None
    if message is not None:
        message = _GANG_PREFIX.sub("", message, count=1)
    if not bound and cond.get("status") == "False" and waited:
        reason = waited[-1]
    placed = [e for e in listed if e.reason in _PLACED]
    if bound and placed:  # the operator's own word on its bind ("bound to node-3")
        reason, message = placed[-1].reason, placed[-1].message
    hints: tuple[str, ...] = ()
    if (
        not bound
        and reason == Reason.WAITING_FOR_RESERVATION
        and not spec.get("activeDeadlineSeconds")
    ):
        # As `rows.would_start` says of a PodGroup: without a time limit it cannot backfill.
        hints += (
            "capacity is free but reserved for gangs ahead of it: it could start now (backfill) "
            "only with a time limit ending before their reservations; a gang of one takes its "
            "pod's activeDeadlineSeconds, else its queue's defaultTimeLimitSeconds",
        )
    if not bound:
        hints += (
            "a gang of one (no PodGroup): it starts alone when it fits; to place it together "
            "with other pods, label them phalanx.dev/pod-group=<name> and write that PodGroup, "
            "or annotate their workload phalanx.dev/min-member=N",
        )
    if str(spec.get("schedulerName") or "default-scheduler") != scheduler:
        reason, message = (
            None,
            (
                f"not scheduled by {scheduler}: its schedulerName is "
                f"{spec.get('schedulerName') or 'default-scheduler'}"
            ),
        )
        hints = ()
    return Explanation(
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        queue=queue,
        phase=phase,
        reason=reason,
        message=message,
        detail=None,
        position=None,
        eta=None,
        would_start=hints,
        events=listed,
        kind="Pod",
    )


def readable_pod(reader: Reader, namespace: str, name: str) -> dict[str, Any] | None:
    """The pod of that name, when there is one and the user may read it."""
    try:
        return reader.pod(namespace, name)
    except ViewError:
        return None


def explain_pod(
    reader: Reader, pod: dict[str, Any], namespace: str
) -> Explanation | dict[str, Any]:
    """`explain` given a pod's name (`inspection.pod_gang`): the PodGroup of the gang it is a
    member of, or, for a gang of one, what the pod itself says."""
    group = gang_of_pod(pod)  # what the pod itself says; the PodGroups are listed only if not
    if group is None:
        # May not list them: a bound member of an automatic gang then reads as alone.
        with contextlib.suppress(ViewError):
            group = gang_of_pod(pod, reader.podgroups(namespace))
    if group is not None:
        try:
            return reader.podgroup(namespace, group)
        except PodGroupNotFound:
            raise ViewError(
                f"pod {namespace}/{pod['metadata'].get('name')} is a member of the PodGroup "
                f"{group}, which does not exist"
            ) from None
    uid = str(pod["metadata"].get("uid") or "")
    try:
        events = reader.events(namespace, uid) if uid else []
    except ViewError:
        events = []
    return gang_of_one(pod, events, queue_of_pod(pod, reader.namespace_labels(namespace)))
