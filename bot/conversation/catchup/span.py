"""Which messages a catch-up covers: the span ``/catchup`` asks for, and the messages in it.

``/catchup`` alone covers what was said since the asker's last message (all that was read when
none of theirs is among it); ``/catchup 2h`` the last hours, ``/catchup 50`` the last messages.
Pure functions over the transcript the store returned.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from bot.config.catchup import CatchupSettings
from bot.errors import CatchupRefusedError
from bot.storage.transcript import Said

__all__ = ["Picked", "Span", "checked", "parse_span", "pick", "usage"]

_HOURS = re.compile(
    r"(?P<n>\d{1,5}(?:[.,]\d{1,3})?)\s*(?P<unit>h|hrs?|hours?|m|mins?|minutes?|d|days?)"
)
_MESSAGES = re.compile(r"(?P<n>\d{1,9})(?:\s*(?:messages?|msgs?))?")
_PER_HOUR = {"h": 1.0, "m": 1 / 60, "d": 24.0}


@dataclass(frozen=True, slots=True)
class Span:
    """What a catch-up asks for: the last ``hours``, the last ``messages``, or (neither) what
    was said since the asker's last message."""

    hours: float | None = None
    messages: int | None = None

    @property
    def since_last(self) -> bool:
        return self.hours is None and self.messages is None


@dataclass(frozen=True, slots=True)
class Picked:
    """The messages a catch-up summarises, oldest first."""

    messages: tuple[Said, ...]
    after: Said | None = None  # the asker's message the span starts after (since-last form)
    more: bool = False  # the span held more messages than one catch-up reads


def usage(settings: CatchupSettings) -> str:
    return (
        "Usage: /catchup (what was said since your last message), /catchup 2h (the last 2 "
        f"hours, up to {settings.max_hours:g}h), /catchup 50 (the last 50 messages, up to "
        f"{settings.max_messages})."
    )


def parse_span(args: str, settings: CatchupSettings) -> Span:
    """``/catchup``'s argument as a :class:`Span`; :class:`CatchupRefusedError` saying the
    forms it takes when it is none of them or past the configured limits."""
    text = " ".join(args.lower().split())
    if not text:
        return Span()
    if (hours := _HOURS.fullmatch(text)) is not None:
        amount = float(hours["n"].replace(",", ".")) * _PER_HOUR[hours["unit"][0]]
        return checked(Span(hours=amount), settings)
    if (count := _MESSAGES.fullmatch(text)) is not None:
        return checked(Span(messages=int(count["n"])), settings)
    raise _refused("That is not a span I know.", settings)  # never echoed: it may ping someone


def checked(span: Span, settings: CatchupSettings) -> Span:
    """``span``, if it is within ``settings``' limits; else :class:`CatchupRefusedError`."""
    hours, messages = span.hours, span.messages
    if hours is not None and hours <= 0:
        raise _refused("Ask for more than no time at all.", settings)
    if hours is not None and hours > settings.max_hours:
        raise _refused(f"I look back at most {settings.max_hours:g} hours.", settings)
    if messages is not None and messages < 1:
        raise _refused("Ask for at least one message.", settings)
    if messages is not None and messages > settings.max_messages:
        raise _refused(f"I read at most {settings.max_messages} messages.", settings)
    return span


def pick(said: Sequence[Said], span: Span, asker_id: str, cap: int) -> Picked:
    """The messages of ``said`` (oldest first, read with one more than ``cap`` where the span
    is not a count) that ``span`` covers for the asker, at most ``cap`` of them."""
    if not span.since_last:
        return Picked(tuple(said[-cap:]), more=len(said) > cap)
    for index in range(len(said) - 1, -1, -1):
        if said[index].user_id == asker_id:
            return Picked(tuple(said[index + 1 :]), after=said[index])
    return Picked(tuple(said[-cap:]), more=len(said) > cap)


def _refused(problem: str, settings: CatchupSettings) -> CatchupRefusedError:
    return CatchupRefusedError(f"bad span: {problem}", chat_text=f"{problem} {usage(settings)}")
