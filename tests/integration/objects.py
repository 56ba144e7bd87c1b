"""Builders for the objects integration tests submit: PodGroups, gang pods, Jobs.

Keyword arguments with defaults, so a test reads as the situation it sets up.
"""

from __future__ import annotations

from typing import Any

GPU = "nvidia.com/gpu"
TOLERATE_KWOK = [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}]


def container(gpus: int, cpu: str = "1") -> dict[str, Any]:
    return {
        "name": "main",
        "image": "busybox",
        "resources": {
            "requests": {"cpu": cpu, GPU: str(gpus)},
            "limits": {GPU: str(gpus)},
        },
    }


def pod_group(
    name: str,
    min_member: int,
    *,
    queue: str = "default",
    topology: dict[str, str] | None = None,
    time_limit: int | None = None,
    min_resources: dict[str, Any] | None = None,
    priority_class: str | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": min_member, "queue": queue}
    if topology:
        spec["topology"] = topology
    if time_limit:
        spec["timeLimitSeconds"] = time_limit
    if min_resources:
        spec["minResources"] = min_resources
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {
        "apiVersion": "phalanx.dev/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": spec,
    }


def gang_pod(
    name: str,
    group: str | None,
    gpus: int,
    *,
    run_for: str | None = None,
    scheduler: str = "phalanx",
    node_selector: dict[str, str] | None = None,
) -> dict[str, Any]:
    labels = {"phalanx.dev/pod-group": group} if group else {}
    annotations = {"phalanx.dev/run-for": run_for} if run_for else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels, "annotations": annotations},
        "spec": {
            "schedulerName": scheduler,
            "tolerations": TOLERATE_KWOK,
            "containers": [container(gpus)],
            "nodeSelector": node_selector or {},
        },
    }


def gang_job(name: str, group: str, pods: int, gpus: int, backoff_limit: int = 0) -> dict[str, Any]:
    """A Job whose pods join `group`; evictions don't count against backoffLimit."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "parallelism": pods,
            "completions": pods,
            "backoffLimit": backoff_limit,
            "podFailurePolicy": {
                "rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]
            },
            "template": {
                "metadata": {"labels": {"phalanx.dev/pod-group": group}},
                "spec": {
                    "schedulerName": "phalanx",
                    "restartPolicy": "Never",
                    "tolerations": TOLERATE_KWOK,
                    "containers": [container(gpus)],
                },
            },
        },
    }
