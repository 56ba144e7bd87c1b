"""Time limits: real durations rounded up to the limits users ask for."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from phalanx.sim.time_limits import LIMIT_STEPS_S, time_limit_for

M, H, D = 60, 3600, 86400


@pytest.mark.parametrize(
    ("duration", "limit"),
    [
        (0, 30 * M), (1, 30 * M), (30 * M, 30 * M), (30 * M + 1, H), (H, H), (H + 0.5, 2 * H),
        (3 * H, 4 * H), (5 * H, 8 * H), (9 * H, 12 * H), (13 * H, 24 * H), (25 * H, 48 * H),
        (49 * H, 72 * H), (73 * H, 7 * D), (7 * D, 7 * D), (8 * D, 14 * D), (15 * D, 30 * D),
        (30 * D, 30 * D), (30 * D + 1, None), (4_628_226, None),
    ],
)  # fmt: skip
def test_rounding_table(duration: float, limit: int | None) -> None:
    assert time_limit_for(duration) == limit


def test_steps_are_the_documented_twelve() -> None:
    assert LIMIT_STEPS_S == (
        30 * M, H, 2 * H, 4 * H, 8 * H, 12 * H, 24 * H, 48 * H, 72 * H, 7 * D, 14 * D, 30 * D
    )  # fmt: skip


@given(st.floats(min_value=0, max_value=40 * D, allow_nan=False))
def test_limit_is_the_smallest_step_covering_the_run(duration: float) -> None:
    limit = time_limit_for(duration)
    if limit is None:
        assert duration > LIMIT_STEPS_S[-1]
    else:
        assert limit >= duration
        assert all(step < duration for step in LIMIT_STEPS_S if step < limit)
