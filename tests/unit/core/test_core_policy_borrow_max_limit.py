"""`Policy.borrow_max_limit` (issue 19, nineteenth round): a gang with a long time limit does
not start beyond its queue's deserved share while another queue has demand.

Hand-worked on two 8-GPU nodes n00, n01 (16 GPUs). Queue `a` runs `ra` (8 GPUs) on n00 and has
one pending gang, 8 GPUs; queue `b` has `wide` pending (3 × 8 GPUs: more than the cluster has,
so it holds no reservation). Demands 16 and 24, equal weights: each queue deserves 8, so `a`
already holds its share and its pending gang would borrow n01 while `b` has demand.
"""

from __future__ import annotations

from dataclasses import replace

from core_builders import fabric, gang, queue, running, snapshot

from phalanx.core import Policy, Reason, Snapshot, schedule

NOW = 1_000_000.0
N0, N1 = "s0-l0-n00", "s0-l0-n01"
DAY = 86_400.0
BOUNDED = replace(Policy(), borrow_max_limit=DAY)


def _cluster(limit: float) -> Snapshot:
    run = [running("ra").queue("a").on(N0, gpu=8).started(NOW - 100).time_limit(10 * DAY)]
    pending = [
        gang("job").queue("a").pods(1, gpu=8).created(NOW - 50).time_limit(limit),
        gang("wide").queue("b").pods(3, gpu=8).created(NOW - 1).time_limit(3600),
    ]
    return snapshot(fabric(1, 1, 2), [queue("a").weight(1), queue("b").weight(1)], run, pending)


def test_off_any_gang_borrows_idle_capacity() -> None:
    """Off: `job` (limit 14 days) starts on n01 beyond `a`'s share; `wide` waits."""
    r = schedule(_cluster(14 * DAY), Policy(), NOW)
    assert dict(r.bindings) == {"ns/job": {"job-000": N1}}


def test_a_gang_of_a_longer_limit_does_not_borrow() -> None:
    """On, 1 day: `job`'s 14-day limit is longer, so it does not start beyond the share and
    says why; n01 stays free."""
    r = schedule(_cluster(14 * DAY), BOUNDED, NOW)
    assert r.bindings == {}
    d = r.gangs["ns/job"]
    assert d.reason == Reason.QUEUE_OVER_LIMIT
    assert "would hold 16 of its deserved 8" in d.message
    assert "up to 1d" in d.message and "its limit 14d" in d.message


def test_a_gang_of_a_shorter_limit_still_borrows() -> None:
    """On, 1 day: with a 1-hour limit `job` starts on n01 beyond the share, as with it off."""
    r = schedule(_cluster(3600), BOUNDED, NOW)
    assert dict(r.bindings) == {"ns/job": {"job-000": N1}}
