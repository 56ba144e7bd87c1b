"""`bench/sim_bench.py`: finished replays are kept (`--reuse`) only when they match what would
be run now, and a results file can be merged into another."""

from __future__ import annotations

import importlib
import json
import sys
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from phalanx.sim.policies import POLICIES
from phalanx.sim.report import policy_config

BENCH = Path(__file__).resolve().parents[3] / "bench" / "sim_bench.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    # On sys.path (not loaded from its file) so the replays' spawned workers can import it.
    if str(BENCH.parent) not in sys.path:
        sys.path.insert(0, str(BENCH.parent))
    return importlib.import_module("sim_bench")


def _args(bench: ModuleType, tmp_path: Path, *extra: str) -> list[str]:
    return [
        *("--only", "itp-cluster05", "--policy", "pod", "--quick", "40", "--workers", "1"),
        *("--json", str(tmp_path / "sim.json"), "--md", str(tmp_path / "SIM.md")),
        *extra,
    ]


def test_policy_config_tells_the_phalanx_depth_apart() -> None:
    phalanx = POLICIES["phalanx-conservative"]
    assert phalanx.core is not None
    deeper = replace(phalanx, core=replace(phalanx.core, backfill_depth=100))
    assert policy_config(phalanx)["backfill_depth"] == 1
    assert policy_config(phalanx) != policy_config(deeper)
    assert policy_config(POLICIES["pod"]) == {"queues": False, "usage_decay": False}


def test_reuse_keeps_a_matching_replay_and_reruns_nothing(
    bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert bench.main(_args(bench, tmp_path)) == 0
    first = json.loads((tmp_path / "sim.json").read_text())
    summary = first["results"]["itp-cluster05"]["pod"]
    assert summary["limit_jobs"] == 40 and "code" in summary
    capsys.readouterr()
    assert bench.main(_args(bench, tmp_path, "--reuse")) == 0
    assert "reusing 1 finished replays; 0 to run" in capsys.readouterr().out
    again = json.loads((tmp_path / "sim.json").read_text())
    assert again["results"]["itp-cluster05"]["pod"] == summary
    assert "itp-cluster05 on `small`" in (tmp_path / "SIM.md").read_text()


def test_a_replay_that_differs_is_not_reused(bench: ModuleType, tmp_path: Path) -> None:
    args = bench.argparse.Namespace(quick=40, cycle_interval=60.0)
    trace = next(t for label, t, _, _ in bench.runs() if label == "itp-cluster05")
    good: dict[str, Any] = {
        "trace": trace,
        "shape": "small",
        "limit_jobs": 40,
        "cycle_interval_s": 60.0,
        "policy_config": policy_config(POLICIES["phalanx"]),
    }
    assert bench._matches(good, "itp-cluster05", "phalanx", args)
    stale = dict(good, policy_config=dict(good["policy_config"], backfill_depth=7))
    assert not bench._matches(stale, "itp-cluster05", "phalanx", args)
    assert not bench._matches(dict(good, limit_jobs=None), "itp-cluster05", "phalanx", args)
    assert not bench._matches({k: v for k, v in good.items() if k != "policy_config"},
                              "itp-cluster05", "phalanx", args)  # fmt: skip
    assert not bench._matches(good, "itp-cluster04", "phalanx", args)
