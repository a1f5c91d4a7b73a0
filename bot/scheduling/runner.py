"""apscheduler's loop, changed in three ways for replicas sharing one job store.

* **Fenced**: before every round it asks ``may_fire()`` (this replica holds the lease, with a
  margin to spare) and pauses itself at once when not: a paused ex-leader fires nothing.
* **Claimed**: a due run fires only after :meth:`ClaimingJobStore.claim` took it in the store,
  so a run is fired by at most one process even if two ever believed they led.
* **Polled** (when shared): apscheduler sleeps until *its own* next run time; jobs that other
  replicas add would wait for that. With ``poll_seconds`` the wait is capped, so the leader
  looks at the store that often (two indexed queries).

Firing hands the run to ``dispatch(job, run_times)`` synchronously (it starts a task), so there is
no executor, thread or apscheduler task that shutdown could cut between claim and dispatch.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from apscheduler.schedulers import SchedulerNotRunningError
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.schedulers.base import STATE_RUNNING, BaseScheduler

from bot.scheduling.jobstore import ClaimingJobStore

__all__ = ["Runner"]

log = logging.getLogger("bot.scheduling.scheduler")

Dispatch = Callable[[Any, list[datetime]], None]


class Runner(AsyncIOScheduler):  # type: ignore[misc]
    def __init__(
        self,
        store: ClaimingJobStore,
        dispatch: Dispatch,
        *,
        may_fire: Callable[[], bool],
        poll_seconds: float | None,
        describe_error: Callable[[BaseException], str],
    ) -> None:
        super().__init__(
            jobstores={"default": store},
            job_defaults={"misfire_grace_time": None, "coalesce": True},
            timezone=UTC,
        )
        self._store = store
        self._dispatch_run = dispatch
        self._may_fire = may_fire
        self._poll_seconds = poll_seconds
        self._describe_error = describe_error

    def _process_jobs(self) -> float | None:
        if self.state != STATE_RUNNING:  # paused, or a wakeup queued before shutdown
            return None
        if not self._may_fire():
            self.pause()
            return None
        try:
            wait = self._fire_due_runs()
        except Exception as exc:  # a store error must not stop the timer
            log.warning(
                "scheduler: job store error, retrying in %ss: %s",
                self.jobstore_retry_interval,
                self._describe_error(exc),
            )
            wait = float(self.jobstore_retry_interval)
        if self._poll_seconds is not None:
            wait = self._poll_seconds if wait is None else min(wait, self._poll_seconds)
        return wait

    def _fire_due_runs(self) -> float | None:
        """Claim and dispatch every due run; seconds until the next one (None: no jobs)."""
        now = datetime.now(UTC)
        with self._jobstores_lock:
            for job in self._store.get_due_jobs(now):
                run_times = _due_runs(job, now)
                if not run_times:
                    continue
                if job.coalesce:
                    run_times = run_times[-1:]
                next_run = job.trigger.get_next_fire_time(run_times[-1], now)
                if not self._may_fire():  # the lease ran short while we were at it
                    self.pause()
                    return None
                if self._store.claim(job, next_run):
                    self._dispatch_run(job, run_times)
            upcoming = self._store.get_next_run_time()
        if upcoming is None:
            return None
        return max(float((upcoming - datetime.now(UTC)).total_seconds()), 0.0)

    def shutdown(self, wait: bool = True) -> None:
        # AsyncIOScheduler defers this with call_soon_threadsafe; we are on the loop, so stop now:
        # when Scheduler.shutdown returns, no job will fire and the store is closed.
        if not self.running:
            raise SchedulerNotRunningError
        BaseScheduler.shutdown(self, wait)
        self._stop_timer()
        self._eventloop = None


def _due_runs(job: Any, now: datetime) -> list[datetime]:
    """Every run of ``job`` due by ``now``, oldest first (what apscheduler's loop computes;
    its own helper for it is private)."""
    runs: list[datetime] = []
    run: datetime | None = job.next_run_time
    while run is not None and run <= now:
        runs.append(run)
        run = job.trigger.get_next_fire_time(run, now)
    return runs
