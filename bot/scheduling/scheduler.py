"""The bot's scheduler: plugins schedule work for later, and it survives restarts.

How jobs are stored, who fires them and the exactly-once rules: :mod:`bot.scheduling`.

Handlers (``async def handler(job_id, payload)``) should be registered before ``start()`` so jobs
due at start find them. Each run is our own task: a slow handler holds up no other, an exception
is logged with the job id, shutdown cancels and awaits what still runs. Jobs can be scheduled,
listed and cancelled before ``start()`` (that opens the store; nothing fires until start). Job
ids are global to the store, so callers namespace them (``"reminders:42"``); an existing id is
replaced. Payloads go through JSON when scheduled, so handlers see the same data before and after
a restart. A handler cut short by shutdown is not retried (at most once). Use it on the event
loop's thread, with the loop running.

**Listing and withdrawing** (the admin API): :meth:`Scheduler.pending` lists jobs of a kind with
their payloads; :meth:`Scheduler.withdraw` cancels one *for good*: the kind's ``on_cancel`` hook
(given to :meth:`Scheduler.register`) runs first, so an owner that keeps its own record (the
reminders plugin) forgets it and does not schedule it again at the next start.

**Calendar rules**: :meth:`Scheduler.weekly` runs on days of the week at a wall-clock time in
an IANA zone (apscheduler's ``CronTrigger``; scheduled posts' "every Monday 09:00
Europe/Berlin"), so daylight saving moves the run with the clock; its zone is stored with it.

Maintenance (retention) is the app's to wire: ``every(kind, "app:retention", timedelta(hours=1))``
at each start-up. Re-declaring a repeating job with the same interval keeps its next run, so
restarts don't postpone it and a run missed while down still runs at start.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
from collections.abc import Awaitable, Callable, Iterator, Sequence
from datetime import UTC, datetime, time, timedelta
from pathlib import Path
from typing import Any, Self
from zoneinfo import ZoneInfo

from apscheduler.jobstores.base import JobLookupError
from apscheduler.schedulers.base import STATE_RUNNING
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.date import DateTrigger
from apscheduler.triggers.interval import IntervalTrigger

from bot.config.storage_url import StorageURL
from bot.scheduling.job_errors import job_store_errors, redacted
from bot.scheduling.jobstore import open_job_store
from bot.scheduling.kinds import REMINDERS_KIND as REMINDERS_KIND  # its old home: still works
from bot.scheduling.leader import DEFAULT_LEASE_SECONDS, Leadership
from bot.scheduling.runner import Runner
from bot.scheduling.stored_jobs import FIRE, OLD_FIRE, OURS, fire, live, pending_job
from bot.scheduling.stored_jobs import ScheduledJob as ScheduledJob  # listed: importable here too
from bot.scheduling.wall_clock import WallClockTrigger
from bot.storage.coordination import Leases
from bot.storage.owners import new_owner

log = logging.getLogger(__name__)

Handler = Callable[[str, dict[str, Any]], Awaitable[None]]
CancelHook = Callable[[str, dict[str, Any]], Awaitable[None]]
"""``on_cancel(job_id, payload)``: forget what the job stood for (it will not run)."""


DEFAULT_PATH = Path("data/jobs.sqlite")
DEFAULT_POLL_SECONDS = 1.0
_fire = fire  # what every stored job calls, by this name (FIRE): keep it importable
# Jobs stored before this module moved here call OLD_FIRE: its old name stays this module.
sys.modules.setdefault(OLD_FIRE.partition(":")[0], sys.modules[__name__])


class Scheduler:
    """Persistent one-off and repeating jobs, dispatched by kind to registered async handlers.

    ``where``: the jobs file (SQLite), or the PostgreSQL ``storage.url``. ``leases``: share the
    store with other processes, firing only while holding the lease (see the module doc).
    """

    def __init__(
        self,
        where: str | Path | StorageURL,
        *,
        name: str = "parlour",
        leases: Leases | None = None,
        owner: str | None = None,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        poll_seconds: float = DEFAULT_POLL_SECONDS,
    ) -> None:
        self.where = where if isinstance(where, StorageURL) else StorageURL("sqlite", Path(where))
        self.name = name  # stored in every job: keep it stable across restarts
        self.owner = owner or new_owner()
        self.leadership = (
            None if leases is None else Leadership(leases, self.owner, lease_seconds=lease_seconds)
        )
        self._poll_seconds = poll_seconds
        self._handlers: dict[str, Handler] = {}
        self._on_cancel: dict[str, CancelHook] = {}
        self._aps: Any = None  # the apscheduler, once the store is open
        self._started = self._closed = False
        self._tasks: set[asyncio.Task[None]] = set()
        self._lease_loop: asyncio.Task[None] | None = None

    @property
    def path(self) -> Path:
        """The jobs file (SQLite only)."""
        if self.where.path is None:
            raise AttributeError("a scheduler on PostgreSQL has no jobs file")
        return self.where.path

    @property
    def is_leader(self) -> bool:
        """True when this process fires jobs now (always, without leases, once started)."""
        aps = self._aps
        return aps is not None and self._started and aps.state == STATE_RUNNING

    def register(self, kind: str, handler: Handler, *, on_cancel: CancelHook | None = None) -> None:
        """Route jobs of ``kind`` to ``handler(job_id, payload)``; replaces an earlier one.
        ``on_cancel``: what :meth:`withdraw` runs before it removes a job of ``kind``."""
        self._handlers[kind] = handler
        if on_cancel is None:
            self._on_cancel.pop(kind, None)
        else:
            self._on_cancel[kind] = on_cancel

    def unregister(self, kind: str) -> None:
        """Forget the handler of ``kind`` (its jobs stay stored; their runs are dropped)."""
        self._handlers.pop(kind, None)
        self._on_cancel.pop(kind, None)

    async def start(self) -> None:
        """Open the store if need be and start firing (the leader); due jobs run promptly."""
        if self._started or self._closed:
            raise RuntimeError("a scheduler starts once")
        if self.name in live:
            raise RuntimeError(f"a scheduler named {self.name!r} is already running")
        aps = self._open()
        live[self.name] = self
        self._started = True
        if self.leadership is None:
            aps.resume()  # due jobs run on the next turn of the loop
            return
        await self._follow_lease()  # the first try now: a lone replica fires at once
        self._lease_loop = asyncio.get_running_loop().create_task(
            self._keep_lease(), name=f"scheduler lease {self.owner}"
        )

    async def shutdown(self) -> None:
        """Stop firing, give up the lease, close the store, cancel and await running handlers.

        Idempotent.
        """
        if self._closed:
            return
        self._closed = True
        aps, self._aps = self._aps, None
        if live.get(self.name) is self:
            del live[self.name]
        try:
            if aps is not None:
                aps.shutdown(wait=False)  # also disposes the store's engine
            if self._lease_loop is not None:
                self._lease_loop.cancel()
                await asyncio.gather(self._lease_loop, return_exceptions=True)
            if self.leadership is not None and self._started:
                await self.leadership.release()  # after the last fire: a follower takes over
        finally:
            current = asyncio.current_task()
            tasks = [task for task in self._tasks if task is not current]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    def at(
        self, kind: str, job_id: str, when: datetime, payload: dict[str, Any] | None = None
    ) -> None:
        """Run once at ``when`` (timezone-aware; a past time runs at once). Replaces ``job_id``."""
        _require_aware(when, "when")
        self._add(kind, job_id, DateTrigger(run_date=when, timezone=UTC), payload, None)

    def every(
        self,
        kind: str,
        job_id: str,
        interval: timedelta,
        payload: dict[str, Any] | None = None,
        *,
        first: datetime | None = None,
    ) -> None:
        """Run every ``interval``, first at ``first`` (default: one interval from now).

        A ``first`` in the past aligns the schedule: the next run is the first ``first + n *
        interval`` from now. Replaces ``job_id``, but if that is already a job with this interval
        (and this ``first``, if given) its next run time is kept. Runs of one job may overlap if
        a handler outlasts the interval.
        """
        if interval <= timedelta(0):
            raise ValueError(f"interval must be positive, not {interval}")
        if first is not None:
            _require_aware(first, "first")
        trigger = IntervalTrigger(seconds=interval.total_seconds(), start_date=first, timezone=UTC)
        with self._store_errors():
            old = self._open().get_job(job_id)
        same = (
            old is not None
            and isinstance(old.trigger, IntervalTrigger)
            and old.trigger.interval == trigger.interval
            and (first is None or old.trigger.start_date == trigger.start_date)
        )
        self._add(kind, job_id, trigger, payload, old.next_run_time if same else None)

    def weekly(
        self,
        kind: str,
        job_id: str,
        days: Sequence[int],
        at: time,
        zone: str,
        payload: dict[str, Any] | None = None,
    ) -> None:
        """Run on ``days`` (0 = Monday) at the wall-clock time ``at`` in the IANA ``zone``
        (across daylight saving). Replaces ``job_id``; the same rule again keeps its next run."""
        if not days or any(not 0 <= day <= 6 for day in days):
            raise ValueError(f"days must be 0-6 (Monday is 0), not {list(days)}")
        trigger = WallClockTrigger(  # once per wall-clock time, daylight saving's repeat too
            day_of_week=",".join(str(day) for day in sorted(set(days))),
            hour=at.hour,
            minute=at.minute,
            second=at.second,
            timezone=ZoneInfo(zone),
        )
        with self._store_errors():
            old = self._open().get_job(job_id)
        same = (
            old is not None
            and isinstance(old.trigger, CronTrigger)
            and (str(old.trigger), str(old.trigger.timezone))
            == (str(trigger), str(trigger.timezone))
        )
        self._add(kind, job_id, trigger, payload, old.next_run_time if same else None)

    def cancel(self, job_id: str) -> bool:
        """Unschedule ``job_id``; False if there is no such job. A running handler is left be."""
        try:
            with self._store_errors():
                self._open().remove_job(job_id)
        except JobLookupError:
            return False
        return True

    def pending(self, kind: str | None = None) -> list[ScheduledJob]:
        """Scheduled jobs (of ``kind``), soonest first."""
        with self._store_errors():
            stored = self._open().get_jobs()
        jobs = [pending_job(job) for job in stored]
        return [job for job in jobs if job is not None and (kind is None or job.kind == kind)]

    def job(self, job_id: str) -> ScheduledJob | None:
        """The pending job ``job_id`` (None: no such job, or not one of ours)."""
        with self._store_errors():
            stored = self._open().get_job(job_id)
        return None if stored is None else pending_job(stored)

    async def withdraw(self, job_id: str, *, kind: str | None = None) -> ScheduledJob | None:
        """Cancel ``job_id`` for good: its kind's ``on_cancel`` hook first (an exception there
        leaves the job as it was), then the job. None: no such pending job (of ``kind``)."""
        job = self.job(job_id)
        if job is None or (kind is not None and job.kind != kind):
            return None
        hook = self._on_cancel.get(job.kind)
        if hook is not None:
            await hook(job_id, job.payload)
        self.cancel(job_id)
        return job

    def _open(self) -> Any:
        """The apscheduler with its store open: started paused, so nothing fires before start()."""
        if self._closed:
            raise RuntimeError("the scheduler is shut down")
        if self._aps is None:
            with self._store_errors():
                store = open_job_store(self.where)
                shared = self.leadership is not None
                aps = Runner(
                    store,
                    self._dispatch_run,
                    may_fire=self._may_fire,
                    poll_seconds=self._poll_seconds if shared else None,
                    describe_error=lambda exc: redacted(exc, self.where),
                )
                try:
                    aps.start(paused=True)  # binds the running loop, creates the table
                except BaseException:
                    store.shutdown()
                    raise
            self._aps = aps
        return self._aps

    @contextlib.contextmanager
    def _store_errors(self) -> Iterator[None]:
        """On PostgreSQL, database errors without the password (SQLite's pass as they are)."""
        if not self.where.is_postgresql:
            yield
            return
        with job_store_errors(self.where):
            yield

    def _may_fire(self) -> bool:
        return self.leadership is None or self.leadership.may_fire()

    async def _follow_lease(self) -> None:
        """Renew or take the lease, and pause or resume firing to match."""
        assert self.leadership is not None
        leading = await self.leadership.renew()
        aps = self._aps
        if aps is None or self._closed:
            return
        if leading and aps.state != STATE_RUNNING:
            log.info("scheduler: %s leads and fires jobs", self.owner)
            aps.resume()
        elif not leading and aps.state == STATE_RUNNING:
            log.warning("scheduler: %s lost the lead; paused", self.owner)
            aps.pause()

    async def _keep_lease(self) -> None:
        assert self.leadership is not None
        while True:
            await asyncio.sleep(self.leadership.renew_seconds)
            await self._follow_lease()

    def _add(
        self, kind: str, job_id: str, trigger: Any, payload: dict[str, Any] | None, next_run: Any
    ) -> None:
        if not kind or not job_id:
            raise ValueError("kind and job_id must be non-empty")
        data = json.loads(json.dumps(payload or {}))  # JSON-able, and the caller's dict is theirs
        keep = {} if next_run is None else {"next_run_time": next_run}  # None would mean paused
        with self._store_errors():
            self._open().add_job(
                FIRE,
                trigger,
                args=(self.name, kind, job_id, data),
                id=job_id,
                name=job_id,
                replace_existing=True,
                **keep,
            )

    def _dispatch_run(self, job: Any, run_times: list[datetime]) -> None:
        """A claimed run, whichever replica scheduled it: start its handler here."""
        if job.func_ref not in OURS or len(job.args) != 4:
            log.warning("job %s: not one of ours (%s); dropped", job.id, job.func_ref)
            return
        _, kind, job_id, payload = job.args
        self.dispatch(kind, job_id, payload)

    def dispatch(self, kind: str, job_id: str, payload: dict[str, Any]) -> None:
        """Start ``kind``'s handler for a run this scheduler claimed (or ``fire`` routed here)."""
        handler = self._handlers.get(kind)
        if handler is None:
            log.warning(
                "job %s: no handler for kind %r (plugin not loaded?); dropped", job_id, kind
            )
            return
        task = asyncio.get_running_loop().create_task(
            self._run(handler, kind, job_id, payload), name=f"scheduler job {job_id}"
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, handler: Handler, kind: str, job_id: str, payload: dict[str, Any]) -> None:
        try:
            await handler(job_id, payload)
        except Exception:
            log.exception("job %s (%s) failed", job_id, kind)


def _require_aware(when: datetime, name: str) -> None:
    if when.tzinfo is None or when.utcoffset() is None:
        raise ValueError(f"{name} must be a timezone-aware datetime, got naive {when!r}")
