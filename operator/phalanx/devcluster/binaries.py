"""Build the control-plane binaries from Go modules, once, into a cache outside the repository.

Why this way: there is no Docker engine and no release download here, only the Go module proxy.
`go install k8s.io/kubernetes/cmd/...@vX` is refused because the kubernetes go.mod replaces every
staging module with a local path, so we write a throwaway wrapper module that requires
k8s.io/kubernetes and points each staging module at its published version instead. etcd's server
module is built the same way; kwok, kwokctl and helm install cleanly with `go install`.

Each binary is built only when missing, into a temporary name that is renamed at the end, so an
interrupted build never leaves a half-written binary that a later run would trust.

A cold Kubernetes build takes minutes, so every long step reports progress every
`PROGRESS_EVERY_S` seconds: which component and step, the time elapsed, and for the builds the
packages compiled so far. `go build -v` / `go install -v` print each package as they compile it
into the step's log, which the reporter counts; for the wrapper-module builds, `go list -deps`
(run beside the build) gives the total, hence a percentage. Counting lines of the log keeps the
build itself exactly as it was (no pipes to drain, nothing to parse on the build's path).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from phalanx.devcluster import versions
from phalanx.devcluster.errors import DevClusterError
from phalanx.devcluster.flags_only import KUBERAY, FlagsOnly
from phalanx.devcluster.self_certified import TRAINER, TRAINING_OPERATOR, SelfCertified

KUBE_COMMANDS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")
Log = Callable[[str], None]


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def cache_root() -> Path:
    """Where binaries and cluster state live; `PHALANX_CACHE` overrides `~/.cache/phalanx`."""
    override = os.environ.get("PHALANX_CACHE")
    base = Path(override) if override else Path.home() / ".cache" / "phalanx"
    return base / "testenv" / versions.cache_key()


@dataclass(frozen=True)
class Binaries:
    """Paths of every binary the local cluster needs."""

    bin_dir: Path

    def path(self, name: str) -> Path:
        return self.bin_dir / name

    @property
    def all_names(self) -> tuple[str, ...]:
        return (*KUBE_COMMANDS, "etcd", "kwok", "kwokctl", "helm")

    def missing(self) -> list[str]:
        return [n for n in self.all_names if not os.access(self.path(n), os.X_OK)]


def require_go() -> str:
    """Return the `go` executable or say exactly what to do."""
    go = shutil.which("go")
    if go is None:
        raise DevClusterError(
            "no Go toolchain on PATH: install Go >= 1.26 (e.g. from Debian or go.dev) "
            "and run the command again"
        )
    return go


def go_env() -> dict[str, str]:
    env = dict(os.environ)
    env["CGO_ENABLED"] = "0"
    env.setdefault("GOFLAGS", "-mod=mod")
    env["GOTOOLCHAIN"] = "local"
    return env


PROGRESS_EVERY_S = 15.0
"""Seconds between two progress lines of a long build step."""

_PACKAGE_LINE = re.compile(r"^[\w.~+-]+(?:/[\w.~+-]+)*$")
"""A line of `go build -v` output: an import path alone (errors and `go: …` lines have spaces)."""


def format_elapsed(seconds: float) -> str:
    """'42s', '3m05s', '1h02m'."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def format_progress(
    component: str, step: str, elapsed: float, done: int | None = None, total: int | None = None
) -> str:
    """One progress line, e.g. 'kubernetes: go build, 412/1630 packages (25%), 3m05s elapsed'.

    The percentage stays below 100 until the step ends: packages found in Go's build cache are
    not compiled, so not printed, and the count can fall short of the total.
    """
    parts = [f"{component}: {step}"]
    if done is not None and total:
        parts.append(f"{min(done, total)}/{total} packages ({min(99, 100 * done // total)}%)")
    elif done is not None:
        parts.append(f"{done} packages compiled")
    parts.append(f"{format_elapsed(elapsed)} elapsed")
    return ", ".join(parts)


def count_packages(output: str) -> int:
    """Packages compiled so far, from the `go build -v` output in a step's log."""
    return sum(1 for line in output.splitlines() if _PACKAGE_LINE.match(line))


class _Progress:
    """Reports a running step every `every` seconds from a thread, until stopped.

    `total` may be set later (by the thread running `go list -deps`); reading the log from the
    offset where the step began counts only this step's packages.
    """

    def __init__(
        self, log: Log, component: str, step: str, log_file: Path, *, count: bool, every: float
    ) -> None:
        self.log, self.component, self.step = log, component, step
        self.log_file, self.count, self.every = log_file, count, every
        self.total: int | None = None
        self.offset = log_file.stat().st_size if log_file.exists() else 0
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="build-progress", daemon=True)

    def __enter__(self) -> _Progress:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def line(self) -> str:
        done = None
        if self.count:
            try:
                with self.log_file.open(encoding="utf-8", errors="replace") as f:
                    f.seek(self.offset)
                    done = count_packages(f.read())
            except OSError:
                done = None
        return format_progress(
            self.component, self.step, time.monotonic() - self.started, done, self.total
        )

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            self.log(self.line())


def _count_deps(go: str, work: Path, pkgs: list[str], progress: _Progress) -> None:
    """Set `progress.total` to the packages `go build` of `pkgs` compiles (best effort).

    Runs beside the build in the same module, so it must never write go.mod or go.sum:
    `-mod=readonly` (after `go mod tidy` nothing is missing; if something were, no total).
    """
    env = go_env()
    env["GOFLAGS"] = "-mod=readonly"
    try:
        out = subprocess.run(
            [go, "list", "-deps", *pkgs],
            cwd=work,
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return
    if out.returncode == 0:
        progress.total = sum(1 for line in out.stdout.splitlines() if line.strip())


def _run(
    cmd: list[str],
    cwd: Path,
    log_file: Path,
    env: dict[str, str] | None = None,
    progress: _Progress | None = None,
) -> None:
    with log_file.open("a") as log:
        log.write(f"$ {' '.join(cmd)}\n")
        log.flush()
        if progress is not None:
            progress.offset = log_file.stat().st_size
        result = subprocess.run(
            cmd, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, env=env or go_env(), check=False
        )
    if result.returncode != 0:
        tail = "\n".join(log_file.read_text().splitlines()[-15:])
        raise DevClusterError(
            f"`{' '.join(cmd[:3])} …` failed (exit {result.returncode}); "
            f"full log: {log_file}\n{tail}"
        )


def _step(log: Log, component: str, step: str, log_file: Path, count: bool) -> _Progress:
    """Progress lines for one step of a build (see the module docstring)."""
    return _Progress(log, component, step, log_file, count=count, every=PROGRESS_EVERY_S)


def _staging_modules(go: str, work: Path, log_file: Path) -> list[str]:
    """Read the staging modules from the go.mod that the proxy serves for k8s.io/kubernetes."""
    out = subprocess.run(
        [go, "mod", "download", "-json", f"k8s.io/kubernetes@{versions.KUBERNETES}"],
        cwd=work,
        capture_output=True,
        text=True,
        env=go_env(),
        check=False,
    )
    if out.returncode != 0:
        log_file.write_text(out.stdout + out.stderr)
        raise DevClusterError(
            f"the Go module proxy did not serve k8s.io/kubernetes@{versions.KUBERNETES}: "
            f"{(out.stdout + out.stderr).strip()[-300:]}"
        )
    gomod = Path(json.loads(out.stdout)["GoMod"]).read_text()
    return sorted(set(re.findall(r"^\s*(k8s\.io/[\w.-]+)\s+=>\s+\./staging/", gomod, re.M)))


def _write_kube_wrapper(go: str, work: Path, log_file: Path) -> None:
    staging = _staging_modules(go, work, log_file)
    sv = versions.staging_version()
    lines = [
        "module phalanx.local/kubebuild",
        "",
        "go 1.26.0",
        "",
        f"require k8s.io/kubernetes {versions.KUBERNETES}",
        "",
        *[f"replace {m} => {m} {sv}" for m in staging],
        "",
    ]
    (work / "go.mod").write_text("\n".join(lines))
    (work / "tools.go").write_text(
        "//go:build tools\n\npackage tools\n\n"
        + "".join(f'import _ "k8s.io/kubernetes/cmd/{c}"\n' for c in KUBE_COMMANDS)
    )


def _kube_ldflags() -> str:
    major, minor = versions.KUBERNETES.lstrip("v").split(".")[:2]
    pkg = "k8s.io/component-base/version"
    return (
        f"-s -w -X {pkg}.gitVersion={versions.KUBERNETES} -X {pkg}.gitMajor={major} "
        f"-X {pkg}.gitMinor={minor} -X {pkg}.gitTreeState=clean"
    )


def _record_build_time(root: Path, component: str, seconds: float) -> None:
    """Keep how long each cold build took, for bench/devcluster_bench.py to report."""
    f = root / "build-times.json"
    times = json.loads(f.read_text()) if f.exists() else {}
    times[component] = round(seconds, 1)
    f.write_text(json.dumps(times, indent=1))


def _build_into(bin_dir: Path, names: list[str], build: Callable[[Path], None]) -> None:
    """Build into a temporary folder, then rename each binary into place."""
    tmp = bin_dir / ".partial"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    build(tmp)
    for name in names:
        (tmp / name).replace(bin_dir / name)
    shutil.rmtree(tmp, ignore_errors=True)


def ensure_binaries(log: Log = _stderr) -> Binaries:
    """Build whatever is missing and return the paths; quick no-op on a warm cache."""
    root = cache_root()
    bins = Binaries(root / "bin")
    missing = bins.missing()
    if not missing:
        return bins
    go = require_go()
    bins.bin_dir.mkdir(parents=True, exist_ok=True)
    logs = root / "build-logs"
    logs.mkdir(parents=True, exist_ok=True)
    src = root / "src"

    if any(n in missing for n in KUBE_COMMANDS):
        work = src / "kubernetes"
        work.mkdir(parents=True, exist_ok=True)
        log_file = logs / "kubernetes.log"
        started = time.monotonic()
        log(
            f"building Kubernetes {versions.KUBERNETES} ({', '.join(KUBE_COMMANDS)}) from Go "
            f"modules; a cold build took 4 minutes on 2 idle cores, longer when they are busy "
            f"(log: {log_file})"
        )
        _write_kube_wrapper(go, work, log_file)

        def build_kube(out: Path) -> None:
            with _step(log, "kubernetes", "go mod tidy (downloading modules)", log_file, False):
                _run([go, "mod", "tidy", "-e"], work, log_file)
            pkgs = [f"k8s.io/kubernetes/cmd/{c}" for c in KUBE_COMMANDS]
            with _step(log, "kubernetes", "go build", log_file, True) as progress:
                counter = threading.Thread(
                    target=_count_deps, args=(go, work, pkgs, progress), daemon=True
                )
                counter.start()
                _run(
                    [
                        go,
                        "build",
                        "-v",
                        "-trimpath",
                        "-ldflags",
                        _kube_ldflags(),
                        "-o",
                        str(out) + "/",
                        *pkgs,
                    ],
                    work,
                    log_file,
                    progress=progress,
                )

        _build_into(bins.bin_dir, list(KUBE_COMMANDS), build_kube)
        _record_build_time(root, "kubernetes", time.monotonic() - started)
        log(f"built Kubernetes in {time.monotonic() - started:.0f}s")

    if "etcd" in missing:
        work = src / "etcd"
        work.mkdir(parents=True, exist_ok=True)
        log_file = logs / "etcd.log"
        started = time.monotonic()
        log(f"building etcd {versions.ETCD} (log: {log_file})")
        (work / "go.mod").write_text(
            f"module phalanx.local/etcdbuild\n\ngo 1.26.0\n\n"
            f"require go.etcd.io/etcd/server/v3 {versions.ETCD}\n"
        )
        (work / "tools.go").write_text(
            '//go:build tools\n\npackage tools\n\nimport _ "go.etcd.io/etcd/server/v3"\n'
        )

        def build_etcd(out: Path) -> None:
            with _step(log, "etcd", "go mod tidy (downloading modules)", log_file, False):
                _run([go, "mod", "tidy", "-e"], work, log_file)
            pkgs = ["go.etcd.io/etcd/server/v3"]
            with _step(log, "etcd", "go build", log_file, True) as progress:
                counter = threading.Thread(
                    target=_count_deps, args=(go, work, pkgs, progress), daemon=True
                )
                counter.start()
                cmd = [go, "build", "-v", "-trimpath", "-ldflags", "-s -w", "-o", str(out / "etcd")]
                _run([*cmd, *pkgs], work, log_file, progress=progress)

        _build_into(bins.bin_dir, ["etcd"], build_etcd)
        _record_build_time(root, "etcd", time.monotonic() - started)
        log(f"built etcd in {time.monotonic() - started:.0f}s")

    installs = {
        "kwok": f"sigs.k8s.io/kwok/cmd/kwok@{versions.KWOK}",
        "kwokctl": f"sigs.k8s.io/kwok/cmd/kwokctl@{versions.KWOK}",
        "helm": f"helm.sh/helm/v3/cmd/helm@{versions.HELM}",
    }
    for name, module in installs.items():
        if name not in missing:
            continue
        log_file = logs / f"{name}.log"
        started = time.monotonic()
        log(f"building {name} ({module})")

        def install(
            out: Path, module: str = module, log_file: Path = log_file, name: str = name
        ) -> None:
            env = go_env()
            env["GOBIN"] = str(out)
            env["GOFLAGS"] = ""
            cmd = [go, "install", "-v", "-trimpath", "-ldflags", "-s -w", module]
            with _step(log, name, "go install", log_file, True) as progress:
                _run(cmd, root, log_file, env, progress=progress)

        _build_into(bins.bin_dir, [name], install)
        _record_build_time(root, name, time.monotonic() - started)
        log(f"built {name} in {time.monotonic() - started:.0f}s")
    return bins


@dataclass(frozen=True)
class WorkloadController:
    """A workload controller of the integration tier, built from its Go module.

    `go install <package>@<version>` does not work against our proxy: before building, it reads
    the module's version list for deprecation notices, and the proxy refuses that list
    (`reading https://proxy.golang.org/sigs.k8s.io/jobset/@v/list: 403 Forbidden`). So, as for
    etcd, a wrapper module requires the exact version and `go build`s its main package: the
    same build list as `go install` would use (one requirement, no replace directives).
    """

    name: str
    module: str
    version: str
    package: str
    """The main package inside the module."""
    crds: str = "config/**/crd/bases/*.yaml"
    """Where its CRD manifests are in the module (a glob)."""
    started_by: SelfCertified | FlagsOnly | None = None
    """How it starts when not by a kubebuilder Configuration file with its webhooks registered
    with the API server (None): by its flags, after what its own certificate rotator waits for
    (the Kubeflow ones: `self_certified.py`), or by its flags alone, serving no webhooks
    (KubeRay: `flags_only.py`)."""

    @property
    def admission(self) -> bool:
        """Whether its webhooks are registered with the API server."""
        return self.started_by is None

    @property
    def binary(self) -> str:
        """File name in the cache's bin folder; carries the version (see versions.cache_key)."""
        return f"{self.name}-controller-{self.version}"


WORKLOAD_CONTROLLERS = (
    WorkloadController("jobset", "sigs.k8s.io/jobset", versions.JOBSET, "sigs.k8s.io/jobset"),
    WorkloadController("lws", "sigs.k8s.io/lws", versions.LWS, "sigs.k8s.io/lws/cmd"),
    # After JobSet's: it needs the JobSet CRD to start.
    WorkloadController(
        "trainer",
        "github.com/kubeflow/trainer/v2",
        versions.TRAINER,
        "github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager",
        crds="manifests/base/crds/trainer.kubeflow.org_*.yaml",
        started_by=TRAINER,
    ),
    WorkloadController(
        "training-operator",
        "github.com/kubeflow/training-operator",
        versions.TRAINING_OPERATOR,
        "github.com/kubeflow/training-operator/cmd/training-operator.v1",
        crds="manifests/base/crds/kubeflow.org_*.yaml",
        started_by=TRAINING_OPERATOR,
    ),
    WorkloadController(
        "kuberay",
        "github.com/ray-project/kuberay/ray-operator",
        versions.KUBERAY,
        "github.com/ray-project/kuberay/ray-operator",
        crds="config/crd/bases/ray.io_*.yaml",
        started_by=KUBERAY,
    ),
)


def ensure_workload_controllers(log: Log = _stderr) -> dict[str, Path]:
    """Build the JobSet, LWS, Trainer, Training Operator and KubeRay controllers when missing;
    their paths by name.

    A cold build of each took a little over 2 minutes on this project's 2 cores with the
    control plane's Go caches warm (JobSet 141 s, LWS 121 s; with theirs warm the Trainer 70 s,
    the Training Operator 93 s, KubeRay 78 s);
    progress is reported as for the control plane.
    """
    root = cache_root()
    bin_dir = root / "bin"
    paths = {c.name: bin_dir / c.binary for c in WORKLOAD_CONTROLLERS}
    missing = [c for c in WORKLOAD_CONTROLLERS if not os.access(paths[c.name], os.X_OK)]
    if not missing:
        return paths
    go = require_go()
    bin_dir.mkdir(parents=True, exist_ok=True)
    logs = root / "build-logs"
    logs.mkdir(parents=True, exist_ok=True)
    for c in missing:
        work = root / "src" / f"{c.name}-{c.version}"
        work.mkdir(parents=True, exist_ok=True)
        log_file = logs / f"{c.name}.log"
        started = time.monotonic()
        log(f"building the {c.name} controller ({c.module}@{c.version}; log: {log_file})")
        (work / "go.mod").write_text(
            f"module phalanx.local/{c.name}build\n\ngo 1.26.0\n\nrequire {c.module} {c.version}\n"
        )
        (work / "tools.go").write_text(
            f'//go:build tools\n\npackage tools\n\nimport _ "{c.package}"\n'
        )

        def build(
            out: Path, c: WorkloadController = c, work: Path = work, log_file: Path = log_file
        ) -> None:
            with _step(log, c.name, "go mod tidy (downloading modules)", log_file, False):
                _run([go, "mod", "tidy", "-e"], work, log_file)
            with _step(log, c.name, "go build", log_file, True) as progress:
                counter = threading.Thread(
                    target=_count_deps, args=(go, work, [c.package], progress), daemon=True
                )
                counter.start()
                cmd = [go, "build", "-v", "-trimpath", "-ldflags", "-s -w"]
                _run(
                    [*cmd, "-o", str(out / c.binary), c.package], work, log_file, progress=progress
                )

        _build_into(bin_dir, [c.binary], build)
        _record_build_time(root, f"{c.name}-controller", time.monotonic() - started)
        log(f"built the {c.name} controller in {time.monotonic() - started:.0f}s")
    return paths
