"""Loader for the Microsoft Philly job table shipped with the Pollux artifact (`philly.csv`),
and for the Philly virtual-cluster sizes (`philly_vc.csv`).

Format (see `philly-pollux/README.md`): `timestamp,duration,num_gpus,gpu_time,cluster`, with
`timestamp` as `YYYY-MM-DD HH:MM:SS` (the arrival time, per Pollux's generator), `duration` in
seconds, `cluster` the VC id (the tenant). Rows are NOT sorted.

Decisions:
- Submit time is seconds since the earliest timestamp in the file (Philly has no other origin).
  Timestamps carry no zone; they are read as UTC, i.e. with no daylight-saving jumps, so a
  difference between two of them is wall-clock seconds as recorded.
- There is no job id column: a job's id is `philly-<line>`, its line number in the file (the
  header is line 1), which is stable and lets anyone find the row.
- `gpu_time` is redundant (`duration x num_gpus` on every row, per the README) and not read.
- A row with 0 GPUs is skipped and counted as `zero_gpus` (the README lists none: the trace is
  GPU jobs only, and a job without GPUs does not compete for what Phalanx schedules). Anything
  unparsable, a negative duration, or an empty VC id is a `TraceFormatError`.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from phalanx.sim.traces._csv import CsvRows, parse_count, parse_duration
from phalanx.sim.traces.records import Trace, TraceFormatError, TraceJob, skipped_counts

_COLUMNS = ("timestamp", "duration", "num_gpus", "cluster")
_VC_COLUMNS = ("vc", "node num")
_EPOCH = datetime(1970, 1, 1)


def load_philly(path: Path | str) -> Trace:
    """Read `philly.csv` into jobs sorted by submit time (ties in file order)."""
    path = Path(path)
    raw: list[tuple[float, int, float, int, str]] = []
    zero_gpus = 0
    with CsvRows(path, _COLUMNS) as rows:
        i_ts, i_dur = rows.col["timestamp"], rows.col["duration"]
        i_gpu, i_vc = rows.col["num_gpus"], rows.col["cluster"]
        for line, fields in rows:
            try:
                text = fields[i_ts]
                try:
                    submitted = (datetime.fromisoformat(text) - _EPOCH).total_seconds()
                except ValueError:
                    raise TraceFormatError(
                        path, line, f"timestamp: not YYYY-MM-DD HH:MM:SS: {text!r}"
                    ) from None
                duration = parse_duration(path, line, "duration", fields[i_dur])
                gpus = parse_count(path, line, "num_gpus", fields[i_gpu])
                vc = fields[i_vc].strip()
                if not vc:
                    raise TraceFormatError(path, line, "cluster: empty virtual-cluster id")
                if gpus == 0:
                    zero_gpus += 1
                    continue
                raw.append((submitted, line, duration, gpus, vc))
            except TraceFormatError as exc:
                rows.reject(exc)
        malformed = rows.malformed
    raw.sort()
    origin = raw[0][0] if raw else 0.0
    jobs = [
        TraceJob(
            id=f"philly-{line}",
            submit_s=submitted - origin,
            gpus=gpus,
            duration_s=duration,
            tenant=vc,
        )
        for submitted, line, duration, gpus, vc in raw
    ]
    skipped = skipped_counts({"zero_gpus": zero_gpus}, malformed)
    return Trace(
        kind="philly",
        source=path,
        jobs=jobs,
        skipped=skipped,
        malformed=tuple(str(e) for e in malformed),
    )


def load_philly_vc_sizes(path: Path | str) -> dict[str, int]:
    """Read `philly_vc.csv` (`vc,node num`) into {VC id: nodes}, in file order.

    A repeated VC or a node count that is not a positive integer is a `TraceFormatError`:
    the file is a quota vector, and a silent fix would change every queue's guarantee.
    """
    path = Path(path)
    sizes: dict[str, int] = {}
    with CsvRows(path, _VC_COLUMNS) as rows:
        i_vc, i_nodes = rows.col["vc"], rows.col["node num"]
        for line, fields in rows:
            vc = fields[i_vc].strip()
            if not vc:
                raise TraceFormatError(path, line, "vc: empty virtual-cluster id")
            if vc in sizes:
                raise TraceFormatError(path, line, f"vc: {vc!r} listed twice")
            nodes = parse_count(path, line, "node num", fields[i_nodes])
            if nodes == 0:
                raise TraceFormatError(path, line, f"node num: must be > 0 for {vc!r}")
            sizes[vc] = nodes
    return sizes
