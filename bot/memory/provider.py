"""The long-term memory seam. The service asks it for what is worth recalling for a message.

:class:`StoredMemory` recalls from the storage (``bot.memory.store``): facts people asked the bot
to remember, from the conversation they were said in (``bot.memory.scope``), and the conversation's
own messages that have left the context window (seed 001: trimming must not make the bot forget
the user's name).

Everything recalled was written by users, so it is data, never instructions: each item is one
line of JSON (:func:`recalled_item`), so no text inside it can open a line of its own or claim
another speaker, and the service sends the block as a user-role message that says it is recalled
material (``bot.conversation.prompt_safety``), capped and counted in the token budget.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from bot.config import MemorySettings
from bot.context import ChatContext
from bot.conversation.prompt_safety import one_line_json

if TYPE_CHECKING:
    from bot.memory.store import MemoryStore


class MemoryProvider(Protocol):
    async def recall(
        self,
        ctx: ChatContext,
        conversation_key: str,
        text: str,
        *,
        before_turn_id: int | None = None,
    ) -> list[str]:
        """Items worth reminding the model of, most relevant first, already scope-checked:
        each one line of JSON (:func:`recalled_item`).

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
        audience = self.memories.audience(ctx, conversation_key)
        found = await self.memories.search(audience, text, limit=self.settings.top_k)
        lines = [recalled_item(fact=m.text, by=m.user_name or m.user_id) for m in found]
        if self.settings.recall_history and before_turn_id is not None:
            earlier = await self.memories.search_turns(
                conversation_key, text, before_turn_id=before_turn_id, limit=self.settings.top_k
            )
            lines += [
                recalled_item(earlier_message=said, by=name or "the user")
                for _, name, said in earlier
            ]
        return lines


def recalled_item(**fields: str) -> str:
    """One recalled item as a single line of JSON: newlines and quotes inside stay escaped."""
    return one_line_json(fields)
