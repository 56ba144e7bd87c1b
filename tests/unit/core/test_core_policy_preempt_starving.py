"""`Policy.preempt_starving` (issue 19, sixth round): selective preemption of a gang that waited
little, for a starving gang of a leaf or more that waited long relative to its time limit.

Hand-worked on one spine of two leaves × two 8-GPU nodes (a leaf's worth of nodes = 2 pods, so
`start_starving_leaves=1` honours gangs of 2 pods and more). `wide` fills leaf 1 and has run for
27.8 h (100,000 s), so it is never a victim here. `long` fills leaf 0: limit 600,000 s
(6.9 days), created at `long_created` and started at `long_started`. Pending `short`: 2 × 8
GPUs, limit 3,600 s, created at `short_created`; its starvation bound is its limit (3,600 s).

Expansion factor x = (wait + limit) / limit. With `long` created NOW − 6,000 and started
NOW − 5,000: x(long) = (1,000 + 600,000) / 600,000 = 1.00167; `short` created NOW − 7,200:
x(short) = (7,200 + 3,600) / 3,600 = 3.0 ≥ 2 × 1.00167, and `long` ran 5,000 s ≤ 2 × 3,600 s:
with the factor 2 `short` preempts `long`.
"""

from __future__ import annotations

from dataclasses import replace

from core_builders import fabric, gang, queue, running, snapshot

from phalanx.core import EvictionReason, Policy, Snapshot, schedule

NOW = 1_000_000.0
L0 = ("s0-l0-n00", "s0-l0-n01")
L1 = ("s0-l1-n00", "s0-l1-n01")
BOUNDED = Policy(reserve_after_limits=1.0, start_starving_leaves=1.0)
SELECTIVE = replace(BOUNDED, preempt_starving=2.0)


def _cluster(
    long_created: float | None = NOW - 6_000,
    long_started: float = NOW - 5_000,
    long_limit: float = 600_000,
    short_created: float = NOW - 7_200,
    short_pods: int = 2,
    wide_limit: float = 1_000_000,
) -> Snapshot:
    long = running("long").started(long_started).time_limit(long_limit)
    if long_created is not None:
        long = long.created(long_created)
    for n in L0:
        long = long.on(n)
    wide = running("wide").created(NOW - 100_500).started(NOW - 100_000).time_limit(wide_limit)
    for n in L1:
        wide = wide.on(n)
    short = gang("short").pods(short_pods, gpu=8).created(short_created).time_limit(3_600)
    return snapshot(fabric(1, 2, 2), running=[long, wide], pending=[short])


def _evicted(snap: Snapshot, policy: Policy) -> list[tuple[str, EvictionReason, str]]:
    return [(e.gang, e.reason, e.for_gang) for e in schedule(snap, policy, NOW).evictions]


def test_a_starving_gang_preempts_a_fresh_long_gang_that_waited_little() -> None:
    """x(short) 3.0 ≥ 2 × x(long) 1.00167, long ran 5,000 s ≤ 7,200 s: long is evicted for
    short, which holds leaf 0 from now (it starts once long has stopped). Without the knob it
    waits for wide's or long's end (NOW + 595,000 at the earliest), evicting nothing."""
    snap = _cluster()
    assert _evicted(snap, SELECTIVE) == [("ns/long", EvictionReason.PREEMPTED, "ns/short")]
    res = schedule(snap, SELECTIVE, NOW)
    assert res.reservations["ns/short"].start == NOW
    assert set(res.reservations["ns/short"].nodes) == set(L0)
    assert "starving, preempting 1 gang (ns/long)" in res.gangs["ns/short"].message
    assert _evicted(snap, BOUNDED) == []
    assert schedule(snap, BOUNDED, NOW).reservations["ns/short"].start == NOW + 595_000


def test_a_victim_that_ran_longer_than_the_factor_times_the_limit_is_kept() -> None:
    """long started NOW − 8,000 (created NOW − 9,000, x still 1.00167): it ran 8,000 s, more
    than 2 × 3,600 s of short's limit, so the work lost would be too large: nothing evicted."""
    snap = _cluster(long_created=NOW - 9_000, long_started=NOW - 8_000)
    assert _evicted(snap, SELECTIVE) == []


def test_a_victim_that_waited_long_too_is_kept() -> None:
    """long created NOW − 400,000 and started NOW − 5,000: x(long) = (395,000 + 600,000) /
    600,000 = 1.658, and 2 × 1.658 = 3.317 > x(short) 3.0: nothing evicted. With the factor
    1.5 (1.5 × 1.658 = 2.49 ≤ 3.0, and 5,000 s ≤ 5,400 s) it is."""
    snap = _cluster(long_created=NOW - 400_000)
    assert _evicted(snap, SELECTIVE) == []
    assert _evicted(snap, replace(BOUNDED, preempt_starving=1.5)) == [
        ("ns/long", EvictionReason.PREEMPTED, "ns/short")
    ]


def test_a_gang_before_its_starvation_bound_preempts_nothing() -> None:
    """short created NOW − 3,000 has waited less than its bound (3,600 s): not starving. Its
    x = 6,600 / 3,600 = 1.83 ≥ 1.5 × 1.00167 would allow it, the bound does not."""
    snap = _cluster(short_created=NOW - 3_000)
    assert _evicted(snap, replace(BOUNDED, preempt_starving=1.5)) == []


def test_a_gang_smaller_than_a_leaf_preempts_nothing() -> None:
    """A 1-pod short (8 GPUs) is not a gang whose reservation is honoured (fewer pods than a
    leaf has nodes): it waits for a node like any other, however long it starved."""
    snap = _cluster(short_pods=1)
    assert _evicted(snap, SELECTIVE) == []


def test_no_preemption_that_throws_away_more_than_it_saves() -> None:
    """wide's limit ends at NOW + 1,000: short could start there on leaf 1 without evicting,
    so evicting long saves 16 GPUs × 1,000 s = 16,000 GPU-seconds of waiting and throws away
    16 × 5,000 = 80,000 of long's run: nothing evicted, short reserves leaf 1 at NOW + 1,000.
    With wide ending at NOW + 6,000 (96,000 saved) long is evicted."""
    snap = _cluster(wide_limit=101_000)
    assert _evicted(snap, SELECTIVE) == []
    assert schedule(snap, SELECTIVE, NOW).reservations["ns/short"].start == NOW + 1_000
    assert _evicted(_cluster(wide_limit=106_000), SELECTIVE) == [
        ("ns/long", EvictionReason.PREEMPTED, "ns/short")
    ]


def test_a_victim_that_would_start_first_again_is_kept() -> None:
    """long: limit 10,000 s, created NOW − 16,000, started NOW − 4,000 (x = (12,000 + 10,000)
    / 10,000 = 2.2; 1.3 × 2.2 = 2.86 ≤ 3.0; ran 4,000 s ≤ 1.3 × 3,600 s; ends NOW + 6,000, so
    evicting saves 96,000 GPU-seconds and loses 64,000). With a bound of one limit long has
    waited 16,000 s ≥ 10,000 s: evicted, it would wait starving and start first, older than
    short, taking leaf 0 back: kept. With a bound of two limits (20,000 s for long, 7,200 s for
    short, which has waited that) it is not starving and is evicted."""
    snap = _cluster(long_created=NOW - 16_000, long_started=NOW - 4_000, long_limit=10_000)
    one = replace(BOUNDED, preempt_starving=1.3)
    assert _evicted(snap, one) == []
    assert _evicted(snap, replace(one, reserve_after_limits=2.0)) == [
        ("ns/long", EvictionReason.PREEMPTED, "ns/short")
    ]


def _two_queues(mine: int) -> Snapshot:
    """Queue `default` (guarantee `mine` GPUs) runs `long` (1 × 8 GPUs on s0-l0-n00, the
    victim of the first test's numbers) and waits with `short` (2 × 8, starving); queue `other`
    (guarantee 32 − `mine`) runs `wide` on leaf 1 and waits with a 16-GPU gang that does not fit
    in the 8 GPUs free on s0-l0-n01. The guarantees add up to the 32 GPUs, so each queue
    deserves its guarantee."""
    long = running("long").created(NOW - 6_000).started(NOW - 5_000).time_limit(600_000)
    wide = running("wide").queue("other").created(NOW - 100_500).started(NOW - 100_000)
    wide = wide.time_limit(1_000_000)
    for n in L1:
        wide = wide.on(n)
    short = gang("short").pods(2, gpu=8).created(NOW - 7_200).time_limit(3_600)
    theirs = gang("theirs").queue("other").pods(2, gpu=8).created(NOW - 100).time_limit(3_600)
    queues = [queue("default").guarantee(gpu=mine), queue("other").guarantee(gpu=32 - mine)]
    return snapshot(
        fabric(1, 2, 2),
        queues=queues,
        running=[long.on(L0[0]), wide],
        pending=[short, theirs],
    )


def test_no_preemption_that_would_leave_the_gang_beyond_its_queues_share() -> None:
    """`default` deserves 8 and holds 8 (long): without long it would hold 16 with short, over
    its share, so short would not start first and the walk would hand leaf 0 to others — and
    short would evict again the next cycle: nothing evicted. Deserving 16, 8 − 8 + 16 ≤ 16:
    long is evicted."""
    assert _evicted(_two_queues(mine=8), SELECTIVE) == []
    assert _evicted(_two_queues(mine=16), SELECTIVE) == [
        ("ns/long", EvictionReason.PREEMPTED, "ns/short")
    ]


def test_a_victim_of_unknown_creation_time_is_kept() -> None:
    """Without its creation time the victim's wait is unknown: never taken."""
    snap = _cluster(long_created=None)
    assert _evicted(snap, SELECTIVE) == []


def test_preemption_off_turns_it_off() -> None:
    snap = _cluster()
    assert _evicted(snap, replace(SELECTIVE, preemption=False)) == []
