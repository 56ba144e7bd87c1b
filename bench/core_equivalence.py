"""Exactness check for core optimisations: the whole CycleResult of benchmark-like instances.

`record` builds the instances (pickled once, so that later runs read the very same snapshots even
if building them calls the core) and writes each cycle result's canonical text; `check` reruns
them on the current code and compares exactly (the text includes dict order, every message, ETA,
position and queue figure). Usage:

    .venv/bin/python bench/core_equivalence.py record /tmp/core_golden
    .venv/bin/python bench/core_equivalence.py check /tmp/core_golden [--fast]
    .venv/bin/python tools/build_core.py --exec .venv/bin/python bench/core_equivalence.py check …

The last line checks the mypyc-compiled core. Snapshots are pickled as plain data
(`core_bench.to_plain`: each dataclass as a dict of its fields and its class name) and rebuilt by
calling the constructors: compiled frozen dataclasses do not unpickle, and a plain pickle reads
the same under both builds.
"""

from __future__ import annotations

import argparse
import hashlib
import pickle
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "operator"))

import core_bench as cb  # noqa: E402
from phalanx.core import Policy, Snapshot, schedule  # noqa: E402

POLICIES = {
    "full": Policy(),
    "nobackfill": Policy(backfill=False),
    "noreclaim": Policy(reclaim=False, preemption=False),
    "depth20": Policy(backfill_depth=20),
    "nopreempt": Policy(preemption=False),
}

#: name → (builder args, policies, part of --fast)
INSTANCES: dict[str, tuple[tuple[object, ...], tuple[str, ...], bool]] = {
    "large_s1": ((4, 8, 32, 500, 1000, 0.70, 1, True), tuple(POLICIES), True),
    "large_s2": ((4, 8, 32, 500, 1000, 0.70, 2, True), ("full", "nopreempt"), True),
    "large_s3": ((4, 8, 32, 500, 1000, 0.70, 3, True), ("full",), False),
    "large_unbal_s1": ((4, 8, 32, 500, 1000, 0.70, 1, False), ("full", "noreclaim"), True),
    "large_unbal_s5": ((4, 8, 32, 500, 1000, 0.70, 5, False), ("full",), False),
    "medium_s4": ((1, 8, 32, 125, 1000, 0.70, 4, True), tuple(POLICIES), True),
    "medium_s7": ((1, 8, 32, 125, 400, 0.80, 7, True), ("full", "depth20"), True),
    "small_s8": ((1, 4, 32, 60, 400, 0.70, 8, False), ("full", "nopreempt"), True),
    "small_s9": ((1, 4, 32, 60, 400, 0.60, 9, True), ("full",), True),
    "pend4000_s4": ((4, 8, 32, 500, 4000, 0.70, 4, True), ("full",), False),
    "xlarge_s2": ((8, 16, 32, 2000, 5000, 0.70, 2, True), ("full",), False),
}


def canonical(result: object) -> str:
    return repr(result)


def snapshot(folder: Path, name: str, args: tuple[object, ...]) -> Snapshot:
    path = folder / f"{name}.snap.plain.pickle"
    old = folder / f"{name}.snap.pickle"  # golden folders recorded before the plain format
    if not path.exists() and old.exists():
        path.write_bytes(pickle.dumps(cb.to_plain(pickle.loads(old.read_bytes()))))
    if path.exists():
        snap = cb.from_plain(pickle.loads(path.read_bytes()))
        assert isinstance(snap, Snapshot)
        return snap
    spines, leaves, per_leaf, running, pending, occ, seed, steady = args
    snap = cb.build_snapshot(
        spines,
        leaves,
        per_leaf,
        running,
        pending,
        occ,
        seed=seed,
        steady=steady,  # type: ignore[arg-type]
    )
    path.write_bytes(pickle.dumps(cb.to_plain(snap)))
    return snap


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=("record", "check"))
    ap.add_argument("folder", type=Path)
    ap.add_argument("--fast", action="store_true", help="skip the slow instances")
    ap.add_argument("--only", default="", help="comma-separated instance names")
    a = ap.parse_args()
    a.folder.mkdir(parents=True, exist_ok=True)
    only = set(filter(None, a.only.split(",")))
    bad = 0
    for name, (args, policies, fast) in INSTANCES.items():
        if (a.fast and not fast) or (only and name not in only):
            continue
        snap = snapshot(a.folder, name, args)
        for pol in policies:
            c0 = time.process_time()
            text = canonical(schedule(snap, POLICIES[pol], cb.NOW))
            cpu = (time.process_time() - c0) * 1000
            digest = hashlib.sha256(text.encode()).hexdigest()[:16]
            gold = a.folder / f"{name}.{pol}.txt"
            if a.mode == "record":
                gold.write_text(text)
                status = "recorded"
            elif gold.read_text() == text:
                status = "same"
            else:
                bad += 1
                status = "DIFFERENT"
                (a.folder / f"{name}.{pol}.new.txt").write_text(text)
            print(f"{name:16} {pol:10} {digest} {cpu:8.1f} ms CPU  {status}", flush=True)
    if bad:
        sys.exit(f"{bad} results differ")


if __name__ == "__main__":
    main()
