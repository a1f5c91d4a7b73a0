"""The last warnings and errors, kept in memory for an operator's page (the dashboard's status).

A logging handler on the root logger, installed while the app runs: each WARNING-or-worse
record becomes a :class:`LogLine` whose text has already been through the :class:`Redactor`,
so a token that reaches a log line is masked before it is stored and can never be shown.
Bounded: the newest :data:`KEPT` lines, each cut at :data:`MAX_CHARS`.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from dataclasses import dataclass

from bot.guardrails.redact import Redactor

__all__ = ["KEPT", "MAX_CHARS", "LogLine", "RecentLog"]

KEPT = 100  # lines held; older ones drop off
MAX_CHARS = 2000  # of one line's message (a huge payload in a message stays out of memory)


@dataclass(frozen=True, slots=True)
class LogLine:
    at: float  # the record's time (seconds since the epoch)
    level: str  # WARNING, ERROR, CRITICAL
    logger: str  # where it came from
    message: str  # redacted, at most MAX_CHARS
    error: str = ""  # the exception's last line (``TypeName: message``), redacted


class RecentLog(logging.Handler):
    def __init__(self, redactor: Redactor, kept: int = KEPT) -> None:
        super().__init__(logging.WARNING)
        self._redact = redactor
        self._lines: deque[LogLine] = deque(maxlen=kept)
        self._guard = threading.Lock()  # records arrive from worker threads too

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: keep what was given
            message = f"{record.msg!r} {record.args!r}"
        error = ""
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            error = f"{type(exc).__name__}: {exc}".rstrip(": ")
        line = LogLine(
            at=record.created,
            level=record.levelname,
            logger=record.name,
            message=self._redact(message)[:MAX_CHARS],  # masked whole, then cut: no half
            error=self._redact(error)[:MAX_CHARS],  # a secret escapes at the cut
        )
        with self._guard:
            self._lines.append(line)

    def lines(self) -> list[LogLine]:
        """Newest first."""
        with self._guard:
            return list(reversed(self._lines))

    def install(self) -> None:
        logging.getLogger().addHandler(self)

    def remove(self) -> None:
        logging.getLogger().removeHandler(self)
