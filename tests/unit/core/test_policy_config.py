"""The order and reservation knobs of issue 19 at the operator's edge: flags, env, refusals."""

from __future__ import annotations

import math

import pytest
from typer.testing import CliRunner

from phalanx import cli
from phalanx.config import ConfigError, OperatorConfig, build_config
from phalanx.k8s import operator


def test_defaults_are_the_shipped_policy() -> None:
    """The operator's defaults and the simulator's `phalanx` are one `Policy`."""
    from dataclasses import replace

    from phalanx.sim.policies import POLICIES

    policy = OperatorConfig().to_policy()
    assert (policy.age_weight, policy.size_weight, policy.work_weight) == (1.0, 0.0, 1.0)
    assert (policy.start_starving_leaves, policy.charge_promised) == (0.5, True)
    assert policy.reserve_least_idle
    assert policy.age_max == 7 * 24 * 3600.0
    assert (policy.reserve_after_limits, policy.reserve_after_s) == (2.0, 24 * 3600.0)
    assert (policy.reserve_after_peers, policy.peers_by_slowdown) == (1.0, True)
    assert policy.peer_max_s == 7 * 24 * 3600.0
    assert not policy.evict_before_walk
    assert POLICIES["phalanx"].core == replace(policy, estimate_unreserved=False)


@pytest.mark.parametrize(
    ("field", "flag"),
    [
        ("priority_weight_age", "--priority-weight-age"),
        ("priority_weight_size", "--priority-weight-size"),
        ("priority_weight_work", "--priority-weight-work"),
        ("priority_max_age_s", "--priority-max-age"),
        ("reserve_after_limits", "--reserve-after-limits"),
        ("reserve_after_s", "--reserve-after"),
        ("reserve_after_peers", "--reserve-after-peers"),
        ("reserve_after_peers_window_s", "--reserve-after-peers-window"),
        ("reserve_after_peers_max_s", "--reserve-after-peers-max"),
        ("start_starving_leaves", "--start-starving-leaves"),
    ],
)
@pytest.mark.parametrize("bad", [-1.0, math.nan, math.inf])
def test_bad_weights_and_bounds_are_refused_naming_the_flag(
    field: str, flag: str, bad: float
) -> None:
    with pytest.raises(ConfigError) as error:
        build_config(**{field: bad})
    message = str(error.value)
    assert message.startswith(f"invalid configuration: {flag}: ")
    assert "\n" not in message


def test_negative_per_queue_depth_is_refused() -> None:
    with pytest.raises(ConfigError, match="--backfill-depth-per-queue"):
        build_config(backfill_depth_per_queue=-1)


def _run(monkeypatch: pytest.MonkeyPatch, args: list[str], env: dict[str, str]) -> object:
    seen: list[OperatorConfig] = []

    async def fake_run(cfg: OperatorConfig, kubeconfig: str | None = None) -> None:
        seen.append(cfg)

    monkeypatch.setattr(operator, "run_operator", fake_run)
    result = CliRunner().invoke(cli.app, ["run", *args], env=env)
    return result, seen


def test_flags_and_env_reach_the_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    result, seen = _run(
        monkeypatch,
        [
            "--priority-weight-work",
            "2.5",
            "--backfill-depth-per-queue",
            "3",
            "--reserve-after-peers-window",
            "7200",
        ],
        {
            "PHALANX_RESERVE_AFTER": "3600",
            "PHALANX_RESERVE_UNDER_SHARE": "false",
            "PHALANX_START_STARVING_LEAVES": "2",
            "PHALANX_RESERVE_LEAST_IDLE": "false",
            "PHALANX_PRIORITY_MAX_AGE": "3600",
            "PHALANX_RESERVE_AFTER_PEERS": "1.5",
            "PHALANX_RESERVE_AFTER_PEERS_BY": "wait",
            "PHALANX_RESERVE_AFTER_PEERS_MAX": "3600",
        },
    )
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    (cfg,) = seen  # type: ignore[misc]
    policy = cfg.to_policy()
    assert (policy.work_weight, policy.backfill_depth_per_queue) == (2.5, 3)
    assert (policy.reserve_after_s, policy.reserve_under_share) == (3600.0, False)
    assert policy.start_starving_leaves == 2.0
    assert not policy.reserve_least_idle
    assert policy.age_max == 3600.0
    assert (policy.reserve_after_peers, policy.peer_window_s) == (1.5, 7200.0)
    assert not policy.peers_by_slowdown
    assert policy.peer_max_s == 3600.0


def test_an_unknown_peer_measure_is_refused_naming_the_flag(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`--reserve-after-peers-by` takes `slowdown` or `wait`: Typer refuses anything else
    naming the option and its choices; `build_config` refuses it naming the flag."""
    result, seen = _run(monkeypatch, ["--reserve-after-peers-by", "mean"], {})
    assert result.exit_code != 0  # type: ignore[attr-defined]
    assert seen == []
    assert "--reserve-after-peers-by" in result.output  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match=r"^invalid configuration: --reserve-after-peers-by: "):
        build_config(reserve_after_peers_by="mean")


@pytest.mark.parametrize("value", ["abc", "nan", "-2"])
def test_a_bad_weight_on_the_command_line_is_one_line_naming_the_flag(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    """Not a number: Typer refuses it naming the option. NaN or negative: `build_config`
    raises `ConfigError` naming the flag, which `phalanx.cli.main` prints as one line."""
    result, seen = _run(monkeypatch, ["--priority-weight-age", value], {})
    assert result.exit_code != 0  # type: ignore[attr-defined]
    assert seen == []
    exc = result.exception  # type: ignore[attr-defined]
    if isinstance(exc, ConfigError):
        assert str(exc).startswith("invalid configuration: --priority-weight-age: ")
    else:
        assert "--priority-weight-age" in result.output  # type: ignore[attr-defined]
