"""The chat directory: which chats the bot knows, their titles, activity and history pages.

What the admin API and the dashboard list (``/api/chats``, the chats table): every chat with a
stored turn, an entry an adapter noted (:meth:`ChatDirectory.note_chat`: its title and type; a
chat never noted has an empty title) or an audit entry, so a cleared chat stays listed with its
name and its audit. A chat's history is read a page at a time, newest first, so a long history
costs one page; each turn comes with its tool calls, so an operator sees what the bot did.
"""

from __future__ import annotations

from typing import Protocol

from bot.values import ChatEntry, ChatSummary, HistoryItem

__all__ = ["ChatDirectory", "summary_of"]


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

    - **Every known chat.** :meth:`list_chats` lists every chat that has a stored turn (by the
      turns' chat key), a :meth:`note_chat` entry or an audit entry (a clear, reset or change:
      :mod:`bot.storage.audit`), with 0 turns as well: newest activity first (the newest of
      its newest turn and newest audit entry; 0 when neither), with its turn count; the title
      and type are the last :meth:`note_chat` gave for it (empty when never noted).
      ``query`` matches case-insensitively anywhere in the title or the chat key.
    - **Upsert.** ``note_chat`` keeps one entry per chat (platform, chat_id): the last title
      and type win.
    - **Pages.** :meth:`history_page` returns a chat's turns (every conversation in it, not
      ``context`` turns), newest first, ``limit`` at most, only those with an id below
      ``before`` when given; each with its answer's tool calls (:class:`ToolStep`: name,
      arguments and the result stored for that call id) in the order the model made them.
    - **Deletes follow.** A cleared chat (``clear_chat``) or an erased person leaves no turns
      in the pages; a cleared chat stays listed (0 turns, its title and type, its audit). An
      erased person's private chats left without turns lose their entry (its title is their
      name): such a chat stays listed only by its audit entries, with no title.
    - **Migration.** ``migrate_chat`` moves the entry to the new chat key (unless the new chat
      has its own): the old chat is not listed any more.
    """

    async def note_chat(self, entry: ChatEntry) -> None: ...

    async def list_chats(
        self, query: str = "", limit: int = 50, offset: int = 0
    ) -> list[ChatSummary]: ...

    async def chat_summary(self, chat_key: str) -> ChatSummary | None:
        """One chat as :meth:`list_chats` shows it (None: no turn, entry or audit entry)."""
        ...

    async def chat_conversations(self, chat_key: str) -> list[str]:
        """Every conversation of the chat with a stored turn or overheard message, sorted
        (what an admin's reset of the whole chat resets)."""
        ...

    async def history_page(
        self, chat_key: str, before: int | None = None, limit: int = 50
    ) -> list[HistoryItem]: ...
