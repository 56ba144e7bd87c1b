"""When `make demo` calls its example gangs settled: each placed (Running, or Succeeded once its
short Job has finished, as on a rerun against the cluster the last run left) and `giant` with a
reason. It once waited for `Running` only, so every rerun failed "did not all settle"."""

from __future__ import annotations

from typing import Any

from phalanx.demo import (
    EXAMPLE_FILES,
    GANGS,
    ended_examples,
    failed_examples,
    settled,
    unsettled,
)


def _items(phases: dict[str, str]) -> list[dict[str, Any]]:
    return [
        {
            "metadata": {"name": name},
            "status": {"phase": phase, "conditions": [{"type": "Scheduled", "status": "False"}]},
        }
        for name, phase in phases.items()
    ]


def test_running_or_finished_example_gangs_are_settled_and_a_waiting_one_is_not() -> None:
    first = dict.fromkeys(GANGS, "Running") | {"giant": "Pending"}
    assert settled(_items(first))
    rerun = first | {"finetune": "Succeeded", "job-sweep": "Succeeded"}
    assert settled(_items(rerun))
    assert not settled(_items(first | {"pair": "Pending"}))
    assert not settled(_items({g: p for g, p in first.items() if g != "pair"}))


def test_a_failed_example_left_by_an_earlier_run_is_settled_and_named() -> None:
    """Walked: a member of job-sweep failed by hand; every `make demo` after waited 90 s and
    failed "did not all settle", as its Job stays failed."""
    rerun = dict.fromkeys(GANGS, "Running") | {"giant": "Pending", "job-sweep": "Failed"}
    assert settled(_items(rerun))
    assert failed_examples(_items(rerun)) == ["default/job-sweep"]
    assert failed_examples(_items(dict.fromkeys(GANGS, "Running"))) == []


def test_example_gangs_an_earlier_run_ended_are_named_to_be_run_afresh() -> None:
    """Walked: `make demo` run again once `finetune` had finished applied its Job beside the
    `Succeeded` PodGroup, and the new pods waited for ever (`PodGroupFinished`)."""
    rerun = dict.fromkeys(GANGS, "Running") | {"finetune": "Succeeded", "pair": "Failed"}
    assert ended_examples(_items(rerun | {"other": "Succeeded"})) == {
        "finetune": "Succeeded",
        "pair": "Failed",
    }
    assert ended_examples(_items(dict.fromkeys(GANGS, "Running"))) == {}
    assert set(EXAMPLE_FILES.values()) - {None} == set(GANGS), "every example gang has its file"


def test_a_rerun_that_does_not_settle_names_each_gang_it_waits_for_and_why() -> None:
    """Walked: the example Job suspended by hand, `make demo` again failed "did not all
    settle" pointing at the operator's log only; `job-sweep`'s own status said why."""
    items = _items(dict.fromkeys(GANGS, "Running") | {"giant": "Pending"})
    assert unsettled(items) == []
    sweep = next(i for i in items if i["metadata"]["name"] == "job-sweep")
    sweep["metadata"]["namespace"] = "research"
    sweep["status"] = {
        "phase": "Pending",
        "conditions": [
            {
                "type": "Scheduled",
                "status": "False",
                "reason": "WaitingForPods",
                "message": "0 of 2 pods exist; its Job sweep is suspended",
            }
        ],
    }
    giant = next(i for i in items if i["metadata"]["name"] == "giant")
    giant["status"] = {}
    assert unsettled([i for i in items if i["metadata"]["name"] != "pair"]) == [
        "pair: no PodGroup yet",
        "giant: no decision yet",
        "research/job-sweep: Pending (WaitingForPods: 0 of 2 pods exist; its Job sweep is "
        "suspended)",
    ]
