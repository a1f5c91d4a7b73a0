"""The Markdown output: a header line about the machine, then one table of every figure."""

from __future__ import annotations

import os
import platform
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import openai

from bench.common import Row


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_line() -> str:
    return (
        f"Machine: {os.cpu_count()} cores ({_cpu_model()}), {platform.system()}, "
        f"Python {platform.python_version()}, openai {openai.__version__}, "
        f"SQLite {sqlite3.sqlite_version}"
    )


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render(rows: Sequence[Row]) -> str:
    lines = [
        "| Section | Case | Figure | Target | Result |",
        "| --- | --- | ---: | --- | --- |",
    ]
    previous = ""
    for row in rows:
        section = row.section if row.section != previous else ""  # name each section once
        previous = row.section
        cells = (section, row.case, row.figure, row.target, row.verdict)
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines)
