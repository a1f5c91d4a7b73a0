"""Where the scheduler's jobs live, and how one run is claimed there before it fires.

SQLite: the scheduler's own file (``storage.jobs_path``, :mod:`.sqlite_jobs`): the store is
synchronous and runs on the event loop, so it must never wait on the history database's locks.
PostgreSQL: the bot's own database (table ``apscheduler_jobs``, in ``?schema=`` when given,
:mod:`.postgres_jobs`), so that every replica sees the same jobs and nothing is written to any
local file. Each backend's module is imported only when it is used: a bot on SQLite never loads
SQLAlchemy.

A due run is *claimed* by a conditional ``DELETE`` (a one-off) or ``UPDATE`` (a repeating job's
next run) that matches the run time the claimer read: of two processes that read the same due
run, exactly one changes the row, and only that one fires it. The lease keeps a second process
from trying; the claim makes trying harmless.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from bot.config.storage_url import StorageURL

__all__ = ["ClaimingJobStore", "open_job_store"]


class ClaimingJobStore(Protocol):
    """An apscheduler job store (what :class:`~bot.scheduling.runner.Runner` calls of it) that
    can also claim a due run."""

    def claim(self, job: Any, next_run: datetime | None) -> bool:
        """Take the due run of ``job`` as read: remove it (``next_run`` None) or move it on;
        False when the row no longer holds that run (then nothing fires)."""
        ...

    def get_due_jobs(self, now: datetime) -> list[Any]: ...

    def get_next_run_time(self) -> datetime | None: ...

    def shutdown(self) -> None: ...


def open_job_store(where: StorageURL) -> ClaimingJobStore:
    """The store for ``where`` (on SQLite its table is created when the scheduler starts)."""
    if not where.is_postgresql:
        from bot.scheduling.sqlite_jobs import SQLiteJobStore

        assert where.path is not None
        where.path.parent.mkdir(parents=True, exist_ok=True)
        return SQLiteJobStore(where.path)
    from bot.scheduling.postgres_jobs import open_postgres_store

    return open_postgres_store(where)
