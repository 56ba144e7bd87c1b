"""Loader for one Microsoft ITP cluster file (`msr-itp-2021/clusterNN.csv`).

Format (see `msr-itp-2021/README.md`): `job_id,submission_time,duration,num_gpu`, with
`submission_time` in seconds since the start of collection (file sorted by it) and `duration`
the run time in seconds.

Decisions:
- Submit times are kept as recorded, relative to the start of collection, which is the trace's
  origin and common to all clusters; cluster01's first job arrives 22 days in. An event-driven
  replay skips the idle lead-in at no cost; metrics take their window from the jobs.
- The file is documented as sorted; we sort anyway (stable, by submit time then file order)
  rather than trust it, since it costs milliseconds.
- No tenant: the whole cluster is one queue (`queues.single_queue`).
- A 0-GPU row is skipped and counted as `zero_gpus` (the README lists GPU counts 1-64 only).
  A repeated `job_id`, anything unparsable or a negative duration is a `TraceFormatError`.
"""

from __future__ import annotations

from pathlib import Path

from phalanx.sim.traces._csv import CsvRows, parse_count, parse_duration, parse_number
from phalanx.sim.traces.records import Trace, TraceFormatError, TraceJob, skipped_counts

_COLUMNS = ("job_id", "submission_time", "duration", "num_gpu")


def load_itp(path: Path | str) -> Trace:
    """Read one ITP cluster CSV into jobs sorted by submit time (ties in file order)."""
    path = Path(path)
    raw: list[tuple[float, int, TraceJob]] = []
    seen: set[str] = set()
    zero_gpus = 0
    with CsvRows(path, _COLUMNS) as rows:
        i_id, i_sub = rows.col["job_id"], rows.col["submission_time"]
        i_dur, i_gpu = rows.col["duration"], rows.col["num_gpu"]
        for line, fields in rows:
            try:
                job_id = fields[i_id].strip()
                if not job_id:
                    raise TraceFormatError(path, line, "job_id: empty")
                if job_id in seen:
                    raise TraceFormatError(path, line, f"job_id: {job_id!r} appears twice")
                seen.add(job_id)
                submitted = parse_number(path, line, "submission_time", fields[i_sub])
                if submitted < 0:
                    raise TraceFormatError(path, line, f"submission_time: negative: {submitted}")
                duration = parse_duration(path, line, "duration", fields[i_dur])
                gpus = parse_count(path, line, "num_gpu", fields[i_gpu])
                if gpus == 0:
                    zero_gpus += 1
                    continue
                job = TraceJob(id=job_id, submit_s=submitted, gpus=gpus, duration_s=duration)
                raw.append((submitted, line, job))
            except TraceFormatError as exc:
                rows.reject(exc)
        malformed = rows.malformed
    raw.sort(key=lambda item: (item[0], item[1]))
    skipped = skipped_counts({"zero_gpus": zero_gpus}, malformed)
    return Trace(
        kind="itp",
        source=path,
        jobs=[job for _, _, job in raw],
        skipped=skipped,
        malformed=tuple(str(e) for e in malformed),
    )
