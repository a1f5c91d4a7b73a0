"""A calendar rule that fires once per local date and time, daylight saving's repeat included.

apscheduler's ``CronTrigger`` keeps the wall-clock time across daylight saving, but when a zone
sets its clocks back the hour between repeats (02:00-02:59 in Europe/Berlin on the last Sunday
of October) and a rule inside it matches twice: a weekly post at 02:30 would post at 02:30 CEST
and again at 02:30 CET. :class:`WallClockTrigger` skips the second.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, tzinfo

from apscheduler.triggers.cron import CronTrigger

__all__ = ["WallClockTrigger"]


class WallClockTrigger(CronTrigger):  # type: ignore[misc]  # apscheduler 3 ships no types
    def get_next_fire_time(
        self, previous_fire_time: datetime | None, now: datetime
    ) -> datetime | None:
        fire: datetime | None = super().get_next_fire_time(previous_fire_time, now)
        if fire is None or previous_fire_time is None:
            return fire
        if _wall(fire, self.timezone) == _wall(previous_fire_time, self.timezone):
            # past the repeated hour, counted in UTC (wall-clock arithmetic would land in it
            # again); a rule here fires at one time of day, so nothing else is skipped
            past = fire.astimezone(UTC) + timedelta(hours=1)
            later: datetime | None = super().get_next_fire_time(fire, past)
            return later
        return fire


def _wall(at: datetime, zone: tzinfo) -> datetime:
    """``at`` as the clock on the wall in ``zone`` read it (no offset: 02:30 is 02:30)."""
    return at.astimezone(zone).replace(tzinfo=None)
