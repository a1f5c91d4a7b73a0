"""``Scheduler.weekly``: runs on days of the week at a wall-clock time in a zone, kept in the
job store like every other job (a restart keeps it, a run missed while down runs once at start)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, time, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from bot.scheduling.scheduler import Scheduler

BERLIN = ZoneInfo("Europe/Berlin")


class Runs:
    def __init__(self) -> None:
        self.calls: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue()

    async def __call__(self, job_id: str, payload: dict[str, Any]) -> None:
        self.calls.put_nowait((job_id, payload))

    async def next(self, within: float = 5.0) -> tuple[str, dict[str, Any]]:
        return await asyncio.wait_for(self.calls.get(), within)


def in_a_moment(seconds: float, zone: ZoneInfo = BERLIN) -> tuple[int, time]:
    """The weekday and wall-clock time (whole seconds) ``seconds`` from now in ``zone``."""
    moment = (datetime.now(UTC) + timedelta(seconds=seconds)).astimezone(zone)
    moment = moment.replace(microsecond=0) + timedelta(seconds=1)
    return moment.weekday(), moment.time()


async def test_a_weekly_job_fires_at_its_local_time_and_comes_back_a_week_later(
    tmp_path: Path,
) -> None:
    runs = Runs()
    async with Scheduler(tmp_path / "jobs.sqlite") as sched:
        sched.register("post", runs)
        day, at = in_a_moment(1.0)
        sched.weekly("post", "schedules:1", [day], at, "Europe/Berlin", {"id": 1})
        (pending,) = sched.pending("post")
        local = pending.next_run.astimezone(BERLIN)
        assert (local.weekday(), local.time()) == (day, at)
        assert await runs.next() == ("schedules:1", {"id": 1})
        (after,) = sched.pending("post")
        assert after.next_run - pending.next_run == timedelta(days=7)  # no DST change this week


async def test_the_next_run_is_the_wall_clock_time_in_the_jobs_own_zone(tmp_path: Path) -> None:
    zones = {"schedules:1": BERLIN, "schedules:2": ZoneInfo("America/New_York")}
    async with Scheduler(tmp_path / "jobs.sqlite") as sched:
        sched.weekly("post", "schedules:1", [6], time(9), "Europe/Berlin")  # Sundays 09:00
        sched.weekly("post", "schedules:2", range(7), time(9), "America/New_York")
        for job in sched.pending("post"):
            local = job.next_run.astimezone(zones[job.job_id])
            assert local.time() == time(9)
            assert job.job_id == "schedules:2" or local.weekday() == 6


async def test_redeclaring_keeps_the_next_run_unless_the_rule_changed(tmp_path: Path) -> None:
    async with Scheduler(tmp_path / "jobs.sqlite") as sched:
        sched.weekly("post", "schedules:1", [0], time(9), "Europe/Berlin", {"v": 1})
        (before,) = sched.pending()
        sched.weekly("post", "schedules:1", [0], time(9), "Europe/Berlin", {"v": 2})
        (same,) = sched.pending()
        assert (same.next_run, same.payload) == (before.next_run, {"v": 2})
        sched.weekly("post", "schedules:1", [0], time(9), "Europe/London")
        (moved,) = sched.pending()
        assert moved.next_run - before.next_run == timedelta(hours=1)


async def test_a_weekly_run_missed_while_down_runs_once_at_start(tmp_path: Path) -> None:
    path = tmp_path / "jobs.sqlite"
    day, at = in_a_moment(0.5, ZoneInfo("UTC"))
    async with Scheduler(path) as before:
        before.weekly("post", "schedules:7", [day], at, "UTC", {"id": 7})
    await asyncio.sleep(2.0)  # down while it falls due
    runs = Runs()
    after = Scheduler(path)
    after.register("post", runs)
    async with after:
        assert await runs.next() == ("schedules:7", {"id": 7})
        await asyncio.sleep(0.5)
        assert runs.calls.empty()
        (pending,) = after.pending("post")
        assert pending.next_run > datetime.now(UTC) + timedelta(days=6)


async def test_bad_days_are_refused(tmp_path: Path) -> None:
    async with Scheduler(tmp_path / "jobs.sqlite") as sched:
        for days in ([], [7], [-1]):
            with pytest.raises(ValueError, match="days must be 0-6"):
                sched.weekly("post", "schedules:1", days, time(9), "UTC")
        assert sched.pending() == []


def test_a_time_in_the_repeated_autumn_hour_fires_once_that_day() -> None:
    """Europe/Berlin sets its clocks back at 03:00 CEST on 2026-10-25: 02:30 comes twice. A
    plain cron rule fires at both; the scheduler's weekly rule at the first only."""
    from datetime import UTC, datetime
    from zoneinfo import ZoneInfo

    from apscheduler.triggers.cron import CronTrigger

    from bot.scheduling.wall_clock import WallClockTrigger

    zone = ZoneInfo("Europe/Berlin")
    rule = {"day_of_week": "6", "hour": 2, "minute": 30, "timezone": zone}
    first = datetime(2026, 10, 25, 0, 30, tzinfo=UTC)  # 02:30 CEST
    after = first.replace(minute=31)
    repeated = CronTrigger(**rule).get_next_fire_time(first, after)
    assert repeated is not None and repeated.astimezone(UTC).hour == 1  # 02:30 CET: twice
    following = WallClockTrigger(**rule).get_next_fire_time(first, after)
    assert following == datetime(2026, 11, 1, 2, 30, tzinfo=zone)  # a week on, once
    spring = datetime(2026, 3, 29, 0, 0, tzinfo=UTC)  # 02:30 does not exist that day
    assert WallClockTrigger(**rule).get_next_fire_time(None, spring) is not None
