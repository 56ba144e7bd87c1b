"""Tables for a terminal, JSON and YAML for scripts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from phalanx.core.reasons import format_duration
from phalanx.inspection.rows import Explanation, GangRow, ShareRow, parse_time

DASH = "-"


def eta_text(eta: str | None, now: datetime) -> str:
    """'05:22:10 (in 9m)' in local time; the date too when it is not today; '-' without ETA."""
    when = parse_time(eta)
    if when is None:
        return DASH
    local, today = when.astimezone(), now.astimezone()
    clock = local.strftime("%H:%M:%S" if local.date() == today.date() else "%Y-%m-%d %H:%M")
    wait = (when - now).total_seconds()
    return f"{clock} ({'now' if wait <= 0 else 'in ' + format_duration(wait)})"


def _cell(value: object) -> str:
    if value is None:
        return DASH
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def queue_table(rows: Sequence[GangRow], now: datetime, all_namespaces: bool) -> Table:
    table = Table(box=None, pad_edge=False, header_style="bold")
    if all_namespaces:
        table.add_column("NAMESPACE")
    for name in ("NAME", "QUEUE", "PHASE"):
        table.add_column(name)
    table.add_column("BOUND/MIN", justify="right")
    table.add_column("REASON")
    table.add_column("POSITION", justify="right")
    table.add_column("ETA")
    for r in rows:
        cells = [r.namespace] if all_namespaces else []
        cells += [
            r.name,
            r.queue,
            _cell(r.phase),
            f"{r.bound}/{r.min}",
            _cell(r.reason),
            _cell(r.position),
            eta_text(r.eta, now),
        ]
        table.add_row(*cells)
    return table


def share_table(rows: Sequence[ShareRow]) -> Table:
    table = Table(box=None, pad_edge=False, header_style="bold")
    table.add_column("QUEUE")
    for name in ("WEIGHT", "GUARANTEE", "DESERVED", "ALLOCATED", "BORROWED", "PENDING", "RUNNING"):
        table.add_column(name, justify="right")
    table.add_column("USAGE", justify="right")
    table.add_column("FAIRSHARE", justify="right")
    for r in rows:
        table.add_row(
            r.queue,
            str(r.weight),
            str(r.guarantee),
            _cell(r.deserved),
            _cell(r.allocated),
            _cell(r.borrowed),
            _cell(r.pending_gangs),
            _cell(r.running_gangs),
            usage_text(r.usage),
            _cell(r.fair_share),
        )
    return table


def usage_text(usage: float | None) -> str:
    """Decayed GPU-seconds: whole numbers, but a small usage is not shown as 0 (beside a fair
    share below 1, a 0 would look like a mistake: any usage at all lowers the factor)."""
    if usage is None:
        return DASH
    if 0 < usage < 10:
        return f"{usage:.2g}"
    return str(round(usage))


def share_notes(
    rows: Sequence[ShareRow], queueless: Mapping[str, Sequence[str]] | None = None
) -> list[str]:
    """Messages the operator left on queues (e.g. guarantees scaled down), why a queue
    deserves less than its guarantee when that is its demand, and the gangs that hold GPUs
    though their queue no longer exists (`rows.queueless`)."""
    notes = [f"{r.queue}: {r.message}" for r in rows if r.message]
    notes += [
        f"{queue} (no such Queue): {len(gangs)} gang{'s' if len(gangs) != 1 else ''} of it "
        f"hold{'s' if len(gangs) == 1 else ''} GPUs charged to no queue, outside every row "
        f"above: {', '.join(gangs)}; they run on, and a Queue {queue} applied again is charged "
        "with them (its usage starting from 0)"
        for queue, gangs in (queueless or {}).items()
    ]
    notes += [
        f"{r.queue}: deserves {r.deserved} of its guarantee {r.guarantee}: a queue deserves no "
        "more than its demand (GPUs its gangs hold and wait for); the rest is lent to other "
        "queues and reclaimed when it asks for it"
        for r in rows
        if r.demand_capped
    ]
    return notes


def explanation_text(e: Explanation, now: datetime) -> Text:
    out = Text()

    def line(label: str, value: str) -> None:
        out.append(f"{label:<10}", style="bold")
        out.append(f"{value}\n")

    if e.member_of:
        line("Pod", f"{e.namespace}/{e.member_of}, a member of this PodGroup")
    if e.kind == "Pod":
        queue = f"queue {e.queue}" if e.queue else "queue: its workload's or namespace's label"
        line("Pod", f"{e.namespace}/{e.name} (a gang of one, no PodGroup; {queue})")
    else:
        line(e.kind, f"{e.namespace}/{e.name} (queue {e.queue})")
    line("Phase", _cell(e.phase))
    line("Reason", _cell(e.reason))
    if e.finished:
        line("Finished", e.finished)
    if e.message:
        line("Message", e.message)
    if e.position is not None:
        line("Position", f"{e.position} in queue {e.queue}")
    if e.eta is not None or e.phase in (None, "Pending"):
        line("ETA", eta_text(e.eta, now))
    if e.evicted:
        line("Evicted", e.evicted)
    if e.members is not None:
        line("Members", e.members.text(e.phase))
    if e.degraded:
        line("Degraded", e.degraded)
    if e.not_started:
        line("Started", e.not_started)
    if e.detail:
        out.append("Numbers\n", style="bold")
        for key, value in e.detail.items():
            out.append(f"  {key:<20}{value}\n")
    if e.would_start:
        out.append("What would let it start\n", style="bold")
        for hint in e.would_start:
            out.append(f"  - {hint}\n")
    if e.events:
        out.append(f"Events (the last {len(e.events)})\n", style="bold")
        for event in e.events:
            out.append(f"  {event.text(now)}\n")
    out.rstrip()
    return out


def show(renderable: Table | Text) -> None:
    """Print on stdout, never cropping a table: wider than the terminal, let the terminal wrap
    (as kubectl does); into a pipe, at full width."""
    out = Console(highlight=False)
    need = Measurement.get(out, out.options.update_width(10_000), renderable).maximum
    if need > out.width:
        out = Console(highlight=False, width=need)
    out.print(renderable)
