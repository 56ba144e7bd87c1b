"""`Policy.reserve_after_peers` (issue 19, thirteenth round): a gang starves no sooner than k ×
the median wait of the gangs that started within `peer_window_s` (of its own queue only with
`peers_per_queue`).

Hand-worked, one cycle at `NOW` on one leaf of two 8-GPU nodes: `r` runs on n00 until NOW + 100
(its limit); n01 is free. Pending, in FIFO order: `big` (2 × 8 GPUs, limit 1,000 s, created at
NOW − 3,600: it has waited 3,600 s, past its own bound of 1 × 1,000 s) and `long` (8 GPUs, limit
500 s, fresh), which fits n01 now and would run until NOW + 500. Whether `big` starves decides
whether `long` starts: a binding reservation of `big` from NOW + 100 holds n01.
"""

from __future__ import annotations

from dataclasses import replace

from core_builders import fabric, gang, queue, running, snapshot

from phalanx.core import Policy, Reason, Snapshot, schedule

NOW = 10_000.0
N0, N1 = "s0-l0-n00", "s0-l0-n01"
PEERS = Policy(reserve_after_limits=1.0, reserve_after_peers=1.0)


def _cluster(r_waited: float, r_started: float = NOW - 50, r_queue: str = "default") -> Snapshot:
    """`r` started at `r_started` after waiting `r_waited` seconds, in queue `r_queue`."""
    r = (
        running("r")
        .queue(r_queue)
        .on(N0)
        .started(r_started)
        .created(r_started - r_waited)
        .time_limit(NOW + 100 - r_started)
    )
    pending = [
        gang("big").pods(2).created(NOW - 3600).time_limit(1000),
        gang("long").pods(1).created(NOW - 1).time_limit(500),
    ]
    queues = [queue(r_queue)] if r_queue != "default" else []
    return snapshot(fabric(1, 1, 2), running=[r], pending=pending, queues=queues)


def test_a_gang_that_waited_less_than_its_peers_is_not_starving() -> None:
    """`r` waited 5,000 s before it started: the peer bound is 1 × 5,000 s > `big`'s 3,600 s,
    so `big` holds no binding reservation, `long` starts on n01, and `big`'s message counts
    its wait against the peer bound and says where that bound comes from."""
    r = schedule(_cluster(r_waited=5000), PEERS, NOW)
    assert dict(r.bindings) == {"ns/long": {"long-000": N1}}
    assert "ns/big" not in r.reservations
    assert (
        "waited 1h00m of its 1h23m starvation bound (1 × 1h23m, the median wait of the gangs "
        "that started in the last 1d00h)" in r.gangs["ns/big"].message
    )


def test_a_gang_that_waited_more_than_its_peers_reserves() -> None:
    """`r` waited 2,000 s: the bound is max(1,000, 2,000) = 2,000 s <= 3,600 s, so `big`
    reserves n00 + n01 from NOW + 100 and `long` may not start on n01."""
    r = schedule(_cluster(r_waited=2000), PEERS, NOW)
    assert r.bindings == {}
    assert r.reservations["ns/big"].start == NOW + 100
    assert r.gangs["ns/long"].reason == Reason.WAITING_FOR_RESERVATION


def test_starts_before_the_window_do_not_count() -> None:
    """The same 5,000 s wait sets no peer bound when `r` started 86,401 s ago (outside the
    24 h window): `big` is past its own bound and reserves."""
    old = _cluster(r_waited=5000, r_started=NOW - 86_401)
    assert old.running[0].time_limit == 86_501
    assert "ns/big" in schedule(old, PEERS, NOW).reservations


def test_other_queues_count_unless_per_queue() -> None:
    """`r` runs in queue `other`: its 5,000 s wait sets the bound of `big` (queue `default`)
    as well, unless the peers are the gang's own queue's (`peers_per_queue`), where `default`
    has no recent start, so `big` keeps its own bound and reserves; the message then names
    the queue whose starts it counts."""
    other = _cluster(r_waited=5000, r_queue="other")
    assert "ns/big" not in schedule(other, PEERS, NOW).reservations
    per_queue = replace(PEERS, peers_per_queue=True)
    assert "ns/big" in schedule(other, per_queue, NOW).reservations
    same = schedule(_cluster(r_waited=5000), per_queue, NOW)
    assert "the median wait of the gangs of queue default that started" in (
        same.gangs["ns/big"].message
    )


def test_off_by_default() -> None:
    """Without the knob the 5,000 s wait of `r` changes nothing: `big` reserves."""
    r = schedule(_cluster(r_waited=5000), replace(PEERS, reserve_after_peers=0.0), NOW)
    assert "ns/big" in r.reservations


def test_peers_below_leaves_leaves_a_gang_of_that_size_its_own_bound() -> None:
    """With `peers_below_leaves` = 1 (a leaf of two nodes: 2 pods), `big` (2 pods) keeps its
    own 1,000 s bound despite `r`'s 5,000 s wait and reserves; with 1.5 leaves (3 pods) the
    peer bound holds it back again."""
    policy = replace(PEERS, peers_below_leaves=1.0)
    r = schedule(_cluster(r_waited=5000), policy, NOW)
    assert r.reservations["ns/big"].start == NOW + 100
    wider = replace(policy, peers_below_leaves=1.5)
    assert "ns/big" not in schedule(_cluster(r_waited=5000), wider, NOW).reservations


def test_peer_max_caps_the_peer_bound() -> None:
    """`peer_max_s` = 3,000 s caps the 5,000 s peer bound below `big`'s 3,600 s wait: it
    reserves; at 4,000 s it does not, and its message gives the bound the cap leaves."""
    capped = replace(PEERS, peer_max_s=3000.0)
    assert "ns/big" in schedule(_cluster(r_waited=5000), capped, NOW).reservations
    higher = replace(PEERS, peer_max_s=4000.0)
    held = schedule(_cluster(r_waited=5000), higher, NOW)
    assert "ns/big" not in held.reservations
    assert (
        "waited 1h00m of its 1h06m starvation bound (1 × 1h23m, the median wait of the gangs "
        "that started in the last 1d00h, at most 1h06m)" in held.gangs["ns/big"].message
    )


def test_by_slowdown_the_bound_is_the_peers_slowdown_times_the_gangs_limit() -> None:
    """`peers_by_slowdown`: `r` (limit 150 s) waited 600 s, a slowdown of (600 + 150) / 150 = 5,
    so `big` (limit 1,000 s) starves after (1 × 5 − 1) × 1,000 = 4,000 s > its 3,600 s: no
    reservation, and its message says so. After a 450 s wait of `r` (slowdown 4) the bound is
    3,000 s and `big` reserves."""
    slow = replace(PEERS, peers_by_slowdown=True)
    held = schedule(_cluster(r_waited=600), slow, NOW)
    assert "ns/big" not in held.reservations
    assert (
        "waited 1h00m of its 1h06m starvation bound (its 16m40s limit × (1 × 5.0 − 1), 5.0 the "
        "median slowdown of the gangs that started in the last 1d00h)"
        in held.gangs["ns/big"].message
    )
    assert "ns/big" in schedule(_cluster(r_waited=450), slow, NOW).reservations
