"""The scheduler's own SQLite file, through the standard library's ``sqlite3``.

The same table as apscheduler's SQLAlchemy store writes (``apscheduler_jobs``: ``id``,
``next_run_time`` as a UTC timestamp, ``job_state`` the pickled job, an index on the time), so
a jobs file written by earlier releases loads as it is, and ``storage copy`` reads either. Why
not SQLAlchemy here: a bot on SQLite would import it only for this one table, about 11 MiB and
a few hundred milliseconds of its start (issue 31); PostgreSQL keeps it
(:mod:`bot.scheduling.postgres_jobs`).

One connection in autocommit mode: every statement is its own transaction, which is all
apscheduler's calls and :meth:`SQLiteJobStore.claim` (one conditional statement) need. It is
used on the event loop's thread; a lock keeps a call from another thread safe.
"""

from __future__ import annotations

import pickle
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from apscheduler.job import Job
from apscheduler.jobstores.base import BaseJobStore, ConflictingIdError, JobLookupError
from apscheduler.util import datetime_to_utc_timestamp, utc_timestamp_to_datetime

__all__ = ["SQLiteJobStore"]

TABLE = "apscheduler_jobs"
_SCHEMA = (  # what SQLAlchemy's store creates, with IF NOT EXISTS
    f"CREATE TABLE IF NOT EXISTS {TABLE} (\n"
    "\tid VARCHAR(191) NOT NULL, \n"
    "\tnext_run_time FLOAT, \n"
    "\tjob_state BLOB NOT NULL, \n"
    "\tPRIMARY KEY (id)\n"
    ")",
    f"CREATE INDEX IF NOT EXISTS ix_{TABLE}_next_run_time ON {TABLE} (next_run_time)",
)


class SQLiteJobStore(BaseJobStore):  # type: ignore[misc]
    """apscheduler's job store interface on one SQLite file, plus :meth:`claim`."""

    def __init__(self, path: Path, *, pickle_protocol: int = pickle.HIGHEST_PROTOCOL) -> None:
        super().__init__()
        self.path = path
        self.pickle_protocol = pickle_protocol
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def start(self, scheduler: Any, alias: str) -> None:
        super().start(scheduler, alias)
        with self._connection() as db:
            for statement in _SCHEMA:
                db.execute(statement)

    def shutdown(self) -> None:
        with self._lock:
            db, self._db = self._db, None
            if db is not None:
                db.close()

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._db is None:
                self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            yield self._db

    def lookup_job(self, job_id: str) -> Any:
        with self._connection() as db:
            row = db.execute(f"SELECT job_state FROM {TABLE} WHERE id = ?", (job_id,)).fetchone()
        return self._reconstitute(row[0]) if row else None

    def get_due_jobs(self, now: datetime) -> list[Any]:
        return self._jobs("WHERE next_run_time <= ?", (datetime_to_utc_timestamp(now),))

    def get_next_run_time(self) -> datetime | None:
        query = (
            f"SELECT next_run_time FROM {TABLE} WHERE next_run_time IS NOT NULL"
            " ORDER BY next_run_time LIMIT 1"
        )
        with self._connection() as db:
            row = db.execute(query).fetchone()
        return utc_timestamp_to_datetime(row[0]) if row else None

    def get_all_jobs(self) -> list[Any]:
        jobs = self._jobs("", ())
        self._fix_paused_jobs_sorting(jobs)
        return jobs

    def add_job(self, job: Any) -> None:
        values = (job.id, datetime_to_utc_timestamp(job.next_run_time), self._state(job))
        try:
            with self._connection() as db:
                db.execute(
                    f"INSERT INTO {TABLE} (id, next_run_time, job_state) VALUES (?, ?, ?)", values
                )
        except sqlite3.IntegrityError:
            raise ConflictingIdError(job.id) from None

    def update_job(self, job: Any) -> None:
        values = (datetime_to_utc_timestamp(job.next_run_time), self._state(job), job.id)
        with self._connection() as db:
            done = db.execute(
                f"UPDATE {TABLE} SET next_run_time = ?, job_state = ? WHERE id = ?", values
            )
        if done.rowcount == 0:
            raise JobLookupError(job.id)

    def remove_job(self, job_id: str) -> None:
        with self._connection() as db:
            done = db.execute(f"DELETE FROM {TABLE} WHERE id = ?", (job_id,))
        if done.rowcount == 0:
            raise JobLookupError(job_id)

    def remove_all_jobs(self) -> None:
        with self._connection() as db:
            db.execute(f"DELETE FROM {TABLE}")

    def claim(self, job: Any, next_run: datetime | None) -> bool:
        """Take the due run of ``job`` as read: remove it (``next_run`` None) or move it on.

        False when the row no longer holds that run: another scheduler claimed it, or it was
        rescheduled or cancelled in between; then the caller fires nothing.
        """
        read = (job.id, datetime_to_utc_timestamp(job.next_run_time))
        with self._connection() as db:
            if next_run is None:
                done = db.execute(f"DELETE FROM {TABLE} WHERE id = ? AND next_run_time = ?", read)
            else:
                job._modify(next_run_time=next_run)
                values = (datetime_to_utc_timestamp(next_run), self._state(job), *read)
                done = db.execute(
                    f"UPDATE {TABLE} SET next_run_time = ?, job_state = ?"
                    " WHERE id = ? AND next_run_time = ?",
                    values,
                )
        return done.rowcount == 1

    def _state(self, job: Any) -> bytes:
        return pickle.dumps(job.__getstate__(), self.pickle_protocol)

    def _reconstitute(self, state: bytes) -> Any:
        job_state = pickle.loads(state)
        job_state["jobstore"] = self
        job = Job.__new__(Job)
        job.__setstate__(job_state)
        job._scheduler = self._scheduler
        job._jobstore_alias = self._alias
        return job

    def _jobs(self, where: str, params: tuple[Any, ...]) -> list[Any]:
        """Jobs matching ``where``, soonest first; a job that cannot be restored (its code is
        gone) is logged and removed, as apscheduler's own stores do."""
        query = f"SELECT id, job_state FROM {TABLE} {where} ORDER BY next_run_time"
        with self._connection() as db:
            rows = db.execute(query, params).fetchall()
        jobs, failed = [], []
        for job_id, state in rows:
            try:
                jobs.append(self._reconstitute(state))
            except BaseException:
                self._logger.exception('Unable to restore job "%s" -- removing it', job_id)
                failed.append(job_id)
        if failed:
            marks = ", ".join("?" * len(failed))
            with self._connection() as db:
                db.execute(f"DELETE FROM {TABLE} WHERE id IN ({marks})", failed)
        return jobs

    def __repr__(self) -> str:
        return f"<{type(self).__name__} (path={self.path})>"
