"""A SQLite database the bot cannot write is refused before SQLite maps its ``-shm``: start-up
fails naming the file and the fix, and ``doctor`` fails the same way. (Made immutable while the
bot runs, the mapped ``-shm`` kills the process with SIGBUS: see docs/operations.md.)"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from bot.app import App
from bot.doctor.runner import diagnose
from bot.errors import StoreError
from bot.storage import open_storage
from bot.testing.fake_llm import FakeLLM
from tests.conftest import make_settings


@contextmanager
def chattr(flag: str, *paths: Path) -> Iterator[None]:
    """``chattr +flag`` on ``paths`` for the block (skips where it cannot be set: not root, or
    a file system without attributes)."""
    done = subprocess.run(["chattr", f"+{flag}", *map(str, paths)], capture_output=True)
    if done.returncode != 0:
        subprocess.run(["chattr", f"-{flag}", *map(str, paths)], capture_output=True)
        pytest.skip(f"chattr +{flag} is not possible here: {done.stderr.decode().strip()}")
    try:
        yield
    finally:  # an immutable file could not even be deleted with tmp_path
        subprocess.run(["chattr", f"-{flag}", *map(str, paths)], check=True)


async def a_database_that_has_run(fake_llm: FakeLLM, tmp_path: Path) -> tuple[Path, Path, Path]:
    """The history file, and its ``-wal`` and ``-shm`` as a stopped bot may leave them."""
    settings = make_settings(fake_llm, tmp_path, storage={"path": str(tmp_path / "p.db")})
    async with open_storage(settings):
        pass
    return companions(tmp_path / "p.db")


def companions(db: Path) -> tuple[Path, Path, Path]:
    wal, shm = Path(f"{db}-wal"), Path(f"{db}-shm")
    wal.touch()
    shm.touch()
    return db, wal, shm


async def test_an_immutable_shm_stops_the_start_naming_the_file(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    db, wal, shm = await a_database_that_has_run(fake_llm, tmp_path)
    settings = make_settings(fake_llm, tmp_path, storage={"path": str(db)})
    for files in ((db, wal, shm), (shm,)):
        with chattr("i", *files), pytest.raises(StoreError) as refused:
            async with App(settings):
                pass
        message = str(refused.value)
        assert f"{shm} is immutable (chattr +i)" in message
        assert "SIGBUS" in message and "chattr -i" in message
    async with App(settings) as app:  # once cleared, it starts
        assert await app.store.schema_version()


async def test_an_append_only_wal_stops_the_start(fake_llm: FakeLLM, tmp_path: Path) -> None:
    db, wal, _ = await a_database_that_has_run(fake_llm, tmp_path)
    settings = make_settings(fake_llm, tmp_path, storage={"path": str(db)})
    with chattr("a", wal), pytest.raises(StoreError, match=r"p\.db-wal is append-only"):
        async with App(settings):
            pass


async def test_doctor_fails_on_an_immutable_database_naming_each_file(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    db, wal, shm = await a_database_that_has_run(fake_llm, tmp_path)
    settings = make_settings(fake_llm, tmp_path, storage={"path": str(db)})
    with chattr("i", db, wal, shm):
        rows = await diagnose(settings, llm_timeout=30)
    [database] = [r for r in rows if r.name == "database"]
    assert database.status == "FAIL"
    for path in (db, wal, shm):
        assert f"{path} is immutable (chattr +i)" in database.detail
    assert "chattr -i" in database.fix
    rows = await diagnose(settings, llm_timeout=30)
    assert [r.status for r in rows if r.name == "database"] == ["ok"]
