"""``python -m bot doctor``: is everything this deployment needs working, and if not, what to do.

Each check gives one :class:`Check` row: ``ok``, ``FAIL`` (something needed is broken: the
exit status is non-zero) or ``warn`` (works, but not as configured or not fully), with what was
found and, for each problem, the fix. The core's checks (config, database, LLM endpoints) live
here; each platform's come from its adapter module's optional ``diagnose(settings)`` (found by
name, like ``create_adapter``: the core never imports an adapter). Rows are rendered through the
log redactor, so a token or key in an error message is masked like in the logs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from bot.config import Settings

__all__ = ["Check", "Diagnose", "exit_code", "fail", "passed", "warn"]

Status = Literal["ok", "FAIL", "warn"]


@dataclass(frozen=True, slots=True)
class Check:
    """One row: ``ok`` False with ``needed`` True fails the run; with ``needed`` False it warns."""

    name: str
    ok: bool
    detail: str
    fix: str = ""
    needed: bool = True

    @property
    def status(self) -> Status:
        if self.ok:
            return "ok"
        return "FAIL" if self.needed else "warn"


Diagnose = Callable[["Settings"], Awaitable[list[Check]]]
"""An adapter's ``diagnose(settings)``: its platform's rows (token, permissions, ...)."""


def passed(name: str, detail: str) -> Check:
    return Check(name, True, detail)


def fail(name: str, detail: str, fix: str) -> Check:
    return Check(name, False, detail, fix)


def warn(name: str, detail: str, fix: str) -> Check:
    return Check(name, False, detail, fix, needed=False)


def exit_code(checks: Sequence[Check]) -> int:
    """0 when everything needed works (warnings alone included), else 1."""
    return 1 if any(c.status == "FAIL" for c in checks) else 0
