"""Tokens per day as an SVG bar chart, drawn on the server (no chart library, no script).

The template gets plain numbers (rectangles, ticks) and writes the ``<svg>``; the bars stack
prompt tokens not served from cache, cached prompt tokens, and completion tokens, so a bar's
height is the day's total.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from adapters.http.admin.schemas import UsageDay

__all__ = ["Bar", "Chart", "bar_chart"]

WIDTH, HEIGHT = 640, 220
LEFT, BOTTOM, TOP = 48, 28, 10


@dataclass(frozen=True, slots=True)
class Rect:
    kind: str  # css class: prompt, cached, completion
    x: float
    y: float
    width: float
    height: float


@dataclass(frozen=True, slots=True)
class Bar:
    day: str
    label: str  # "12-01" under the bar
    x: float  # the label's centre
    title: str  # the tooltip: the day's figures
    rects: tuple[Rect, ...]


@dataclass(frozen=True, slots=True)
class Tick:
    y: float
    label: str


@dataclass(frozen=True, slots=True)
class Chart:
    width: int
    height: int
    left: int
    base: float  # the y of the axis
    bars: tuple[Bar, ...]
    ticks: tuple[Tick, ...]
    empty: bool


def _scale(peak: int) -> int:
    """A round top for the axis, at or above ``peak``."""
    step = 1
    while step * 10 < peak:
        step *= 10
    for factor in (1, 2, 5, 10):
        if step * factor >= peak:
            return step * factor
    return step * 10


def _short(n: int) -> str:
    return f"{n / 1_000_000:g}M" if n >= 1_000_000 else f"{n / 1000:g}k" if n >= 1000 else str(n)


def bar_chart(days: Sequence[UsageDay]) -> Chart:
    """The days of :func:`adapters.http.admin.ops.usage`, oldest first."""
    peak = max((day.total_tokens for day in days), default=0)
    top = _scale(max(peak, 1))
    base: float = HEIGHT - BOTTOM
    room = base - TOP
    slot = (WIDTH - LEFT) / max(len(days), 1)
    width = max(slot * 0.7, 2)
    bars = []
    for i, day in enumerate(days):
        x = LEFT + i * slot + (slot - width) / 2
        y: float = base
        rects = []
        parts = (
            ("prompt", day.prompt_tokens - day.cached_tokens),
            ("cached", day.cached_tokens),
            ("completion", day.completion_tokens),
        )
        for kind, value in parts:
            if value <= 0:
                continue
            height = room * value / top
            y -= height
            rects.append(Rect(kind, round(x, 1), round(y, 1), round(width, 1), round(height, 1)))
        title = (
            f"{day.day}: {day.prompt_tokens} prompt ({day.cached_tokens} cached), "
            f"{day.completion_tokens} completion"
        )
        bars.append(Bar(day.day, day.day[5:], round(x + width / 2, 1), title, tuple(rects)))
    ticks = tuple(Tick(round(base - room * f, 1), _short(round(top * f))) for f in (0, 0.5, 1))
    return Chart(WIDTH, HEIGHT, LEFT, base, tuple(bars), ticks, empty=peak == 0)
