"""How `make demo` treats an operator of its cluster that it finds running."""

from __future__ import annotations

import pytest

from phalanx import demo


def test_make_demo_waits_out_an_operator_that_is_stopping_and_starts_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Walked: `make demo` run right after the operator was sent SIGTERM said "the operator is
    already running" and started none (it stops serving /healthz at once and exits 7 s later).
    An operator found running counts only once it answers /healthz; one that does not is waited
    for until it exits (then a new one is started) or answers."""
    alive = iter([True, True, True, False])
    monkeypatch.setattr(demo, "_running_operators", lambda: [42] if next(alive) else [])
    monkeypatch.setattr(demo, "_healthy", lambda: False)
    monkeypatch.setattr(demo.time, "sleep", lambda _s: None)
    assert demo.operator_left_running() is False, "stopping: waited out, start a new one"
    monkeypatch.setattr(demo, "_running_operators", lambda: [42])
    monkeypatch.setattr(demo, "_healthy", lambda: True)
    assert demo.operator_left_running() is True, "running and healthy: left as it is"
    monkeypatch.setattr(demo, "_healthy", lambda: False)
    with pytest.raises(SystemExit, match="neither answers /healthz"):
        demo.operator_left_running(timeout=0.0)
