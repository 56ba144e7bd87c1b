"""`Policy.align_ends` (issue 19): a gang starting now goes, between nodes that hold it equally
well, where it ends before the pods already there do, so the node comes back whole.

Hand-worked: one leaf of three 8-GPU nodes; `n02` is full (8 GPUs, no limit) so the choice is
between `n00` and `n01`, each with 1 GPU free (the same count of a 1-GPU pod fits: a tie of the
best-fit rule).
"""

from __future__ import annotations

from dataclasses import replace

from core_builders import fabric, gang, running, snapshot

from phalanx.core import Policy, schedule

NOW = 10_000.0
N0, N1, N2 = "s0-l0-n00", "s0-l0-n01", "s0-l0-n02"
BASE = Policy()
ALIGNED = replace(BASE, align_ends=True)


def _cluster(r1_limit: float | None, pending_limit: float | None) -> object:
    """`r0` (7 GPUs on n00) runs until NOW + 100 by its limit; `r1` (7 GPUs on n01) until
    NOW + 1,000 (or forever without `r1_limit`); `full` takes all of n02 for good. Pending:
    `one`, 1 GPU, limit `pending_limit` (none: forever)."""
    r1 = running("r1").on(N1, gpu=7).started(NOW - 50)
    if r1_limit is not None:
        r1 = r1.time_limit(r1_limit)
    run = [
        running("r0").on(N0, gpu=7).started(NOW - 50).time_limit(150),
        r1,
        running("full").on(N2).started(NOW - 50),
    ]
    one = gang("one").pods(1, gpu=1).created(NOW - 1)
    if pending_limit is not None:
        one = one.time_limit(pending_limit)
    return snapshot(fabric(1, 1, 3), running=run, pending=[one])


def test_a_gang_goes_where_it_ends_before_the_node_frees() -> None:
    """`one` (limit 500 s) would end at NOW + 500: on n00 it keeps the node busy 400 s beyond
    r0 (NOW + 100); on n01 it ends before r1 (NOW + 1,000), and n01 comes back whole at
    NOW + 1,000 either way. By node index it goes to n00; aligned, to n01."""
    snap = _cluster(r1_limit=1050, pending_limit=500)
    assert dict(schedule(snap, BASE, NOW).bindings) == {"ns/one": {"one-000": N0}}
    assert dict(schedule(snap, ALIGNED, NOW).bindings) == {"ns/one": {"one-000": N1}}


def test_when_it_outlasts_both_it_extends_the_later_one_least() -> None:
    """`one` (limit 2,000 s) ends at NOW + 2,000, after both: 1,900 s beyond r0 on n00, 1,000 s
    beyond r1 on n01, so aligned it goes to n01."""
    snap = _cluster(r1_limit=1050, pending_limit=2000)
    assert dict(schedule(snap, ALIGNED, NOW).bindings) == {"ns/one": {"one-000": N1}}


def test_a_gang_without_a_limit_joins_a_node_that_never_frees() -> None:
    """`one` has no limit and r1 neither: n01 is busy for good already, while on n00 `one`
    would keep a node that frees at NOW + 100 busy forever. Aligned: n01."""
    snap = _cluster(r1_limit=None, pending_limit=None)
    assert dict(schedule(snap, BASE, NOW).bindings) == {"ns/one": {"one-000": N0}}
    assert dict(schedule(snap, ALIGNED, NOW).bindings) == {"ns/one": {"one-000": N1}}
