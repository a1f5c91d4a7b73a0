"""The long-term memory seam. The service asks it for facts relevant to the new message.

Until a real memory store is configured, :class:`NoMemory` recalls nothing. Whatever a provider
returns is injected as one system message after the system prompt and counted in the budget.
"""

from __future__ import annotations

from typing import Protocol

from bot.context import ChatContext


class MemoryProvider(Protocol):
    async def recall(self, ctx: ChatContext, conversation_key: str, text: str) -> list[str]:
        """Facts worth reminding the model of, most relevant first, already scope-checked."""
        ...


class NoMemory:
    async def recall(self, ctx: ChatContext, conversation_key: str, text: str) -> list[str]:
        return []
