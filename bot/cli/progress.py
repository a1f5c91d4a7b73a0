"""A one-line progress bar for long CLI commands (``storage copy``, ``memory embed``,
``knowledge add``), and their count tables.

No progress library is a dependency and one line rewritten with ``\\r`` is all a copy needs, so
this is twenty lines rather than a new package. The bar goes to a terminal only: piped or
redirected (cron, CI, ``2> log``) it would leave carriage returns in the log, so it stays off
there and the counts printed at the end say everything.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:  # the copy's modules load only for ``storage copy``
    from bot.cli.storage_copy import CopyReport

__all__ = ["NoProgress", "TerminalProgress", "counts_table"]

_WIDTH = 30  # characters of bar
_EVERY = 0.1  # seconds between redraws: a redraw per batch would slow a fast copy


class NoProgress:
    """No bar: output that is not a terminal (the counts printed at the end say it all)."""

    def start(self, table: str, total: int) -> None:
        pass

    def advance(self, rows: int) -> None:
        pass

    def finish(self) -> None:
        pass


class TerminalProgress:
    """:class:`bot.cli.storage_copy.CopyProgress` drawn on ``stream`` (a terminal)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._table = ""
        self._total = self._done = 0
        self._drawn_at = 0.0

    def start(self, table: str, total: int) -> None:
        self._end_line()
        self._table, self._total, self._done = table, total, 0
        self._draw(force=True)

    def advance(self, rows: int) -> None:
        self._done += rows
        self._draw(force=self._done >= self._total)

    def finish(self) -> None:
        self._end_line()

    def note(self, line: str) -> None:
        """``line`` on a line of its own above the bar, which is drawn again below it."""
        if not self._table:
            self._stream.write(line + "\n")
            return
        self._stream.write("\r\x1b[K" + line + "\n")  # the bar's line cleared, then the note
        self._draw(force=True)

    def _draw(self, *, force: bool) -> None:
        now = time.monotonic()
        if not force and now - self._drawn_at < _EVERY:
            return
        self._drawn_at = now
        share = min(self._done / self._total, 1.0) if self._total else 1.0
        filled = round(share * _WIDTH)
        bar = "#" * filled + "-" * (_WIDTH - filled)
        self._stream.write(
            f"\r{self._table:<18} [{bar}] {self._done:>12,}/{self._total:,} {share:4.0%}"
        )
        self._stream.flush()

    def _end_line(self) -> None:
        if self._table:
            self._stream.write("\n")
            self._stream.flush()
            self._table = ""


def counts_table(report: CopyReport) -> str:
    """``turns    12,345 copied, 0 already there``, one line per table, then the total."""
    width = max((len(count.table) for count in report.tables), default=0)
    lines = [
        f"{count.table:<{width}}  {count.copied:>12,} copied, {count.already_there:,} already there"
        for count in report.tables
    ]
    lines.append(f"copied {report.copied:,} rows from {report.source} to {report.target}")
    return "\n".join(lines) + "\n"
