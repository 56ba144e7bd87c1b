"""The rows of `phalanx queue`, `share` and `explain`, from realistic objects, without a cluster."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from datetime import timedelta
from typing import Any

import yaml
from rich.console import Console

from phalanx.inspection import render
from phalanx.inspection.formats import Output, dump
from phalanx.inspection.rows import (
    explanation,
    gang_row,
    missing_group,
    parse_time,
    queue_rows,
    queueless,
    share_rows,
    would_start,
)
from phalanx.k8s.status import condition, kept_condition, merge_conditions
from tests.unit.inspection.objects import GPU, NOW, T, pending, podgroup, queue, running, situation

QUEUE_KEYS = ["namespace", "name", "queue", "phase", "bound", "min", "reason", "position", "eta"]
SHARE_KEYS = [
    "queue",
    "weight",
    "guarantee",
    "deserved",
    "allocated",
    "borrowed",
    "pendingGangs",
    "runningGangs",
    "usage",
    "fairShare",
]


def test_queue_json_has_exactly_the_contract_keys_and_the_status_figures() -> None:
    groups, _ = situation()
    rows = {(r.namespace, r.name): r.to_json() for r in queue_rows(groups)}
    for row in rows.values():
        assert list(row) == QUEUE_KEYS
    assert rows["ml", "big"] == {
        "namespace": "ml",
        "name": "big",
        "queue": "lender",
        "phase": "Pending",
        "bound": 0,
        "min": 14,
        "reason": "InsufficientCapacity",
        "position": 1,
        "eta": "2026-11-30T05:09:00Z",
    }
    assert rows["ml", "short"] == {
        "namespace": "ml",
        "name": "short",
        "queue": "lender",
        "phase": "Running",
        "bound": 2,
        "min": 2,
        "reason": "Backfilled",
        "position": None,
        "eta": None,
    }
    # Not seen by the operator yet: no status, the spec's defaults.
    assert rows["research", "fresh"] == {
        "namespace": "research",
        "name": "fresh",
        "queue": "default",
        "phase": None,
        "bound": 0,
        "min": 4,
        "reason": None,
        "position": None,
        "eta": None,
    }


def test_queue_lists_by_queue_running_before_waiting_and_waiting_by_position() -> None:
    groups, _ = situation()
    order = [(r.queue, r.name) for r in queue_rows(groups)]
    assert order == [
        ("borrower", "wide"),
        ("default", "fresh"),
        ("lender", "short"),
        ("lender", "big"),
        ("lender", "long"),
    ]


def test_start_shows_only_waiting_gangs_soonest_first_then_by_position() -> None:
    groups, _ = situation()
    later = podgroup(
        "later",
        1,
        queue="lender",
        status=pending(
            "InsufficientCapacity",
            "needs 8 GPUs; 0 free",
            requested=8,
            free=0,
            deserved=96,
            allocated=16,
            position=3,
            eta_in=3600,
            members=1,
        ),
    )
    rows = queue_rows([later, *reversed(groups)], start=True)
    # Same ETA: position decides; no ETA (the unseen gang) comes last.
    assert [r.name for r in rows] == ["big", "long", "later", "fresh"]
    assert all(r.phase in ("Pending", None) for r in rows)


def test_share_json_has_the_contract_keys_and_gpu_figures_as_numbers() -> None:
    _, queues = situation()
    rows = {r.queue: r.to_json() for r in share_rows(queues)}
    for row in rows.values():
        assert list(row) == SHARE_KEYS
    assert rows["borrower"] == {
        "queue": "borrower",
        "weight": 1,
        "guarantee": 32,
        "deserved": 32,
        "allocated": 96,
        "borrowed": 64,
        "pendingGangs": 0,
        "runningGangs": 1,
        "usage": 57600.0,
        "fairShare": 0.25,
    }
    assert rows["lender"]["guarantee"] == 96  # an integer in the spec, not a string
    assert rows["lender"]["weight"] == 2
    # Defaults and the operator's absent resources: weight 1, nothing allocated = 0.
    assert rows["default"] | {} == {
        "queue": "default",
        "weight": 1,
        "guarantee": 0,
        "deserved": 0,
        "allocated": 0,
        "borrowed": 0,
        "pendingGangs": 0,
        "runningGangs": 0,
        "usage": 0.0,
        "fairShare": 1.0,
    }
    # Not reported on yet: status figures are unknown, not zero.
    assert rows["new"]["guarantee"] == 8
    assert rows["new"]["deserved"] is None
    assert rows["new"]["fairShare"] is None
    assert list(rows) == ["borrower", "default", "lender", "new"]


def test_share_keeps_the_queues_message_and_gang_counts_for_the_table() -> None:
    q = queue(
        "a",
        guarantee={"nvidia.com/gpu": 200},
        deserved=128,
        message="guarantees add up to more than the cluster's 128 nvidia.com/gpu; scaled to 64%",
        pending_gangs=3,
    )
    (row,) = share_rows([q])
    assert row.message is not None and "scaled" in row.message
    assert row.pending_gangs == 3
    assert row.running_gangs == 0


def test_explain_gives_reason_message_and_the_pending_detail_and_what_would_start_it() -> None:
    groups, _ = situation()
    big = next(g for g in groups if g["metadata"]["name"] == "big")
    out = explanation(big, NOW).to_json()
    assert out["reason"] == "InsufficientCapacity"
    assert out["message"] == big["status"]["conditions"][0]["message"]
    assert out["detail"] == big["status"]["pendingDetail"]
    assert out["detail"]["requestedGPUs"] == 112
    assert out["detail"]["freeGPUs"] == 16
    assert out["position"] == 1
    assert out["eta"] == "2026-11-30T05:09:00Z"
    hints = out["wouldStart"]
    assert hints[0] == "needs 96 more free GPUs that it can use (112 requested, 16 free now)"
    assert hints[1] == (
        "its queue lender holds 16 GPUs and deserves 96: this gang's 112 would put it 32 over "
        "its share, which it can borrow from idle GPUs but not reclaim from other queues"
    )
    assert hints[2] == (
        "starts at 2026-11-30T05:09:00Z (in 9m), its reservation, when 1 running gang ends"
    )
    json.dumps(out)  # serialisable as is


def test_explain_of_an_eta_that_holds_nothing_does_not_call_it_a_reservation() -> None:
    """A gang short of its starvation bound gets an ETA from a plan that holds nothing; its
    message says "(not binding)" and explain must not promise it a reservation."""
    groups, _ = situation()
    big = copy.deepcopy(next(g for g in groups if g["metadata"]["name"] == "big"))
    big["status"]["conditions"][0]["message"] = (
        "needs 112 GPUs; 16 free; expected start in 9m when 1 running gang ends (not binding); "
        "waited 0s of its 1h00m starvation bound, so it holds no reservation yet"
    )
    hints = would_start(big, NOW)
    assert hints[-1] == (
        "starts at 2026-11-30T05:09:00Z (in 9m), expected, not binding: it holds no "
        "reservation yet, when 1 running gang ends"
    )


def test_explain_of_a_reservation_below_the_honoured_size_says_what_it_does_not_promise() -> None:
    """A starving gang below the size whose reservation starts ahead of the order holds a
    binding reservation, but the cycle its capacity frees, gangs ahead of it in the order may
    start there first: its message says so and explain repeats it."""
    groups, _ = situation()
    big = copy.deepcopy(next(g for g in groups if g["metadata"]["name"] == "big"))
    big["status"]["conditions"][0]["message"] = (
        "needs 112 GPUs; 16 free; expected start in 9m when 1 running gang ends; binding until "
        "then, but gangs ahead of it in the order may start there first (a reservation starts "
        "ahead of the order from 16 pods)"
    )
    hints = would_start(big, NOW)
    assert hints[-1] == (
        "starts at 2026-11-30T05:09:00Z (in 9m), its reservation, binding until then, but "
        "gangs ahead of it in the order may start there first, when 1 running gang ends"
    )


def test_explain_of_a_gang_held_back_by_a_reservation_says_backfill_needs_a_time_limit() -> None:
    groups, _ = situation()
    long = next(g for g in groups if g["metadata"]["name"] == "long")
    hints = would_start(long, NOW)
    assert hints[0].startswith("16 GPUs are free but reserved for gangs ahead of it")
    assert "timeLimitSeconds" in hints[0]
    assert "would hold 32 of its deserved 96 GPUs" in hints[1]


def test_explain_topology_names_the_gpus_missing_under_the_best_domain() -> None:
    obj = podgroup(
        "tight",
        8,
        topology={"required": "leaf"},
        status=pending(
            "TopologyUnsatisfiable",
            "needs 64 GPUs under one leaf; the best leaf (leaf-07) has 48 free",
            requested=64,
            free=80,
            deserved=128,
            allocated=0,
            position=1,
            eta_in=None,
            members=8,
            best=("leaf-07", 48),
        ),
    )
    out = explanation(obj, NOW)
    assert out.detail is not None and out.detail["bestDomain"] == "leaf-07"
    assert out.would_start[0] == (
        "needs 16 more free GPUs under one leaf (64 requested; the best leaf, leaf-07, has 48 free)"
    )
    assert out.would_start[-1].startswith("no expected start")


def test_explain_topology_with_enough_gpus_in_the_domain_says_they_are_not_where_pods_fit() -> None:
    """Its leaf has as many GPUs free as it asks, on nodes its pods do not fit (split across
    nodes): "needs 0 more free GPUs" read as if it were about to start."""
    obj = podgroup(
        "split",
        4,
        topology={"required": "leaf"},
        status=pending(
            "TopologyUnsatisfiable",
            "needs 32 GPUs under one leaf; the best leaf (leaf-02) has 32 free",
            requested=32,
            free=40,
            deserved=128,
            allocated=0,
            position=1,
            eta_in=None,
            members=4,
            best=("leaf-02", 32),
        ),
    )
    assert explanation(obj, NOW).would_start[0] == (
        "needs free GPUs under one leaf on nodes where its pods fit (the best leaf, leaf-02, has "
        "32 free for 32 requested, but not on nodes matching its per-pod requests, selectors "
        "and tolerations)"
    )


def test_explain_waiting_for_pods_counts_the_missing_members() -> None:
    obj = podgroup(
        "early",
        4,
        status=pending(
            "WaitingForPods",
            "1 of 4 pods exist",
            requested=0,
            free=128,
            deserved=0,
            allocated=0,
            position=1,
            eta_in=None,
            members=1,
        ),
    )
    hints = would_start(obj, NOW)
    assert hints[0] == (
        "needs 3 more pod(s) labelled phalanx.dev/pod-group=early in namespace ml (1 of 4 exist)"
    )
    assert len(hints) == 1  # no share or ETA figures for a gang whose pods are missing


def test_explain_of_a_managed_gang_waiting_for_pods_names_its_workload() -> None:
    """A managed PodGroup (made by the operator for the Job `sweep`): its pods come from the
    Job, not from labels its user writes (walked: a suspended Job's gang was told to label
    pods with `phalanx.dev/pod-group=job-sweep`)."""
    waits = pending(
        "WaitingForPods",
        "0 of 2 pods exist; its Job sweep is suspended (spec.suspend): it makes no pods until "
        "resumed",
        requested=0,
        free=128,
        deserved=0,
        allocated=0,
        position=1,
        eta_in=None,
        members=0,
    )
    obj = podgroup("job-sweep", 2, status=waits)
    obj["metadata"]["labels"] = {"phalanx.dev/managed": "true"}
    obj["metadata"]["ownerReferences"] = [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "sweep", "controller": True}
    ]
    assert would_start(obj, NOW)[0] == (
        "needs 2 more pod(s) from its Job ml/sweep, which makes them (0 of 2 exist)"
    )


def _evicted_early(members: int, bound: int) -> dict[str, Any]:
    """`early` (minMember 4) reclaimed a minute ago, as the evictor and the reporter leave it."""
    status = pending(
        "WaitingForPods",
        "…",
        requested=0,
        free=128,
        deserved=0,
        allocated=0,
        position=1,
        eta_in=None,
        members=members,
    )
    mark = condition({}, "Evicted", "True", "Reclaimed", "reclaimed for queue research", T - 60)
    status["conditions"] = merge_conditions(status, [mark])
    status["bound"] = bound
    return podgroup("early", 4, status=status)


def test_explain_of_an_eviction_under_way_says_it_must_finish_first() -> None:
    """2 members still on their nodes (terminating), 0 of 4 pods left that count."""
    assert would_start(_evicted_early(members=0, bound=2), NOW) == (
        "needs its eviction (Reclaimed) to finish: 2 member(s) still on their nodes",
        "needs 4 more pod(s) labelled phalanx.dev/pod-group=early in namespace ml (0 of 4 exist)",
    )


def test_explain_counts_only_pods_that_may_still_run_as_the_message_does() -> None:
    """Walked: a bare member failed, its gang evicted ("0 of 2 pods exist"), and explain said
    "needs 1 more pod(s) (1 of 2 exist)", counting the failed pod. Here: minMember 4, 1 succeeded
    (counts toward it), 1 failed, 1 pending: 1 of 3 exist, 2 more needed."""
    obj = _evicted_early(members=3, bound=0)
    obj["status"]["succeeded"], obj["status"]["failed"] = 1, 1
    assert would_start(obj, NOW)[0] == (
        "needs 2 more pod(s) labelled phalanx.dev/pod-group=early in namespace ml (1 of 3 exist)"
    )


def test_explain_of_a_gang_that_ended_says_why() -> None:
    obj = _evicted_early(members=1, bound=0)
    obj["status"]["phase"] = "Failed"
    ended = condition({}, "Finished", "True", "WorkloadFailed", "its workload reports Failed", T)
    obj["status"]["conditions"] = merge_conditions(obj["status"], [ended])
    out = explanation(obj, NOW)
    assert out.finished == "WorkloadFailed: its workload reports Failed"
    assert out.to_json()["finished"] == out.finished
    text = render.explanation_text(out, NOW).plain
    assert "Finished  WorkloadFailed: its workload reports Failed" in text, text


def test_explain_of_a_running_gang_or_an_unseen_one() -> None:
    groups, _ = situation()
    short = next(g for g in groups if g["metadata"]["name"] == "short")
    out = explanation(short, NOW)
    assert (out.reason, out.phase, out.detail, out.would_start) == (
        "Backfilled",
        "Running",
        None,
        (),
    )
    assert out.evicted is None
    fresh = next(g for g in groups if g["metadata"]["name"] == "fresh")
    unseen = explanation(fresh, NOW)
    assert unseen.reason is None
    assert "operator has not reported" in unseen.would_start[0]


def test_an_evicted_gang_waiting_again_says_why_it_was_evicted() -> None:
    status = pending(
        "InsufficientCapacity",
        "needs 32 GPUs; 0 free",
        requested=32,
        free=0,
        deserved=64,
        allocated=32,
        position=1,
        eta_in=None,
        members=4,
    )
    status["conditions"].append(
        {
            "type": "Evicted",
            "status": "True",
            "reason": "Reclaimed",
            "message": "reclaimed for ml/b0",
            "lastTransitionTime": "2026-11-30T04:59:00Z",
        }
    )
    out = explanation(podgroup("a1", 4, status=status), NOW)
    assert out.evicted == "Reclaimed: reclaimed for ml/b0"


def test_malformed_figures_are_shown_as_unknown_not_a_crash() -> None:
    obj = podgroup("odd", 2, status={"phase": "Pending", "bound": "x", "queuePosition": True})
    obj["status"]["estimatedStartTime"] = "soon"
    row = gang_row(obj)
    assert (row.bound, row.position, row.eta) == (0, None, "soon")
    assert parse_time("soon") is None
    assert parse_time("2026-11-30T05:00:00") is None  # no zone: not RFC 3339
    assert parse_time("2026-11-30T05:00:00Z") == NOW
    (share,) = share_rows([queue("q", guarantee={"nvidia.com/gpu": "lots"})])
    assert share.guarantee == 0
    assert explanation(obj, NOW + timedelta(hours=1)).would_start  # something to say


def test_json_and_yaml_dumps_keep_the_key_order() -> None:
    groups, _ = situation()
    data = [r.to_json() for r in queue_rows(groups)]
    assert json.loads(dump(data, Output.JSON)) == data
    loaded = yaml.safe_load(dump(data, Output.YAML))
    assert loaded == data
    assert list(loaded[0]) == QUEUE_KEYS


def test_explain_names_whose_borrowed_gpus_reclaim_could_take_back() -> None:
    groups, queues = situation()
    long = next(g for g in groups if g["metadata"]["name"] == "long")
    hints = explanation(long, NOW, queues).would_start
    assert hints[1] == (
        "its queue lender would hold 32 of its deserved 96 GPUs (allocated 16): within its share, "
        "the GPUs borrowed by borrower (64) can be reclaimed for it, whole gangs, when that lets "
        "it start and leaves each lender its deserved share (the message says why nothing was)"
    )
    kept = [q for q in queues if q["metadata"]["name"] != "borrower"]
    kept.append(queue("borrower", deserved=32, allocated=96, borrowed=64))
    kept[-1]["spec"]["reclaimable"] = False
    assert would_start(long, NOW, kept)[1].endswith(
        "but the GPUs borrowed by borrower (64) are not reclaimable: "
        "it waits for those gangs to end"
    )
    idle = [q for q in queues if q["metadata"]["name"] != "borrower"]
    assert would_start(long, NOW, idle)[1].endswith(
        "but no other queue is borrowing GPUs to give back"
    )


def test_explain_detail_keeps_the_contract_order_whatever_order_the_api_returns() -> None:
    groups, _ = situation()
    big = next(g for g in groups if g["metadata"]["name"] == "big")
    big["status"]["pendingDetail"] = dict(sorted(big["status"]["pendingDetail"].items()))
    detail = explanation(big, NOW).detail
    assert detail is not None
    assert list(detail) == ["requestedGPUs", "freeGPUs", "queueDeservedGPUs", "queueAllocatedGPUs"]


def _newcomers_cluster() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Issue 14's cluster of 128 GPUs: `prod` asks for only 16 of its 32 guaranteed GPUs, so
    `research` deserves 112; research holds 24 and its `pretrain` waits for 112 more."""
    pretrain = podgroup(
        "pretrain",
        14,
        queue="research",
        status=pending(
            "InsufficientCapacity",
            "needs 112 GPUs; 88 free",
            requested=112,
            free=88,
            deserved=112,
            allocated=24,
            position=1,
            eta_in=None,
            members=14,
        ),
    )
    queues = [
        queue("prod", guarantee={GPU: 32}, deserved=16, allocated=16, running_gangs=1),
        queue(
            "research",
            weight=2,
            guarantee={GPU: 64},
            deserved=112,
            allocated=24,
            pending_gangs=1,
            running_gangs=2,
        ),
        queue("default", deserved=0),
    ]
    return pretrain, queues


def test_explain_never_has_a_queue_hold_more_than_the_cluster_and_says_whose_gangs_must_end() -> (
    None
):
    pretrain, queues = _newcomers_cluster()
    hints = would_start(pretrain, NOW, queues)
    for hint in hints:
        for held in re.findall(r"\bhold\w* (\d+)", hint):
            assert int(held) <= 128, hint
    assert hints[1] == (
        "its queue research holds 24 GPUs and deserves 112: this gang's 112 would put it 24 "
        "over its share, which it can borrow from idle GPUs but not reclaim from other queues; "
        "128 GPUs are free or held by gangs in all, so it can start only after its queue's own "
        "running gangs free 8"
    )
    # Without the queues (a user who may not list them) the room is unknown: no such claim.
    assert "free or held" not in " ".join(would_start(pretrain, NOW))


def test_explain_says_how_a_deserved_share_came_about_demand_caps_included() -> None:
    pretrain, queues = _newcomers_cluster()
    assert would_start(pretrain, NOW, queues)[2] == (
        "its queue research deserves 112: its guarantee 64 plus 48 of the GPUs that no guarantee "
        "holds or that other queues do not ask for, shared by weight (capped by their demand, "
        "these deserve less than their guarantee: prod 16 of 32)"
    )
    # A gang of prod itself (its queue capped by its demand).
    waiting = podgroup(
        "eval",
        1,
        queue="prod",
        status=pending(
            "WaitingForReservation",
            "reserved",
            requested=8,
            free=8,
            deserved=16,
            allocated=16,
            position=1,
            eta_in=None,
            members=1,
        ),
    )
    assert would_start(waiting, NOW, queues)[-2] == (
        "its queue prod deserves 16 of its guarantee 32: a queue deserves no more than its "
        "demand (GPUs its gangs hold and wait for); the rest is lent to other queues"
    )
    # Guarantees scaled down to fit: that is the reason given, not demand.
    scaled = "guarantees add up to more than the cluster's 128 nvidia.com/gpu; scaled down to 50%"
    queues[0] = queue("prod", guarantee={GPU: 32}, deserved=16, allocated=16, message=scaled)
    assert f"its queue prod deserves 16: {scaled}" in would_start(waiting, NOW, queues)


def test_share_notes_explain_a_deserved_share_below_the_guarantee() -> None:
    _, queues = _newcomers_cluster()
    rows = share_rows(queues)
    assert render.share_notes(rows) == [
        "prod: deserves 16 of its guarantee 32: a queue deserves no more than its demand (GPUs "
        "its gangs hold and wait for); the rest is lent to other queues and reclaimed when it "
        "asks for it"
    ]
    assert {r.queue: r.to_json()["pendingGangs"] for r in rows} == {
        "default": 0,
        "prod": 0,
        "research": 1,
    }
    assert {r.queue: r.to_json()["runningGangs"] for r in rows}["research"] == 2


def test_share_shows_fair_share_1_at_zero_usage_and_a_small_usage_as_not_zero() -> None:
    rows = share_rows(
        [
            queue("idle", deserved=0, usage=0.0, fair_share=1.0),
            queue("new", deserved=8, allocated=8, usage=0.4, fair_share=0.5),
        ]
    )
    table = render.share_table(rows)
    console = Console(width=200, record=True)
    console.print(table)
    lines = {line.split()[0]: line.split() for line in console.export_text().splitlines()[1:]}
    assert lines["idle"][-2:] == ["0", "1"]
    assert lines["new"][-2:] == ["0.4", "0.5"]
    assert [render.usage_text(u) for u in (None, 0.0, 0.04, 9.4, 1638.4)] == [
        "-", "0", "0.04", "9.4", "1638"
    ]  # fmt: skip


def test_explain_of_pods_no_node_can_hold_asks_for_other_pods_not_free_gpus() -> None:
    """Nothing that ends or is evicted lets such a gang start: explain says to change the pods
    or topology (or add nodes), not "needs 28 more free GPUs" as it did (walked: a Job of 16-GPU
    pods)."""
    groups, _ = situation()
    big = copy.deepcopy(next(g for g in groups if g["metadata"]["name"] == "big"))
    for message in (
        "needs 32 GPUs; no node can ever hold one of its pods: each asks nvidia.com/gpu=16 "
        "(at most 8) of the 16 nodes that accept it, counted by allocatable",
        "needs 2 GPUs; no node accepts its pods: their node selector, affinity and tolerations "
        "match none of the 16 nodes (or only cordoned ones)",
        # Walked (a TrainJob of 20 nodes of 8 GPUs): "needs 80 more free GPUs", "it can start
        # only after its queue's own running gangs free 64".
        "needs 160 GPUs, more than the cluster has (128 schedulable in total)",
    ):
        big["status"]["conditions"][0]["message"] = message
        assert would_start(big, NOW) == (
            "no capacity freeing up lets it start as written: change its pods (requests, count, "
            "node selector, affinity, tolerations) or its required topology (the message says "
            "what no node or domain offers), or add nodes that have it",
        )
    big["status"]["conditions"][0]["reason"] = "TopologyUnsatisfiable"
    big["status"]["conditions"][0]["message"] = (
        "needs 40 GPUs under one leaf; no leaf can ever hold all its pods: the one that could "
        "hold the most (leaf-00) holds 4 of its 5 even empty (counted by allocatable)"
    )
    assert would_start(big, NOW)[0].startswith("no capacity freeing up lets it start")


def test_explain_of_a_running_gang_counts_its_members_and_says_where_waiting_ones_say_why() -> None:
    """A Job of 6 pods, minMember 4: 4 bound and running, 2 made later and waiting to join. The
    status counts (what `k8s.status` writes) give 6 exist − 4 bound − 0 finished = 2 waiting."""
    status = running("Scheduled", "bound 4 pods on 4 nodes", pods=4, nodes=["n0", "n1"])
    status["members"] = 6
    e = explanation(podgroup("job-train", 4, status=status), NOW)
    assert e.members is not None
    assert e.to_json()["members"] == {
        "exist": 6,
        "min": 4,
        "bound": 4,
        "running": 4,
        "waiting": 2,
        "succeeded": 0,
        "failed": 0,
    }
    text = render.explanation_text(e, NOW).plain
    assert (
        "Members   6 (minMember 4): 4 bound (4 running), 2 waiting, 0 succeeded, 0 failed; the 2 "
        "pods waiting to join say why in their PodScheduled condition (kubectl describe pod)"
    ) in text
    assert e.degraded is None and "Degraded" not in text


def test_explain_of_a_gang_that_lost_members_and_runs_on_says_so_with_the_counts() -> None:
    """memberFailure: keep, minMember 3: one of 3 pods failed and its replacement waits. The
    Evicted=False MemberFailed condition is built by the operator's own `kept_condition`; a
    finished pod counts as failed, not waiting: 3 exist − 2 bound − 1 failed = 0 waiting."""
    status = running("Scheduled", "bound 3 pods on 3 nodes", pods=2, nodes=["n0", "n1"])
    status.update(phase="Degraded", members=3, failed=1)
    kept = kept_condition(status, "Degraded", "MemberFailed", "1 member failed: 2 of 3 run", T)
    assert kept is not None
    status["conditions"] = merge_conditions(status, [kept])
    e = explanation(podgroup("pytorchjob-elastic", 3, status=status), NOW)
    assert e.degraded == "1 member failed: 2 of 3 run"
    assert e.evicted is None  # not evicted: it runs on
    text = render.explanation_text(e, NOW).plain
    assert "Members   3 (minMember 3): 2 bound (2 running), 0 waiting, 0 succeeded, 1 failed\n" in (
        text
    )
    assert "Degraded  1 member failed: 2 of 3 run" in text


def test_explain_of_a_gang_the_operator_has_not_counted_shows_no_members() -> None:
    groups, _ = situation()
    fresh = next(g for g in groups if g["metadata"]["name"] == "fresh")
    e = explanation(fresh, NOW)
    assert e.members is None and e.to_json()["members"] is None
    assert "Members" not in render.explanation_text(e, NOW).plain


def test_explain_of_a_running_gang_names_the_member_that_cannot_start() -> None:
    """`Started=False` on a running gang is shown; once the gang is over it is history."""
    obj = _evicted_early(members=2, bound=2)
    obj["status"]["phase"] = "Running"
    stuck = condition(
        {}, "Started", "False", "ImagePullBackOff", "1 of 2 bound members not running: b", T
    )
    obj["status"]["conditions"] = merge_conditions(obj["status"], [stuck])
    out = explanation(obj, NOW)
    assert out.not_started == "ImagePullBackOff: 1 of 2 bound members not running: b"
    assert out.to_json()["notStarted"] == out.not_started
    text = render.explanation_text(out, NOW).plain
    assert "Started   ImagePullBackOff: 1 of 2 bound members not running: b" in text, text
    obj["status"]["phase"] = "Succeeded"
    assert explanation(obj, NOW).not_started is None


def test_explain_lists_the_gangs_last_events_oldest_first() -> None:
    """Seven Events (one repeated 3 times, one new-style with `eventTime` and `series`): the
    last five by time, oldest first, each with its age and count."""
    from datetime import timedelta

    from phalanx.inspection.rows import recent_events

    def at(minutes: int) -> str:
        return (NOW - timedelta(minutes=minutes)).isoformat().replace("+00:00", "Z")

    events = [
        {"type": "Normal", "reason": f"R{m}", "message": f"m{m}", "lastTimestamp": at(m)}
        for m in (50, 40, 30, 20)
    ]
    events.append(
        {
            "type": "Warning",
            "reason": "MemberFailed",
            "message": "gang evicted",
            "lastTimestamp": at(3),
            "count": 3,
        }
    )
    events.append(
        {
            "type": "Normal",
            "reason": "Scheduled",
            "message": "bound 4 pods",
            "eventTime": at(1),
            "series": {"count": 2},
        }
    )
    events.append({"type": "Normal", "reason": "R60", "message": "m60", "lastTimestamp": at(60)})
    lines = recent_events(events)
    assert [e.reason for e in lines] == ["R40", "R30", "R20", "MemberFailed", "Scheduled"]
    # Within one second, in the order the API server stored them (walked: a wait listed before
    # the eviction that caused it).
    same = [
        {
            "reason": "WaitingForPods",
            "lastTimestamp": at(1),
            "metadata": {"resourceVersion": "912"},
        },
        {"reason": "MemberFailed", "lastTimestamp": at(1), "metadata": {"resourceVersion": "907"}},
    ]
    assert [e.reason for e in recent_events(same)] == ["MemberFailed", "WaitingForPods"]
    assert lines[3].text(NOW) == "   3m ago  Warning MemberFailed: gang evicted (×3)"
    assert lines[4].to_json()["count"] == 2
    obj = _evicted_early(members=2, bound=2)
    out = dataclasses.replace(explanation(obj, NOW), events=lines)
    text = render.explanation_text(out, NOW).plain
    assert (
        "Events (the last 5)\n" in text and "1m ago  Normal  Scheduled: bound 4 pods (×2)" in text
    )
    assert [e["reason"] for e in out.to_json()["events"]] == [e.reason for e in lines]


def test_share_names_the_gangs_that_hold_gpus_of_a_queue_that_no_longer_exists() -> None:
    """Walked: `kubectl delete queue research` under two running gangs; their GPUs were then
    charged to no queue and `phalanx share` showed them nowhere. A pending gang of it holds
    nothing (it says `QueueNotFound` itself), nor does one that ended."""

    def gang(ns: str, name: str, queue: str, phase: str) -> dict[str, Any]:
        return {
            "metadata": {"namespace": ns, "name": name},
            "spec": {"queue": queue},
            "status": {"phase": phase},
        }

    groups = [
        gang("research", "job-sweep", "research", "Running"),
        gang("default", "llm-pretrain", "research", "Degraded"),
        gang("default", "giant", "research", "Pending"),
        gang("default", "old", "research", "Succeeded"),
        gang("default", "pair", "default", "Running"),
    ]
    orphans = queueless(groups, [queue("default"), queue("prod")])
    assert orphans == {"research": ["default/llm-pretrain", "research/job-sweep"]}
    assert render.share_notes([], orphans) == [
        "research (no such Queue): 2 gangs of it hold GPUs charged to no queue, outside every "
        "row above: default/llm-pretrain, research/job-sweep; they run on, and a Queue research "
        "applied again is charged with them (its usage starting from 0)"
    ]
    assert queueless(groups, [queue("default"), queue("research")]) == {}


def _pod(name: str, node: str | None, gpus: str, phase: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {
            **({"nodeName": node} if node else {}),
            "containers": [{"name": "c", "resources": {"requests": {GPU: gpus}}}],
        },
        "status": {"phase": phase},
    }


def test_explain_of_a_deleted_podgroup_names_the_pods_that_still_name_it() -> None:
    """`kubectl delete podgroup train` under its running gang: two members bound with 8 GPUs
    each (16), one waiting, one that succeeded before (not counted): the plain "not found" said
    nothing of the 16 GPUs they hold, charged to no queue."""
    pods = [
        _pod("train-0", "n1", "8", "Running"),
        _pod("train-1", "n2", "8", "Running"),
        _pod("train-2", None, "8", "Pending"),
        _pod("train-3", "n3", "8", "Succeeded"),
    ]
    assert missing_group("ml", "train", pods) == (
        'PodGroup "train" not found in namespace "ml"; 3 pods labelled '
        "phalanx.dev/pod-group=train name it: 2 bound, holding 16 GPUs charged to no queue and "
        "under no gang rule (time limit, member failure), 1 waiting for it; apply the PodGroup "
        "again and its bound members are adopted, or delete them"
    )
    assert missing_group("ml", "solo", [_pod("solo-0", None, "1", "Pending")]) == (
        'PodGroup "solo" not found in namespace "ml"; 1 pod labelled phalanx.dev/pod-group=solo '
        "names it: 1 waiting for it; apply the PodGroup, or delete it"
    )
    # Nothing left that names it (or only finished pods): the plain message.
    done = [_pod("x-0", "n1", "8", "Succeeded")]
    for left in ([], done):
        assert missing_group("ml", "x", left) == 'PodGroup "x" not found in namespace "ml"'
