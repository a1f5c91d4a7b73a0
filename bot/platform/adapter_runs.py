"""Which adapters this process runs, and how each is doing: for an operator's status page.

``run`` starts every adapter through :meth:`AdapterRuns.start`, which keeps its task and, when
the task ends, whether it stopped or failed and with what. An adapter that fails at start (a
token Telegram refuses) is then a row an admin can see while the others keep serving.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from enum import StrEnum

from bot.platform.adapter import Adapter

__all__ = ["AdapterRun", "AdapterRuns", "AdapterState"]


class AdapterState(StrEnum):
    RUNNING = "running"
    STOPPED = "stopped"  # its run() returned (a shutdown, or the console's input ended)
    FAILED = "failed"  # its run() raised


@dataclass(frozen=True, slots=True)
class AdapterRun:
    name: str
    state: AdapterState
    since: float  # when it started, or when it ended
    error: str = ""  # ``TypeName: message`` of a failure (not redacted: show it through one)


class AdapterRuns:
    def __init__(self) -> None:
        self._runs: dict[str, AdapterRun] = {}

    def start(self, adapter: Adapter) -> asyncio.Task[None]:
        """``adapter.run()`` as a task, watched until it ends."""
        name = adapter.name
        self._runs[name] = AdapterRun(name, AdapterState.RUNNING, time.time())
        task = asyncio.ensure_future(adapter.run())
        task.add_done_callback(lambda done: self._ended(name, done))
        return task

    def _ended(self, name: str, task: asyncio.Task[None]) -> None:
        if task.cancelled():
            self._runs[name] = AdapterRun(name, AdapterState.STOPPED, time.time())
            return
        exc = task.exception()  # retrieved here; the awaiting caller still gets it
        if exc is None:
            self._runs[name] = AdapterRun(name, AdapterState.STOPPED, time.time())
        else:
            error = f"{type(exc).__name__}: {exc}".rstrip(": ")
            self._runs[name] = AdapterRun(name, AdapterState.FAILED, time.time(), error)

    def runs(self) -> list[AdapterRun]:
        """In the order they were started."""
        return list(self._runs.values())
