"""What an operator does to a chat over HTTP, once for both the admin API and the dashboard:
list and look up chats (with their scope and persona), page the history, clear, reset, change
the scope or persona (through the service /scope and /persona use, so the running bot follows
at once), read the audit trail, list and forget memories. Every change is made in the name of
the caller's token (:attr:`~adapters.http.auth.Principal.audit_name`), so the audit trail says
who did it.
A chat key no chat can have (a control character: :func:`bot.storage.bounds.is_key`) is an
:class:`UnknownChat` before any query, so no driver ever sees it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from aiohttp import web

from adapters.http.auth import Principal
from adapters.http.context import CONTEXT
from adapters.http.identity import PLATFORM, owner_of
from adapters.http.settings import HTTPSettings
from bot.context import ChatContext, ChatType, Scope
from bot.storage.audit import forget_detail
from bot.storage.bounds import INT64_MAX, is_key
from bot.text import clean_text
from bot.values import AuditAction, AuditEntry, ChatSummary, ClearResult, HistoryItem, Memory

if TYPE_CHECKING:
    from bot.platform.operator import Memories, Persona
    from bot.platform.seam import Platform

__all__ = [
    "BadSetting",
    "ChatOps",
    "ChatView",
    "HistoryPage",
    "MemoryOff",
    "UnknownChat",
    "ops_for",
]

MAX_LIMIT = 200  # rows one request may ask for (chats, history, memories)


class UnknownChat(LookupError):
    """The directory knows no such chat (no turn, entry or audit entry)."""


class MemoryOff(LookupError):
    """``memory.enabled`` is false: there are no memories to show."""


class BadSetting(ValueError):
    """A scope or persona the chat cannot take; the message says why (nothing was changed)."""


@dataclass(frozen=True, slots=True)
class ChatView:
    """A chat as an operator sees it: the directory's summary plus how the bot treats it."""

    summary: ChatSummary
    scope: Scope
    persona: Persona  # the system prompt in use and its source (chat, preset, default)
    persona_override: str | None  # what /persona set in the chat (None: not set)
    token: str | None = None  # an http chat's token namespace (None: another platform, or a
    # key stored before namespaces that no token reaches: adapters.http.identity)


@dataclass(frozen=True, slots=True)
class HistoryPage:
    items: tuple[HistoryItem, ...]  # newest first
    next_before: int | None  # pass as ``before`` for the next (older) page; None: no more


class ChatOps:
    def __init__(self, platform: Platform, settings: HTTPSettings) -> None:
        self._platform = platform
        self._settings = settings

    async def chats(self, query: str = "", limit: int = 50, offset: int = 0) -> list[ChatView]:
        offset = min(max(offset, 0), INT64_MAX)  # past the last row either way
        found = await self._platform.store.list_chats(query, _capped(limit), offset)
        return [self.view(summary) for summary in found]

    async def chat(self, chat_key: str) -> ChatView:
        """Raises :class:`UnknownChat`."""
        return self.view(await self._summary(chat_key))

    async def history(self, chat_key: str, before: int | None, limit: int) -> HistoryPage:
        """One page of the chat's turns, newest first. Raises :class:`UnknownChat`."""
        await self._summary(chat_key)
        limit = _capped(limit)
        if before is not None:
            before = min(before, INT64_MAX)  # every id is below it either way
        items = await self._platform.store.history_page(chat_key, before, limit + 1)
        more = len(items) > limit
        page = tuple(items[:limit])
        return HistoryPage(page, page[-1].turn_id if more and page else None)

    async def clear(self, chat_key: str, caller: Principal) -> ClearResult:
        """Delete every conversation of the chat (``/clear``), audited. Raises UnknownChat."""
        await self._summary(chat_key)
        name = caller.audit_name  # the trail's "who" reads http:ops, not a bare "ops"
        return await self._platform.store.clear_chat(chat_key, name, name)

    async def reset(self, chat_key: str, caller: Principal) -> list[str]:
        """Soft-reset every conversation of the chat (``/reset`` in each), each audited;
        returns the conversations reset. Raises :class:`UnknownChat`."""
        await self._summary(chat_key)
        name = caller.audit_name
        return await self._platform.operator.chats.reset_chat(chat_key, name, name)

    async def change(
        self,
        chat_key: str,
        caller: Principal,
        *,
        scope: Scope | None = None,
        persona: str | None = None,
        reset_persona: bool = False,
    ) -> tuple[ChatView, list[str]]:
        """Set the chat's scope and/or persona (``reset_persona`` or an empty one: back to the
        preset's or the default), as /scope and /persona do, each change audited in the
        caller's name; a value already in effect changes nothing. Returns the chat after, and
        what changed (``scope``, ``persona``). Raises :class:`UnknownChat`,
        :class:`BadSetting` (before anything is written)."""
        summary = await self._summary(chat_key)
        seen = _context_of(summary)
        service = self._platform.operator.chats
        name = caller.audit_name
        ctx = replace(seen, user_id=name, user_name=name)
        text = None if persona is None else clean_text(persona).replace("\r\n", "\n").strip()
        if scope is not None and seen.is_private:  # as /scope says there
            raise BadSetting("a private chat always keeps one history per person")
        cap = self._platform.settings.chat.max_persona_chars
        if text is not None and len(text) > cap:
            raise BadSetting(
                f"that persona is {len(text):,} characters; the limit is {cap:,}"
                " (chat.max_persona_chars: it goes into every prompt)"
            )
        changed = []
        if scope is not None and scope is not service.scope_for(seen):
            await service.set_scope(ctx, scope)
            changed.append("scope")
        override = service.prefs.system_prompt_override(chat_key)
        if reset_persona or text == "":
            if override is not None:
                await service.set_system_prompt(ctx, None)
                changed.append("persona")
        elif text is not None and text != service.persona(seen).text:
            await service.set_system_prompt(ctx, text)
            changed.append("persona")
        return self.view(summary), changed

    async def audit(self, chat_key: str) -> list[AuditEntry]:
        """The chat's clears, resets and changes, oldest first (kept after a clear)."""
        return await self._platform.store.audit(_key(chat_key))

    async def memories(self, chat_key: str, limit: int = 50) -> list[Memory]:
        """The chat's memories, newest first. Raises :class:`MemoryOff`."""
        return await self._memory().list(_key(chat_key), None, _capped(limit))

    async def forget(self, chat_key: str, memory_id: int, caller: Principal) -> bool:
        """Delete one memory of the chat (anyone's: an admin), audited with its id (never its
        text). False: no such memory there, and nothing audited."""
        memories = self._memory()
        if not await memories.delete(memory_id, chat_key=_key(chat_key), user_id=None):
            return False
        name = caller.audit_name
        detail = forget_detail(memory_id)
        await self._platform.store.record_change(chat_key, name, name, AuditAction.FORGET, detail)
        return True

    def _memory(self) -> Memories:
        memories = self._platform.operator.memories
        if memories is None:
            raise MemoryOff("memory is off (memory.enabled)")
        return memories

    async def _summary(self, chat_key: str) -> ChatSummary:
        summary = await self._platform.store.chat_summary(_key(chat_key))
        if summary is None:
            raise UnknownChat(chat_key)
        return summary

    def view(self, summary: ChatSummary) -> ChatView:
        """How the bot treats the chat: its scope and persona (presets, /persona, defaults)."""
        service = self._platform.operator.chats
        ctx = _context_of(summary)
        override = service.prefs.system_prompt_override(summary.chat_key)
        token = None
        if summary.platform == PLATFORM:
            token = owner_of(self._settings, summary.chat_id).namespace
        return ChatView(summary, service.scope_for(ctx), service.persona(ctx), override, token)


def ops_for(request: web.Request) -> ChatOps:
    """The operations in the name of this server's bot and ``http:`` settings."""
    context = request.app[CONTEXT]
    return ChatOps(context.platform, context.settings)


def _key(chat_key: str) -> str:
    """``chat_key``, if a chat could have it; else :class:`UnknownChat`."""
    if not is_key(chat_key):
        raise UnknownChat(chat_key)
    return chat_key


def _capped(limit: int) -> int:
    return min(max(limit, 1), MAX_LIMIT)


def _context_of(summary: ChatSummary) -> ChatContext:
    """A stand-in message of the chat, for the presets' patterns (``chats:`` entries). A
    private chat's person is its id (Telegram's rule); a server-wide Discord pattern
    (``discord:guild:<id>``) is not known here and does not match."""
    try:
        kind = ChatType(summary.chat_type)
    except ValueError:
        kind = ChatType.GROUP
    user = summary.chat_id if kind is ChatType.PRIVATE else "admin"
    return ChatContext(summary.platform, summary.chat_id, kind, user)
