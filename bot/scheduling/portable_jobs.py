"""The scheduler's jobs (reminders, repeating work) as one more portable table.

apscheduler keeps them in its own table, ``apscheduler_jobs`` (``id``, ``next_run_time``,
``job_state``: the pickled job), written through SQLAlchemy: with SQLite in a file of its own
beside the history database (``<db name>.jobs.sqlite``, :mod:`bot.scheduling.scheduler`), with
PostgreSQL in the same database and schema as the rest. A job's state names only plain data and
``bot.scheduling.scheduler:_fire``, never its store, so the rows move as they are. The table is
created through apscheduler's own definition, as the scheduler would at its first start.
SQLAlchemy is synchronous: each call runs in a worker thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
from sqlalchemy import URL, Engine, func, inspect, select, tuple_
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import SQLAlchemyError

from bot.config.storage_url import StorageURL
from bot.errors import StoreError
from bot.storage.portable import Row, Table

__all__ = ["JOBS", "JobsStore", "default_jobs_path"]

_T = TypeVar("_T")

JOBS = Table("apscheduler_jobs", ("id", "next_run_time", "job_state"), key=("id",), identity=False)


def default_jobs_path(database: Path) -> Path:
    """Where :class:`bot.config.conversation.StorageSettings` puts an SQLite database's jobs."""
    return database.with_name(f"{database.stem}.jobs.sqlite")


class JobsStore:
    """:class:`~bot.storage.portable.PortableStore` over the jobs table of one deployment.

    ``create``: make the file and table if missing (a target); a source is only read, and a
    missing file or table is an empty one.
    """

    def __init__(self, url: StorageURL, *, jobs_path: Path | None = None, create: bool) -> None:
        self.path: Path | None = None
        if url.is_postgresql:
            engine_url: str | URL = url.sqlalchemy_url()
            schema = url.schema
        else:
            assert url.path is not None
            self.path = jobs_path or default_jobs_path(url.path)
            engine_url, schema = URL.create("sqlite", database=str(self.path)), None
        self._url = url
        self._create = create
        self._ready = False
        # apscheduler's own table definition; its engine connects only when first used.
        store = SQLAlchemyJobStore(url=engine_url, tableschema=schema)
        self._engine: Engine = store.engine
        self._jobs = store.jobs_t

    def tables(self) -> Sequence[Table]:
        return (JOBS,)

    async def count(self, table: Table) -> int:
        return await self._in_thread(self._count)

    async def read(self, table: Table, after: Row | None, limit: int) -> list[Row]:
        return await self._in_thread(self._read, after, limit)

    async def write(self, table: Table, rows: Sequence[Row]) -> int:
        return await self._in_thread(self._write, rows)

    async def finish(self) -> None:
        return None

    async def _in_thread(self, call: Callable[..., _T], *args: Any) -> _T:
        """``call`` in a worker thread; a database error as a one-line StoreError that names
        the database as :meth:`StorageURL.shown` does (SQLAlchemy's text may hold the DSN)."""
        try:
            return await asyncio.to_thread(call, *args)
        except SQLAlchemyError as exc:
            reason = str(exc).split("\n", 1)[0]
            password = self._url.password()
            if password:
                reason = reason.replace(password, "***")
            raise StoreError(f"scheduler jobs in {self._url.shown()}: {reason}") from None

    def close(self) -> None:
        self._engine.dispose()

    def _engine_or_none(self) -> Engine | None:
        """The engine; None for a source that has no jobs file (never create one)."""
        if not self._ready:
            if self.path is not None and not self._create and not self.path.exists():
                return None
            if self.path is not None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            if self._create:
                self._jobs.create(self._engine, checkfirst=True)
            self._ready = True
        return self._engine

    def _present(self, engine: Engine) -> bool:
        return inspect(engine).has_table(self._jobs.name, schema=self._jobs.schema)

    def _count(self) -> int:
        engine = self._engine_or_none()
        if engine is None or not self._present(engine):
            return 0
        with engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(self._jobs)).scalar_one())

    def _read(self, after: Row | None, limit: int) -> list[Row]:
        engine = self._engine_or_none()
        if engine is None or not self._present(engine):
            return []
        c = self._jobs.c
        query = select(c.id, c.next_run_time, c.job_state).order_by(c.id).limit(limit)
        if after is not None:
            query = query.where(tuple_(c.id) > tuple_(*after))
        with engine.connect() as conn:
            return [tuple(row) for row in conn.execute(query)]

    def _write(self, rows: Sequence[Row]) -> int:
        engine = self._engine_or_none()
        if engine is None or not rows:
            return 0
        dialect: Any = postgresql if engine.dialect.name == "postgresql" else sqlite
        insert = dialect.insert(self._jobs).on_conflict_do_nothing(index_elements=["id"])
        statement = insert.returning(self._jobs.c.id)  # rowcount is -1 on some drivers
        inserted = 0
        with engine.begin() as conn:
            for row in rows:
                value = dict(zip(JOBS.columns, row, strict=True))
                inserted += len(conn.execute(statement, value).all())
        return inserted
