"""The schedule grammar (``bot.scheduling.recurrence``): what each phrase means, that every rule
reads back as itself, and the message a wrong one gets. Pure: a table."""

from __future__ import annotations

from datetime import UTC, date, datetime, time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.scheduling.recurrence import (
    EVERY_DAY,
    Recurrence,
    ScheduleError,
    find_zone,
    parse_recurrence,
)

NOW = datetime(2026, 12, 6, 22, 0, tzinfo=UTC)  # a Sunday


def parse(text: str, zone: str = "UTC") -> Recurrence:
    return parse_recurrence(text, default_zone=zone, now=NOW)


@pytest.mark.parametrize(
    ("text", "days", "at", "zone", "shown"),
    [
        (
            "every monday 09:00 Europe/Berlin",
            (0,),
            time(9),
            "Europe/Berlin",
            "every Monday at 09:00 (Europe/Berlin)",
        ),
        ("every mon,thu 18:30", (0, 3), time(18, 30), "UTC", "every Monday and Thursday at 18:30"),
        ("Every Thursday, MON at 18:30 utc", (0, 3), time(18, 30), "UTC", "Monday and Thursday"),
        ("every mondays and fridays 7:05", (0, 4), time(7, 5), "UTC", "Monday and Friday at 07:05"),
        ("daily 08:30", EVERY_DAY, time(8, 30), "UTC", "every day at 08:30 (UTC)"),
        ("every day 08:30:15 europe/berlin", EVERY_DAY, time(8, 30, 15), "Europe/Berlin",
         "08:30:15"),
        ("every weekday 07:00 America/New_York", (0, 1, 2, 3, 4), time(7), "America/New_York",
         "every weekday (Monday to Friday) at 07:00 (America/New_York)"),
        ("every sat,sun 10:00 Asia/Tokyo", (5, 6), time(10), "Asia/Tokyo", "Saturday and Sunday"),
    ],
)  # fmt: skip
def test_weekly_phrases(text: str, days: tuple[int, ...], at: time, zone: str, shown: str) -> None:
    rule = parse(text)
    assert (rule.days, rule.at, rule.zone, rule.once) == (days, at, zone, False)
    assert shown in rule.describe()


def test_a_one_off_has_its_moment_in_its_zone() -> None:
    rule = parse("once 2026-12-24 18:00 Europe/Berlin")
    assert rule.once and rule.on == date(2026, 12, 24)
    assert rule.first_run() == datetime(2026, 12, 24, 17, 0, tzinfo=UTC)  # CET is UTC+1
    assert rule.describe() == "once on Thu 2026-12-24 at 18:00 (Europe/Berlin)"
    assert parse("on 2027-07-01 18:00", zone="Europe/Berlin").first_run().hour == 16  # CEST


def test_the_default_zone_applies_when_none_is_named() -> None:
    assert parse("every friday 17:00", zone="Europe/Berlin").zone == "Europe/Berlin"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("every monday 09:00 Europe/Berln", "Unknown time zone 'Europe/Berln': use an IANA name"),
        ("every monday 09:00 Mars/Olympus", "Unknown time zone 'Mars/Olympus'"),
        ("every monday 25:00", "'25:00' is not a time of day: use 24-hour HH:MM, like 09:00"),
        ("every monday 9am", "'9am' is not a time of day"),
        ("every monday 09:60", "'09:60' is not a time of day"),
        ("once 2020-01-01 10:00", "2020-01-01 10:00 (UTC) has already passed: it is 2026-12-06"
         " 22:00 there now. Pick a time in the future."),
        ("once 2026-12-06 22:59 Europe/Berlin", "has already passed: it is 2026-12-06 23:00 there"),
        ("once 2026-13-01 10:00", "'2026-13-01' is not a date: use YYYY-MM-DD, like 2026-12-24."),
        ("once tomorrow 10:00", "After once comes a date as YYYY-MM-DD"),
        ("once 2029-01-01 10:00", "at most a year ahead"),
        ("weekly 09:00", "'weekly' does not start a schedule: begin with every, daily or once"),
        ("every 09:00", "After every, name the days"),
        ("every mondey 09:00", "'mondey' is not a day"),
        ("every monday", "Say the time of day as 24-hour HH:MM"),
        ("every monday 09:00 UTC and more", "Unexpected 'and more' after the time zone"),
        ("", "Say when to post"),
    ],
)  # fmt: skip
def test_a_wrong_schedule_is_told_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(ScheduleError) as refused:
        parse(text)
    assert message in refused.value.chat_text


def test_zones_are_found_in_any_case() -> None:
    assert find_zone("europe/berlin") == "Europe/Berlin"
    assert find_zone("utc") == find_zone("Z") == "UTC"
    assert find_zone("Europe") is None  # a folder of zones, not a zone
    assert find_zone("Nowhere/Land") is None


_rules = st.builds(
    Recurrence,
    at=st.times().map(lambda t: t.replace(microsecond=0)),
    zone=st.sampled_from(["UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata"]),
    days=st.sets(st.integers(0, 6), min_size=1).map(lambda s: tuple(sorted(s))),
)


@given(_rules)
def test_every_weekly_rule_reads_back_as_itself(rule: Recurrence) -> None:
    assert parse(rule.rule(), zone="Asia/Tokyo") == rule
    assert Recurrence.from_json(rule.to_json()) == rule


@given(st.dates(date(2026, 12, 8), date(2027, 12, 1)), st.sampled_from(["UTC", "Europe/Berlin"]))
def test_every_one_off_reads_back_as_itself(on: date, zone: str) -> None:
    rule = Recurrence(at=time(18, 30), zone=zone, on=on)
    assert parse(rule.rule()) == rule
    assert Recurrence.from_json(rule.to_json()) == rule
