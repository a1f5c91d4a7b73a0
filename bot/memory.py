"""The long-term memory seam. The service asks it for what is worth recalling for a message.

:class:`StoredMemory` recalls from SQLite (``bot.memory_store``): facts people asked the bot to
remember, scoped to the chat they were said in, and the conversation's own messages that have
left the context window (seed 001: trimming must not make the bot forget the user's name).
Whatever a provider returns is injected as one system message after the system prompt, capped
and counted in the token budget by the service.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from bot.config import MemorySettings
from bot.context import ChatContext

if TYPE_CHECKING:
    from bot.memory_store import MemoryStore


class MemoryProvider(Protocol):
    async def recall(
        self,
        ctx: ChatContext,
        conversation_key: str,
        text: str,
        *,
        before_turn_id: int | None = None,
    ) -> list[str]:
        """Lines worth reminding the model of, most relevant first, already scope-checked.

        ``before_turn_id`` is the oldest turn still in the window: older messages may be
        recalled; newer ones are in the prompt already.
        """
        ...


class NoMemory:
    async def recall(
        self,
        ctx: ChatContext,
        conversation_key: str,
        text: str,
        *,
        before_turn_id: int | None = None,
    ) -> list[str]:
        return []


class StoredMemory:
    def __init__(self, memories: MemoryStore, settings: MemorySettings) -> None:
        self.memories = memories
        self.settings = settings

    async def recall(
        self,
        ctx: ChatContext,
        conversation_key: str,
        text: str,
        *,
        before_turn_id: int | None = None,
    ) -> list[str]:
        if not text.strip():
            return []
        share = self.settings.share_private and not ctx.is_private
        found = await self.memories.search(
            ctx.chat_key,
            text,
            limit=self.settings.top_k,
            share_private_of=(ctx.platform, ctx.user_id) if share else None,
        )
        lines = [f"{m.text} (noted from {m.user_name or m.user_id})" for m in found]
        if self.settings.recall_history and before_turn_id is not None:
            earlier = await self.memories.search_turns(
                conversation_key, text, before_turn_id=before_turn_id, limit=self.settings.top_k
            )
            lines += [f'earlier, {name or "the user"} said: "{said}"' for _, name, said in earlier]
        return lines
