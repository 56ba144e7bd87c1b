"""The `phalanx simulate --policy` choices, as configurations of one harness.

Every baseline that can be written as a configuration of the core *is* one, so the comparison
measures the policy, not two implementations: same placement code, same replay, same limits.
Only `pod` (no gangs at all) needs its own small placement routine (`phalanx.sim.podsched`).

- `pod`: what the default kube-scheduler does — pods placed one by one in creation order on a
  random node that fits (GPUs are not in its default scoring), no gangs, no queues; a job runs
  only once all its pods are bound, so partly placed jobs hold GPUs idle and can deadlock.
- `fifo-gang`: gangs all-or-nothing in FIFO order in one queue, no backfill, reclaim or
  preemption; a gang that does not fit is skipped (as scheduler-plugins coscheduling does).
- `volcano`: gangs with weighted proportional queues (guarantees and weights) and reclaim of
  borrowed capacity, but no backfill reservations and no usage decay (Volcano's `proportion`).
- `phalanx`: the operator's shipped defaults (`phalanx.config.OperatorConfig().to_policy()`, so
  the simulator and the operator run one `Policy`): reclaim, preemption, decayed fair share,
  time-limit backfill with starvation-bounded reservations and the multifactor order with a
  work term (issue 19; `bench/SIM.md` says why each default is what it is). The only
  difference: gangs that hold no reservation get no non-binding ETA here
  (`estimate_unreserved=False`), which changes no decision and saves the plans.
- `phalanx-conservative`: the policy `phalanx` was before issue 19 — FIFO, and the first gang
  of the walk that cannot start holds a binding reservation at once (backfill depth
  `PHALANX_BACKFILL_DEPTH`), everything else backfills around it.

`with_settings` derives a variant with some core `Policy` fields changed (`phalanx simulate
--set FIELD=VALUE`), for measuring one mechanism at a time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace

from phalanx.core import Policy

PHALANX_BACKFILL_DEPTH = 1
"""Reservations per cycle of `phalanx-conservative` (the simulated `phalanx` before issue 19):
only the first gang of the walk that cannot start gets one (EASY backfill, as Slurm's
`bf_max_job_test` or Maui's reservation depth set low); every later gang starts if it fits and
delays that one reservation.

Why not the product default of 100 (conservative backfill): measured on ITP cluster04 (medium),
reservations for every waiting gang within depth 100 hold capacity for whichever gangs are
first in FIFO order, so the waits of all sizes even out and the single-GPU jobs (75% of the
jobs) lose the head start greedy placement gives them — mean wait +103% against `volcano` on
the full trace. On its first 3,000 jobs: volcano 15.1 h, depth 100 17.5 h, depth 10 17.2 h,
depth 1 15.4 h; the worst wait of the largest gangs 67.9 h, 41.3 h, 42.1 h, 43.3 h. Exact time
limits instead of the rounded ones did not help (18.6 h at depth 100), so the rounding is not
the cause; the number of reservations is. `bench/SIM.md` has the full-trace figures."""


def _recorded(policy: Policy) -> Policy:
    """`policy` with the reclaim accounting the baselines (`fifo-gang`, `volcano`,
    `phalanx-conservative`) were recorded with, before issue 19's churn fix: a queue's gangs
    that reclaimed were not charged to it for the rest of the cycle. Kept so their recorded
    replays stay the ones this code runs (`make bench-sim --reuse`); `phalanx` has the fix.
    (`evict_before_walk` changes nothing for them: they plan nothing before the walk.)"""
    return replace(policy, charge_promised=False, evict_before_walk=True)


def shipped_policy() -> Policy:
    """The operator's default `Policy` (its config defaults), without non-binding ETAs."""
    from phalanx.config import OperatorConfig

    return replace(OperatorConfig().to_policy(), estimate_unreserved=False)


@dataclass(frozen=True, slots=True)
class SimPolicy:
    """One simulated policy.

    `core` is the core configuration (`None` for the pod-by-pod baseline). `queues`: gangs go to
    their trace queue (Philly VC) rather than one shared queue. `usage_decay`: queues accrue
    decayed GPU-seconds that lower their fair-share factor.
    """

    name: str
    description: str
    core: Policy | None
    queues: bool
    usage_decay: bool


POLICIES: dict[str, SimPolicy] = {
    p.name: p
    for p in (
        SimPolicy(
            "pod",
            "pod by pod in creation order on a random fitting node, no gangs, no queues "
            "(the default scheduler); partly placed jobs hold GPUs and can deadlock",
            core=None,
            queues=False,
            usage_decay=False,
        ),
        SimPolicy(
            "fifo-gang",
            "all-or-nothing gangs in FIFO order in one queue; no backfill, reclaim or "
            "preemption (scheduler-plugins coscheduling)",
            core=_recorded(Policy(backfill=False, reclaim=False, preemption=False)),
            queues=False,
            usage_decay=False,
        ),
        SimPolicy(
            "volcano",
            "gangs in weighted proportional queues with reclaim; no backfill, no usage decay "
            "(Volcano gang + proportion + reclaim)",
            core=_recorded(Policy(backfill=False, reclaim=True, preemption=False)),
            queues=True,
            usage_decay=False,
        ),
        SimPolicy(
            "phalanx",
            "the operator's defaults: gangs, fair-share queues with 7-day usage decay, reclaim, "
            "preemption, multifactor order with a work term and an absolute age (7 days), "
            "time-limit backfill with starvation-bounded reservations placed where they hold "
            "the least capacity idle, honoured from half a leaf",
            core=shipped_policy(),
            queues=True,
            usage_decay=True,
        ),
        SimPolicy(
            "phalanx-conservative",
            "Phalanx before issue 19: gangs, fair-share queues with 7-day usage decay, reclaim, "
            "preemption, FIFO, time-limit backfill behind a reservation for the first gang "
            f"that cannot start (backfill depth {PHALANX_BACKFILL_DEPTH})",
            core=_recorded(Policy(backfill_depth=PHALANX_BACKFILL_DEPTH)),
            queues=True,
            usage_decay=True,
        ),
    )
}
"""The policies by `--policy` name, in the order tables list them."""


def get_policy(name: str) -> SimPolicy:
    """The policy called `name`; `ValueError` naming the valid choices otherwise."""
    try:
        return POLICIES[name]
    except KeyError:
        raise ValueError(f"unknown policy {name!r}: use one of {', '.join(POLICIES)}") from None


def _kind(default: object) -> str:
    """'bool', 'int' or 'float', from a field's default value: the annotations are strings in
    the pure-Python core and classes in the mypyc-compiled one, the defaults the same in both."""
    if isinstance(default, bool):
        return "bool"
    return "int" if isinstance(default, int) else "float"


_SETTABLE = {
    f.name: _kind(f.default)
    for f in fields(Policy)
    if f.name not in ("topology_levels", "fair_share_resource", "estimate_unreserved")
}


def with_settings(policy: SimPolicy, settings: dict[str, str]) -> SimPolicy:
    """`policy` with core fields changed (`name=value` strings, as `--set` gives them).

    `usage_decay` is the simulator's switch, not a core field: off, queues accrue no usage and
    their deserved shares are water-filled by weight alone, as the fairness reference is (to
    measure what the decayed fair share costs the share goal).

    `ValueError` naming the setting for an unknown field, a value that is not a number (or not
    true/false for a switch), or a negative or non-finite number."""
    if not settings:
        return policy
    if policy.core is None:
        raise ValueError(f"policy {policy.name!r} has no core settings to change")
    changes: dict[str, object] = {}
    for name, raw in settings.items():
        kind = "bool" if name == "usage_decay" else _SETTABLE.get(name)
        if kind is None:
            raise ValueError(
                f"--set {name}: not a setting; use one of usage_decay, {', '.join(_SETTABLE)}"
            )
        text = raw.strip().lower()
        if kind == "bool":
            if text not in ("true", "false", "1", "0"):
                raise ValueError(f"--set {name}={raw}: must be true or false")
            changes[name] = text in ("true", "1")
            continue
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"--set {name}={raw}: not a number") from None
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"--set {name}={raw}: must be a finite number >= 0")
        if kind == "int":
            if value != int(value):
                raise ValueError(f"--set {name}={raw}: must be a whole number")
            changes[name] = int(value)
        else:
            changes[name] = value
    label = ",".join(f"{k}={v}" for k, v in sorted(settings.items()))
    decay = bool(changes.pop("usage_decay", policy.usage_decay))
    return replace(
        policy,
        description=f"{policy.description}; with {label}",
        core=replace(policy.core, **changes),  # type: ignore[arg-type]
        usage_decay=decay,
    )
