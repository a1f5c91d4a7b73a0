"""The ``fake_llm``, ``fake_telegram``, ``fake_discord`` and ``fake_search`` pytest fixtures (via
``pytest11``).

Installing Parlour makes the fixtures available to plugin authors' test suites. It needs
pytest-asyncio (1.x); without it the fixture fails with an explanation instead of breaking
every pytest run in the environment at import time.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from bot.testing.discord.server import FakeDiscord
    from bot.testing.llm.server import FakeLLM
    from bot.testing.telegram.server import FakeTelegram

try:
    import pytest_asyncio
except ImportError:  # pragma: no cover - depends on the environment
    pytest_asyncio = None  # type: ignore[assignment]


if pytest_asyncio is not None:

    @pytest_asyncio.fixture
    async def fake_llm() -> AsyncIterator[FakeLLM]:
        """A started ``FakeLLM`` on a free 127.0.0.1 port, stopped after the test."""
        from bot.testing.llm.server import FakeLLM

        async with FakeLLM() as fake:
            yield fake

    @pytest_asyncio.fixture
    async def fake_telegram() -> AsyncIterator[FakeTelegram]:
        """A started ``FakeTelegram`` (Bot API) on a free 127.0.0.1 port, stopped after."""
        from bot.testing.telegram.server import FakeTelegram

        async with FakeTelegram() as fake:
            yield fake

    @pytest_asyncio.fixture
    async def fake_discord() -> AsyncIterator[FakeDiscord]:
        """A started ``FakeDiscord`` (REST + gateway) on a free 127.0.0.1 port, stopped after."""
        from bot.testing.discord.server import FakeDiscord

        async with FakeDiscord() as fake:
            yield fake

else:  # pragma: no cover - depends on the environment

    @pytest.fixture
    def fake_llm() -> None:
        """Placeholder that explains the missing dependency."""
        pytest.fail("the fake_llm fixture needs pytest-asyncio: pip install pytest-asyncio")

    @pytest.fixture
    def fake_telegram() -> None:
        """Placeholder that explains the missing dependency."""
        pytest.fail("the fake_telegram fixture needs pytest-asyncio: pip install pytest-asyncio")

    @pytest.fixture
    def fake_discord() -> None:
        """Placeholder that explains the missing dependency."""
        pytest.fail("the fake_discord fixture needs pytest-asyncio: pip install pytest-asyncio")


if TYPE_CHECKING:
    from bot.testing.fake_search import FakeSearch

if pytest_asyncio is not None:

    @pytest_asyncio.fixture
    async def fake_search() -> AsyncIterator[FakeSearch]:
        """A started ``FakeSearch`` (SearxNG, Brave and web pages) on 127.0.0.1, stopped after."""
        from bot.testing.fake_search import FakeSearch

        async with FakeSearch() as fake:
            yield fake

else:  # pragma: no cover - depends on the environment

    @pytest.fixture
    def fake_search() -> None:
        """Placeholder that explains the missing dependency."""
        pytest.fail("the fake_search fixture needs pytest-asyncio: pip install pytest-asyncio")
