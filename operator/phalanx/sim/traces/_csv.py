"""Shared CSV plumbing for the loaders: header checks, numbered rows, field parsers.

The loaders stream rows with `csv.reader` (not `DictReader`: index look-ups are about twice as
fast on the 82k-row Philly file) and turn every parse failure into a `TraceFormatError` naming
the file and line. A header that does not fit means the wrong file and stops the load; a data
row that does not parse is reported by its line and skipped (`CsvRows.reject`), and the count
of such rows is in the trace's `skipped["malformed"]`, so nothing is dropped silently and one
damaged row does not cost the whole replay (issue 19).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator, Sequence
from pathlib import Path

from phalanx.sim.traces.records import TraceFormatError


class CsvRows:
    """Numbered data rows of a CSV file whose header must contain `required` columns.

    Iterating yields `(line, fields)`; `col[name]` is the index of a column, so callers read
    `fields[col["duration"]]`. Rows with the wrong number of fields raise at once. Blank lines
    (e.g. a trailing newline) are skipped. Use as a context manager to close the file.
    """

    def __init__(self, path: Path, required: Sequence[str]) -> None:
        self.path = path
        try:
            self._file = path.open(newline="", encoding="utf-8")
        except OSError as exc:
            raise TraceFormatError(path, None, f"cannot open: {exc.strerror or exc}") from exc
        self._reader = csv.reader(self._file)
        try:
            header = next(self._reader)
        except StopIteration:
            self._file.close()
            raise TraceFormatError(path, None, "empty file, expected a header row") from None
        except (csv.Error, UnicodeDecodeError) as exc:
            self._file.close()
            raise TraceFormatError(path, 1, f"unreadable header: {exc}") from exc
        header = [name.strip().lstrip("\ufeff") for name in header]
        missing = [name for name in required if name not in header]
        if missing:
            self._file.close()
            raise TraceFormatError(
                path, 1, f"missing column(s) {', '.join(missing)}; header is {','.join(header)}"
            )
        self.col = {name: i for i, name in enumerate(header)}
        self.width = len(header)
        #: Data rows skipped because they did not parse, in file order.
        self.malformed: list[TraceFormatError] = []

    def reject(self, error: TraceFormatError) -> None:
        """Skip the row `error` is about (the loader calls this instead of raising)."""
        self.malformed.append(error)

    def __enter__(self) -> CsvRows:
        return self

    def __exit__(self, *_exc: object) -> None:
        self._file.close()

    def __iter__(self) -> Iterator[tuple[int, list[str]]]:
        reader = self._reader
        try:
            for fields in reader:
                if not fields:
                    continue
                if len(fields) != self.width:
                    self.reject(
                        TraceFormatError(
                            self.path,
                            reader.line_num,
                            f"expected {self.width} fields, got {len(fields)}",
                        )
                    )
                    continue
                yield reader.line_num, fields
        except (csv.Error, UnicodeDecodeError) as exc:
            raise TraceFormatError(self.path, reader.line_num, f"unreadable row: {exc}") from exc


def parse_number(path: Path, line: int, column: str, text: str) -> float:
    """A finite float from `text`, or a `TraceFormatError` naming the column."""
    try:
        value = float(text)
    except ValueError:
        raise TraceFormatError(path, line, f"{column}: not a number: {text!r}") from None
    if not math.isfinite(value):
        raise TraceFormatError(path, line, f"{column}: not a finite number: {text!r}")
    return value


def parse_count(path: Path, line: int, column: str, text: str) -> int:
    """A non-negative integer from `text` ("8" or "8.0"), or a `TraceFormatError`."""
    value = parse_number(path, line, column, text)
    if value < 0 or value != int(value):
        raise TraceFormatError(path, line, f"{column}: not a non-negative integer: {text!r}")
    return int(value)


def parse_duration(path: Path, line: int, column: str, text: str) -> float:
    """A run time in seconds; negative is a format error (no README allows one)."""
    value = parse_number(path, line, column, text)
    if value < 0:
        raise TraceFormatError(path, line, f"{column}: negative duration: {text!r}")
    return value
