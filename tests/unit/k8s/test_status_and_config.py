"""Status bodies are written only when they change; configuration is refused with clear words."""

from __future__ import annotations

import pytest

from phalanx.config import ConfigError, build_config, parse_topology
from phalanx.k8s.metrics import Metrics
from phalanx.k8s.status import condition, diff, merge_patch, not_evicted


def test_diff_names_only_changed_fields_and_nulls_removed_ones() -> None:
    current = {"phase": "Pending", "queuePosition": 3, "estimatedStartTime": "x"}
    desired = {"phase": "Pending", "queuePosition": 2, "estimatedStartTime": None, "bound": 0}
    assert diff(current, desired) == {"queuePosition": 2, "estimatedStartTime": None, "bound": 0}
    assert diff(current, {"phase": "Pending"}) == {}


def test_diff_of_maps_nulls_the_keys_gone_so_a_merge_patch_lands_exactly_on_desired() -> None:
    """A merge patch merges maps: `allocated: {}` would leave the GPUs a Queue held, and a
    `pendingDetail` without `bestDomain` would keep the old one."""
    current = {
        "allocated": {"nvidia.com/gpu": "16", "cpu": "4"},
        "pendingDetail": {"freeGPUs": 8, "bestDomain": "leaf-03", "bestDomainFreeGPUs": 4},
    }
    desired = {"allocated": {}, "pendingDetail": {"freeGPUs": 10}}
    patch = diff(current, desired)
    assert patch == {
        "allocated": {"nvidia.com/gpu": None, "cpu": None},
        "pendingDetail": {"freeGPUs": 10, "bestDomain": None, "bestDomainFreeGPUs": None},
    }
    assert merge_patch(current, patch) == desired
    assert diff(current, current) == {}


def test_queue_gauges_read_zero_for_what_is_gone_and_deleted_queues_vanish() -> None:
    m = Metrics()

    def value(name: str, **labels: str) -> float | None:
        return m.registry.get_sample_value(name, labels)

    m.set_queue("temp", {"nvidia.com/gpu": 16}, {"nvidia.com/gpu": 16}, 1)
    m.set_queue("temp", {}, {}, 0)
    assert value("phalanx_queue_allocated", queue="temp", resource="nvidia.com/gpu") == 0
    assert value("phalanx_queue_deserved", queue="temp", resource="nvidia.com/gpu") == 0
    m.set_queue("kept", {"nvidia.com/gpu": 8}, {}, 2)
    m.forget_queues_except({"kept"})
    assert value("phalanx_queue_allocated", queue="temp", resource="nvidia.com/gpu") is None
    assert value("phalanx_queue_pending_gangs", queue="temp") is None
    assert value("phalanx_queue_deserved", queue="kept", resource="nvidia.com/gpu") == 8


def test_gang_gauges_count_every_phase_of_a_queue_and_drop_a_queue_left_empty() -> None:
    m = Metrics()

    def value(queue: str, phase: str) -> float | None:
        return m.registry.get_sample_value("phalanx_gangs", {"queue": queue, "phase": phase})

    m.set_gangs({("research", "Running"): 2, ("research", "Degraded"): 1, ("prod", "Pending"): 1})
    assert (value("research", "Running"), value("research", "Degraded")) == (2, 1)
    assert value("research", "Pending") == 0, "every phase of a queue with gangs has a series"
    m.set_gangs({("research", "Running"): 3})
    assert (value("research", "Running"), value("research", "Degraded")) == (3, 0)
    assert value("prod", "Pending") is None, "a queue with no gang left has no series"


def test_condition_keeps_its_transition_time_until_status_or_reason_changes() -> None:
    first = condition({}, "Scheduled", "False", "InsufficientCapacity", "needs 8", now=100)
    previous = {"conditions": [first]}
    same = condition(previous, "Scheduled", "False", "InsufficientCapacity", "needs 9", now=200)
    assert same["lastTransitionTime"] == first["lastTransitionTime"]
    moved = condition(previous, "Scheduled", "True", "Scheduled", "bound", now=300)
    assert moved["lastTransitionTime"] != first["lastTransitionTime"]


def test_evicted_false_says_why_in_its_message() -> None:
    """A gang bound whole gets `Evicted=False/Running` with a message: after an eviction it
    names that eviction's reason (and the transition is now); a later write keeps it; a gang
    never evicted says so."""
    evicted = {
        "conditions": [condition({}, "Evicted", "True", "Reclaimed", "reclaimed for q/b", 100.0)]
    }
    again = not_evicted(evicted, 200.0)
    assert (again["status"], again["reason"]) == ("False", "Running")
    assert again["message"] == "bound again after its eviction (Reclaimed)"
    assert again["lastTransitionTime"] == "1970-01-01T00:03:20Z"
    kept = not_evicted({"conditions": [again]}, 300.0)
    assert kept == again
    assert not_evicted({}, 300.0)["message"] == "not evicted since it was bound"


def test_config_defaults_make_the_documented_policy() -> None:
    cfg = build_config()
    policy = cfg.to_policy()
    assert [lv.name for lv in policy.topology_levels] == ["spine", "leaf"]
    assert policy.backfill_depth == 100
    assert cfg.scheduler_name == "phalanx"


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"bind_concurrency": 0}, "bind_concurrency"),
        ({"cycle_interval_s": -1}, "cycle_interval_s"),
        ({"topology_levels": (("leaf", "a/b"), ("leaf", "c"))}, "must be unique"),
        ({"topology_levels": (("Leaf!", "a/b"),)}, "DNS label"),
        ({"retry_period_s": 20}, "retry period < renew deadline < lease duration"),
        ({"member_failure": "ignore"}, "member_failure"),
        ({"colour": "blue"}, "colour"),
    ],
)
def test_bad_configuration_is_refused_naming_the_setting(
    values: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        build_config(**values)


def test_topology_flag_parses_and_rejects_malformed_parts() -> None:
    assert parse_topology("spine=a/s, leaf=a/l") == (("spine", "a/s"), ("leaf", "a/l"))
    with pytest.raises(ConfigError, match="NAME=LABEL_KEY"):
        parse_topology("spine")
