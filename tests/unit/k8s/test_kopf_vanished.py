"""A watched kind whose CRD is deleted while the operator runs does not stop it: kopf's watch
stream reconnects after a 404 instead of failing (`k8s/kopf_vanished.py`)."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest

from phalanx.k8s.kopf_vanished import PARAMETERS, tolerant, tolerate_vanished_kinds


class NotFound(Exception):
    pass


def test_a_404_is_said_once_and_the_stream_goes_on_when_the_kind_is_served_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Two 404s (the CRD deleted), then the kind is served again: its events flow on, and the
    gap was said once. Without the wrapper the first 404 ended kopf (walked: the operator exited
    2 s after `kubectl delete crd mpijobs.kubeflow.org`)."""
    attempts: list[dict[str, Any]] = []

    async def kopf_stream(**kwargs: Any) -> AsyncIterator[str]:
        attempts.append(kwargs)
        if len(attempts) == 1:
            yield "listed"
        if len(attempts) <= 3:
            raise NotFound("404 page not found")
        yield "served again"

    async def read() -> list[str]:
        stream = tolerant(kopf_stream, NotFound, retry_s=0)
        return [e async for e in stream(resource="mpijobs.kubeflow.org", namespace=None)]

    with caplog.at_level(logging.WARNING, logger="phalanx.kopf"):
        events = asyncio.run(read())
    assert events == ["listed", "served again"]
    assert len(attempts) == 4 and attempts[0] == {
        "resource": "mpijobs.kubeflow.org",
        "namespace": None,
    }
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and "mpijobs.kubeflow.org is not served any more" in said[0], said


def test_other_failures_still_end_the_stream() -> None:
    async def kopf_stream(**_: Any) -> AsyncIterator[str]:
        raise RuntimeError("watch stream error")
        yield "never"

    async def read() -> list[str]:
        return [e async for e in tolerant(kopf_stream, NotFound, retry_s=0)()]

    with pytest.raises(RuntimeError):
        asyncio.run(read())


def test_kopfs_stream_is_wrapped_once_and_takes_what_we_pass() -> None:
    from kopf._cogs.clients import watching

    assert set(PARAMETERS) <= set(inspect.signature(watching.infinite_watch).parameters)
    before = watching.infinite_watch
    try:
        assert tolerate_vanished_kinds()
        wrapped = watching.infinite_watch
        assert wrapped is not before
        assert tolerate_vanished_kinds() and watching.infinite_watch is wrapped, "once"
    finally:
        watching.infinite_watch = before
