"""Parlour's test kit: fakes of the services a bot talks to, for offline, deterministic tests.

Today it has a fake OpenAI-compatible chat server (``FakeLLM``, scripted with ``reply``,
``tool_calls``, ``error``, ``rate_limited``, ``quota_exhausted``, ``hang`` and ``delay``) and
the ``fake_llm`` pytest fixture; fake Telegram and Discord servers come later.

Names are imported lazily so that ``python -m bot.testing.fake_llm`` and the pytest plugin do
not load aiohttp before they need it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.testing.fake_llm import (
        FakeLLM,
        RecordedRequest,
        Script,
        delay,
        error,
        hang,
        quota_exhausted,
        rate_limited,
        reply,
        tool_calls,
    )

__all__ = [
    "FakeLLM",
    "RecordedRequest",
    "Script",
    "delay",
    "error",
    "hang",
    "quota_exhausted",
    "rate_limited",
    "reply",
    "tool_calls",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("bot.testing.fake_llm"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
