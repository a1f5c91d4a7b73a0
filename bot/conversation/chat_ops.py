"""What is done to a chat's conversations outside a turn: the chat commands' and the admin
API's backing.

``/reset`` and ``/clear``, the figures ``/history`` and ``/usage`` show, a command's admission
(the same access check and message rate as a message), a whole chat reset from the admin API,
and a chat's new id (a Telegram group become a supergroup). A reset waits for its
conversation's lock, so it lands between turns, never inside one. A base of
:class:`~bot.conversation.service.ChatService`, which builds what these use: the store,
admission, the knowledge bases, the prompt builder.
"""

from __future__ import annotations

from typing import Protocol

from bot.context import ChatContext
from bot.conversation.admission import Admission
from bot.conversation.chat_setup import ChatSetup
from bot.conversation.events import HistoryInfo
from bot.conversation.knowledge import Knowledge
from bot.conversation.locks import KeyedLocks
from bot.conversation.prompt_sources import PromptBuilder
from bot.conversation.store import HistoryStore
from bot.conversation.tool_runner import ToolRunner
from bot.guardrails.budgets import Budgets
from bot.storage.directory import ChatDirectory
from bot.values import ClearResult

__all__ = ["ChatOps", "ChatOpsStore"]


class ChatOpsStore(HistoryStore, ChatDirectory, Protocol):
    """Resets and clears, history's figures, a chat's conversations and a chat's new id."""


class ChatOps(ChatSetup):
    """The service's entry points that are not a turn; the service sets these attributes."""

    store: ChatOpsStore
    admission: Admission
    budgets: Budgets
    knowledge: Knowledge
    prompts: PromptBuilder
    tools: ToolRunner | None
    _locks: KeyedLocks

    async def admit_command(self, ctx: ChatContext) -> None:
        """A command meets the same access check and message rate as a message (each costs
        a reply); raises ``AccessDeniedError`` or ``RateLimitedError``."""
        await self.admission.admit(ctx)

    async def usage_today(self, ctx: ChatContext) -> tuple[int, int]:
        """Tokens used today (UTC) by this user (every chat of the platform) and this chat."""
        return await self.budgets.usage_today(ctx)

    async def usage_total_today(self, *, fresh: bool = False) -> int:
        """Tokens the whole bot used today (UTC)."""
        return await self.budgets.total_today(fresh=fresh)

    async def reset(self, ctx: ChatContext) -> None:
        key = self.conversation_key(ctx)
        async with self._locks.hold(key):
            await self.store.reset(key, ctx.chat_key, ctx.user_id, ctx.user_name)

    async def reset_chat(self, chat_key: str, by_user: str, by_name: str) -> list[str]:
        """Soft-reset every conversation of a chat (the admin API), each under its lock, each
        one audited; returns the conversations reset."""
        keys = await self.store.chat_conversations(chat_key)
        for key in keys:
            async with self._locks.hold(key):
                await self.store.reset(key, chat_key, by_user, by_name)
        return keys

    async def clear(self, ctx: ChatContext) -> ClearResult:
        return await self.store.clear_chat(ctx.chat_key, ctx.user_id, ctx.user_name)

    async def history_info(self, ctx: ChatContext) -> HistoryInfo:
        key = self.conversation_key(ctx)
        stats = await self.store.stats(key)
        runner = (await self.knowledge.turn(ctx, self.tools)).runner  # search_knowledge too
        tools = runner.definitions(ctx) if runner else []
        window_tokens, budget = await self.prompts.figures(ctx, key, tools)
        return HistoryInfo(
            conversation_key=key,
            scope=self.scope_for(ctx),
            turns_in_context=stats.turns_in_context,
            turns_stored=stats.turns_stored,
            unanswered=stats.unanswered,
            window_tokens=window_tokens,
            budget=budget,
            undelivered=stats.undelivered,
        )

    async def migrate_chat(self, old_chat_key: str, new_chat_key: str) -> int:
        """A chat changed its id (Telegram group -> supergroup): history and settings follow."""
        moved = await self.store.migrate_chat(old_chat_key, new_chat_key)
        self.prefs.moved(old_chat_key, new_chat_key)
        return moved
