"""The PostgreSQL server tests run against, one fresh schema per test.

``PARLOUR_TEST_PG_URL`` (``.ci/run`` sets it to the project's server,
``postgresql://postgres@127.0.0.1:5432/test``) turns the PostgreSQL tests on; without it they are
skipped and the session says once how to run them. Each test gets ``?schema=<fresh name>``: the
store creates the schema on open, and the session drops every schema it made at the end.

Under pytest-xdist (``make test``) each worker is a session of its own: its own ``RUN_PREFIX``,
and at its end it drops only its own schemas, never one another worker is using.

``PARLOUR_TEST_STORAGE=postgres`` runs the end-to-end suites (every test built on
``tests.conftest.make_settings``) on PostgreSQL instead of SQLite.
"""

from __future__ import annotations

import asyncio
import os
import secrets
from pathlib import Path

import pytest

PG_URL_ENV = "PARLOUR_TEST_PG_URL"
STORAGE_ENV = "PARLOUR_TEST_STORAGE"
HOW_TO_RUN = (
    "PostgreSQL tests skipped: set PARLOUR_TEST_PG_URL=postgresql://postgres@127.0.0.1:5432/test "
    "(any server you may create schemas on) to run them"
)
RUN_PREFIX = f"t_{secrets.token_hex(3)}_"  # this session's schemas: dropped at the end


def pg_base_url() -> str | None:
    """The server's URL, or None when PostgreSQL tests are off."""
    value = os.environ.get(PG_URL_ENV, "").strip()
    return value or None


def e2e_on_postgres() -> bool:
    return os.environ.get(STORAGE_ENV, "").strip().lower() in ("postgres", "postgresql")


def fresh_pg_url() -> str:
    """A URL of a schema nobody has used (created by the store on open)."""
    base = pg_base_url()
    if base is None:
        raise RuntimeError(HOW_TO_RUN)
    joiner = "&" if "?" in base else "?"
    return f"{base}{joiner}schema={RUN_PREFIX}{secrets.token_hex(4)}"


_by_test_dir: dict[str, str] = {}


def schema_url_for(tmp_path: object) -> str:
    """One schema per test (keyed by its ``tmp_path``): an app reopened in the same test
    ("after a restart") finds what the first one stored, as it would in one SQLite file."""
    key = str(tmp_path)
    if key not in _by_test_dir:
        _by_test_dir[key] = fresh_pg_url()
    return _by_test_dir[key]


def drop_session_schemas() -> None:
    """Drop every schema this session created (called once, at the session's end)."""
    base = pg_base_url()
    if base is None:
        return

    async def drop() -> None:
        import asyncpg

        conn = await asyncpg.connect(base)
        try:
            names = await conn.fetch(
                "SELECT nspname FROM pg_namespace WHERE nspname LIKE $1", RUN_PREFIX + "%"
            )
            for row in names:
                await conn.execute(f'DROP SCHEMA IF EXISTS "{row["nspname"]}" CASCADE')
        finally:
            await conn.close()

    asyncio.run(drop())


BACKEND_NAMES = ("sqlite", "postgres")
"""The backends a test parametrised with :func:`storage_section` runs on."""


def storage_section(backend: str, tmp_path: Path) -> dict[str, str]:
    """A ``storage:`` section naming one test's empty database on ``backend`` (one of
    :data:`BACKEND_NAMES`), for end-to-end tests that must run on both whatever
    ``PARLOUR_TEST_STORAGE`` says. Skips the test on PostgreSQL without a server."""
    if backend == "postgres":
        if pg_base_url() is None:
            pytest.skip(HOW_TO_RUN)
        return {"url": schema_url_for(tmp_path)}
    return {"path": str(tmp_path / "parlour.db")}
