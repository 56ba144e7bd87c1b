"""Compact time series for long replays, read back as the metric module's types.

A full Philly replay takes ~10^5 cycles; keeping a `Sample` object per change and a
`QueueSnapshot` (a dict of 14 `QueueShare`s) per cycle would cost hundreds of MiB. Here values
live in flat `array`s (8 bytes each) and are turned into `Sample`/`QueueSnapshot` objects only
while a metric or a plot iterates over them.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence

from phalanx.sim.metrics import QueueShare, QueueSnapshot, Sample


class StepSeries:
    """A step function recorded as (time, value) pairs; a repeated time keeps the last value,
    an unchanged value is not recorded again."""

    __slots__ = ("t", "v")

    def __init__(self) -> None:
        self.t = array("d")
        self.v = array("d")

    def record(self, t_s: float, value: float) -> None:
        """The series takes `value` from `t_s` on."""
        if self.t and self.t[-1] == t_s:
            self.v[-1] = value
            if len(self.v) > 1 and self.v[-2] == value:
                self.t.pop()
                self.v.pop()
            return
        if self.v and self.v[-1] == value:
            return
        self.t.append(t_s)
        self.v.append(value)

    def __len__(self) -> int:
        return len(self.t)

    def samples(self) -> Iterator[Sample]:
        """The series as `Sample`s, in time order."""
        for t_s, value in zip(self.t, self.v, strict=True):
            yield Sample(t_s, value)


class QueueSeries:
    """Per-queue allocated, demand and deserved GPUs at each cycle, for a fixed list of queues.

    Two deserved figures are kept: the policy's own (what its scheduler thought each queue was
    owed) and a reference that is the same for every policy (see `engine`), so fairness can be
    compared across policies that have no queues at all.
    """

    __slots__ = ("names", "rows", "t")

    FIELDS = 4  # allocated, demand, deserved (policy), deserved (reference)

    def __init__(self, names: Sequence[str]) -> None:
        self.names = tuple(names)
        self.t = array("d")
        self.rows = array("q")

    def record(self, t_s: float, values: Sequence[int]) -> None:
        """`values` holds FIELDS numbers per queue, queue-major, in `names` order."""
        width = len(self.names) * self.FIELDS
        if self.t and self.rows[-width:] == array("q", values):
            return
        if self.t and self.t[-1] == t_s:
            self.rows[-width:] = array("q", values)
            return
        self.t.append(t_s)
        self.rows.extend(values)

    def __len__(self) -> int:
        return len(self.t)

    def snapshots(self, *, reference: bool) -> Iterator[QueueSnapshot]:
        """The rows as `QueueSnapshot`s against the policy's deserved or the reference."""
        width = len(self.names) * self.FIELDS
        column = 3 if reference else 2
        rows = self.rows
        for k, t_s in enumerate(self.t):
            base = k * width
            shares = {}
            for j, name in enumerate(self.names):
                at = base + j * self.FIELDS
                shares[name] = QueueShare(
                    allocated=rows[at], deserved=rows[at + column], demand=rows[at + 1]
                )
            yield QueueSnapshot(t_s, shares)
