"""The Helm chart's tooling in the source tree: helm from the binary cache, the chart's copies of
the CRDs, and the plain manifests of `deploy/manifests/` rendered from the chart.

`crds/` is the source of truth; `charts/phalanx/crds/` holds byte-identical copies (Helm installs
a chart's CRDs only from the chart), and `deploy/manifests/phalanx.yaml` is `helm template` of
the chart with a fixed release, so `kubectl apply -f` users get exactly what `helm install` makes.
`make sync-chart` (`python -m phalanx.devcluster.chart`) refreshes both; tests check they are in
sync. helm is the one `phalanx dev-cluster build` builds from its Go module.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from phalanx.devcluster import versions
from phalanx.devcluster.binaries import cache_root
from phalanx.devcluster.errors import DevClusterError

REPO = Path(__file__).resolve().parents[3]
CRDS = REPO / "crds"
CHART = REPO / "charts" / "phalanx"
MANIFESTS = REPO / "deploy" / "manifests" / "phalanx.yaml"
RELEASE = "phalanx"
NAMESPACE = "phalanx-system"
"""The fixed release and namespace of the plain manifests."""

MANIFEST_VALUES = ("namespace.create=true",)
"""Values the plain manifests are rendered with (a Namespace object: `kubectl apply` makes none)."""

_HEADER = f"""\
# Phalanx operator: plain manifests for `kubectl apply -f` (release {RELEASE}, namespace
# {NAMESPACE}), rendered from charts/phalanx with its default values (plus the Namespace) by
# `make sync-chart`. Do not edit: change the chart, run `make sync-chart` (a test checks this
# file is in sync). Apply the CRDs first: kubectl apply -f crds/
"""


def helm_path() -> Path:
    """The helm built by `phalanx dev-cluster build` (`make control-plane`)."""
    path = cache_root() / "bin" / "helm"
    if not path.exists():
        raise DevClusterError(
            f"helm is not built yet ({path} is missing): run `make control-plane` "
            "(phalanx dev-cluster build) first"
        )
    return path


def helm(*args: str, kubeconfig: Path | None = None, timeout: float = 300) -> str:
    """Run helm; its stdout, or `DevClusterError` with its stderr."""
    cmd = [str(helm_path()), *args]
    if kubeconfig is not None:
        cmd += ["--kubeconfig", str(kubeconfig)]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    if result.returncode != 0:
        raise DevClusterError(f"{' '.join(args[:2])} failed: {result.stderr.strip()}")
    return result.stdout


def template(
    release: str = RELEASE,
    namespace: str = NAMESPACE,
    values: tuple[str, ...] = (),
    include_crds: bool = False,
) -> str:
    """`helm template` of the chart (for the Kubernetes version of the local cluster)."""
    args = ["template", release, str(CHART), "--namespace", namespace]
    args += ["--kube-version", versions.KUBERNETES]
    for value in values:
        args += ["--set", value]
    if include_crds:
        args.append("--include-crds")
    return helm(*args)


def render_manifests() -> str:
    """What `deploy/manifests/phalanx.yaml` must hold."""
    return _HEADER + template(values=MANIFEST_VALUES)


def crd_copies() -> dict[Path, Path]:
    """Each CRD of `crds/` and the path of its copy in the chart."""
    return {src: CHART / "crds" / src.name for src in sorted(CRDS.glob("*.yaml"))}


def sync() -> list[Path]:
    """Copy the CRDs into the chart and render the manifests; the files that changed."""
    changed: list[Path] = []
    wanted = crd_copies()
    for stale in sorted((CHART / "crds").glob("*.yaml")):
        if stale not in wanted.values():
            stale.unlink()
            changed.append(stale)
    for src, dst in wanted.items():
        if not dst.exists() or dst.read_bytes() != src.read_bytes():
            shutil.copyfile(src, dst)
            changed.append(dst)
    rendered = render_manifests()
    if not MANIFESTS.exists() or MANIFESTS.read_text() != rendered:
        MANIFESTS.parent.mkdir(parents=True, exist_ok=True)
        MANIFESTS.write_text(rendered)
        changed.append(MANIFESTS)
    return changed


def main() -> None:
    try:
        changed = sync()
    except DevClusterError as exc:
        print(f"phalanx: error: {exc}", file=sys.stderr)
        sys.exit(1)
    for path in changed:
        print(f"updated {path.relative_to(REPO)}")
    if not changed:
        print("chart CRDs and deploy/manifests/ already in sync")


if __name__ == "__main__":
    main()
