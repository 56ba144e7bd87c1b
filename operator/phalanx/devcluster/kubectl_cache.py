"""Forget kubectl's discovery cache for the address a fresh dev cluster now serves.

kubectl caches the API server's discovery (which groups, versions and kinds it serves) on disk
for six hours, in a directory named after the server's host and port only
(`~/.kube/cache/discovery/127.0.0.1_32764`, or under `$KUBECACHEDIR`). kwokctl hands the same
free port to one cluster after another, so after a cluster that served, say, the native
`scheduling.k8s.io` PodGroup (`NATIVE_GANG_*`), `kubectl get podgroups` on the next cluster at
that port still resolves the plural to the kind it no longer serves and answers `Error from
server (NotFound): Unable to list "scheduling.k8s.io/v1alpha2, Resource=podgroups"` for up to
six hours. A cluster we have just created at
an address makes whatever was cached for that address stale by definition, so `up` removes it;
kubectl rebuilds it on its next call. The HTTP cache beside it needs nothing: its entries are
revalidated against the server by ETag.

The directory name follows kubectl's own rule (`computeDiscoverCacheDir` in
k8s.io/cli-runtime, `genericclioptions/config_flags.go`): the scheme stripped, then every
character but word characters, `/`, `.`, `(` and `)` replaced by `_`.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path

import yaml

#: kubectl's `overlyCautiousIllegalFileCharacters`, `[^(\w/.)]`, as Python writes it.
_ILLEGAL = re.compile(r"[^(\w/.)]", re.ASCII)


def cache_root(env: Mapping[str, str], home: Path) -> Path:
    """kubectl's cache directory: `$KUBECACHEDIR` if set and not empty, else `~/.kube/cache`."""
    explicit = env.get("KUBECACHEDIR", "")
    return Path(explicit) if explicit else home / ".kube" / "cache"


def discovery_dir(server: str, root: Path) -> Path:
    """Where kubectl keeps the discovery cache of `server` (a kubeconfig `server:` URL)."""
    host = server.replace("https://", "", 1).replace("http://", "", 1)
    return root / "discovery" / _ILLEGAL.sub("_", host)


def servers(kubeconfig: Path) -> list[str]:
    """The `server:` URLs of every cluster a kubeconfig names (none if it is unreadable)."""
    try:
        doc = yaml.safe_load(kubeconfig.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return []
    entries = doc.get("clusters") if isinstance(doc, dict) else None
    out: list[str] = []
    for entry in entries if isinstance(entries, list) else []:
        cluster = entry.get("cluster") if isinstance(entry, dict) else None
        server = cluster.get("server") if isinstance(cluster, dict) else None
        if isinstance(server, str) and server:
            out.append(server)
    return out


def forget_discovery(
    kubeconfig: Path, env: Mapping[str, str] | None = None, home: Path | None = None
) -> list[Path]:
    """Remove kubectl's discovery cache of every server `kubeconfig` names; the directories
    removed (only those that existed)."""
    root = cache_root(os.environ if env is None else env, Path.home() if home is None else home)
    removed: list[Path] = []
    for server in servers(kubeconfig):
        target = discovery_dir(server, root)
        if target.is_dir():
            shutil.rmtree(target, ignore_errors=True)
            removed.append(target)
    return removed
