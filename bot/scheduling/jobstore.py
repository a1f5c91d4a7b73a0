"""Where the scheduler's jobs live, and how one run is claimed there before it fires.

SQLite: the scheduler's own file (``storage.jobs_path``): the store is synchronous and runs on
the event loop, so it must never wait on the history database's locks. PostgreSQL: the bot's own
database (table ``apscheduler_jobs``, in ``?schema=`` when given), so that every replica sees the
same jobs and nothing is written to any local file.

A due run is *claimed* by a conditional ``DELETE`` (a one-off) or ``UPDATE`` (a repeating job's
next run) that matches the run time the claimer read: of two processes that read the same due
run, exactly one changes the row, and only that one fires it. The lease keeps a second process
from trying; the claim makes trying harmless.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
from apscheduler.util import datetime_to_utc_timestamp
from sqlalchemy import URL, and_, create_engine, text
from sqlalchemy.exc import SQLAlchemyError

from bot.config.storage_url import StorageURL
from bot.errors import StoreError

__all__ = ["ClaimingJobStore", "job_store_errors", "open_job_store"]

TABLE = "apscheduler_jobs"


class ClaimingJobStore(SQLAlchemyJobStore):  # type: ignore[misc]
    """apscheduler's SQLAlchemy store plus :meth:`claim`."""

    def claim(self, job: Any, next_run: datetime | None) -> bool:
        """Take the due run of ``job`` as read: remove it (``next_run`` None) or move it on.

        False when the row no longer holds that run: another process claimed it, or it was
        rescheduled or cancelled in between; then the caller fires nothing.
        """
        table = self.jobs_t
        read = and_(
            table.c.id == job.id,
            table.c.next_run_time == datetime_to_utc_timestamp(job.next_run_time),
        )
        with self.engine.begin() as conn:
            if next_run is None:
                result = conn.execute(table.delete().where(read))
            else:
                job._modify(next_run_time=next_run)
                state = pickle.dumps(job.__getstate__(), self.pickle_protocol)
                values = {"next_run_time": datetime_to_utc_timestamp(next_run), "job_state": state}
                result = conn.execute(table.update().values(**values).where(read))
        return bool(result.rowcount == 1)


def open_job_store(where: StorageURL) -> ClaimingJobStore:
    """The store for ``where`` (its table is created when the scheduler starts)."""
    if not where.is_postgresql:
        assert where.path is not None
        where.path.parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(URL.create("sqlite", database=str(where.path)))
        return ClaimingJobStore(engine=engine, tablename=TABLE)
    options: dict[str, Any] = {"pool_pre_ping": True, "pool_size": 2, "max_overflow": 2}
    if where.schema:
        # The table is named with its schema; the search_path keeps anything else there too.
        options["connect_args"] = {"options": f"-csearch_path={where.schema}"}
    engine = create_engine(where.sqlalchemy_url(), **options)
    store = ClaimingJobStore(engine=engine, tablename=TABLE, tableschema=where.schema)
    try:
        # Replicas start together: "IF NOT EXISTS" races in PostgreSQL (two CREATEs can both
        # pass the check, and the second fails on pg_type), so one at a time, under a lock.
        with job_store_errors(where), engine.begin() as conn:
            lock = f"{where.schema or ''}:apscheduler_jobs"
            conn.execute(text("SELECT pg_advisory_xact_lock(hashtext(:lock))"), {"lock": lock})
            if where.schema:  # validated by parse_storage_url: a plain name
                conn.execute(text(f'CREATE SCHEMA IF NOT EXISTS "{where.schema}"'))
            store.jobs_t.create(conn, checkfirst=True)
    except BaseException:
        engine.dispose()
        raise
    return store


@contextmanager
def job_store_errors(where: StorageURL) -> Iterator[None]:
    """Database errors as a :class:`StoreError` naming the URL without its password.

    SQLAlchemy's messages may carry the connection string; the original is not chained, so a
    traceback does not print it either.
    """
    try:
        yield
    except SQLAlchemyError as exc:
        raise StoreError(f"scheduler job store {where.shown()}: {redacted(exc, where)}") from None


def redacted(exc: BaseException, where: StorageURL) -> str:
    """``exc``'s message with the storage password masked (for logs and errors)."""
    message = str(exc).split("\n(Background on this error", 1)[0]
    password = where.password()
    return message.replace(password, "***") if password else message
