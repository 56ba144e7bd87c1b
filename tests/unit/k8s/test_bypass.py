"""`bypass.BypassWatch`: which opted-in pods another scheduler got, told once per workload.

Times are the operator's clock: its first check at T0 = 1,000; pods' `creationTimestamp` is
read to the second, so each pod below is created at a whole second.
"""

from __future__ import annotations

from typing import Any

from phalanx.k8s.bypass import BypassWatch
from phalanx.k8s.records import PodRec, pod_record

T0 = 1_000.0
STAMP = "1970-01-01T00:{:02d}:{:02d}Z"


def _pod(
    name: str,
    created: float,
    *,
    ns: str = "team",
    scheduler: str = "default-scheduler",
    node: str | None = "n01",
    owner: tuple[str, str] | None = ("Job", "sweep"),
    labels: dict[str, str] | None = None,
) -> PodRec:
    minutes, seconds = divmod(int(created), 60)
    meta: dict[str, Any] = {
        "name": name,
        "namespace": ns,
        "uid": f"uid-{name}",
        "creationTimestamp": STAMP.format(minutes, seconds),
        "labels": labels or {},
    }
    if owner is not None:
        kind, owner_name = owner
        api = "apps/v1" if kind in ("DaemonSet", "ReplicaSet") else "batch/v1"
        meta["ownerReferences"] = [
            {
                "apiVersion": api,
                "kind": kind,
                "name": owner_name,
                "uid": f"uid-{owner_name}",
                "controller": True,
            }
        ]
    spec: dict[str, Any] = {"schedulerName": scheduler, "containers": [{"name": "c"}]}
    if node is not None:
        spec["nodeName"] = node
    return pod_record({"metadata": meta, "spec": spec, "status": {"phase": "Running"}})


def test_a_pod_of_a_labelled_namespace_bound_by_default_scheduler_is_told_once() -> None:
    """Namespace `team` labelled for `research`; two pods of Job `sweep` created after the
    first check and bound by default-scheduler: one Event, on the Job, naming the namespace's
    label and the pod; the next check tells nothing more."""
    watch = BypassWatch()
    assert watch.check([], {"team": "research"}, T0) == []
    pods = [_pod("sweep-a", T0 + 2), _pod("sweep-b", T0 + 3)]
    told = watch.check(pods, {"team": "research"}, T0 + 5)
    assert len(told) == 1
    b = told[0]
    assert b.key == "uid-sweep"
    assert dict(b.involved) == {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": "sweep",
        "namespace": "team",
        "uid": "uid-sweep",
    }
    assert b.message.startswith(
        "pods of Job sweep went to default-scheduler, not Phalanx, though namespace team is "
        "labelled phalanx.dev/queue=research (pod sweep-a on n01)"
    )
    assert watch.check(pods, {"team": "research"}, T0 + 7) == []


def test_pods_that_predate_the_opt_in_are_left_alone() -> None:
    """A pod created before the operator's first check, and one created before its namespace
    was first seen labelled (at T0 + 10), are not told; one created after is."""
    watch = BypassWatch()
    watch.check([], {}, T0)
    old = _pod("old", T0 - 30, owner=None)
    assert watch.check([old], {"team": "research"}, T0 + 10) == []
    before = _pod("before", T0 + 8, owner=None)
    after = _pod("after", T0 + 12, owner=None)
    told = watch.check([old, before, after], {"team": "research"}, T0 + 14)
    assert [b.key for b in told] == ["uid-after"]
    assert told[0].involved["kind"] == "Pod"
    assert told[0].message.startswith("this pod went to default-scheduler")


def test_a_pod_labelled_with_a_queue_counts_in_any_namespace() -> None:
    """A pod carrying `phalanx.dev/queue` in a namespace without the label: told, naming the
    pod's own label."""
    watch = BypassWatch()
    watch.check([], {}, T0)
    pod = _pod("p", T0 + 1, ns="other", labels={"phalanx.dev/queue": "research"}, owner=None)
    told = watch.check([pod], {}, T0 + 2)
    assert len(told) == 1
    assert "though it is labelled phalanx.dev/queue=research" in told[0].message


def test_what_is_not_a_bypass() -> None:
    """Not told: a pod of another scheduler than default-scheduler, one not bound yet, a
    DaemonSet's pod, a pod of a namespace without the label, and one carrying only Kueue's
    queue label (Kueue may run with default-scheduler on purpose)."""
    watch = BypassWatch()
    watch.check([], {"team": "research"}, T0)
    pods = [
        _pod("custom", T0 + 1, scheduler="volcano", owner=None),
        _pod("unbound", T0 + 1, node=None, owner=None),
        _pod("agent", T0 + 1, owner=("DaemonSet", "agent")),
        _pod("elsewhere", T0 + 1, ns="plain", owner=None),
        _pod(
            "kueue",
            T0 + 1,
            ns="plain",
            owner=None,
            labels={"kueue.x-k8s.io/queue-name": "research"},
        ),
    ]
    assert watch.check(pods, {"team": "research"}, T0 + 2) == []


def test_a_workload_made_again_is_told_again() -> None:
    """Once none of `sweep`'s pods run, it is forgotten: the Job made again with the same name
    (a new uid in a real cluster; here the same, which shows the forgetting) is told again."""
    watch = BypassWatch()
    watch.check([], {"team": "research"}, T0)
    assert len(watch.check([_pod("sweep-a", T0 + 1)], {"team": "research"}, T0 + 2)) == 1
    assert watch.check([], {"team": "research"}, T0 + 4) == []
    assert len(watch.check([_pod("sweep-c", T0 + 5)], {"team": "research"}, T0 + 6)) == 1


def test_pods_are_scanned_every_so_often_and_labels_noted_every_call() -> None:
    """`every` = 2 s: the call at T0 + 1 scans nothing but dates the namespace's label; the
    pod created at T0 + 1.5 — after that date — is told at the scan of T0 + 2."""
    watch = BypassWatch(every=2.0)
    watch.check([], {}, T0)
    pod = _pod("p", T0 + 2, owner=None)
    assert watch.check([pod], {"team": "research"}, T0 + 1) == []
    assert watch.labelled_since == {"team": T0 + 1}
    assert [b.key for b in watch.check([pod], {"team": "research"}, T0 + 2)] == ["uid-p"]
