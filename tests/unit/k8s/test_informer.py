"""The list-then-watch informer against a scripted API: what a user would lose if it were wrong.

A missed deletion keeps a phantom pod holding capacity forever; a watch that does not resume
from a fresh list after "410 Gone" stops seeing changes; an event split across two network
chunks must still arrive whole. The real API server tests run the operator on it end to end.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from phalanx.k8s.informer import Informer


class Content:
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    async def iter_any(self) -> AsyncIterator[bytes]:
        for c in self.chunks:
            yield c


class Response:
    def __init__(self, status: int, body: bytes = b"", chunks: list[bytes] | None = None) -> None:
        self.status, self.body = status, body
        self.content = Content(chunks or [])
        self.released = False

    async def read(self) -> bytes:
        return self.body

    def release(self) -> None:
        self.released = True


def obj(name: str, rv: str, value: int = 0) -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": rv}, "value": value}


def line(kind: str, o: dict[str, Any]) -> bytes:
    return json.dumps({"type": kind, "object": o}).encode() + b"\n"


class Script:
    """Answers list calls from a list of pages and watch calls from a list of responses."""

    def __init__(self, pages: list[dict[str, Any]], watches: list[Response]) -> None:
        self.pages, self.watches = pages, watches
        self.calls: list[dict[str, Any]] = []

    async def __call__(self, *args: Any, **kw: Any) -> Response:
        self.calls.append(kw)
        if kw.get("watch"):
            if not self.watches:
                raise asyncio.CancelledError  # end of script: stop the informer
            return self.watches.pop(0)
        return Response(200, json.dumps(self.pages.pop(0)).encode())


def informer(script: Script) -> tuple[Informer[int], list[tuple[Any, Any]]]:
    changes: list[tuple[Any, Any]] = []

    def to_record(body: Any) -> tuple[str, int | None]:
        v = body.get("value", 0)
        return body["metadata"]["name"], None if v < 0 else v

    inf = Informer("things", script, to_record, lambda b, a: changes.append((b, a)))
    return inf, changes


def run(inf: Informer[int]) -> None:
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(inf.run())


def test_list_pages_then_watch_events_split_across_chunks() -> None:
    page1 = {"items": [obj("a", "1", 1)], "metadata": {"continue": "t", "resourceVersion": "5"}}
    page2 = {"items": [obj("b", "2", 2)], "metadata": {"resourceVersion": "5"}}
    event = line("MODIFIED", obj("a", "6", 10))
    watch = Response(200, chunks=[event[:7], event[7:] + line("ADDED", obj("c", "7", 3))])
    script = Script([page1, page2], [watch])
    inf, changes = informer(script)
    run(inf)
    assert inf.records == {"a": 10, "b": 2, "c": 3}
    assert changes == [(None, 1), (None, 2), (1, 10), (None, 3)]
    assert script.calls[1]["_continue"] == "t"
    assert script.calls[2]["resource_version"] == "5" and script.calls[2]["allow_watch_bookmarks"]
    assert inf.version == "7" and inf.synced.is_set() and watch.released


def test_deleted_objects_and_objects_no_longer_kept_are_reported_gone() -> None:
    page = {"items": [obj("a", "1", 1), obj("b", "2", 2)], "metadata": {"resourceVersion": "2"}}
    watch = Response(
        200, chunks=[line("DELETED", obj("a", "3", 1)), line("MODIFIED", obj("b", "4", -1))]
    )
    inf, changes = informer(Script([page], [watch]))
    run(inf)
    assert inf.records == {}
    assert changes[-2:] == [(1, None), (2, None)]


def test_bookmarks_advance_the_version_without_a_change() -> None:
    page = {"items": [obj("a", "1", 1)], "metadata": {"resourceVersion": "1"}}
    watch = Response(200, chunks=[line("BOOKMARK", {"metadata": {"resourceVersion": "9"}})])
    inf, changes = informer(Script([page], [watch]))
    run(inf)
    assert inf.version == "9" and changes == [(None, 1)] and inf.events == 0


@pytest.mark.parametrize("gone", ["status", "event"])
def test_gone_lists_again_and_reports_what_changed_in_the_gap(gone: str) -> None:
    first = {"items": [obj("a", "1", 1), obj("b", "1", 2)], "metadata": {"resourceVersion": "1"}}
    # In the gap: a was deleted, b changed, c appeared.
    second = {"items": [obj("b", "8", 20), obj("c", "9", 3)], "metadata": {"resourceVersion": "9"}}
    expired = (
        Response(410)
        if gone == "status"
        else Response(200, chunks=[line("ERROR", {"code": 410, "message": "too old"})])
    )
    script = Script([first, second], [expired])
    inf, changes = informer(script)
    run(inf)
    assert inf.records == {"b": 20, "c": 3}
    assert changes[2:] == [(1, None), (2, 20), (None, 3)]
    assert [bool(c.get("watch")) for c in script.calls] == [False, True, False, True]


def test_errors_are_retried_after_a_backoff_from_the_same_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("phalanx.k8s.informer.BACKOFF_S", (0.001, 0.01))
    page = {"items": [], "metadata": {"resourceVersion": "3"}}
    script = Script([page], [Response(500, b"boom"), Response(200, chunks=[])])
    inf, _ = informer(script)
    run(inf)
    watches = [c for c in script.calls if c.get("watch")]
    assert len(watches) == 3 and all(c["resource_version"] == "3" for c in watches)


def test_the_operator_watches_only_what_it_needs_cluster_wide_or_per_namespace() -> None:
    """Pods come through two server-side selectors (ours; others' bound, unfinished pods), so
    other schedulers' pending and finished pods never reach the operator; with `namespaces`
    set, pods and PodGroups are watched in those namespaces only (nodes are cluster-scoped)."""
    from types import SimpleNamespace

    from phalanx.config import build_config
    from phalanx.k8s.operator import IndexSource, build_informers

    def calls(*names: str) -> SimpleNamespace:
        return SimpleNamespace(**{n: n for n in names})

    api: Any = SimpleNamespace(
        core=calls("list_node", "list_pod_for_all_namespaces", "list_namespaced_pod"),
        custom=calls("list_cluster_custom_object", "list_namespaced_custom_object"),
    )

    def watched(namespaces: tuple[str, ...]) -> list[tuple[str, Any, tuple[Any, ...], Any]]:
        source = IndexSource()
        config = build_config(metrics_port=0, health_port=0, namespaces=namespaces)
        build_informers(config, api, source, lambda: None)
        return [(i.what, i._list, i._args, i._selector) for i in source.informers()]

    held = (
        "spec.schedulerName!=phalanx,spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"
    )
    assert watched(()) == [
        ("nodes", "list_node", (), None),
        ("pods of ours", "list_pod_for_all_namespaces", (), "spec.schedulerName=phalanx"),
        ("pods of others", "list_pod_for_all_namespaces", (), held),
        ("podgroups", "list_cluster_custom_object", ("phalanx.dev", "v1alpha1", "podgroups"), None),
    ]
    per_namespace = watched(("team-a", "team-b"))
    assert [w[0] for w in per_namespace] == [
        "nodes",
        "pods of ours in team-a",
        "pods of ours in team-b",
        "pods of others",
        "podgroups in team-a",
        "podgroups in team-b",
    ]
    assert per_namespace[1][1:3] == ("list_namespaced_pod", ("team-a",))
    # What uses a node's capacity is counted cluster-wide whatever `namespaces` says.
    assert per_namespace[3][1:] == ("list_pod_for_all_namespaces", (), held)
    assert per_namespace[5][1:3] == (
        "list_namespaced_custom_object",
        ("phalanx.dev", "v1alpha1", "team-b", "podgroups"),
    )


def test_nothing_kills_the_informer_a_bad_line_or_a_socket_error_is_retried(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A dead informer would leave the scheduler on a frozen view: any error is retried."""
    monkeypatch.setattr("phalanx.k8s.informer.BACKOFF_S", (0.001, 0.01))
    page = {"items": [], "metadata": {"resourceVersion": "3"}}

    class Broken(Script):
        async def __call__(self, *args: Any, **kw: Any) -> Response:
            if kw.get("watch") and len(self.calls) == 2:
                self.calls.append(kw)
                raise ConnectionResetError("reset by peer")
            return await super().__call__(*args, **kw)

    good = Response(200, chunks=[line("ADDED", obj("a", "4", 1))])
    script = Broken([page], [Response(200, chunks=[b"{not json\n"]), good])
    inf, changes = informer(script)
    run(inf)
    assert inf.records == {"a": 1} and changes == [(None, 1)]
    assert sum(1 for c in script.calls if c.get("watch")) == 4


def test_a_bound_pod_that_leaves_evicted_from_outside_is_remembered_for_a_while() -> None:
    """The pods informer's deletion hook hands a drained pod (bound, `DisruptionTarget`) to the
    source, which lists it in `Records.gone` until `GONE_MEMORY_S` have passed; a pod deleted
    without the condition, or never bound, is not remembered."""
    from types import SimpleNamespace

    from phalanx.config import build_config
    from phalanx.k8s.operator import GONE_MEMORY_S, IndexSource, build_informers
    from phalanx.k8s.records import pod_record

    def body(name: str, node: str | None, disrupted: bool) -> dict[str, Any]:
        status: dict[str, Any] = {"phase": "Failed"}
        if disrupted:
            status["conditions"] = [
                {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI"}
            ]
        spec: dict[str, Any] = {"schedulerName": "phalanx", "containers": []}
        if node:
            spec["nodeName"] = node
        return {
            "metadata": {"name": name, "namespace": "ns", "uid": name},
            "spec": spec,
            "status": status,
        }

    api: Any = SimpleNamespace(
        core=SimpleNamespace(list_node="n", list_pod_for_all_namespaces="p"),
        custom=SimpleNamespace(list_cluster_custom_object="c"),
    )
    source = IndexSource()
    build_informers(build_config(metrics_port=0, health_port=0), api, source, lambda: None)
    ours = source.pods[0]
    for name, node, disrupted in (
        ("drained", "n1", True),
        ("deleted", "n1", False),
        ("unbound", None, True),
    ):
        ours._changed(pod_record(body(name, node, disrupted)), None)
    assert [p.name for p, _ in source.gone.values()] == ["drained"]
    ((_, at),) = source.gone.values()
    source.note_gone(pod_record(body("later", "n2", True)), at + GONE_MEMORY_S + 1)
    assert [p.name for p, _ in source.gone.values()] == ["later"], "the first one forgotten"
