"""The ``clock`` plugin: the current date and time, in any time zone.

Models do not know the time; asking them invents one. Zones are IANA names (``Asia/Tokyo``);
a bare city (``Tokyo``) is matched to its zone when that is unambiguous.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache
from typing import Annotated
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from pydantic import BaseModel, Field, field_validator

from bot.plugins import Plugin, ToolContext, tool


class Settings(BaseModel):
    timezone: str = Field("UTC", description="the zone used when the user names none")

    @field_validator("timezone")
    @classmethod
    def _known(cls, value: str) -> str:
        if find_zone(value) is None:
            raise ValueError(f"unknown time zone {value!r} (use an IANA name like Europe/Paris)")
        return value


@tool(timeout=5)
async def current_time(
    ctx: ToolContext,
    timezone: Annotated[
        str | None, Field(description="IANA time zone such as Asia/Tokyo; empty: the default")
    ] = None,
) -> str:
    """Get the current date and time, optionally in a given time zone."""
    default = ctx.settings.timezone if isinstance(ctx.settings, Settings) else "UTC"
    zone = find_zone(timezone or default)
    if zone is None:
        return f"Error: unknown time zone {timezone!r}. Use an IANA name such as Asia/Tokyo."
    return describe(datetime.now(UTC).astimezone(zone), zone)


def describe(moment: datetime, zone: ZoneInfo) -> str:
    offset = moment.strftime("%z") or "+0000"
    offset = ":".join((offset[:3], offset[3:5], *((offset[5:7],) if offset[5:7] else ())))
    return (
        f"{moment:%A, %d %B %Y, %H:%M:%S} in {zone.key} (UTC{offset}); "
        f"ISO 8601: {moment.isoformat(timespec='seconds')}"
    )


def find_zone(name: str) -> ZoneInfo | None:
    """An IANA zone by exact name, or by its last part ("tokyo" -> Asia/Tokyo)."""
    cleaned = name.strip().replace(" ", "_")
    if cleaned.upper() in ("UTC", "GMT", "Z"):
        return ZoneInfo("UTC")
    try:
        return ZoneInfo(cleaned)
    except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: "Asia" is a directory
        pass
    matches = _by_city().get(cleaned.lower(), ())
    return ZoneInfo(matches[0]) if len(matches) == 1 else None


@cache
def _by_city() -> dict[str, tuple[str, ...]]:
    cities: dict[str, list[str]] = {}
    for key in available_timezones():
        if "/" in key and not key.startswith(("Etc/", "SystemV/")):
            cities.setdefault(key.rsplit("/", 1)[1].lower(), []).append(key)
    return {city: tuple(sorted(keys)) for city, keys in cities.items()}


def setup(plugin: Plugin) -> None:
    plugin.add_tool(current_time)
