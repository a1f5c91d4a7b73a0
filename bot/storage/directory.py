"""The chat directory: which chats the bot knows, their titles, activity and history pages.

What the admin API and the dashboard list (``/api/chats``, the chats table): every chat with a
stored turn, found from the turns themselves, with the title and type an adapter last reported
(:meth:`ChatDirectory.note_chat`; a chat never noted has an empty title). A chat's history is
read a page at a time, newest first, so a long history costs one page.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from bot.values import TurnStatus

__all__ = ["ChatDirectory", "ChatEntry", "ChatSummary", "HistoryItem", "summary_of"]


@dataclass(frozen=True, slots=True)
class ChatEntry:
    """What an adapter knows of a chat (noted when a turn begins)."""

    platform: str
    chat_id: str
    chat_type: str  # bot.context.ChatType value: private, group, channel...
    title: str  # Telegram's chat title, "Guild #channel" on Discord; a private chat: the person


@dataclass(frozen=True, slots=True)
class ChatSummary:
    chat_key: str  # "telegram:-1001234"
    platform: str
    chat_id: str
    chat_type: str  # "" when never noted
    title: str  # "" when never noted
    turns: int  # turns stored (every status but context)
    last_activity: float  # unix time of the newest stored turn


@dataclass(frozen=True, slots=True)
class HistoryItem:
    """One stored turn as a history page shows it: who said what, and the answer."""

    turn_id: int
    conversation_key: str
    user_id: str
    user_name: str
    text: str  # what the person wrote
    answer: str  # the final assistant text ("" while pending or when unanswered)
    status: TurnStatus
    created_at: float


def summary_of(
    chat_key: object, chat_type: object, title: object, turns: object, last: object
) -> ChatSummary:
    """A listed chat from one row of either backend (type and title NULL: never noted)."""
    key = str(chat_key)
    platform, _, chat_id = key.partition(":")
    return ChatSummary(
        chat_key=key,
        platform=platform,
        chat_id=chat_id,
        chat_type=str(chat_type or ""),
        title=str(title or ""),
        turns=int(turns or 0),  # type: ignore[call-overload]
        last_activity=float(last or 0.0),  # type: ignore[arg-type]
    )


class ChatDirectory(Protocol):
    """A backend must provide:

    - **Chats from turns.** :meth:`list_chats` lists every chat that has a stored turn (by the
      turns' chat key), newest activity first, with its turn count and newest turn's time;
      the title and type are the last :meth:`note_chat` gave for it (empty when never noted).
      ``query`` matches case-insensitively anywhere in the title or the chat key.
    - **Upsert.** ``note_chat`` keeps one entry per chat (platform, chat_id): the last title
      and type win.
    - **Pages.** :meth:`history_page` returns a chat's turns (every conversation in it, not
      ``context`` turns), newest first, ``limit`` at most, only those with an id below
      ``before`` when given.
    - **Deletes follow.** A cleared chat (``clear_chat``) or an erased person leaves no turns
      in the pages; the chat leaves :meth:`list_chats` once it has no turns. An erased
      person's private chats left without turns lose their entry (its title is their name).
    """

    async def note_chat(self, entry: ChatEntry) -> None: ...

    async def list_chats(
        self, query: str = "", limit: int = 50, offset: int = 0
    ) -> list[ChatSummary]: ...

    async def chat_summary(self, chat_key: str) -> ChatSummary | None:
        """One chat as :meth:`list_chats` shows it (None: no turns stored)."""
        ...

    async def chat_conversations(self, chat_key: str) -> list[str]:
        """Every conversation of the chat with a stored turn or overheard message, sorted
        (what an admin's reset of the whole chat resets)."""
        ...

    async def history_page(
        self, chat_key: str, before: int | None = None, limit: int = 50
    ) -> list[HistoryItem]: ...
