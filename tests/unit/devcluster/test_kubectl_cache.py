"""Where kubectl keeps a server's discovery cache, and forgetting it for a fresh dev cluster
(`phalanx.devcluster.kubectl_cache`). That kubectl itself writes there, and that a stale cache
breaks `kubectl get`, is checked against a real API server in
`tests/integration/test_dev_cluster.py`."""

from __future__ import annotations

from pathlib import Path

import yaml

from phalanx.devcluster.kubectl_cache import (
    cache_root,
    discovery_dir,
    forget_discovery,
    servers,
)


def _kubeconfig(tmp_path: Path, *urls: str) -> Path:
    path = tmp_path / "kubeconfig.yaml"
    clusters = [{"name": f"c{i}", "cluster": {"server": u}} for i, u in enumerate(urls)]
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "clusters": clusters}))
    return path


def test_directory_names_follow_kubectls_rule() -> None:
    root = Path("/c")
    assert discovery_dir("https://127.0.0.1:32764", root) == Path("/c/discovery/127.0.0.1_32764")
    assert discovery_dir("http://localhost:8080", root) == Path("/c/discovery/localhost_8080")
    # Only the first scheme is stripped; a path keeps its slashes; brackets and colons go.
    assert discovery_dir("https://[::1]:6443/k8s", root) == Path("/c/discovery/___1__6443/k8s")


def test_the_cache_root_is_kubecachedir_else_under_home() -> None:
    assert cache_root({"KUBECACHEDIR": "/x"}, Path("/h")) == Path("/x")
    assert cache_root({"KUBECACHEDIR": ""}, Path("/h")) == Path("/h/.kube/cache")
    assert cache_root({}, Path("/h")) == Path("/h/.kube/cache")


def test_forgets_only_the_servers_the_kubeconfig_names(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    ours = root / "discovery" / "127.0.0.1_32764"
    other = root / "discovery" / "127.0.0.1_6443"
    (ours / "phalanx.dev" / "v1alpha1").mkdir(parents=True)
    (ours / "servergroups.json").write_text("{}")
    other.mkdir(parents=True)
    kc = _kubeconfig(tmp_path, "https://127.0.0.1:32764")
    removed = forget_discovery(kc, env={"KUBECACHEDIR": str(root)}, home=tmp_path / "home")
    assert removed == [ours]
    assert not ours.exists()
    assert other.is_dir(), "another server's cache was removed"
    # Nothing cached (any more): nothing to remove, no error.
    assert forget_discovery(kc, env={"KUBECACHEDIR": str(root)}, home=tmp_path) == []


def test_home_cache_is_used_without_kubecachedir(tmp_path: Path) -> None:
    home = tmp_path / "home"
    cached = home / ".kube" / "cache" / "discovery" / "127.0.0.1_40000"
    cached.mkdir(parents=True)
    kc = _kubeconfig(tmp_path, "https://127.0.0.1:40000")
    assert forget_discovery(kc, env={}, home=home) == [cached]
    assert not cached.exists()


def test_unreadable_or_odd_kubeconfigs_name_no_server(tmp_path: Path) -> None:
    assert servers(tmp_path / "missing.yaml") == []
    bad = tmp_path / "bad.yaml"
    bad.write_text("clusters: [unclosed")
    assert servers(bad) == []
    odd = tmp_path / "odd.yaml"
    odd.write_text(yaml.safe_dump({"clusters": [None, 3, {"cluster": None}, {"cluster": {}}]}))
    assert servers(odd) == []
    for text in ("- a list\n", "just text\n", "clusters: 3\n", ""):
        odd.write_text(text)
        assert servers(odd) == [], text
    two = _kubeconfig(tmp_path, "https://a:1", "https://b:2")
    assert servers(two) == ["https://a:1", "https://b:2"]
