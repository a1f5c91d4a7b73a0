"""When a scheduled post runs, read from an admin's words: pure, so every rule is a table test.

The grammar (``/schedule``, the admin API and the dashboard all take it), case-insensitive::

    every monday 09:00 Europe/Berlin        one or more days: "every mon,thu 18:30"
    every day 08:30 UTC                     also "daily 08:30"; "every weekday" is Mon-Fri
    once 2026-12-24 18:00 Europe/Berlin     one run, at most a year ahead

The time is 24-hour ``HH:MM`` (seconds allowed: ``HH:MM:SS``), an optional ``at`` may precede
it, and the zone is an IANA name (``UTC`` too); without one the configured default applies
(``schedules.timezone``). A wrong day, time, date or zone, or a date already past, is refused
with a :class:`ScheduleError` whose ``chat_text`` says what was wrong and what is expected.
The local wall-clock time is kept, so "09:00 Europe/Berlin" stays 09:00 across daylight saving.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from functools import cache
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from bot.errors import UserFacingError

__all__ = ["EVERY_DAY", "Recurrence", "ScheduleError", "find_zone", "parse_recurrence"]

DAY_NAMES = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
EVERY_DAY = tuple(range(7))
WEEKDAYS = tuple(range(5))
MAX_AHEAD = timedelta(days=366)
EXAMPLES = (
    "every monday 09:00 Europe/Berlin, every day 08:30 UTC, once 2026-12-24 18:00 Europe/Berlin"
)
_TIME = re.compile(r"(\d{1,2}):(\d{2})(?::(\d{2}))?")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_GROUPS = {"day": EVERY_DAY, "days": EVERY_DAY, "weekday": WEEKDAYS, "weekdays": WEEKDAYS}


class ScheduleError(UserFacingError):
    """A schedule the bot cannot take; ``chat_text`` says what was wrong and what works."""

    def __init__(self, chat_text: str) -> None:
        super().__init__(f"schedule refused: {chat_text}", chat_text=chat_text)


@dataclass(frozen=True, slots=True)
class Recurrence:
    """A one-off (``on`` a date) or a weekly rule (on ``days``, 0 = Monday), at a local time."""

    at: time
    zone: str  # an IANA name, as ZoneInfo spells it
    days: tuple[int, ...] = ()
    on: date | None = None

    @property
    def once(self) -> bool:
        return self.on is not None

    def first_run(self) -> datetime:
        """A one-off's moment (UTC)."""
        assert self.on is not None, "only a one-off has a single moment"
        local = datetime.combine(self.on, self.at, tzinfo=ZoneInfo(self.zone))
        return local.astimezone(UTC)

    def describe(self) -> str:
        """For people: "every Monday at 09:00 (Europe/Berlin)"."""
        at = f"at {_clock(self.at)} ({self.zone})"
        if self.on is not None:
            return f"once on {self.on:%a} {self.on.isoformat()} {at}"
        if self.days == EVERY_DAY:
            return f"every day {at}"
        if self.days == WEEKDAYS:
            return f"every weekday (Monday to Friday) {at}"
        names = [DAY_NAMES[d].capitalize() for d in self.days]
        listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        return f"every {listed} {at}"

    def rule(self) -> str:
        """The same schedule in the grammar: it parses back to this value."""
        clock = _clock(self.at)
        if self.on is not None:
            return f"once {self.on.isoformat()} {clock} {self.zone}"
        if self.days in (EVERY_DAY, WEEKDAYS):
            return f"every {'day' if self.days == EVERY_DAY else 'weekday'} {clock} {self.zone}"
        return f"every {','.join(DAY_NAMES[d] for d in self.days)} {clock} {self.zone}"

    def to_json(self) -> dict[str, Any]:
        return {
            "at": self.at.isoformat(),
            "zone": self.zone,
            "days": list(self.days),
            "on": None if self.on is None else self.on.isoformat(),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Recurrence:
        on = data.get("on")
        return cls(
            at=time.fromisoformat(str(data["at"])),
            zone=str(data["zone"]),
            days=tuple(int(d) for d in data.get("days") or ()),
            on=None if on is None else date.fromisoformat(str(on)),
        )


def parse_recurrence(text: str, *, default_zone: str, now: datetime) -> Recurrence:
    """``text`` in the grammar above; ``now`` (aware) decides whether a one-off has passed."""
    words = text.replace(",", " , ").split()
    if not words:
        raise ScheduleError(f"Say when to post, e.g. {EXAMPLES}.")
    head, rest = words[0].lower(), words[1:]
    if head in ("once", "on"):
        return _one_off(rest, default_zone, now)
    if head == "daily":
        return _weekly(EVERY_DAY, rest, default_zone)
    if head == "every":
        days, rest = _days(rest)
        return _weekly(days, rest, default_zone)
    raise ScheduleError(
        f"{words[0]!r} does not start a schedule: begin with every, daily or once"
        f" (e.g. {EXAMPLES})."
    )


def find_zone(name: str) -> str | None:
    """The IANA name of zone ``name`` (any case; ``UTC``, ``GMT``, ``Z``), or None."""
    cleaned = name.strip()
    if cleaned.upper() in ("UTC", "GMT", "Z"):
        return "UTC"
    try:
        ZoneInfo(cleaned)
    except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: "Europe" is a folder
        return _zones_by_lower_name().get(cleaned.lower())
    return cleaned


def _one_off(words: list[str], default_zone: str, now: datetime) -> Recurrence:
    if not words or not _DATE.fullmatch(words[0]):
        shown = repr(words[0]) if words else "nothing"
        raise ScheduleError(
            f"After once comes a date as YYYY-MM-DD, like 2026-12-24 (got {shown})."
        )
    try:
        on = date.fromisoformat(words[0])
    except ValueError:
        raise ScheduleError(
            f"{words[0]!r} is not a date: use YYYY-MM-DD, like 2026-12-24."
        ) from None
    at, zone = _time_and_zone(words[1:], default_zone)
    recurrence = Recurrence(at=at, zone=zone, on=on)
    when = recurrence.first_run()
    if when <= now:
        local_now = now.astimezone(ZoneInfo(zone))
        raise ScheduleError(
            f"{on.isoformat()} {_clock(at)} ({zone}) has already passed: it is"
            f" {local_now:%Y-%m-%d %H:%M} there now. Pick a time in the future."
        )
    if when - now > MAX_AHEAD:
        raise ScheduleError("A one-off post can be at most a year ahead.")
    return recurrence


def _weekly(days: tuple[int, ...], words: list[str], default_zone: str) -> Recurrence:
    at, zone = _time_and_zone(words, default_zone)
    return Recurrence(at=at, zone=zone, days=days)


def _days(words: list[str]) -> tuple[tuple[int, ...], list[str]]:
    """The days named before the time ("monday , thursday", "day", "weekday")."""
    found: set[int] = set()
    index = 0
    while index < len(words):
        word = words[index].lower()
        if word in (",", "and"):
            index += 1
            continue
        if word == "at" or word[:1].isdigit():
            break
        if word in _GROUPS:
            found.update(_GROUPS[word])
        else:
            day = _day(word)
            if day is None:
                raise ScheduleError(
                    f"{words[index]!r} is not a day: name days (monday, tue, ...), or say"
                    " every day or every weekday."
                )
            found.add(day)
        index += 1
    if not found:
        raise ScheduleError("After every, name the days: every monday, every mon,thu, every day.")
    return tuple(sorted(found)), words[index:]


def _day(word: str) -> int | None:
    word = word.removesuffix("s") if len(word) > 4 else word  # "mondays"
    for number, name in enumerate(DAY_NAMES):
        if len(word) >= 3 and name.startswith(word):
            return number
    return None


def _time_and_zone(words: list[str], default_zone: str) -> tuple[time, str]:
    if words and words[0].lower() == "at":
        words = words[1:]
    if not words:
        raise ScheduleError("Say the time of day as 24-hour HH:MM, like 09:00.")
    at = _time(words[0])
    if len(words) > 2:
        raise ScheduleError(
            f"Unexpected {' '.join(words[2:])!r} after the time zone: put the prompt after a |."
        )
    name = words[1] if len(words) == 2 else default_zone
    zone = find_zone(name)
    if zone is None:
        raise ScheduleError(
            f"Unknown time zone {name!r}: use an IANA name like Europe/Berlin or"
            " America/New_York, or UTC."
        )
    return at, zone


def _time(word: str) -> time:
    match = _TIME.fullmatch(word)
    if match is not None:
        hour, minute, second = (int(part or 0) for part in match.groups())
        if hour < 24 and minute < 60 and second < 60:
            return time(hour, minute, second)
    raise ScheduleError(f"{word!r} is not a time of day: use 24-hour HH:MM, like 09:00 or 18:30.")


def _clock(at: time) -> str:
    return f"{at:%H:%M:%S}" if at.second else f"{at:%H:%M}"


@cache
def _zones_by_lower_name() -> dict[str, str]:
    return {name.lower(): name for name in available_timezones()}
