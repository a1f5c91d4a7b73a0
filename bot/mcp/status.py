"""What is known about each MCP server right now: for ``/tools``, ``doctor`` and the logs."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["ServerState", "ServerStatus", "Skipped"]


@dataclass(frozen=True, slots=True)
class Skipped:
    """A server's tool left out of the registry, and why (a schema the chat API refuses)."""

    name: str
    reason: str


class ServerState(StrEnum):
    STARTING = "starting"  # connecting for the first time
    READY = "ready"  # connected; its tools are offered
    RETRYING = "retrying"  # failed or crashed; the next attempt is scheduled
    STOPPED = "stopped"  # the bot is shutting down


@dataclass(frozen=True, slots=True)
class ServerStatus:
    name: str
    transport: str  # "stdio" or "http"
    state: ServerState
    tools: tuple[str, ...] = ()  # names offered to the model (when ready)
    skipped: tuple[Skipped, ...] = ()  # tools left out, and why
    error: str = ""  # the last failure, in one line (never a header or an env value)
    retry_in: float | None = None  # seconds until the next attempt (retrying)
    restarts: int = 0  # connections after the first (crashes and failures survived)

    def line(self) -> str:
        """``search: ready, 3 tools`` / ``ops: retrying in 8 s (connection refused)``."""
        if self.state is ServerState.READY:
            count = len(self.tools)
            text = f"{self.name}: ready, {count} tool{'s' if count != 1 else ''}"
            if self.skipped:
                text += f", {len(self.skipped)} skipped"
            return text
        if self.state is ServerState.RETRYING:
            # retry_in None: the next attempt is under way
            wait = f" in {self.retry_in:.0f} s" if self.retry_in is not None else " now"
            return f"{self.name}: retrying{wait} ({self.error or 'failed'})"
        return f"{self.name}: {self.state.value}"
