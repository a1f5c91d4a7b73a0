"""Doctor: the database opens, takes a write, and says where its schema stands.

The write is a scratch key in the doctor's own plugin-data namespace, read back and deleted:
the same protocol every backend implements, so SQLite and PostgreSQL are checked alike. A
SQLite file that does not exist yet is not created (a typo'd path must not leave an empty
database behind); its directory is checked instead. An existing one is first checked for what
would keep the bot from writing it or its ``-wal``/``-shm`` (:mod:`bot.storage.sqlite.files`).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from bot.config import Settings
from bot.doctor import Check, fail, passed, warn
from bot.errors import ParlourError
from bot.storage import open_storage
from bot.storage.sqlite.files import FIX, unwritable

__all__ = ["check_database"]

NAME = "database"
_NAMESPACE = "parlour.doctor"


async def check_database(settings: Settings) -> Check:
    url = settings.storage.effective_url
    path = None if url.is_postgresql else url.path
    if path is not None and str(path) != ":memory:" and not path.exists():
        return _not_created(path)
    if path is not None and (problems := unwritable(path)):  # asked before SQLite maps -shm
        return fail(NAME, f"{url.shown()}: {'; '.join(problems)}", FIX)
    store = open_storage(settings, cache_windows=False)
    try:
        await store.open()
    except Exception as exc:  # a diagnosis: whatever the driver raises becomes the row
        return fail(
            NAME,
            f"{url.shown()}: cannot open it: {_reason(exc)}",
            "check storage.url / storage.path, that the server is up and the user may connect",
        )
    try:
        key = f"probe-{os.getpid()}-{time.monotonic_ns()}"
        await store.kv_set(_NAMESPACE, key, {"at": time.time()})
        written = await store.kv_get(_NAMESPACE, key)
        await store.kv_delete(_NAMESPACE, key)
        if not isinstance(written, dict):
            return fail(NAME, f"{store.url}: a written value did not read back", _READ_ONLY)
        version = await store.schema_version()
    except Exception as exc:
        return fail(NAME, f"{store.url}: opens, but a write failed: {_reason(exc)}", _READ_ONLY)
    finally:
        await store.close()
    return passed(NAME, f"{store.url}: opens and takes writes, schema {version}")


_READ_ONLY = (
    "give the bot's user write access (SQLite: the file and its directory; PostgreSQL: "
    "INSERT/UPDATE/DELETE on its schema)"
)


def _not_created(path: Path) -> Check:
    directory = path.parent if str(path.parent) else Path(".")
    existing = next((d for d in (directory, *directory.parents) if d.exists()), Path("."))
    # the bot creates missing directories (mkdir -p): the nearest existing one must take writes
    if existing.is_dir() and os.access(existing, os.W_OK | os.X_OK):
        return warn(
            NAME,
            f"no database at {path} yet (`run` creates it there)",
            "nothing, if this is a new deployment; else check storage.path and the directory "
            "the bot runs in",
        )
    return fail(
        NAME,
        f"no database at {path}, and {existing} is not a writable directory",
        "create the directory (or fix storage.path) and let the bot's user write there",
    )


def _reason(exc: BaseException) -> str:
    """Our own errors are sentences already; a driver's gets its type name in front."""
    if isinstance(exc, ParlourError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}".rstrip(": ")
