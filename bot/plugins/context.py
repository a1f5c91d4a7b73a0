"""What a tool call and a plugin get to work with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from bot.context import ChatContext, Scope
from bot.platform.delivery import Outbound
from bot.storage.kv import KeyValueStore

if TYPE_CHECKING:
    from bot.memory.store import MemoryStore
    from bot.scheduling.scheduler import Scheduler


KeyValueBackend = KeyValueStore  # the storage protocol (bot.storage.kv); the old name stays


@dataclass(frozen=True, slots=True)
class PluginStore:
    """A plugin's own small key-value store (JSON values), kept in the bot's storage."""

    backend: KeyValueBackend
    plugin: str

    async def get(self, key: str, default: Any = None) -> Any:
        value = await self.backend.kv_get(self.plugin, key)
        return default if value is None else value

    async def set(self, key: str, value: Any) -> None:
        await self.backend.kv_set(self.plugin, key, value)

    async def increment(self, key: str) -> int:
        """A counter (ids): one more than before, atomically across concurrent calls."""
        return await self.backend.kv_increment(self.plugin, key)

    async def delete(self, key: str) -> bool:
        return await self.backend.kv_delete(self.plugin, key)

    async def items(self, prefix: str = "") -> list[tuple[str, Any]]:
        return await self.backend.kv_items(self.plugin, prefix)


@dataclass(frozen=True, slots=True)
class ToolContext:
    """Everything one tool call may use. Built per call; the model never sees it."""

    chat: ChatContext
    is_admin: bool
    plugin: str
    store: PluginStore
    outbound: Outbound
    scheduler: Scheduler | None = None
    settings: BaseModel | None = None
    memories: MemoryStore | None = None  # long-term memory, when enabled
    # The conversation the call belongs to under the chat's scope (a memory is kept there);
    # empty: the chat's shared conversation (or the private chat's).
    conversation_key: str = ""

    def __post_init__(self) -> None:
        if not self.conversation_key:
            object.__setattr__(self, "conversation_key", self.chat.conversation_key(Scope.CHAT))

    async def send(self, text: str) -> bool:
        """Post ``text`` in the chat (and thread) the call came from, now."""
        chat = self.chat
        return await self.outbound.send(chat.platform, chat.chat_id, chat.thread_id, text)
