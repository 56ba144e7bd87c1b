"""Build the control-plane binaries from Go modules, once, into a cache outside the repository.

Why this way: there is no Docker engine and no release download here, only the Go module proxy.
`go install k8s.io/kubernetes/cmd/...@vX` is refused because the kubernetes go.mod replaces every
staging module with a local path, so we write a throwaway wrapper module that requires
k8s.io/kubernetes and points each staging module at its published version instead. etcd's server
module is built the same way; kwok, kwokctl and helm install cleanly with `go install`.

Each binary is built only when missing, into a temporary name that is renamed at the end, so an
interrupted build never leaves a half-written binary that a later run would trust.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from phalanx.devcluster import versions
from phalanx.devcluster.errors import DevClusterError

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


def _run(cmd: list[str], cwd: Path, log_file: Path, env: dict[str, str] | None = None) -> None:
    with log_file.open("a") as log:
        log.write(f"$ {' '.join(cmd)}\n")
        log.flush()
        result = subprocess.run(
            cmd, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, env=env or go_env(), check=False
        )
    if result.returncode != 0:
        tail = "\n".join(log_file.read_text().splitlines()[-15:])
        raise DevClusterError(
            f"`{' '.join(cmd[:3])} …` failed (exit {result.returncode}); "
            f"full log: {log_file}\n{tail}"
        )


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
            f"modules; a cold build takes a long while on 2 cores (log: {log_file})"
        )
        _write_kube_wrapper(go, work, log_file)

        def build_kube(out: Path) -> None:
            _run([go, "mod", "tidy", "-e"], work, log_file)
            pkgs = [f"k8s.io/kubernetes/cmd/{c}" for c in KUBE_COMMANDS]
            _run(
                [
                    go,
                    "build",
                    "-trimpath",
                    "-ldflags",
                    _kube_ldflags(),
                    "-o",
                    str(out) + "/",
                    *pkgs,
                ],
                work,
                log_file,
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
            _run([go, "mod", "tidy", "-e"], work, log_file)
            _run(
                [
                    go,
                    "build",
                    "-trimpath",
                    "-ldflags",
                    "-s -w",
                    "-o",
                    str(out / "etcd"),
                    "go.etcd.io/etcd/server/v3",
                ],
                work,
                log_file,
            )

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

        def install(out: Path, module: str = module, log_file: Path = log_file) -> None:
            env = go_env()
            env["GOBIN"] = str(out)
            env["GOFLAGS"] = ""
            _run([go, "install", "-trimpath", "-ldflags", "-s -w", module], root, log_file, env)

        _build_into(bins.bin_dir, [name], install)
        _record_build_time(root, name, time.monotonic() - started)
        log(f"built {name} in {time.monotonic() - started:.0f}s")
    return bins
