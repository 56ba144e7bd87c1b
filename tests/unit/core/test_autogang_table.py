"""Automatic gangs (`core.autogang.resolve`), one hand-written case per rule of issue 18.

Each case is a pod (its controller owner, labels, annotations), the workloads the operator
knows, and the gang that must come out: its PodGroup name, owner, minMember, queue, and any
problem. No cluster: the rules are pure.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from phalanx.core.autogang import (
    LWS_GROUP_LABEL,
    LWS_NAME_LABEL,
    AutoGang,
    ManagedSpec,
    OwnerRef,
    PodOwnership,
    Workload,
    managed_name,
    needs_remake,
    resolve,
)

NS = "team-a"
JOB = OwnerRef("batch/v1", "Job", "train", "job-uid")
CRON = OwnerRef("batch/v1", "CronJob", "nightly", "cron-uid")
JOBSET = OwnerRef("jobset.x-k8s.io/v1alpha2", "JobSet", "js", "js-uid")
TRAINJOB = OwnerRef("trainer.kubeflow.org/v1alpha1", "TrainJob", "tj", "tj-uid")
PYTORCHJOB = OwnerRef("kubeflow.org/v1", "PyTorchJob", "ptj", "ptj-uid")
LWS = OwnerRef("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "serve", "lws-uid")
STS = OwnerRef("apps/v1", "StatefulSet", "serve-0", "sts-uid")
RS = OwnerRef("apps/v1", "ReplicaSet", "web-5d8f", "rs-uid")
POLICY_QUEUE = "spec.runPolicy.schedulingPolicy.queue"
POLICY_MIN = "spec.runPolicy.schedulingPolicy.minAvailable"
ELASTIC_MIN = "spec.elasticPolicy.minReplicas"


def wl(
    ref: OwnerRef,
    members: int,
    owner: OwnerRef | None = None,
    **kw: object,
) -> Workload:
    return Workload(ref=ref, namespace=NS, owner=owner, members=members, **kw)  # type: ignore[arg-type]


@dataclass
class Case:
    pod: PodOwnership
    workloads: list[Workload]
    want: AutoGang
    namespace_queue: str | None = None
    lws: list[Workload] = field(default_factory=list)


def pod(owner: OwnerRef | None, **kw: object) -> PodOwnership:
    return PodOwnership(NS, "p-0", owner, **kw)  # type: ignore[arg-type]


CASES: dict[str, Case] = {
    "a Job's pods: one gang named job-<name>, minMember from the Job": Case(
        pod(JOB), [wl(JOB, 4)], AutoGang(name="job-train", owner=JOB, min_member=4)
    ),
    "a Job owned by a CronJob stays its own gang (CronJob is not a gang kind)": Case(
        pod(JOB), [wl(JOB, 2, owner=CRON)], AutoGang(name="job-train", owner=JOB, min_member=2)
    ),
    "a Job owned by a JobSet belongs to the JobSet": Case(
        pod(JOB),
        [wl(JOB, 2, owner=JOBSET), wl(JOBSET, 4)],
        AutoGang(name="jobset-js", owner=JOBSET, min_member=4),
    ),
    "a TrainJob's JobSet's Job: the TrainJob is the highest known kind": Case(
        pod(JOB),
        [wl(JOB, 2, owner=JOBSET), wl(JOBSET, 4, owner=TRAINJOB), wl(TRAINJOB, 4)],
        AutoGang(name="trainjob-tj", owner=TRAINJOB, min_member=4),
    ),
    "an LWS group from its pods' labels: leaderworkerset-<name>-<group index>, size members": Case(
        pod(STS, labels={LWS_NAME_LABEL: "serve", LWS_GROUP_LABEL: "1"}),
        [],
        AutoGang(name="leaderworkerset-serve-1", owner=LWS, min_member=3, state="Unknown"),
        lws=[wl(LWS, 3, state="Unknown")],
    ),
    "an LWS not (yet) seen: the pod waits, reported": Case(
        pod(STS, labels={LWS_NAME_LABEL: "serve", LWS_GROUP_LABEL: "0"}),
        [],
        AutoGang(
            problem_reason="OwnerNotFound",
            problem="LeaderWorkerSet team-a/serve (label leaderworkerset.sigs.k8s.io/name) is "
            "not found; the pod waits for it",
        ),
    ),
    "an owner chain broken (the Job is gone): the pod waits, reported, never a gang of one": Case(
        pod(JOB),
        [],
        AutoGang(
            problem_reason="OwnerNotFound",
            problem="Job team-a/train (uid job-uid), owner of pod p-0, is not found: the pod "
            "waits for it (deleted, not yet seen, or not readable: the operator's RBAC must "
            "allow get, list, watch on Job objects)",
        ),
    ),
    "a bare pod is a gang of one, nothing to say": Case(pod(None), [], AutoGang()),
    "an unknown owner kind: a gang of one, with how to make it a gang": Case(
        pod(RS),
        [],
        AutoGang(
            hint="pods of ReplicaSet team-a/web-5d8f are scheduled one at a time: annotate its "
            "pod template phalanx.dev/min-member=N (or write a PodGroup) to place N of them "
            "together"
        ),
    ),
    "an unknown owner kind whose template says min-member: one gang per owner": Case(
        pod(RS, annotations={"phalanx.dev/min-member": "3"}),
        [],
        AutoGang(name="replicaset-web-5d8f", owner=RS, min_member=3, state="Unknown"),
    ),
    "min-member on the workload overrides the inference": Case(
        pod(JOB),
        [wl(JOB, 8, annotations={"phalanx.dev/min-member": "6"})],
        AutoGang(name="job-train", owner=JOB, min_member=6),
    ),
    "min-member not a positive integer: Invalid, naming the annotation": Case(
        pod(JOB),
        [wl(JOB, 8, annotations={"phalanx.dev/min-member": "two"})],
        AutoGang(
            name="job-train",
            owner=JOB,
            min_member=8,
            problem_reason="Invalid",
            problem="Job team-a/train: annotation phalanx.dev/min-member must be a positive "
            "integer, got 'two'",
        ),
    ),
    "min-member zero: Invalid": Case(
        pod(JOB),
        [wl(JOB, 8, annotations={"phalanx.dev/min-member": "0"})],
        AutoGang(
            name="job-train",
            owner=JOB,
            min_member=8,
            problem_reason="Invalid",
            problem="Job team-a/train: annotation phalanx.dev/min-member must be a positive "
            "integer, got '0'",
        ),
    ),
    "min-member larger than the workload's pods: Invalid (it could never start)": Case(
        pod(JOB),
        [wl(JOB, 4, annotations={"phalanx.dev/min-member": "5"})],
        AutoGang(
            name="job-train",
            owner=JOB,
            min_member=4,
            problem_reason="Invalid",
            problem="Job team-a/train: annotation phalanx.dev/min-member is 5, more than the 4 "
            "pods it runs: the gang could never start",
        ),
    ),
    "topology and time limit from the workload's annotations": Case(
        pod(JOB),
        [
            wl(
                JOB,
                2,
                annotations={
                    "phalanx.dev/topology-required": "leaf",
                    "phalanx.dev/topology-preferred": "spine",
                    "phalanx.dev/time-limit-seconds": "3600",
                },
            )
        ],
        AutoGang(
            name="job-train",
            owner=JOB,
            min_member=2,
            topology_required="leaf",
            topology_preferred="spine",
            time_limit=3600,
        ),
    ),
    "a time limit on the pods (their template), not the workload: not read, and said": Case(
        pod(PYTORCHJOB, annotations={"phalanx.dev/time-limit-seconds": "15"}),
        [wl(PYTORCHJOB, 3)],
        AutoGang(
            name="pytorchjob-ptj",
            owner=PYTORCHJOB,
            min_member=3,
            ignored="annotation phalanx.dev/time-limit-seconds on its pods (their template) is "
            "not read: for a PyTorchJob, Phalanx reads it from the PyTorchJob's own metadata; "
            "annotate PyTorchJob team-a/ptj (a PodGroup's spec is fixed once made: delete the "
            "PyTorchJob and create it again)",
        ),
    ),
    "the same annotation on the workload too: read from it, nothing to say": Case(
        pod(PYTORCHJOB, annotations={"phalanx.dev/time-limit-seconds": "15"}),
        [wl(PYTORCHJOB, 3, annotations={"phalanx.dev/time-limit-seconds": "20"})],
        AutoGang(name="pytorchjob-ptj", owner=PYTORCHJOB, min_member=3, time_limit=20),
    ),
    "a time limit that is not a number: Invalid, naming the annotation": Case(
        pod(JOB),
        [wl(JOB, 2, annotations={"phalanx.dev/time-limit-seconds": "1h"})],
        AutoGang(
            name="job-train",
            owner=JOB,
            min_member=2,
            problem_reason="Invalid",
            problem="Job team-a/train: annotation phalanx.dev/time-limit-seconds must be a "
            "positive integer (seconds), got '1h'",
        ),
    ),
    "a JobSet that cannot be placed whole (InOrder): Invalid, its field named": Case(
        pod(JOB),
        [wl(JOB, 2, owner=JOBSET), wl(JOBSET, 4, unsupported="spec.startupPolicy: InOrder")],
        AutoGang(
            name="jobset-js",
            owner=JOBSET,
            min_member=4,
            problem_reason="Invalid",
            problem="JobSet team-a/js: spec.startupPolicy: InOrder",
        ),
    ),
    "a suspended workload (Kueue has not admitted it): its pods wait": Case(
        pod(JOB),
        [wl(JOB, 2, suspended=True)],
        AutoGang(
            problem_reason="Suspended",
            problem="Job team-a/train is suspended (e.g. by Kueue until it admits it); its "
            "pods are ganged when it resumes",
        ),
    ),
    "a workload Phalanx suspended to evict its gang: its pods stay in the gang": Case(
        pod(JOB),
        [wl(JOB, 2, suspended=True, annotations={"phalanx.dev/suspended-for": "Reclaimed"})],
        AutoGang(name="job-train", owner=JOB, min_member=2),
    ),
    "queue: the pod's label first (its template's own wins over the workload's)": Case(
        pod(JOB, labels={"phalanx.dev/queue": "from-pod"}),
        [wl(JOB, 1, labels={"phalanx.dev/queue": "from-job"})],
        AutoGang(
            name="job-train",
            owner=JOB,
            queue="from-pod",
            queue_source="label phalanx.dev/queue of pod team-a/p-0",
        ),
        namespace_queue="from-ns",
    ),
    "queue: then the workload's label": Case(
        pod(JOB),
        [wl(JOB, 1, labels={"phalanx.dev/queue": "from-job"})],
        AutoGang(
            name="job-train",
            owner=JOB,
            queue="from-job",
            queue_source="label phalanx.dev/queue of Job team-a/train",
        ),
        namespace_queue="from-ns",
    ),
    "queue: then the namespace's label": Case(
        pod(JOB),
        [wl(JOB, 1)],
        AutoGang(
            name="job-train",
            owner=JOB,
            queue="from-ns",
            queue_source="label phalanx.dev/queue of namespace team-a",
        ),
        namespace_queue="from-ns",
    ),
    "queue: Kueue's label names a Phalanx queue of the same name": Case(
        pod(JOB),
        [wl(JOB, 1, labels={"kueue.x-k8s.io/queue-name": "research"})],
        AutoGang(
            name="job-train",
            owner=JOB,
            queue="research",
            queue_source="label kueue.x-k8s.io/queue-name of Job team-a/train",
        ),
    ),
    "queue: Volcano's annotation too": Case(
        pod(JOB),
        [wl(JOB, 1, annotations={"scheduling.volcano.sh/queue-name": "research"})],
        AutoGang(
            name="job-train",
            owner=JOB,
            queue="research",
            queue_source="annotation scheduling.volcano.sh/queue-name of Job team-a/train",
        ),
    ),
    "queue: a PyTorchJob's schedulingPolicy.queue (Volcano's field) after labels, before the "
    "namespace": Case(
        pod(PYTORCHJOB),
        [wl(PYTORCHJOB, 4, spec_queue=(POLICY_QUEUE, "research"))],
        AutoGang(
            name="pytorchjob-ptj",
            owner=PYTORCHJOB,
            min_member=4,
            queue="research",
            queue_source=f"{POLICY_QUEUE} of PyTorchJob team-a/ptj",
        ),
        namespace_queue="from-ns",
    ),
    "queue: a label beats schedulingPolicy.queue": Case(
        pod(PYTORCHJOB),
        [
            wl(
                PYTORCHJOB,
                4,
                spec_queue=(POLICY_QUEUE, "research"),
                labels={"phalanx.dev/queue": "prod"},
            )
        ],
        AutoGang(
            name="pytorchjob-ptj",
            owner=PYTORCHJOB,
            min_member=4,
            queue="prod",
            queue_source="label phalanx.dev/queue of PyTorchJob team-a/ptj",
        ),
    ),
    "minMember: a PyTorchJob's schedulingPolicy.minAvailable": Case(
        pod(PYTORCHJOB),
        [wl(PYTORCHJOB, 4, spec_min_member=(POLICY_MIN, 2))],
        AutoGang(name="pytorchjob-ptj", owner=PYTORCHJOB, min_member=2),
    ),
    "minMember: the annotation beats schedulingPolicy.minAvailable": Case(
        pod(PYTORCHJOB),
        [
            wl(
                PYTORCHJOB,
                4,
                spec_min_member=(POLICY_MIN, 2),
                annotations={"phalanx.dev/min-member": "3"},
            )
        ],
        AutoGang(name="pytorchjob-ptj", owner=PYTORCHJOB, min_member=3),
    ),
    "minMember: schedulingPolicy.minAvailable above its pods makes the gang Invalid": Case(
        pod(PYTORCHJOB),
        [wl(PYTORCHJOB, 4, spec_min_member=(POLICY_MIN, 5))],
        AutoGang(
            name="pytorchjob-ptj",
            owner=PYTORCHJOB,
            min_member=4,
            problem_reason="Invalid",
            problem=f"PyTorchJob team-a/ptj: {POLICY_MIN} is 5, not between 1 and the 4 pods "
            "it runs: the gang could never start",
        ),
    ),
    "an elastic PyTorchJob: minMember its minReplicas, memberFailure keep": Case(
        pod(PYTORCHJOB),
        [wl(PYTORCHJOB, 4, spec_min_member=(ELASTIC_MIN, 2), member_failure="keep")],
        AutoGang(name="pytorchjob-ptj", owner=PYTORCHJOB, min_member=2, member_failure="keep"),
    ),
    "an elastic PyTorchJob's minReplicas above its pods makes the gang Invalid": Case(
        pod(PYTORCHJOB),
        [wl(PYTORCHJOB, 2, spec_min_member=(ELASTIC_MIN, 3), member_failure="keep")],
        AutoGang(
            name="pytorchjob-ptj",
            owner=PYTORCHJOB,
            min_member=2,
            member_failure="keep",
            problem_reason="Invalid",
            problem=f"PyTorchJob team-a/ptj: {ELASTIC_MIN} is 3, not between 1 and the 2 pods "
            "it runs: the gang could never start",
        ),
    ),
    "a finished Job's state reaches the gang": Case(
        pod(JOB),
        [wl(JOB, 2, state="Complete")],
        AutoGang(name="job-train", owner=JOB, min_member=2, state="Complete"),
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_resolve(name: str) -> None:
    case = CASES[name]
    got = resolve(
        case.pod,
        {w.ref.uid: w for w in case.workloads},
        {(w.namespace, w.ref.name): w for w in case.lws},
        case.namespace_queue,
    )
    assert got == case.want


def test_names_are_lower_case_and_bounded() -> None:
    assert managed_name("JobSet", "big") == "jobset-big"
    assert managed_name("LeaderWorkerSet", "s", "3") == "leaderworkerset-s-3"
    assert len(managed_name("Job", "x" * 300)) == 253


SPEC = ManagedSpec(4, "default", None, None, None)


@pytest.mark.parametrize(
    ("wanted", "managed", "placed", "busy", "remake"),
    [
        (ManagedSpec(6, "default", None, None, None), True, False, False, True),
        (SPEC, True, False, False, False),  # nothing changed
        (ManagedSpec(6, "default", None, None, None), False, False, False, False),  # by hand
        (ManagedSpec(6, "default", None, None, None), True, True, False, False),  # running
        (ManagedSpec(6, "default", None, None, None), True, False, True, False),  # binding
        (ManagedSpec(4, "other", None, None, None), True, False, False, True),  # relabelled
    ],
)
def test_needs_remake(
    wanted: ManagedSpec, managed: bool, placed: bool, busy: bool, remake: bool
) -> None:
    assert needs_remake(SPEC, wanted, managed=managed, placed=placed, busy=busy) is remake
