"""Figures of the local control plane: cluster-up time per shape and control-plane memory.

Run with `make bench-devcluster`. Each shape is brought up and down RUNS times under its own
cluster name (so a running dev cluster is left alone); we report the median up time and, for each
shape, the median total resident memory of the control-plane processes (etcd, kube-apiserver,
controller manager, scheduler, kwok) once every node is Ready. The cold build time and disk use
are read from the cache (`build-times.json` written by the last cold build), since rebuilding
from an empty Go cache belongs to a fresh machine, not to a benchmark loop.
"""

from __future__ import annotations

import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from phalanx.devcluster import cluster as devcluster
from phalanx.devcluster.binaries import cache_root, ensure_binaries
from phalanx.devcluster.shapes import load_shape

RUNS = 3
SHAPES = ("small", "large")
OUT = Path(__file__).parent / "results" / "devcluster.json"


def rss_mib(pids: list[int]) -> float:
    total_kib = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total_kib += int(line.split()[1])
        except OSError:
            continue
    return total_kib / 1024


def du_mib(path: Path) -> float | None:
    if not path.exists():
        return None
    out = subprocess.run(["du", "-sm", str(path)], capture_output=True, text=True, check=False)
    return float(out.stdout.split()[0]) if out.returncode == 0 else None


def measure(shape_name: str) -> dict[str, float]:
    shape = load_shape(shape_name)
    name = f"phalanx-bench-{shape_name}"
    ups, mems = [], []
    for run in range(RUNS):
        started = time.monotonic()
        devcluster.up(shape, name=name, log=lambda _m: None, wait_s=600)
        ups.append(time.monotonic() - started)
        time.sleep(5)  # let the apiserver settle after the node burst before reading memory
        mems.append(rss_mib(devcluster.processes_under(devcluster.cluster_dir(name))))
        devcluster.down(name=name, log=lambda _m: None)
        print(
            f"{shape_name} run {run + 1}/{RUNS}: up {ups[-1]:.1f}s, "
            f"control plane {mems[-1]:.0f} MiB",
            file=sys.stderr,
        )
    return {
        f"up_s_{shape_name}_median": round(statistics.median(ups), 2),
        f"up_s_{shape_name}_runs": [round(u, 2) for u in ups],  # type: ignore[dict-item]
        f"control_plane_rss_mib_{shape_name}_median": round(statistics.median(mems), 1),
    }


def main() -> None:
    bins = ensure_binaries()
    root = cache_root()
    times_file = root / "build-times.json"
    build = json.loads(times_file.read_text()) if times_file.exists() else {}
    result: dict[str, object] = {
        "machine": f"{platform.machine()}, {len(__import__('os').sched_getaffinity(0))} cores",
        "runs": RUNS,
        "cold_build_s": build,
        "cold_build_s_total": round(sum(build.values()), 1) if build else None,
        "disk_mib": {
            "binaries": du_mib(bins.bin_dir),
            "go_build_cache": du_mib(Path.home() / ".cache" / "go-build"),
            "go_module_cache": du_mib(Path.home() / "go" / "pkg" / "mod"),
        },
    }
    for shape in SHAPES:
        result.update(measure(shape))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
