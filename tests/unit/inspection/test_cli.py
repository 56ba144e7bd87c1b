"""`phalanx queue`, `share`, `explain` end to end against a stub API server (no cluster).

The stub answers the paths the real client calls with the bodies a kube-apiserver returns, so the
kubeconfig handling (default namespace of the context), the reads, the error mapping (a missing
PodGroup, missing CRDs, a forbidden list, no kubeconfig) and the output are all exercised.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from phalanx import cli
from tests.unit.inspection.objects import situation

BASE = "/apis/phalanx.dev/v1alpha1"
GPU = "nvidia.com/gpu"
NOT_FOUND_PAGE = (404, "404 page not found\n")  # what an unknown API group gets


def status_body(code: int, reason: str, message: str) -> tuple[int, str]:
    body = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message}
    return code, json.dumps(body | {"reason": reason, "code": code})


@dataclass
class Stub:
    routes: dict[str, tuple[int, str]] = field(default_factory=dict)
    seen: list[str] = field(default_factory=list)
    url: str = ""

    def default(self, path: str) -> tuple[int, str]:
        """A real API server: an unknown group is a plain 404 page; with the CRDs installed, a
        namespace without PodGroups lists none and a missing PodGroup is a NotFound Status."""
        installed = f"{BASE}/queues" in self.routes
        if not installed or not path.startswith(f"{BASE}/namespaces/"):
            return NOT_FOUND_PAGE
        if path.endswith("/podgroups"):
            return 200, json.dumps({"kind": "PodGroupList", "metadata": {}, "items": []})
        name = path.rsplit("/", 1)[-1]
        return status_body(404, "NotFound", f'podgroups.phalanx.dev "{name}" not found')

    def set_objects(self, groups: list[dict[str, Any]], queues: list[dict[str, Any]]) -> None:
        def listing(kind: str, items: list[dict[str, Any]]) -> tuple[int, str]:
            return 200, json.dumps({"kind": kind, "metadata": {}, "items": items})

        self.routes[f"{BASE}/podgroups"] = listing("PodGroupList", groups)
        self.routes[f"{BASE}/queues"] = listing("QueueList", queues)
        for ns in {g["metadata"]["namespace"] for g in groups}:
            mine = [g for g in groups if g["metadata"]["namespace"] == ns]
            self.routes[f"{BASE}/namespaces/{ns}/podgroups"] = listing("PodGroupList", mine)
            for g in mine:
                path = f"{BASE}/namespaces/{ns}/podgroups/{g['metadata']['name']}"
                self.routes[path] = (200, json.dumps(g))


@pytest.fixture
def stub() -> Iterator[Stub]:
    state = Stub()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            state.seen.append(path)
            code, body = state.routes.get(path) or state.default(path)
            data = body.encode()
            self.send_response(code)
            ctype = "application/json" if body.startswith("{") else "text/plain"
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def kubeconfig(stub: Stub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "stub", "cluster": {"server": stub.url}}],
                "users": [{"name": "me", "user": {"token": "t"}}],
                "contexts": [
                    {"name": "ml", "context": {"cluster": "stub", "user": "me", "namespace": "ml"}},
                    {"name": "plain", "context": {"cluster": "stub", "user": "me"}},
                ],
                "current-context": "ml",
            }
        )
    )
    monkeypatch.setenv("KUBECONFIG", str(path))
    return path


def run(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *args: str
) -> tuple[int, str, str]:
    """`phalanx ARGS` in process, through `cli.main` (the entry point of both scripts)."""
    monkeypatch.setattr(sys, "argv", ["kubectl-phalanx", *args])
    code = 0
    try:
        cli.main()
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def situated(stub: Stub, kubeconfig: Path) -> Stub:
    stub.set_objects(*situation())
    return stub


def test_queue_reads_the_context_namespace_and_prints_the_contract_json(
    situated: Stub, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = run(capsys, monkeypatch, "queue", "-o", "json")
    assert code == 0, err
    assert situated.seen == [f"{BASE}/namespaces/ml/podgroups"]
    rows = json.loads(out)
    assert [r["name"] for r in rows] == ["short", "big", "long"]
    assert rows[1]["reason"] == "InsufficientCapacity"
    assert rows[1]["eta"] == "2026-11-30T05:09:00Z"


def test_queue_all_namespaces_start_and_an_explicit_context(
    situated: Stub, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = run(capsys, monkeypatch, "queue", "-A", "--start", "-o", "yaml")
    assert code == 0
    assert [r["name"] for r in yaml.safe_load(out)] == ["big", "long", "fresh"]
    assert situated.seen == [f"{BASE}/podgroups"]
    code, out, _ = run(capsys, monkeypatch, "queue", "--context", "plain", "-o", "json")
    assert code == 0
    assert situated.seen[-1] == f"{BASE}/namespaces/default/podgroups"


def test_queue_table_and_an_empty_namespace(
    situated: Stub, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = run(capsys, monkeypatch, "queue", "-A")
    assert code == 0
    header = out.splitlines()[0].split()
    assert header == [
        "NAMESPACE",
        "NAME",
        "QUEUE",
        "PHASE",
        "BOUND/MIN",
        "REASON",
        "POSITION",
        "ETA",
    ]
    assert any(
        line.split()[:6] == ["ml", "big", "lender", "Pending", "0/14", "InsufficientCapacity"]
        for line in out.splitlines()
    )
    code, out, err = run(capsys, monkeypatch, "queue", "-n", "empty")
    assert (code, out) == (0, "")
    assert "no PodGroups in namespace empty" in err


def test_share_json_and_table(
    situated: Stub, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = run(capsys, monkeypatch, "share", "-o", "json")
    assert code == 0
    borrower = next(r for r in json.loads(out) if r["queue"] == "borrower")
    assert (borrower["deserved"], borrower["allocated"], borrower["borrowed"]) == (32, 96, 64)
    code, out, _ = run(capsys, monkeypatch, "share")
    assert code == 0
    assert out.splitlines()[0].split()[:6] == [
        "QUEUE",
        "WEIGHT",
        "GUARANTEE",
        "DESERVED",
        "ALLOCATED",
        "BORROWED",
    ]


def test_explain_json_and_text(
    situated: Stub, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = run(capsys, monkeypatch, "explain", "big", "-o", "json")
    assert code == 0
    got = json.loads(out)
    assert got["reason"] == "InsufficientCapacity"
    assert got["detail"]["requestedGPUs"] == 112
    assert got["wouldStart"][0].startswith("needs 96 more free GPUs")
    code, out, _ = run(capsys, monkeypatch, "explain", "wide", "-n", "research")
    assert code == 0
    assert "Backfilled" not in out and "Scheduled" in out


def test_explain_takes_namespace_slash_name_as_its_own_output_prints_it(
    situated: Stub, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = run(capsys, monkeypatch, "explain", "research/wide")
    assert code == 0
    assert out.startswith("PodGroup  research/wide"), out
    code, out, _ = run(capsys, monkeypatch, "explain", "research/wide", "-n", "research")
    assert code == 0
    for bad, said in (
        (("research/wide", "-n", "ml"), "'research/wide' names namespace 'research' but -n says"),
        (("research/",), "'research/' is neither a PodGroup name nor NAMESPACE/NAME"),
        (("a/b/c",), "'a/b/c' is neither"),
    ):
        code, out, err = run(capsys, monkeypatch, "explain", *bad)
        assert (code, out) == (1, ""), bad
        assert err.startswith(f"phalanx: error: {said}") and err.count("\n") == 1, err


def test_a_missing_podgroup_is_one_line_and_exit_1(
    situated: Stub, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = run(capsys, monkeypatch, "explain", "nope")
    assert code == 1
    assert out == ""
    assert err == 'phalanx: error: PodGroup "nope" not found in namespace "ml"\n'


def test_a_missing_podgroup_names_the_pods_that_still_name_it(
    situated: Stub, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pods are listed by their label (the stub ignores the selector: it serves only the
    pods of `nope`); one bound with 8 GPUs, one waiting: still one line and exit 1."""
    pods = [
        {
            "metadata": {"name": f"nope-{i}", "namespace": "ml"},
            "spec": {
                **({"nodeName": "n1"} if i == 0 else {}),
                "containers": [{"name": "c", "resources": {"requests": {GPU: "8"}}}],
            },
            "status": {"phase": "Running" if i == 0 else "Pending"},
        }
        for i in range(2)
    ]
    situated.routes["/api/v1/namespaces/ml/pods"] = (
        200,
        json.dumps({"kind": "PodList", "metadata": {}, "items": pods}),
    )
    code, out, err = run(capsys, monkeypatch, "explain", "nope")
    assert (code, out) == (1, "")
    assert err == (
        'phalanx: error: PodGroup "nope" not found in namespace "ml"; 2 pods labelled '
        "phalanx.dev/pod-group=nope name it: 1 bound, holding 8 GPUs charged to no queue and "
        "under no gang rule (time limit, member failure), 1 waiting for it; apply the PodGroup "
        "again and its bound members are adopted, or delete them\n"
    )
    assert "/api/v1/namespaces/ml/pods" in situated.seen


def test_crds_not_installed_is_said_so(
    stub: Stub,
    kubeconfig: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for args in (("queue", "-A"), ("share",), ("explain", "big")):
        code, out, err = run(capsys, monkeypatch, *args)
        assert (code, out) == (1, ""), args
        assert err.count("\n") == 1, err
        assert "phalanx.dev/v1alpha1 API is not served" in err
        assert "kubectl apply -f crds/" in err


def test_forbidden_is_said_so(
    situated: Stub, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    situated.routes[f"{BASE}/podgroups"] = status_body(
        403,
        "Forbidden",
        'podgroups.phalanx.dev is forbidden: User "me" cannot list resource "podgroups" in API '
        'group "phalanx.dev" at the cluster scope',
    )
    code, _, err = run(capsys, monkeypatch, "queue", "-A")
    assert code == 1
    assert err.startswith("phalanx: error: forbidden: cannot list PodGroups in all namespaces (")
    assert err.count("\n") == 1


def test_no_kubeconfig_and_conflicting_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    code, _, err = run(capsys, monkeypatch, "share")
    assert code == 1
    assert err == (
        f"phalanx: error: no kubeconfig: {tmp_path / 'missing'} does not exist; "
        "set KUBECONFIG or pass --kubeconfig\n"
    )
    code, _, err = run(capsys, monkeypatch, "queue", "-n", "a", "-A")
    assert code == 1
    assert "exclude each other" in err


def test_an_unreachable_api_server_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.integration.operator_fixture import free_port

    path = tmp_path / "kubeconfig"
    server = f"http://127.0.0.1:{free_port()}"
    path.write_text(
        yaml.safe_dump(
            {
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    code, _, err = run(capsys, monkeypatch, "queue", "--kubeconfig", str(path))
    assert code == 1
    assert err.startswith(f"phalanx: error: cannot reach the API server at {server}: ")
    assert err.count("\n") == 1


def test_kubeconfig_may_be_a_list_of_paths_as_for_kubectl(
    situated: Stub,
    kubeconfig: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'absent'}:{kubeconfig}")
    code, out, err = run(capsys, monkeypatch, "queue", "-o", "json")
    assert code == 0, err
    assert [r["name"] for r in json.loads(out)] == ["short", "big", "long"]
    code, _, err = run(capsys, monkeypatch, "share", "--kubeconfig", str(tmp_path / "nope"))
    assert code == 1
    assert "no kubeconfig" in err
