"""Parlour's test kit: fakes of the services a bot talks to, for offline, deterministic tests.

It has a fake OpenAI-compatible chat server (``FakeLLM``, scripted with ``reply``,
``tool_calls``, ``error``, ``rate_limited``, ``quota_exhausted``, ``hang``, ``delay`` and
``held``), a fake Telegram Bot API server (``FakeTelegram``), a fake Discord REST API +
gateway (``FakeDiscord``), the ``fake_llm`` / ``fake_telegram`` / ``fake_discord`` pytest
fixtures, ``tool_context`` (with ``MemoryKV``) to call a plugin's tools directly, and
``offline_settings`` / ``run_command`` to start an ``App`` on the fake LLM and type commands.

Layout: ``bot.testing.llm``, ``bot.testing.telegram`` and ``bot.testing.discord`` hold each
fake's code, one idea per module; ``bot.testing.fake_llm`` / ``fake_telegram`` / ``fake_discord``
are the public paths (their docstrings are the guides). ``service`` is what the fakes share,
``tools`` the plugin-tool helpers, ``kit`` the App-under-test helpers, ``pytest_plugin`` the
fixtures.

Names are imported lazily so that ``python -m bot.testing.fake_llm`` and the pytest plugin do
not load aiohttp before they need it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from bot.testing.discord.server import FakeDiscord
    from bot.testing.kit import offline_settings, run_command
    from bot.testing.llm.server import (
        FakeLLM,
        RecordedRequest,
        Script,
        delay,
        error,
        hang,
        held,
        quota_exhausted,
        rate_limited,
        reply,
        tool_calls,
    )
    from bot.testing.telegram.server import FakeTelegram
    from bot.testing.tools import MemoryKV, tool_context

_HOMES = {
    "FakeTelegram": "bot.testing.fake_telegram",
    "FakeDiscord": "bot.testing.fake_discord",
    "MemoryKV": "bot.testing.tools",
    "offline_settings": "bot.testing.kit",
    "run_command": "bot.testing.kit",
    "tool_context": "bot.testing.tools",
}

__all__ = [
    "FakeDiscord",
    "FakeLLM",
    "FakeTelegram",
    "MemoryKV",
    "RecordedRequest",
    "Script",
    "delay",
    "error",
    "hang",
    "held",
    "offline_settings",
    "quota_exhausted",
    "rate_limited",
    "reply",
    "run_command",
    "tool_calls",
    "tool_context",
]


__getattr__, __dir__ = lazy_exports(
    __name__, {name: _HOMES.get(name, "bot.testing.fake_llm") for name in __all__}, __all__
)
