"""The history store seam: what ChatService needs from a database, and the values it returns.

The SQLite implementation lives in :mod:`bot.history.sqlite`; a PostgreSQL one only has to
implement :class:`HistoryStore` and :class:`ChatSettingsStore`.

A turn is written in two steps, each one transaction: :meth:`HistoryStore.begin_turn` makes the
user's message durable at once (status ``pending``), and :meth:`HistoryStore.complete_turn`
writes every assistant and tool message of the answer together with the status flip. A crash in
between leaves a lone user message, which is a valid history for the API; nothing the user typed is
lost and no half of an answer is ever stored. The adapter delivers the answer after it is stored;
if the platform refuses it past every retry, :meth:`HistoryStore.mark_undelivered` says so.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from bot.context import Scope


class TurnStatus(StrEnum):
    PENDING = "pending"  # the user's message is stored, the answer is being produced
    ANSWERED = "answered"
    UNANSWERED = "unanswered"  # the model failed or the process died; the user message is kept
    UNDELIVERED = "undelivered"  # answered, but the platform never took the reply
    CONTEXT = "context"  # an overheard group message, kept so later answers know the chatter


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


NO_USAGE = Usage()
BOT_USER = ""  # the usage ledger's user for the bot's own calls (summaries)


@dataclass(frozen=True, slots=True)
class DailyUsage:
    """One user's spending in one chat on one UTC day."""

    day: str
    chat_key: str
    user_id: str
    user_name: str
    turns: int
    usage: Usage


@dataclass(frozen=True, slots=True)
class NewTurn:
    """The user's side of a turn, as it arrived."""

    conversation_key: str
    chat_key: str
    user_id: str
    user_name: str
    text: str
    platform_message_id: str | None = None
    overheard: tuple[int, ...] = ()  # ids of overheard messages that become context rows first


@dataclass(frozen=True, slots=True)
class Overheard:
    """A group message the bot saw without being addressed, waiting to give context."""

    overheard_id: int
    user_id: str
    user_name: str
    text: str
    created_at: float


@dataclass(frozen=True, slots=True)
class StoredTurn:
    """One turn as loaded for the context window: its messages in OpenAI format."""

    turn_id: int
    user_id: str
    user_name: str
    status: TurnStatus
    messages: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True, slots=True)
class HistoryStats:
    turns_in_context: int  # turns after the last /reset
    turns_stored: int  # every turn of the conversation still in the database
    unanswered: int
    prompt_tokens: int
    completion_tokens: int
    undelivered: int = 0  # answered, but the reply never reached the chat


@dataclass(frozen=True, slots=True)
class ClearResult:
    turns: int
    messages: int


@dataclass(frozen=True, slots=True)
class ChatPreferences:
    """Per-chat overrides set by admins."""

    scope: Scope | None = None
    system_prompt: str | None = None


class HistoryStore(Protocol):
    async def begin_turn(self, turn: NewTurn) -> int:
        """Store the user's message as a pending turn; returns the turn id (arrival order)."""
        ...

    async def complete_turn(
        self, turn_id: int, messages: Sequence[Mapping[str, Any]], usage: Usage, model: str
    ) -> None:
        """Store the whole answer (assistant, tool calls, tool results) in one transaction."""
        ...

    async def fail_turn(self, turn_id: int, reason: str, usage: Usage = NO_USAGE) -> None:
        """Mark a turn unanswered; its user message stays in the history. ``usage``: tokens of
        the model rounds that did run (billed all the same)."""
        ...

    async def mark_undelivered(self, turn_id: int, reason: str) -> bool:
        """An answered turn whose reply the platform never took: status ``undelivered``. The
        answer stays in the history (the model wrote it, its tools ran). False if the turn
        was not answered (or is gone)."""
        ...

    async def load_window(self, conversation_key: str, max_turns: int) -> list[StoredTurn]:
        """The newest ``max_turns`` turns after the last reset, oldest first, in O(window)."""
        ...

    async def reset(self, conversation_key: str, chat_key: str, by_user: str) -> None:
        """Soft cut: rows are kept, the context starts after them."""
        ...

    async def clear_chat(self, chat_key: str, actor_id: str, actor_name: str) -> ClearResult:
        """Delete every conversation of a chat and write an audit row."""
        ...

    async def stats(self, conversation_key: str) -> HistoryStats: ...

    async def tokens_on(
        self, day: str, chat_key: str | None = None, user_id: str | None = None
    ) -> int:
        """Tokens spent on ``day`` (UTC, ``YYYY-MM-DD``): by every chat, one chat, or one user
        in one chat.

        Usage is a ledger of its own: ``clear_chat`` and retention leave it alone.
        """
        ...

    async def user_tokens_on(self, day: str, platform: str, user_id: str) -> int:
        """Tokens one user spent on ``day`` in every chat of ``platform`` (ids are per
        platform), so new threads or groups are not fresh budgets."""
        ...

    async def book_usage(self, chat_key: str, user_id: str, user_name: str, usage: Usage) -> None:
        """Add tokens spent outside a turn (the bot's own summaries) to today's ledger."""
        ...

    async def daily_usage(self, since_day: str, chat_key: str | None = None) -> list[DailyUsage]:
        """Per day, chat and user from ``since_day`` on (every chat, or one), oldest first."""
        ...

    async def migrate_chat(self, old_chat_key: str, new_chat_key: str) -> int:
        """Move every conversation of a chat to its new id (a group that became a supergroup)."""
        ...

    def export(self, conversation_key: str) -> AsyncIterator[dict[str, Any]]:
        """Every stored message of a conversation, oldest first, as plain JSON-able dicts."""
        ...


class OverheardStore(Protocol):
    async def record_overheard(self, message: NewTurn, keep: int) -> None:
        """Store an unaddressed message; only the newest ``keep`` of its conversation stay."""
        ...

    async def load_overheard(self, conversation_key: str, since: float) -> list[Overheard]:
        """Overheard messages newer than ``since`` (a ``time.time()``), oldest first."""
        ...


class ChatSettingsStore(Protocol):
    async def load_preferences(self) -> dict[str, ChatPreferences]:
        """All per-chat overrides (a small table, kept in memory by the service)."""
        ...

    async def save_preferences(self, chat_key: str, prefs: ChatPreferences) -> None: ...
