"""A stdio server's stderr, line by line into the bot's log (not onto the console chat).

The SDK hands the child a real file descriptor for stderr, so the pump is a pipe whose read
end a daemon thread drains; each line is logged under ``bot.mcp.server.<name>`` at INFO, where
the log redactor masks secrets like any other line. The pipe ends when the child and the pump
have both closed the write end.
"""

from __future__ import annotations

import logging
import os
import threading
from types import TracebackType
from typing import IO, TextIO

__all__ = ["StderrPump"]

MAX_LINE = 2000


class StderrPump:
    def __init__(self, server: str) -> None:
        self._log = logging.getLogger(f"bot.mcp.server.{server}")
        self._file: TextIO | None = None

    def __enter__(self) -> StderrPump:
        read_fd, write_fd = os.pipe()
        self._file = os.fdopen(write_fd, "w")
        reader = os.fdopen(read_fd, "r", errors="replace")
        threading.Thread(target=self._drain, args=(reader,), daemon=True).start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    @property
    def file(self) -> TextIO:
        """The write end, for the child's stderr (while the pump is entered)."""
        assert self._file is not None, "StderrPump is not entered"
        return self._file

    def _drain(self, reader: IO[str]) -> None:
        with reader:
            for line in reader:
                text = line.rstrip()
                if text:
                    self._log.info("%s", text[:MAX_LINE])
