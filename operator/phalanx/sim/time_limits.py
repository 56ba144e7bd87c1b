"""Time limits for trace jobs: the real duration rounded up to a limit a user would ask for.

Why: the traces record how long each job ran but not what limit (Slurm `--time`,
`timeLimitSeconds`) its user asked for, and backfill plans with limits. Using the real duration
as the limit would make backfill clairvoyant - it would know every job's end to the second, which
no scheduler does - and flatter every policy that uses limits. Users ask for round limits with
headroom, so each job gets the smallest of the `LIMIT_STEPS_S` that covers its real run time.
Jobs longer than the largest step get no limit at all (`None`): such a gang cannot be
backfilled, as PRODUCT.md says for gangs without a limit. Every policy sees the same limits.
"""

from __future__ import annotations

from bisect import bisect_left

_MIN = 60
_HOUR = 60 * _MIN
_DAY = 24 * _HOUR

LIMIT_STEPS_S: tuple[int, ...] = (
    30 * _MIN,
    1 * _HOUR,
    2 * _HOUR,
    4 * _HOUR,
    8 * _HOUR,
    12 * _HOUR,
    24 * _HOUR,
    48 * _HOUR,
    72 * _HOUR,
    7 * _DAY,
    14 * _DAY,
    30 * _DAY,
)
"""The limits users are assumed to ask for, ascending: 30 min, 1, 2, 4, 8, 12, 24, 48, 72 h,
7, 14, 30 d."""


def time_limit_for(duration_s: float) -> int | None:
    """The smallest step >= `duration_s`, in seconds; `None` beyond 30 days.

    A duration exactly on a step gets that step (a job that ran 1 h fits a 1 h limit: the limit
    is the most it may run). Zero and negative durations get the smallest step.
    """
    i = bisect_left(LIMIT_STEPS_S, duration_s)
    return LIMIT_STEPS_S[i] if i < len(LIMIT_STEPS_S) else None
