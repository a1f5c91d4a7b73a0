"""The scheduler's jobs in the bot's PostgreSQL database, through apscheduler's SQLAlchemy store
(table ``apscheduler_jobs``, in ``?schema=`` when given): every replica sees the same jobs, and
nothing is written to any local file. Imported only by a bot on PostgreSQL."""

from __future__ import annotations

import pickle
from datetime import datetime
from typing import Any

from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
from apscheduler.util import datetime_to_utc_timestamp
from sqlalchemy import and_, create_engine, text

from bot.config.storage_url import StorageURL
from bot.scheduling.job_errors import job_store_errors

__all__ = ["PostgresJobStore", "open_postgres_store"]

TABLE = "apscheduler_jobs"  # apscheduler's own name for it (sqlite_jobs.py writes the same)


class PostgresJobStore(SQLAlchemyJobStore):  # type: ignore[misc]
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


CONNECT_SECONDS = 10  # a connection attempt of the job store
LOCK_SECONDS = 30.0  # waiting for the job table's creation lock at start (replicas)


def open_postgres_store(where: StorageURL) -> PostgresJobStore:
    """The store in ``where``'s database, its table created (under a lock: replicas start
    together)."""
    options: dict[str, Any] = {"pool_pre_ping": True, "pool_size": 2, "max_overflow": 2}
    # Its calls block the event loop (apscheduler 3 is synchronous): bounded, never a hang.
    connect: dict[str, Any] = {"connect_timeout": CONNECT_SECONDS}
    if where.schema:
        # The table is named with its schema; the search_path keeps anything else there too.
        connect["options"] = f"-csearch_path={where.schema}"
    options["connect_args"] = connect
    engine = create_engine(where.sqlalchemy_url(), **options)
    store = PostgresJobStore(engine=engine, tablename=TABLE, tableschema=where.schema)
    try:
        # Replicas start together: "IF NOT EXISTS" races in PostgreSQL (two CREATEs can both
        # pass the check, and the second fails on pg_type), so one at a time, under a lock.
        with job_store_errors(where), engine.begin() as conn:
            lock = f"{where.schema or ''}:apscheduler_jobs"
            # a replica that cannot take the lock says so, instead of hanging its start
            conn.execute(text(f"SET LOCAL lock_timeout = '{int(LOCK_SECONDS * 1000)}ms'"))
            conn.execute(text("SELECT pg_advisory_xact_lock(hashtext(:lock))"), {"lock": lock})
            if where.schema:  # validated by parse_storage_url: a plain name
                conn.execute(text(f'CREATE SCHEMA IF NOT EXISTS "{where.schema}"'))
            store.jobs_t.create(conn, checkfirst=True)
    except BaseException:
        engine.dispose()
        raise
    return store
