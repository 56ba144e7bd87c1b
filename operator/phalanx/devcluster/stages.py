"""kwok Stages: how pods and nodes behave on the fake cluster.

kwok's default pod stages finish Job-owned pods at once, which would make every batch job of a
scheduler test "succeed" the moment it is bound. Giving kwokctl any Stage replaces all of its
defaults (node ones included), so we assemble the set ourselves at run time:

- kwok's own node stages (initialize, heartbeat with lease) and its fast pod stage for
  "bound → Running", read from the kwok module in the Go module cache (we do not copy kwok's
  files into this repository);
- our deletion stages: a deleted pod that a finalizer holds becomes Failed first (as a kubelet
  would report it), and is removed once no finalizer holds it;
- our `phalanx-pod-run-for` stage: a Running pod annotated `phalanx.dev/run-for: "30s"` becomes
  Succeeded that long after it started (kwok evaluates the annotation as a Go duration);
- our `phalanx-pod-over` stage, which does nothing: it only replaces kwok's pending run-for
  job of a pod that ended some other way (see `OVER_STAGE`).

Pods without the annotation, Job pods included, run until deleted.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from phalanx.devcluster import versions
from phalanx.devcluster.binaries import go_env, require_go
from phalanx.devcluster.errors import DevClusterError

RUN_FOR_ANNOTATION = "phalanx.dev/run-for"

KWOK_STAGE_FILES = (
    "kustomize/stage/node/fast/node-initialize.yaml",
    "kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
    "kustomize/stage/pod/fast/pod-ready.yaml",
)

# A deleted pod must stop like a real one: a kubelet marks it Failed once its containers are
# killed, and only then does a controller holding a finalizer (the Job controller's
# `batch.kubernetes.io/job-tracking`) let it go. kwok's fast delete stage only deletes, so an
# evicted Job pod would hang in Terminating forever; these two stages replace it.
TERMINATE_STAGE = """apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: phalanx-pod-terminate
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'Exists'
    - key: '.metadata.finalizers'
      operator: 'Exists'
    - key: '.status.phase'
      operator: 'NotIn'
      values:
      - 'Succeeded'
      - 'Failed'
  next:
    statusTemplate: |
      {{ $now := Now }}
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 0
        started: false
        state:
          terminated:
            exitCode: 137
            finishedAt: {{ $now | Quote }}
            reason: Error
      {{ end }}
      phase: Failed
"""

DELETE_STAGE = """apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: phalanx-pod-delete
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'Exists'
    - key: '.metadata.finalizers'
      operator: 'DoesNotExist'
  next:
    delete: true
"""

RUN_FOR_STAGE = f"""apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: phalanx-pod-run-for
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Running'
    - key: '.metadata.annotations["{RUN_FOR_ANNOTATION}"]'
      operator: 'Exists'
  delay:
    durationMilliseconds: 0
    durationFrom:
      expressionFrom: '.metadata.annotations["{RUN_FOR_ANNOTATION}"]'
  next:
    statusTemplate: |
      {{{{ $now := Now }}}}
      {{{{ $root := . }}}}
      containerStatuses:
      {{{{ range $index, $item := .spec.containers }}}}
      - image: {{{{ $item.image | Quote }}}}
        name: {{{{ $item.name | Quote }}}}
        ready: false
        restartCount: 0
        started: false
        state:
          terminated:
            exitCode: 0
            finishedAt: {{{{ $now | Quote }}}}
            reason: Completed
            startedAt: {{{{ $root.status.startTime | Quote }}}}
      {{{{ end }}}}
      conditions:
      - lastTransitionTime: {{{{ $now | Quote }}}}
        status: "False"
        type: Ready
        reason: PodCompleted
      - lastTransitionTime: {{{{ $now | Quote }}}}
        status: "False"
        type: ContainersReady
        reason: PodCompleted
      phase: Succeeded
"""


# kwok plays a delayed stage without matching its selector again, and a pod update that matches
# no stage leaves the pending one queued (`PodController.preprocess` returns before it would
# replace it). So a run-for pod failed by hand (`kubectl patch --subresource=status`, as the
# tests and walks fail a member) turned Succeeded when its run-for came: walked, a Job's gang
# ended "3 of 2 members succeeded" and its failed member read as a success, a transition no
# kubelet makes. A stage that matches a pod that is over, and does nothing, replaces (cancels)
# the pending job.
OVER_STAGE = """apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: phalanx-pod-over
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Succeeded'
      - 'Failed'
  next: {}
"""


STUCK_ANNOTATION = "phalanx.dev/stuck"
"""On the fake cluster only: a bound pod annotated `phalanx.dev/stuck: ImagePullBackOff` never
starts; its containers wait with that reason, as a kubelet's do when an image cannot be pulled."""

# kwok's `pod-ready` would make it Running at once: `stage_documents` keeps such pods out of it,
# and this stage, matched once (it sets `startTime`), leaves them `Pending` and waiting.
STUCK_STAGE = f"""apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: phalanx-pod-stuck
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Pending'
    - key: '.status.startTime'
      operator: 'DoesNotExist'
    - key: '.metadata.annotations["{STUCK_ANNOTATION}"]'
      operator: 'Exists'
  next:
    statusTemplate: |
      {{{{ $now := Now }}}}
      {{{{ $reason := index .metadata.annotations "{STUCK_ANNOTATION}" }}}}
      conditions:
      - lastTransitionTime: {{{{ $now | Quote }}}}
        status: "True"
        type: PodScheduled
      - lastTransitionTime: {{{{ $now | Quote }}}}
        status: "False"
        type: Ready
        reason: ContainersNotReady
      containerStatuses:
      {{{{ range .spec.containers }}}}
      - image: {{{{ .image | Quote }}}}
        name: {{{{ .name | Quote }}}}
        ready: false
        restartCount: 0
        state:
          waiting:
            reason: {{{{ $reason | Quote }}}}
            message: {{{{ printf "Back-off pulling image %q" .image | Quote }}}}
      {{{{ end }}}}
      phase: Pending
      startTime: {{{{ $now | Quote }}}}
"""

_NOT_STUCK = f"""    matchExpressions:
    - key: '.metadata.annotations["{STUCK_ANNOTATION}"]'
      operator: 'DoesNotExist'
"""


def kwok_module_dir() -> Path:
    """The kwok module's folder in the Go module cache, downloading it if it is not there."""
    go = require_go()
    out = subprocess.run(
        [go, "mod", "download", "-json", f"sigs.k8s.io/kwok@{versions.KWOK}"],
        capture_output=True,
        text=True,
        env={**go_env(), "GOFLAGS": ""},
        check=False,
    )
    if out.returncode != 0:
        raise DevClusterError(
            f"could not read sigs.k8s.io/kwok@{versions.KWOK} from the Go module cache/proxy: "
            f"{' '.join((out.stdout + out.stderr).split())[-300:]}"
        )
    return Path(json.loads(out.stdout)["Dir"])


def stage_documents() -> list[str]:
    """Every Stage document the fake cluster runs with, as YAML texts."""
    base = kwok_module_dir()
    docs = [(base / f).read_text() for f in KWOK_STAGE_FILES]
    docs = [_without_stuck(d) if "name: pod-ready" in d else d for d in docs]
    return [*docs, TERMINATE_STAGE, DELETE_STAGE, RUN_FOR_STAGE, OVER_STAGE, STUCK_STAGE]


def _without_stuck(stage: str) -> str:
    """kwok's `pod-ready` stage, matching no pod annotated `STUCK_ANNOTATION`."""
    if stage.count("    matchExpressions:\n") != 1:
        raise DevClusterError(
            f"kwok {versions.KWOK}'s pod-ready stage changed shape: {stage[:200]}"
        )
    return stage.replace("    matchExpressions:\n", _NOT_STUCK, 1)
