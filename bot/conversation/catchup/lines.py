"""A transcript as the model reads it: one quoted line per message, within a token budget, cut
into chunks for the summarising steps.

Each message is one JSON array on one line, ``["14:02", "Alice", "the words"]`` (the bot's
answer to it follows as ``["14:02", "(bot)", "..."]``), so a message's newlines or quotes can
never start a line that poses as another speaker (:func:`bot.prompt.safety.one_line_json`);
names are single-line and capped (:func:`bot.context.display_name`). Over the budget the oldest
messages go first: a catch-up is about the newest. Pure, apart from the token counter.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from bot.context import display_name
from bot.prompt.safety import one_line_json
from bot.storage.transcript import Said

__all__ = ["BOT_SPEAKER", "Line", "chunks", "clock", "lines_of", "within"]

BOT_SPEAKER = "(bot)"
MESSAGE_CHARS = 1200  # one message's words at most (the rest is cut, with "…")
ANSWER_CHARS = 600  # the bot's answers matter less than what people said
Count = Callable[[str], int]
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Line:
    """One message's lines as sent, and their tokens."""

    said: Said
    text: str  # one or two JSON lines (the message, then the bot's answer)
    tokens: int


def clock(at: float) -> str:
    """``HH:MM`` in UTC (a day older: ``MM-DD HH:MM``)."""
    day = "%m-%d " if time.time() - at > 20 * 3600 else ""
    return time.strftime(f"{day}%H:%M", time.gmtime(at))


def lines_of(messages: Sequence[Said], count: Count, max_line_tokens: int) -> list[Line]:
    """Each message as its quoted line(s), none over ``max_line_tokens``."""
    found = []
    for said in messages:
        when = clock(said.created_at)
        who = display_name(said.user_name or said.user_id) or "someone"
        if who.casefold() == BOT_SPEAKER:  # a person named so is not the bot
            who += " (a person)"
        text = _line(when, who, said.text, MESSAGE_CHARS, count, max_line_tokens)
        if said.answer:
            half = max_line_tokens // 2
            text += "\n" + _line(when, BOT_SPEAKER, said.answer, ANSWER_CHARS, count, half)
        found.append(Line(said, text, count(text) + 1))
    return found


def within(lines: Sequence[Line], budget: int) -> tuple[list[Line], int]:
    """The newest ``lines`` whose tokens fit ``budget``, and how many older ones did not."""
    kept: list[Line] = []
    total = 0
    for line in reversed(lines):
        if total + line.tokens > budget:
            break
        kept.append(line)
        total += line.tokens
    kept.reverse()
    return kept, len(lines) - len(kept)


def chunks(items: Sequence[T], size: int, tokens: Callable[[T], int]) -> list[list[T]]:
    """``items`` packed in order into groups of at most ``size`` tokens (an item alone over it:
    a group of its own)."""
    groups: list[list[T]] = []
    current: list[T] = []
    total = 0
    for item in items:
        cost = tokens(item)
        if current and total + cost > size:
            groups.append(current)
            current, total = [], 0
        current.append(item)
        total += cost
    if current:
        groups.append(current)
    return groups


def _line(when: str, who: str, text: str, chars: int, count: Count, tokens: int) -> str:
    words = text.strip()
    if len(words) > chars:
        words = words[: chars - 1].rstrip() + "…"
    line = one_line_json([when, who, words])
    while count(line) > tokens and len(words) > 1:  # dense scripts: fewer characters a token
        words = words[: max(1, len(words) * 3 // 4)].rstrip() + "…"
        line = one_line_json([when, who, words])
    return line
