"""The bot's scheduler: plugins schedule work for later, and it survives restarts.

apscheduler 3 (``AsyncIOScheduler``, ``SQLAlchemyJobStore``) with three decisions:

* **Its own SQLite file** (``data/jobs.sqlite``, beside the history database): the job store is
  synchronous and runs on the event loop, so it must never wait on the history database's locks.
* **Jobs reference ids, not live objects.** Every stored job calls ``"bot.scheduler:_fire"`` with
  plain data ``(scheduler name, kind, job id, payload)``; ``_fire`` finds the live
  :class:`Scheduler` by name and starts the handler registered for ``kind``. Nothing pickled
  points at a plugin or a connection, so jobs outlive the process and code changes. A run whose
  kind has no handler (plugin not loaded) is logged and dropped.
* **A job that fell due while the bot was down runs at start**: ``misfire_grace_time=None`` (run
  however late) and ``coalesce=True`` (missed runs of a repeating job run once).

Handlers (``async def handler(job_id, payload)``) should be registered before ``start()`` so jobs
due at start find them. Each run is our own task: a slow handler holds up no other, an exception
is logged with the job id, shutdown cancels and awaits what still runs. Jobs can be scheduled,
listed and cancelled before ``start()`` (that opens the store; nothing fires until start). Job
ids are global to the store, so callers namespace them (``"reminders:42"``); an existing id is
replaced. Payloads go through JSON when scheduled, so handlers see the same data before and after
a restart. A one-off leaves the store when it fires: a handler cut short by shutdown is not
retried (at most once). Use it on the event loop's thread, with the loop running.

Maintenance (retention) is the app's to wire: ``every(kind, "app:retention", timedelta(hours=1))``
at each start-up. Re-declaring a repeating job with the same interval keeps its next run, so
restarts don't postpone it and a run missed while down still runs at start.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Self

from apscheduler.executors.base import BaseExecutor, run_job
from apscheduler.jobstores.base import JobLookupError
from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
from apscheduler.schedulers import SchedulerNotRunningError
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.schedulers.base import STATE_STOPPED, BaseScheduler
from apscheduler.triggers.date import DateTrigger
from apscheduler.triggers.interval import IntervalTrigger
from sqlalchemy import URL, create_engine

log = logging.getLogger(__name__)

Handler = Callable[[str, dict[str, Any]], Awaitable[None]]

DEFAULT_PATH = Path("data/jobs.sqlite")
_FIRE = "bot.scheduler:_fire"  # what every stored job calls; keep it importable under this name
_live: dict[str, Scheduler] = {}  # started schedulers by name, for _fire


@dataclass(frozen=True)
class ScheduledJob:
    job_id: str
    kind: str
    next_run: datetime  # timezone-aware
    payload: dict[str, Any]


def _fire(scheduler_name: str, kind: str, job_id: str, payload: dict[str, Any]) -> None:
    """The callable of every stored job: hand the run to the live scheduler of that name."""
    scheduler = _live.get(scheduler_name)
    if scheduler is None:
        log.warning(
            "job %s (%s): no scheduler %r is running; dropped", job_id, kind, scheduler_name
        )
        return
    scheduler._dispatch(kind, job_id, payload)


class _InlineExecutor(BaseExecutor):  # type: ignore[misc]
    """Runs ``_fire`` where apscheduler processes due jobs, on the event loop.

    ``_fire`` only starts a task, so nothing needs a thread pool (the default for plain functions)
    or an apscheduler task that shutdown could cancel after a one-off job left the store but
    before its handler started.
    """

    def submit_job(self, job: Any, run_times: list[datetime]) -> None:
        self._do_submit_job(job, run_times)

    def _do_submit_job(self, job: Any, run_times: list[datetime]) -> None:
        for event in run_job(job, job._jobstore_alias, run_times, self._logger.name):
            self._scheduler._dispatch_event(event)


class _AsyncIOScheduler(AsyncIOScheduler):  # type: ignore[misc]
    def _process_jobs(self) -> float | None:
        if self.state == STATE_STOPPED:  # a wakeup queued before shutdown
            return None
        try:
            wait: float | None = super()._process_jobs()
        except Exception:  # a store error while updating jobs would otherwise stop the timer
            log.exception(
                "scheduler: job store error; retrying in %ss", self.jobstore_retry_interval
            )
            return float(self.jobstore_retry_interval)
        return wait

    def shutdown(self, wait: bool = True) -> None:
        # AsyncIOScheduler defers this with call_soon_threadsafe; we are on the loop, so stop now:
        # when Scheduler.shutdown returns, no job will fire and the store is closed.
        if not self.running:
            raise SchedulerNotRunningError
        BaseScheduler.shutdown(self, wait)
        self._stop_timer()
        self._eventloop = None


class Scheduler:
    """Persistent one-off and repeating jobs, dispatched by kind to registered async handlers."""

    def __init__(self, path: str | Path, *, name: str = "parlour") -> None:
        self.path = Path(path)
        self.name = name  # stored in every job: keep it stable across restarts
        self._handlers: dict[str, Handler] = {}
        self._aps: Any = None  # the apscheduler, once the store is open
        self._started = self._closed = False
        self._tasks: set[asyncio.Task[None]] = set()

    def register(self, kind: str, handler: Handler) -> None:
        """Route jobs of ``kind`` to ``handler(job_id, payload)``; replaces an earlier one."""
        self._handlers[kind] = handler

    def unregister(self, kind: str) -> None:
        """Forget the handler of ``kind`` (its jobs stay stored; their runs are dropped)."""
        self._handlers.pop(kind, None)

    async def start(self) -> None:
        """Open the store if need be and start firing; jobs already due run promptly."""
        if self._started or self._closed:
            raise RuntimeError("a scheduler starts once")
        if self.name in _live:
            raise RuntimeError(f"a scheduler named {self.name!r} is already running")
        aps = self._open()
        _live[self.name] = self
        self._started = True
        aps.resume()  # due jobs run on the next turn of the loop

    async def shutdown(self) -> None:
        """Stop firing, close the store, cancel and await running handlers. Idempotent."""
        if self._closed:
            return
        self._closed = True
        aps, self._aps = self._aps, None
        if _live.get(self.name) is self:
            del _live[self.name]
        try:
            if aps is not None:
                aps.shutdown(wait=False)  # also disposes the store's engine
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
        old = self._open().get_job(job_id)
        same = (
            old is not None
            and isinstance(old.trigger, IntervalTrigger)
            and old.trigger.interval == trigger.interval
            and (first is None or old.trigger.start_date == trigger.start_date)
        )
        self._add(kind, job_id, trigger, payload, old.next_run_time if same else None)

    def cancel(self, job_id: str) -> bool:
        """Unschedule ``job_id``; False if there is no such job. A running handler is left be."""
        try:
            self._open().remove_job(job_id)
        except JobLookupError:
            return False
        return True

    def pending(self, kind: str | None = None) -> list[ScheduledJob]:
        """Scheduled jobs (of ``kind``), soonest first."""
        jobs = []
        for job in self._open().get_jobs():
            if job.func_ref != _FIRE or job.next_run_time is None:
                continue
            _, job_kind, job_id, payload = job.args
            if kind is None or job_kind == kind:
                jobs.append(ScheduledJob(job_id, job_kind, job.next_run_time, payload))
        return jobs

    def _open(self) -> Any:
        """The apscheduler with its store open: started paused, so nothing fires before start()."""
        if self._closed:
            raise RuntimeError("the scheduler is shut down")
        if self._aps is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            engine = create_engine(URL.create("sqlite", database=str(self.path)))
            aps = _AsyncIOScheduler(
                jobstores={"default": SQLAlchemyJobStore(engine=engine)},
                executors={"default": _InlineExecutor()},
                job_defaults={"misfire_grace_time": None, "coalesce": True},
                timezone=UTC,
            )
            try:
                aps.start(paused=True)  # binds the running loop, creates the table
            except BaseException:
                engine.dispose()
                raise
            self._aps = aps
        return self._aps

    def _add(
        self, kind: str, job_id: str, trigger: Any, payload: dict[str, Any] | None, next_run: Any
    ) -> None:
        if not kind or not job_id:
            raise ValueError("kind and job_id must be non-empty")
        data = json.loads(json.dumps(payload or {}))  # JSON-able, and the caller's dict is theirs
        keep = {} if next_run is None else {"next_run_time": next_run}  # None would mean paused
        self._open().add_job(
            _FIRE,
            trigger,
            args=(self.name, kind, job_id, data),
            id=job_id,
            name=job_id,
            replace_existing=True,
            **keep,
        )

    def _dispatch(self, kind: str, job_id: str, payload: dict[str, Any]) -> None:
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
