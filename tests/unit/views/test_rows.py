"""The rows of `phalanx queue`, `share` and `explain`, from realistic objects, without a cluster."""

from __future__ import annotations

import json
from datetime import timedelta

import yaml

from phalanx.views.formats import Output, dump
from phalanx.views.rows import (
    explanation,
    gang_row,
    parse_time,
    queue_rows,
    share_rows,
    would_start,
)
from tests.unit.views.objects import NOW, pending, podgroup, queue, situation

QUEUE_KEYS = ["namespace", "name", "queue", "phase", "bound", "min", "reason", "position", "eta"]
SHARE_KEYS = [
    "queue",
    "weight",
    "guarantee",
    "deserved",
    "allocated",
    "borrowed",
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
    assert "would hold 128 GPUs, over its deserved 96" in hints[1]
    assert hints[2] == (
        "starts at 2026-11-30T05:09:00Z (in 9m), its reservation, when 1 running gang ends"
    )
    json.dumps(out)  # serialisable as is


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
        "it start"
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
