"""The storage conformance suite: every behaviour the protocols of :mod:`bot.storage` state,
run against every backend.

A backend proves itself by one entry in :data:`BACKENDS` (its config section for one test's
empty database); everything else goes through :func:`bot.storage.open_storage`. PostgreSQL runs
when ``PARLOUR_TEST_PG_URL`` names a server (:mod:`tests.postgres_support`), each test in a fresh
schema; without it those tests are skipped.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bot.config import settings_from_mapping
from bot.storage import Storage, open_storage
from bot.values import NewTurn, Usage
from tests import postgres_support

# backend name -> its ``storage:`` config section for one test's empty database
BACKENDS: dict[str, Callable[[Path], dict[str, Any]]] = {
    "sqlite": lambda tmp: {"path": str(tmp / "parlour.db")},
    "postgres": lambda tmp: {"url": postgres_support.fresh_pg_url()},
}


@dataclass(frozen=True)
class Backend:
    name: str
    storage_section: dict[str, Any]

    def open(self, *, cache_windows: bool = True) -> Storage:
        """A new instance over the same database (another process, or a restart): not open."""
        settings = settings_from_mapping({"storage": self.storage_section})
        return open_storage(settings, cache_windows=cache_windows)


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "postgres" and postgres_support.pg_base_url() is None:
        pytest.skip(postgres_support.HOW_TO_RUN)
    return Backend(request.param, BACKENDS[request.param](tmp_path))


@pytest.fixture
async def storage(backend: Backend) -> AsyncIterator[Storage]:
    async with backend.open() as opened:
        yield opened


def turn(
    conv: str = "tg:1", text: str = "hi", chat: str = "", user: str = "u1", **kw: Any
) -> NewTurn:
    """A user's message in conversation ``conv`` of chat ``chat`` (default: ``conv``)."""
    return NewTurn(conv, chat or conv, user, f"name-{user}", text, **kw)


TEN_TWO = Usage(10, 2)


async def answered(
    store: Storage, conv: str, text: str, answer: str, chat: str = "", usage: Usage = TEN_TWO
) -> int:
    """A completed turn (``usage`` booked); returns its id."""
    turn_id = await store.begin_turn(turn(conv, text, chat))
    await store.complete_turn(turn_id, [{"role": "assistant", "content": answer}], usage, "m")
    return turn_id
