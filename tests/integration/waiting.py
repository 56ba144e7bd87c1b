"""The one way integration tests wait: poll with a deadline, fail with what was waited for."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import pytest

T = TypeVar("T")


def wait_for(
    probe: Callable[[], T | bool | None],
    timeout: float,
    what: str,
    interval: float = 0.25,
    describe: Callable[[], str] | None = None,
) -> T:
    """Call `probe` until it returns something truthy; fail after `timeout` seconds.

    The failure message names what was awaited and the last value seen, so a red test says which
    promise the cluster did not keep; `describe`, when given, adds what the cluster holds at the
    deadline for probes whose last value (False) says nothing.
    """
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        last = probe()
        if last:
            return last  # type: ignore[return-value]
        if time.monotonic() >= deadline:
            seen = describe() if describe else repr(last)
            pytest.fail(f"timed out after {timeout:.0f}s waiting for {what} (last seen: {seen})")
        time.sleep(interval)
