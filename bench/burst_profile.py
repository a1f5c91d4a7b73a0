"""The profile of section 13 (``python -m bench.burst --profile FILE``): where a burst's time goes.

cProfile runs in the bench's thread from the push to the last edit of a 200-chat SQLite burst
(:func:`bench.burst.run_once`); aiosqlite's thread is not in it. The report: own time per package
and turn, our functions (``bot/``, ``adapters/``) by cumulative and own time, everything by own
time, and for the costliest functions outside our code the chain of their most expensive callers
up to the first of ours, which says which line of ours to look at.
"""

from __future__ import annotations

import cProfile
import io
import pstats
from pathlib import Path
from typing import Any

from bench.burst_rows import RunFigures
from bench.common import PROJECT

CHAINS = 15  # library functions whose callers are followed up to our code
_DEPTH = 20

Key = tuple[str, int, str]


def profile_report(profiler: cProfile.Profile, figures: RunFigures, limit: int = 40) -> str:
    """The top ``limit`` functions of ``bot/`` and ``adapters/``, by cumulative and own time."""
    out = io.StringIO()
    ours = rf"{PROJECT}/(bot|adapters)/"
    stats = pstats.Stats(profiler, stream=out)
    out.write(
        f"Parlour, SQLite, {figures.chats}-chat burst, 1 s model, under cProfile (this thread only;"
        f" aiosqlite's thread is not in it). Wall {figures.wall:.2f} s with the profiler;"
        f" right {figures.right}, wrong {figures.wrong}, missing {figures.missing}."
        f" Function calls in this thread: {stats.total_calls:,}"  # type: ignore[attr-defined]
        f" ({stats.total_calls / figures.chats:,.0f} per turn).\n"  # type: ignore[attr-defined]
    )
    out.write(
        "(A coroutine counts one call per resumption; cumulative time is time on the stack,"
        " not time suspended.)\n\n==== own time by package, ms per turn ====\n"
    )
    for package, seconds in _by_package(stats):
        out.write(f"{seconds / figures.chats * 1000:8.3f}  {package}\n")
    for key in ("cumulative", "tottime"):
        out.write(f"\n==== bot/ and adapters/, top {limit} by {key} ====\n")
        stats.sort_stats(key).print_stats(ours, limit)
    out.write(f"\n==== everything, top {limit} by tottime ====\n")
    stats.sort_stats("tottime").print_stats(limit)
    out.write(f"\n==== the top {CHAINS} outside our code by own time, up to our code ====\n")
    for line in _chains(stats, CHAINS):
        out.write(line + "\n")
    return out.getvalue().replace(f"{PROJECT}/", "")


def _by_package(stats: pstats.Stats) -> list[tuple[str, float]]:
    """Own time summed per package (``bot``, ``adapters``, a site-package, the stdlib module,
    or ``built-in`` for C functions called from anywhere; the event loop's wait apart), largest
    first."""
    totals: dict[str, float] = {}
    entries: dict[tuple[str, int, str], tuple[Any, ...]] = stats.stats  # type: ignore[attr-defined]
    for (filename, _, function), (_, _, own, *_) in entries.items():
        path = Path(filename)
        if "select.epoll" in function:
            package = "waiting for I/O (epoll: idle, not work)"
        elif filename == "~" or not path.is_absolute():
            package = "built-in"
        elif "site-packages" in path.parts:  # before PROJECT: the virtualenv may lie inside it
            package = path.parts[path.parts.index("site-packages") + 1].removesuffix(".py")
        elif path.is_relative_to(PROJECT):
            package = path.relative_to(PROJECT).parts[0]
        else:  # lib/python3.x/asyncio/events.py, lib/python3.x/selectors.py
            top = path.parent.name
            package = f"stdlib {path.stem if top.startswith('python') else top}"
        totals[package] = totals.get(package, 0.0) + own
    return sorted(totals.items(), key=lambda item: -item[1])


def _ours(key: Key) -> bool:
    path = Path(key[0])
    return path.is_relative_to(PROJECT) and path.relative_to(PROJECT).parts[0] in (
        "bot",
        "adapters",
    )


def _label(key: Key) -> str:
    filename, line, function = key
    if filename == "~":
        return function
    path = Path(filename)
    if path.is_relative_to(PROJECT):
        return f"{path.relative_to(PROJECT)}:{line}({function})"
    parts = path.parts
    short = "/".join(
        parts[parts.index("site-packages") + 1 :] if "site-packages" in parts else parts[-2:]
    )
    return f"{short}:{line}({function})"


def _chains(stats: pstats.Stats, count: int) -> list[str]:
    """For the ``count`` functions outside our code with the most own time (the event loop's
    wait aside): the chain of most expensive callers up to the first function of ours."""
    entries: dict[Key, tuple[Any, ...]] = stats.stats  # type: ignore[attr-defined]
    foreign = [k for k in entries if not _ours(k) and "select.epoll" not in k[2]]
    foreign.sort(key=lambda k: -entries[k][2])
    lines: list[str] = []
    for key in foreign[:count]:
        _, calls, own, *_ = entries[key]
        lines.append(f"{own:7.3f} s own, {calls} calls: {_label(key)}")
        seen, current = {key}, key
        for _ in range(_DEPTH):
            callers: dict[Key, tuple[Any, ...]] = entries[current][4]
            ranked = sorted(callers, key=lambda c: -callers[c][3])
            current = next((c for c in ranked if c not in seen), None)  # type: ignore[assignment]
            if current is None:
                break
            seen.add(current)
            lines.append(f"          <- {_label(current)}")
            if _ours(current):
                break
    return lines
