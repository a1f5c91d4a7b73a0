"""``schedules:``: posts admins schedule in a chat (``/schedule``, the admin API, the dashboard).

Each run is a turn of the chat's conversation, so it costs what one answer costs and meets the
chat's budgets; ``max_per_chat`` bounds how many a chat's admins can set up.
"""

from __future__ import annotations

import difflib
import zoneinfo
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, field_validator

from bot.config.base import Section, ShownValueError

__all__ = ["ScheduleSettings"]


class ScheduleSettings(Section):
    enabled: bool = Field(True, description="offer /schedule and run scheduled posts")
    who: Literal["chat_admins", "bot_admins"] = Field(
        "chat_admins",
        description="who may schedule and cancel posts in a chat: its admins (the platform's"
        " rule), or only the bot's admins (config admins:)",
    )
    max_per_chat: int = Field(10, ge=1, le=1000, description="pending scheduled posts per chat")
    max_prompt_chars: int = Field(
        2000, ge=10, le=20_000, description="longest prompt a scheduled post may run"
    )
    timezone: str = Field(
        "UTC", description="the zone of a schedule that names none (an IANA name: Europe/Berlin)"
    )

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError, OSError):
            close = difflib.get_close_matches(value, zoneinfo.available_timezones(), n=1)
            if close:  # a typo of a zone's name, never a secret: quoted, with the fix
                raise ShownValueError(
                    f"unknown time zone {value!r} (did you mean {close[0]}?)"
                ) from None
            raise ValueError(  # masked: it may be anything pasted on the wrong line
                f"unknown time zone {value!r} (use an IANA name like Europe/Berlin or"
                " America/New_York, or UTC)"
            ) from None
        return value
