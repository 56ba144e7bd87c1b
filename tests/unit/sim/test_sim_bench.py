"""`bench/sim_bench.py`: finished replays are kept (`--reuse`) only when they match what would
be run now (known by the trace's name and content, wherever the file was), a results file can be
merged into another, and a bad trace is one line from the worker process that read it."""

from __future__ import annotations

import importlib
import json
import multiprocessing
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from phalanx.core import Policy
from phalanx.sim.policies import POLICIES
from phalanx.sim.report import policy_config
from phalanx.sim.traces import TraceFormatError

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


def test_a_field_added_since_a_replay_counts_as_its_core_default(
    bench: ModuleType, tmp_path: Path
) -> None:
    """A replay recorded before a `Policy` field existed is the same configuration if the
    field's value now is the core default (the knob was added off), and not otherwise."""
    args = bench.argparse.Namespace(quick=40, cycle_interval=60.0)
    trace = next(t for label, t, _, _ in bench.runs() if label == "itp-cluster05")
    config = policy_config(POLICIES["phalanx"])
    assert config["peers_below_leaves"] == Policy().peers_below_leaves == 0.0
    older = {k: v for k, v in config.items() if k != "peers_below_leaves"}
    good: dict[str, Any] = {"trace": trace, "shape": "small", "limit_jobs": 40,
                            "cycle_interval_s": 60.0, "policy_config": older}  # fmt: skip
    assert bench._matches(good, "itp-cluster05", "phalanx", args)
    # The shipped default differs from the core default here: absent is not the same.
    assert POLICIES["phalanx"].core.reserve_after_limits != Policy().reserve_after_limits
    no_bound = {k: v for k, v in config.items() if k != "reserve_after_limits"}
    assert not bench._matches(dict(good, policy_config=no_bound), "itp-cluster05", "phalanx", args)
    # A field the code no longer has is a different configuration.
    gone = dict(config, retired_knob=1.0)
    assert not bench._matches(dict(good, policy_config=gone), "itp-cluster05", "phalanx", args)


def test_a_recorded_replay_is_known_by_its_trace_name_and_content_not_its_path(
    bench: ModuleType, tmp_path: Path
) -> None:
    args = bench.argparse.Namespace(quick=40, cycle_interval=60.0)
    trace = next(t for label, t, _, _ in bench.runs() if label == "itp-cluster05")
    good: dict[str, Any] = {
        "shape": "small",
        "limit_jobs": 40,
        "cycle_interval_s": 60.0,
        "policy_config": policy_config(POLICIES["pod"]),
    }
    # Recorded from a copy elsewhere (before the traces moved into bench/traces/), no hash.
    moved = dict(good, trace="itp:/elsewhere/data/traces/msr-itp-2021/cluster05.csv")
    assert bench._matches(moved, "itp-cluster05", "pod", args)
    # Recorded as this benchmark records now: relative path and the file's SHA-256.
    now = dict(good, trace=bench.portable_trace(trace), trace_sha256=bench.trace_sha256(trace))
    assert now["trace"] == "itp:bench/traces/msr-itp-2021/cluster05.csv"
    assert bench._matches(now, "itp-cluster05", "pod", args)
    assert not bench._matches(dict(now, trace_sha256="0" * 64), "itp-cluster05", "pod", args)
    other = dict(good, trace="itp:/elsewhere/data/traces/msr-itp-2021/cluster04.csv")
    assert not bench._matches(other, "itp-cluster05", "pod", args)


def test_a_replay_of_a_missing_trace_fails_in_its_worker_with_the_one_line_message(
    bench: ModuleType, tmp_path: Path
) -> None:
    # Through a spawned process pool, as the benchmark runs replays: the error must cross the
    # process boundary intact (not as BrokenProcessPool).
    missing = tmp_path / "cluster05.csv"
    bad = tmp_path / "bad.csv"
    bad.write_text("job_id,submission_time,duration,num_gpu\na,1,1,1\nb,2,x,1\n")
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=ctx) as pool:
        gone = pool.submit(bench._one, "t", f"itp:{missing}", "small", "pod", 5, 60.0)
        malformed = pool.submit(bench._one, "t", f"itp:{bad}", "small", "pod", 5, 60.0)
        with pytest.raises(TraceFormatError) as err:
            gone.result(timeout=120)
        assert str(err.value) == (
            f"{missing}: cannot open: No such file or directory; check the path, and that the "
            "file is a trace of the kind given (KIND:PATH)"
        )
        # A malformed row is not fatal (issue 19): reported by its line, skipped, counted.
        summary = malformed.result(timeout=120)
    assert summary["skipped_rows"].get("malformed") == 1, summary["skipped_rows"]


def test_the_benchmark_says_one_line_for_a_missing_trace_and_exits_1(
    bench: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    monkeypatch.setattr(bench, "TRACES", tmp_path / "nowhere")
    assert bench.main(_args(bench, tmp_path)) == 1
    err = capsys.readouterr().err.strip()
    missing = tmp_path / "nowhere" / "msr-itp-2021" / "cluster05.csv"
    assert err == (
        f"sim_bench: itp-cluster05 pod: {missing}: cannot open: No such file or directory; "
        "check the path, and that the file is a trace of the kind given (KIND:PATH)"
    )


def test_a_replay_an_older_engine_would_replay_differently_is_not_reused(
    bench: ModuleType,
) -> None:
    """Revision 2 of the engine requeues an evicted gang at the next cycle: a replay recorded
    before it (no `engine_revision`) is kept only if it evicted nothing; one recorded at the
    current revision is kept whatever it evicted."""
    from phalanx.sim.engine import ENGINE_REVISION

    args = bench.argparse.Namespace(quick=40, cycle_interval=60.0)
    trace = next(t for label, t, _, _ in bench.runs() if label == "itp-cluster05")
    base: dict[str, Any] = {"trace": trace, "shape": "small", "limit_jobs": 40,
                            "cycle_interval_s": 60.0,
                            "policy_config": policy_config(POLICIES["phalanx"])}  # fmt: skip
    assert ENGINE_REVISION == 2
    assert bench._matches(dict(base, evictions={}), "itp-cluster05", "phalanx", args)
    assert bench._matches(dict(base, evictions={"Reclaimed": 0}), "itp-cluster05", "phalanx", args)
    evicted = dict(base, evictions={"Reclaimed": 3})
    assert not bench._matches(evicted, "itp-cluster05", "phalanx", args)
    assert bench._matches(dict(evicted, engine_revision=2), "itp-cluster05", "phalanx", args)


def test_a_setting_replayed_by_an_earlier_engine_is_marked_and_not_compared(
    bench: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mechanisms table: a Philly setting recorded before revision 2 that evicted is shown
    as the earlier engine measured it, marked, with no comparison against today's `volcano`;
    one that evicted nothing is compared as before."""
    summary = {"wait_mean_s": 3600.0, "wait_p95_s": 7200.0, "largest_gang_wait_max_s": 36000.0,
               "gpu_utilization": 0.7, "queue_below_share_worst_own": 0.2}  # fmt: skip
    volcano = dict(summary, wait_mean_s=7200.0, evictions={}, engine_revision=2)
    rows = [
        {"label": "philly", "name": "old", "policy": "phalanx", "settings": {},
         "summary": dict(summary, evictions={"Reclaimed": 5})},
        {"label": "philly", "name": "calm", "policy": "phalanx", "settings": {},
         "summary": dict(summary, evictions={})},
    ]  # fmt: skip
    monkeypatch.setattr(bench, "settings_rows", lambda: rows)
    text = "\n".join(bench.mechanisms_markdown({"results": {"philly": {"volcano": volcano}}}))
    old = next(line for line in text.splitlines() if "| old" in line)
    calm = next(line for line in text.splitlines() if "| calm" in line)
    assert "old (earlier engine)" in old and old.endswith("| – |"), old
    assert "(earlier engine)" not in calm and "-50%" in calm, calm
    assert "1 rows marked *earlier engine*" in text
