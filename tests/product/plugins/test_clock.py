"""The clock plugin: zone lookup, the current_time tool, its settings and its formatting."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any, cast
from zoneinfo import ZoneInfo

import pytest
from pydantic import BaseModel, ValidationError

from bot.config import PluginEntry
from bot.conversation.commands import Commands
from bot.llm.client import ToolCall
from bot.platform.delivery import Outbound
from bot.plugins import PluginError, PluginManager, ToolContext, ToolRegistry
from bot.testing.tools import ALICE, MemoryKV, tool_context
from plugins.clock import Settings, current_time, describe, find_zone

ISO = re.compile(r"ISO 8601: (\S+)$")


def make_ctx(settings: BaseModel | None = None) -> ToolContext:
    return tool_context("clock", settings=settings)


def make_manager() -> tuple[PluginManager, ToolRegistry]:
    registry = ToolRegistry(is_admin=lambda ctx: False)
    # The clock adds no chat commands, so Commands never reaches its (absent) ChatService.
    commands = Commands(cast(Any, None))
    return PluginManager(registry, commands, MemoryKV(), Outbound(), None), registry


def iso_of(text: str) -> datetime:
    match = ISO.search(text)
    assert match is not None, text
    return datetime.fromisoformat(match.group(1))


# -- find_zone --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("Asia/Tokyo", "Asia/Tokyo"),
        ("  Asia/Tokyo  ", "Asia/Tokyo"),
        ("tokyo", "Asia/Tokyo"),
        ("Tokyo", "Asia/Tokyo"),
        ("TOKYO", "Asia/Tokyo"),
        ("new york", "America/New_York"),  # spaces become underscores
        ("New_York", "America/New_York"),
        ("Europe/Paris", "Europe/Paris"),
        ("paris", "Europe/Paris"),
        ("America/Argentina/Buenos_Aires", "America/Argentina/Buenos_Aires"),
        ("UTC", "UTC"),
        ("utc", "UTC"),
        ("GMT", "UTC"),
        ("Z", "UTC"),
        ("Etc/GMT+5", "Etc/GMT+5"),
    ],
)
def test_find_zone(name: str, key: str) -> None:
    zone = find_zone(name)
    assert zone is not None
    assert zone.key == key


@pytest.mark.parametrize(
    "name",
    [
        "Mars/Olympus_Mons",
        "Atlantis",
        "",
        "   ",
        "UTC+9",
        "../../etc/passwd",
        "/etc/localtime",
        "asia/tokyo",  # exact names are case-sensitive, and this is no city
    ],
)
def test_find_zone_unknown_is_none(name: str) -> None:
    assert find_zone(name) is None


@pytest.mark.parametrize(
    ("city", "zones"),
    [
        ("indianapolis", ("America/Indiana/Indianapolis", "America/Indianapolis")),
        ("buenos aires", ("America/Argentina/Buenos_Aires", "America/Buenos_Aires")),
        ("Istanbul", ("Asia/Istanbul", "Europe/Istanbul")),
    ],
)
def test_find_zone_ambiguous_city_is_none(city: str, zones: tuple[str, ...]) -> None:
    for key in zones:  # both really exist, so the bare city has two candidates
        zone = find_zone(key)
        assert zone is not None
        assert zone.key == key
    assert find_zone(city) is None


# -- current_time -----------------------------------------------------------------------------


async def test_current_time_in_tokyo() -> None:
    before = datetime.now(ZoneInfo("Asia/Tokyo")).replace(microsecond=0)
    text = await current_time(make_ctx(), "Asia/Tokyo")
    after = datetime.now(ZoneInfo("Asia/Tokyo"))
    assert "Asia/Tokyo" in text
    assert "UTC+09:00" in text
    stamp = iso_of(text)
    assert stamp.utcoffset() == ZoneInfo("Asia/Tokyo").utcoffset(stamp)
    assert stamp.isoformat().endswith("+09:00")
    assert stamp.hour in (before.hour, after.hour)  # the hour may roll over mid-call
    assert before <= stamp <= after


async def test_current_time_accepts_a_city() -> None:
    text = await current_time(make_ctx(), "tokyo")
    assert "in Asia/Tokyo (UTC+09:00)" in text


async def test_current_time_defaults_to_utc_without_settings() -> None:
    before = datetime.now(UTC).replace(microsecond=0)
    text = await current_time(make_ctx())
    assert " in UTC (UTC+00:00); " in text
    assert before <= iso_of(text) <= datetime.now(UTC)


async def test_current_time_uses_the_configured_default() -> None:
    ctx = make_ctx(Settings(timezone="tokyo"))
    assert "in Asia/Tokyo (UTC+09:00)" in await current_time(ctx)
    assert "in Asia/Tokyo (UTC+09:00)" in await current_time(ctx, "")
    assert "in UTC (UTC+00:00)" in await current_time(ctx, "UTC")  # an explicit zone wins


async def test_current_time_unknown_zone_is_error_text() -> None:
    text = await current_time(make_ctx(), "Mars/Olympus_Mons")
    assert text.startswith("Error: unknown time zone 'Mars/Olympus_Mons'")
    assert "Asia/Tokyo" in text  # shows what a valid name looks like


async def test_current_time_through_the_plugin_loader() -> None:
    manager, registry = make_manager()
    entry = PluginEntry(module="plugins.clock", settings={"timezone": "Europe/Paris"})
    plugin = await manager.load(entry)
    assert plugin.tools == ["current_time"]
    assert registry.names() == ["current_time"]
    call = ToolCall(id="c1", name="current_time", arguments="{}")
    assert " in Europe/Paris (UTC+0" in await registry.run(ALICE, call)
    call = ToolCall(id="c2", name="current_time", arguments='{"timezone": "Asia/Tokyo"}')
    assert " in Asia/Tokyo (UTC+09:00); " in await registry.run(ALICE, call)


# -- Settings ---------------------------------------------------------------------------------


def test_settings_default_is_utc() -> None:
    assert Settings().timezone == "UTC"


@pytest.mark.parametrize("name", ["Asia/Tokyo", "tokyo", "utc", "Europe/Paris"])
def test_settings_accepts_known_zones(name: str) -> None:
    assert Settings(timezone=name).timezone == name


def test_settings_rejects_an_unknown_zone() -> None:
    with pytest.raises(ValidationError) as info:
        Settings(timezone="Mars/Olympus_Mons")
    (error,) = info.value.errors()
    assert error["loc"] == ("timezone",)
    assert "unknown time zone 'Mars/Olympus_Mons'" in error["msg"]
    assert "IANA name like Europe/Paris" in error["msg"]


async def test_loader_reports_an_unknown_zone_clearly() -> None:
    manager, registry = make_manager()
    entry = PluginEntry(module="plugins.clock", settings={"timezone": "Mars/Olympus_Mons"})
    with pytest.raises(PluginError, match=r"plugins\.clock settings: timezone: .*unknown time"):
        await manager.load(entry)
    assert registry.names() == []


# -- describe ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("moment", "key", "text"),
    [
        (
            datetime(2024, 3, 5, 7, 8, 9),
            "Asia/Tokyo",
            "Tuesday, 05 March 2024, 07:08:09 in Asia/Tokyo (UTC+09:00); "
            "ISO 8601: 2024-03-05T07:08:09+09:00",
        ),
        (
            datetime(2024, 1, 15, 23, 59, 0),
            "America/New_York",
            "Monday, 15 January 2024, 23:59:00 in America/New_York (UTC-05:00); "
            "ISO 8601: 2024-01-15T23:59:00-05:00",
        ),
        (
            datetime(2024, 7, 1, 12, 0, 0),
            "Europe/Paris",  # summer time
            "Monday, 01 July 2024, 12:00:00 in Europe/Paris (UTC+02:00); "
            "ISO 8601: 2024-07-01T12:00:00+02:00",
        ),
        (
            datetime(2024, 12, 31, 0, 0, 0),
            "Asia/Kathmandu",
            "Tuesday, 31 December 2024, 00:00:00 in Asia/Kathmandu (UTC+05:45); "
            "ISO 8601: 2024-12-31T00:00:00+05:45",
        ),
        (
            datetime(2000, 2, 29, 6, 30, 0, 123456),
            "UTC",  # microseconds are dropped
            "Tuesday, 29 February 2000, 06:30:00 in UTC (UTC+00:00); "
            "ISO 8601: 2000-02-29T06:30:00+00:00",
        ),
    ],
)
def test_describe(moment: datetime, key: str, text: str) -> None:
    zone = ZoneInfo(key)
    assert describe(moment.replace(tzinfo=zone), zone) == text


# -- once bugs, now regressions -----------------------------------------------------------------

_OSERROR = (
    "bug: ZoneInfo raises OSError (IsADirectoryError for a region like 'Asia', "
    "ENAMETOOLONG for a long name) on Python 3.11 with tzdata; find_zone only catches "
    "ZoneInfoNotFoundError and ValueError"
)


@pytest.mark.parametrize("name", ["Asia", "Europe", "America/Argentina", "a" * 300])
def test_find_zone_region_or_long_name_is_none(name: str) -> None:
    assert find_zone(name) is None


async def test_current_time_region_is_error_text() -> None:
    assert (await current_time(make_ctx(), "Asia")).startswith("Error: unknown time zone")


async def test_loader_reports_a_region_as_a_settings_error() -> None:
    manager, _ = make_manager()
    entry = PluginEntry(module="plugins.clock", settings={"timezone": "Europe"})
    with pytest.raises(PluginError, match="unknown time zone"):
        await manager.load(entry)


def test_describe_offset_with_seconds() -> None:
    zone = ZoneInfo("Asia/Tokyo")
    assert "(UTC+09:18:59)" in describe(datetime(1850, 1, 1, tzinfo=zone), zone)
