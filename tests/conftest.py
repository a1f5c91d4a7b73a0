"""Shared fixtures: an App wired to the test kit's fake LLM, and ChatContext factories."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from bot.app import App
from bot.config import Settings, settings_from_mapping
from bot.context import ChatContext, ChatType
from bot.testing.fake_llm import FakeLLM
from tests import postgres_support
from tests.secret_scan import secret_scan as secret_scan  # autouse: no secret in any log
from tests.summary import pytest_terminal_summary as pytest_terminal_summary
from tests.summary import pytest_terminal_summary_closing as pytest_terminal_summary_closing
from tests.waits import SLOW_TIMEOUT

TEST_KEY = "sk-test-parlour-0123456789abcdef"


def pytest_report_header(config: pytest.Config) -> str:
    if postgres_support.pg_base_url() is None:
        return postgres_support.HOW_TO_RUN
    where = "PostgreSQL" if postgres_support.e2e_on_postgres() else "SQLite"
    return f"storage: conformance on SQLite and PostgreSQL; end-to-end suites on {where}"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    postgres_support.drop_session_schemas()
    # A non-daemon thread left running (an unclosed aiosqlite connection) would hang the
    # interpreter after the last test: fail loudly instead.
    leftovers = [
        t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon
    ]
    for thread in leftovers:
        thread.join(timeout=5)
    alive = [t.name for t in leftovers if t.is_alive()]
    if alive:
        sys.stderr.write(f"\nthreads still running after the suite: {alive}\n")
        session.exitstatus = 1
        os._exit(1)


def pytest_configure(config: pytest.Config) -> None:
    # The pytest11 entry point registers the test kit when Parlour is installed; else do it here.
    if not config.pluginmanager.has_plugin("parlour"):
        config.pluginmanager.import_plugin("bot.testing.pytest_plugin")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that starts real processes (``slow``) may wait up to ``tests.waits.STARTUP`` for
    each one: its time limit leaves room for that (the suite's own, 120 s, would not)."""
    for item in items:
        if item.get_closest_marker("slow") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(SLOW_TIMEOUT))


def group(user: str = "1", name: str = "Alice", chat: str = "-100", **kw: Any) -> ChatContext:
    return ChatContext("telegram", chat, ChatType.GROUP, user, name, **kw)


def private(user: str = "1", name: str = "Alice", **kw: Any) -> ChatContext:
    return ChatContext("telegram", user, ChatType.PRIVATE, user, name, **kw)


def make_settings(fake: FakeLLM, tmp_path: Path, **sections: Any) -> Settings:
    raw: dict[str, Any] = {
        # Tests fail a call, then expect the next to reach the server: no circuit breaker.
        "llm": {
            "base_url": fake.base_url,
            "api_key": TEST_KEY,
            "model": "gpt-4o-mini",
            "circuit_breaker": 0,
        },
        "storage": (
            {"url": postgres_support.schema_url_for(tmp_path)}
            if postgres_support.e2e_on_postgres()
            else {"path": str(tmp_path / "parlour.db")}
        ),
        "plugins": [],  # tests that want tools ask for them
        # Tests send bursts from one user on purpose; the per-user limits have their own tests.
        "limits": {"messages_per_minute": None, "one_in_flight": False},
        # Bursts wait chat.burst_window before answering; their own tests turn it on.
        "chat": {"burst_window": 0},
    }
    for name, values in sections.items():
        if name == "storage" and isinstance(values, dict) and {"path", "url"} & values.keys():
            raw[name] = values  # the test names its own database: on either backend
            continue
        raw[name] = {**raw.get(name, {}), **values} if isinstance(values, dict) else values
    return settings_from_mapping(raw)


class Sleeps(list[float]):
    """The retry layer's test switch: record requested waits instead of sleeping."""

    async def __call__(self, seconds: float) -> None:
        self.append(seconds)


AppFactory = Callable[..., AbstractAsyncContextManager[App]]


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def make_app(fake_llm: FakeLLM, tmp_path: Path, sleeps: Sleeps) -> AppFactory:
    @asynccontextmanager
    async def factory(**sections: Any) -> AsyncIterator[App]:
        settings = make_settings(fake_llm, tmp_path, **sections)
        async with App(settings, retry_sleep=sleeps) as app:
            yield app

    return factory


@pytest.fixture
async def app(make_app: AppFactory) -> AsyncIterator[App]:
    async with make_app() as running:
        yield running
