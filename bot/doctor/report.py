"""The doctor's rows as a table for a terminal, or as JSON lines; every line redacted."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from bot.doctor import Check
from bot.text import counted

__all__ = ["json_lines", "table"]

_HEADER = ("check", "status", "found")


def table(checks: Sequence[Check], redact: Callable[[str], str]) -> str:
    """One row per check; a failure's or warning's fix on the line below it, indented."""
    width = max(len(_HEADER[0]), *(len(c.name) for c in checks)) if checks else len(_HEADER[0])
    status_width = 6
    indent = " " * (width + status_width + 4)
    lines = [f"{_HEADER[0]:<{width}}  {_HEADER[1]:<{status_width}}  {_HEADER[2]}"]
    for check in checks:
        detail = check.detail.replace("\n", " ")
        lines.append(f"{check.name:<{width}}  {check.status:<{status_width}}  {detail}")
        if not check.ok and check.fix:
            lines.append(f"{indent}fix: {check.fix}")
    failed = sum(c.status == "FAIL" for c in checks)
    warned = sum(c.status == "warn" for c in checks)
    lines.append("")
    lines.append(
        f"{failed} failed, {counted(warned, 'warning')}: "
        + ("fix the FAIL rows above" if failed else "everything needed works")
    )
    return "".join(redact(line).rstrip() + "\n" for line in lines)


def json_lines(checks: Sequence[Check], redact: Callable[[str], str]) -> str:
    """One JSON object per check: name, status, detail, fix."""
    out = []
    for check in checks:
        record = {
            "name": redact(check.name),
            "status": check.status,
            "detail": redact(check.detail),
            "fix": redact(check.fix) if not check.ok else "",
        }
        out.append(json.dumps(record, ensure_ascii=False) + "\n")
    return "".join(out)
