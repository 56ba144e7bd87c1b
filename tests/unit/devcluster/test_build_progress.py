"""Progress of the long control-plane builds, without building anything: the line format, the
package count read from a step's log, and the reporter thread around a running command."""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

from phalanx.devcluster.binaries import (
    _count_deps,
    _Progress,
    _run,
    count_packages,
    format_elapsed,
    format_progress,
)

GO_BUILD_V = """\
$ go build -v -trimpath -o out/ k8s.io/kubernetes/cmd/kube-apiserver
go: downloading k8s.io/api v0.36.3
internal/goarch
runtime
k8s.io/apimachinery/pkg/util/sets
github.com/google/go-cmp/cmp
gopkg.in/evanphx/json-patch.v4
# k8s.io/kubernetes/pkg/broken
pkg/broken/x.go:3:2: undefined: y
"""


def test_elapsed_and_progress_lines() -> None:
    assert [format_elapsed(s) for s in (0, 42.9, 185, 3725)] == ["0s", "42s", "3m05s", "1h02m"]
    assert format_progress("kubernetes", "go build", 185, 412, 1630) == (
        "kubernetes: go build, 412/1630 packages (25%), 3m05s elapsed"
    )
    # Without a total (go install, or `go list` not done yet): a count; without a count: time.
    assert format_progress("helm", "go install", 61, 87) == (
        "helm: go install, 87 packages compiled, 1m01s elapsed"
    )
    assert format_progress("etcd", "go mod tidy (downloading modules)", 9) == (
        "etcd: go mod tidy (downloading modules), 9s elapsed"
    )
    # Cached packages are not printed, so the count may fall short: never 100% before the end,
    # and never more than the total.
    assert format_progress("k", "go build", 1, 1630, 1630).endswith(
        "1630/1630 packages (99%), 1s elapsed"
    )
    assert "1630/1630" in format_progress("k", "go build", 1, 1700, 1630)


def test_only_package_lines_of_the_go_build_output_are_counted() -> None:
    assert count_packages(GO_BUILD_V) == 5  # not the command, downloads, or an error's lines
    assert count_packages("") == 0


def test_the_reporter_counts_this_steps_packages_while_the_command_runs(tmp_path: Path) -> None:
    log_file = tmp_path / "kubernetes.log"
    log_file.write_text("old/package/of/an/earlier/step\n")
    lines: list[str] = []
    script = (
        "import time\nfor p in ('a/b', 'c', 'd/e/f'):\n    print(p, flush=True)\ntime.sleep(1.0)\n"
    )
    with _Progress(lines.append, "kubernetes", "go build", log_file, count=True, every=0.1) as pr:
        pr.total = 6
        _run([sys.executable, "-c", script], tmp_path, log_file, progress=pr)
    assert lines, "no progress line while the command ran"
    assert lines[-1].startswith("kubernetes: go build, 3/6 packages (50%), ")
    count = len(lines)
    time.sleep(0.3)
    assert len(lines) == count, "the reporter goes on after its step"


def test_the_total_comes_from_go_list_deps(tmp_path: Path) -> None:
    go = shutil.which("go")
    assert go is not None, "the README's requirements include Go"
    (tmp_path / "go.mod").write_text("module example.local/m\n\ngo 1.26\n")
    progress = _Progress(print, "m", "go build", tmp_path / "log", count=True, every=60)
    _count_deps(go, tmp_path, ["errors"], progress)
    # `errors` and the runtime packages under it: a few dozen, it itself among them.
    assert progress.total is not None and 2 <= progress.total <= 100
    broken = _Progress(print, "m", "go build", tmp_path / "log", count=True, every=60)
    _count_deps(go, tmp_path, ["example.local/does-not-exist"], broken)
    assert broken.total is None  # best effort: no total, the count alone
