"""The ``fake_llm`` pytest fixture, registered through the ``pytest11`` entry point.

Installing Parlour makes the fixture available to plugin authors' test suites. It needs
pytest-asyncio (1.x); without it the fixture fails with an explanation instead of breaking
every pytest run in the environment at import time.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from bot.testing.fake_llm import FakeLLM

try:
    import pytest_asyncio
except ImportError:  # pragma: no cover - depends on the environment
    pytest_asyncio = None  # type: ignore[assignment]


if pytest_asyncio is not None:

    @pytest_asyncio.fixture
    async def fake_llm() -> AsyncIterator[FakeLLM]:
        """A started ``FakeLLM`` on a free 127.0.0.1 port, stopped after the test."""
        from bot.testing.fake_llm import FakeLLM

        async with FakeLLM() as fake:
            yield fake

else:  # pragma: no cover - depends on the environment

    @pytest.fixture
    def fake_llm() -> None:
        """Placeholder that explains the missing dependency."""
        pytest.fail("the fake_llm fixture needs pytest-asyncio: pip install pytest-asyncio")
