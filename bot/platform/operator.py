"""The operator's view of the whole bot, for an admin surface (the HTTP adapter's admin API and
dashboard): chats' settings, memories, MCP servers, plugins, reminders, scheduled posts and
metrics, knowledge bases, catch-up digests, the adapters' state and the last warnings and
errors logged.

Each part is a Protocol that the real object (``ChatService``, ``MemoryStore``, ``MCPManager``,
``PluginManager``, ``KnowledgeLibrary``) meets structurally: this layer names only what is read,
and imports nothing above it. A chat-only adapter ignores :attr:`Platform.operator
<bot.platform.seam.Platform.operator>`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from bot.context import ChatContext, Scope
from bot.guardrails.recent_log import RecentLog
from bot.metrics import Metrics
from bot.platform.adapter_runs import AdapterRuns
from bot.scheduling.posts import ScheduledPost
from bot.scheduling.scheduler import Scheduler
from bot.storage.knowledge import FoundChunk, KnowledgeDocument, PutResult
from bot.values import Memory, Usage

__all__ = ["CatchUps", "ChatAdmin", "KnowledgeShelf", "Memories", "Operator", "ScheduleBoard"]


class Persona(Protocol):
    @property
    def text(self) -> str: ...
    @property
    def source(self) -> StrEnum: ...  # chat (/persona), preset, default


class Overrides(Protocol):
    def system_prompt_override(self, chat_key: str) -> str | None: ...


class ChatAdmin(Protocol):
    """How the bot treats a chat, and a reset or a change of its scope or persona in an
    operator's name (``ChatService``: what /scope and /persona call, so the running bot uses
    the change from the next message on, and the audit trail says who made it: ``ctx``'s
    user)."""

    @property
    def prefs(self) -> Overrides: ...
    def scope_for(self, ctx: ChatContext) -> Scope: ...
    def persona(self, ctx: ChatContext) -> Persona: ...
    async def reset_chat(self, chat_key: str, by_user: str, by_name: str) -> list[str]: ...
    async def set_scope(self, ctx: ChatContext, scope: Scope) -> None: ...
    async def set_system_prompt(self, ctx: ChatContext, prompt: str | None) -> None: ...


class Memories(Protocol):
    """Reading and deleting stored memories (``MemoryStore``)."""

    async def list(
        self, chat_key: str, user_id: str | None = None, limit: int = 50
    ) -> list[Memory]: ...
    async def delete(self, memory_id: int, *, chat_key: str, user_id: str | None) -> bool: ...


class Skipped(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def reason(self) -> str: ...


class ServerStatus(Protocol):
    """One MCP server's state (``bot.mcp.status.ServerStatus``)."""

    @property
    def name(self) -> str: ...
    @property
    def transport(self) -> str: ...
    @property
    def state(self) -> StrEnum: ...
    @property
    def tools(self) -> Sequence[str]: ...
    @property
    def skipped(self) -> Sequence[Skipped]: ...
    @property
    def error(self) -> str: ...
    @property
    def retry_in(self) -> float | None: ...
    @property
    def restarts(self) -> int: ...


class MCPServers(Protocol):
    def statuses(self) -> Sequence[ServerStatus]: ...


class Plugin(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def module(self) -> str: ...
    @property
    def tools(self) -> Sequence[str]: ...
    @property
    def commands(self) -> Sequence[str]: ...
    @property
    def job_kinds(self) -> Sequence[str]: ...


class LoadedPlugin(Protocol):
    @property
    def plugin(self) -> Plugin: ...


class Plugins(Protocol):
    """What loaded and what failed (``PluginManager``)."""

    @property
    def loaded(self) -> Sequence[LoadedPlugin]: ...
    @property
    def failed(self) -> Mapping[str, str]: ...  # module -> error


class KnowledgeShelf(Protocol):
    """The knowledge bases config declares, as an operator manages them
    (``bot.knowledge.library.KnowledgeLibrary``). Every method but :meth:`bases` raises
    ``bot.knowledge.library.UnknownBaseError`` for a base config does not declare; :meth:`add`
    raises ``bot.knowledge.formats.DocumentError`` (the reason a person can act on) for a
    refused document, and stores nothing then."""

    def bases(self) -> dict[str, str]: ...  # name -> description
    async def documents(self, base: str) -> list[KnowledgeDocument]: ...
    async def chunks(self, base: str, source: str) -> list[FoundChunk]: ...  # [] no such document
    async def add(self, base: str, source: str, data: bytes, added_by: str) -> PutResult: ...
    async def remove(self, base: str, source: str) -> bool: ...


class ScheduleBoard(Protocol):
    """Scheduled posts as an operator manages them (``bot.conversation.scheduled_posts.
    ScheduledPosts``, the same object ``/schedule`` uses). :meth:`schedule_in` raises
    ``bot.scheduling.recurrence.ScheduleError`` (its ``chat_text`` the reason a person can act
    on: a bad time zone, time or date, a past date, an unknown or private chat, the chat's
    limit) and schedules nothing then. Both a set and a cancel are audited as ``by``."""

    def listed(self, chat_key: str | None = None) -> list[ScheduledPost]: ...
    async def schedule_in(
        self, chat_key: str, thread_id: str | None, when: str, prompt: str, *, by: str
    ) -> ScheduledPost: ...
    async def cancel(
        self, post_id: int, chat_key: str | None = None, *, by: str, by_name: str | None = None
    ) -> ScheduledPost | None: ...


class CatchupDigest(Protocol):
    """One catch-up (``bot.conversation.catchup.CatchupReport``)."""

    @property
    def summary(self) -> str: ...  # "" when there was nothing to summarise
    @property
    def reply(self) -> str: ...  # what a chat would be shown: a header line, then the summary
    @property
    def conversation_key(self) -> str: ...
    @property
    def messages(self) -> int: ...
    @property
    def left_out(self) -> int: ...
    @property
    def speakers(self) -> Sequence[str]: ...
    @property
    def first_at(self) -> float | None: ...
    @property
    def last_at(self) -> float | None: ...
    @property
    def calls(self) -> int: ...
    @property
    def usage(self) -> Usage: ...


class CatchUps(Protocol):
    """Catch-up digests in an operator's name (``bot.conversation.catchup.CatchUp``): raises
    ``CatchupRefusedError`` for a span past the limits or another chat's conversation, and the
    model's ``LLMError``."""

    async def for_operator(
        self,
        ctx: ChatContext,
        conversation_key: str,
        *,
        hours: float | None = None,
        messages: int | None = None,
    ) -> CatchupDigest: ...


@dataclass(frozen=True, slots=True)
class Operator:
    chats: ChatAdmin
    metrics: Metrics  # GET /metrics
    memories: Memories | None  # None: memory is off
    mcp: MCPServers | None  # None: no MCP servers configured
    plugins: Plugins | None
    scheduler: Scheduler | None  # reminders
    adapters: AdapterRuns  # what ``run`` started, and how each is doing
    recent_log: RecentLog  # the last warnings and errors, secrets masked
    knowledge: KnowledgeShelf | None = None  # the bases' documents (None: not given)
    schedules: ScheduleBoard | None = None  # scheduled posts (None: schedules.enabled off)
    catchup: CatchUps | None = None  # catch-up digests (None: catchup.enabled off)
