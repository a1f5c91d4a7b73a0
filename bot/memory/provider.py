"""The long-term memory seam. The service asks it for what is worth recalling for a message.

:class:`StoredMemory` recalls from the storage (``bot.memory.store``): facts people asked the bot
to remember, from the conversation they were said in (``bot.memory.scope``), and the conversation's
own messages that have left the context window (seed 001: trimming must not make the bot forget
the user's name), ranked together, dated, neighbours merged, until ``memory.max_tokens`` is used
(``bot.memory.recalled``).

Everything recalled was written by users, so it is data, never instructions: each item is one
line, a JSON array (``bot.memory.recalled``), so no text inside it can open a line of its own or
claim another speaker, and the service sends the block as a user-role message that says it is
recalled material (``bot.prompt.safety``), capped and counted in the token budget.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Protocol

from bot.config import MemorySettings
from bot.context import ChatContext
from bot.llm.tokens import estimate_tokens
from bot.memory.recalled import recalled_lines
from bot.prompt.assembly import is_shared
from bot.values import FoundTurn, Recalled

if TYPE_CHECKING:
    from bot.memory.store import MemoryStore

__all__ = ["MemoryProvider", "NoMemory", "StoredMemory"]

# What a line costs beyond its text in the prompt's cap (bot.prompt.assembly.recalled_block)
LINE_OVERHEAD = 2
MIN_ITEM_TOKENS = 10  # the least a dated line costs: the budget never holds more than this many


class MemoryProvider(Protocol):
    async def recall(
        self,
        ctx: ChatContext,
        conversation_key: str,
        text: str,
        *,
        before_turn_id: int | None = None,
        held: Collection[str] = (),
    ) -> Recalled:
        """Items worth reminding the model of, most relevant first, already scope-checked:
        each one line, a JSON array (``bot.memory.recalled``), kept or the asker's own.

        ``before_turn_id`` is the oldest turn still in the window: older messages may be
        recalled; newer ones are in the prompt already. ``held``: recalled lines the window
        carries already (not sent again; they use the budget).
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
        held: Collection[str] = (),
    ) -> Recalled:
        return Recalled()


class StoredMemory:
    """Recall from a :class:`~bot.memory.store.MemoryStore`: the best facts and old messages
    until ``memory.max_tokens`` is used (``bot.memory.recalled`` ranks, dates and merges them).

    ``count_tokens`` is the prompt's own counter's ``count_text`` when the caller has one (an
    exact fit); without it, a conservative estimate picks what fits first and the rest follow,
    so the prompt's cap still fills.
    """

    def __init__(
        self,
        memories: MemoryStore,
        settings: MemorySettings,
        count_tokens: Callable[[str], int] | None = None,
        budget: int | None = None,
    ) -> None:
        """``budget``: the recalled lines' tokens a request may hold (default
        ``memory.max_tokens``; the app passes ``bot.prompt.assembly.recall_cap``)."""
        self.memories = memories
        self.settings = settings
        self.count_tokens = count_tokens or estimate_tokens
        self.budget = settings.max_tokens if budget is None else budget

    def limit(self) -> int:
        """Candidates per kind: ``memory.top_k``, but no more than the budget could hold."""
        return max(0, min(self.settings.top_k, self.budget // MIN_ITEM_TOKENS))

    async def recall(
        self,
        ctx: ChatContext,
        conversation_key: str,
        text: str,
        *,
        before_turn_id: int | None = None,
        held: Collection[str] = (),
    ) -> Recalled:
        limit = self.limit()
        if not text.strip() or limit == 0:
            return Recalled()
        audience = self.memories.audience(ctx, conversation_key)
        facts = await self.memories.search(audience, text, limit=limit)
        earlier: list[FoundTurn] = []
        beside: dict[int, list[FoundTurn]] = {}
        if self.settings.recall_history:
            self.memories.embed_turns_later(conversation_key)  # background, for later recalls
            if before_turn_id is not None:
                earlier = await self.memories.search_turns(
                    conversation_key, text, before_turn_id=before_turn_id, limit=limit
                )
                earlier = self._relevant(earlier)
            if earlier and before_turn_id is not None and self.settings.neighbours:
                beside = await self.memories.turns_beside(
                    conversation_key, [t.turn_id for t in earlier], before_turn_id=before_turn_id
                )
        return recalled_lines(
            facts,
            earlier,
            conversation_key=conversation_key,
            shared=is_shared(conversation_key),
            budget=self.budget,
            cost=self._cost,
            beside=beside,
            held=held,
        )

    def _relevant(self, found: list[FoundTurn]) -> list[FoundTurn]:
        """Old messages within ``memory.min_relevance`` of the best one's full-text score.

        Any message sharing one ordinary word with the query passes the absolute floor, and a
        budget of 400 tokens would fill with them on every turn: noise the model must read, and
        new bytes in every request that no prompt cache holds. (With embeddings the scores are
        fused ranks, which a ratio does not describe: they are left as they are.)"""
        ratio = self.settings.min_relevance
        if not found or ratio <= 0 or self.settings.embeddings.enabled:
            return found
        best = max(turn.score for turn in found)
        return [turn for turn in found if turn.score >= ratio * best]

    def _cost(self, line: str) -> int:
        return self.count_tokens(line) + LINE_OVERHEAD
