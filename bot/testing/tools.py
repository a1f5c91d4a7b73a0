"""Call a plugin's tools directly in a unit test, without an App, a database or a model.

ctx = tool_context("calculator")
assert await calculate(ctx, "2**10 * 3") == "3072"
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from bot.context import ChatContext, ChatType
from bot.platform.delivery import Outbound
from bot.plugins import PluginStore, ToolContext

if TYPE_CHECKING:
    from bot.memory.store import MemoryStore

ALICE = ChatContext("telegram", "1", ChatType.PRIVATE, "1", "Alice")


class MemoryKV:
    """The smallest key-value backend a :class:`PluginStore` can sit on (a dict)."""

    def __init__(self) -> None:
        self.data: dict[tuple[str, str], Any] = {}

    async def kv_get(self, plugin: str, key: str) -> Any:
        return self.data.get((plugin, key))

    async def kv_set(self, plugin: str, key: str, value: Any) -> None:
        self.data[(plugin, key)] = value

    async def kv_delete(self, plugin: str, key: str) -> bool:
        return self.data.pop((plugin, key), None) is not None

    async def kv_increment(self, plugin: str, key: str) -> int:
        value = int(self.data.get((plugin, key)) or 0) + 1
        self.data[(plugin, key)] = value
        return value

    async def kv_items(self, plugin: str, prefix: str = "") -> list[tuple[str, Any]]:
        return sorted(
            (key, value)
            for (owner, key), value in self.data.items()
            if owner == plugin and key.startswith(prefix)
        )


def tool_context(
    plugin: str,
    *,
    chat: ChatContext = ALICE,
    is_admin: bool = False,
    settings: BaseModel | None = None,
    conversation_key: str = "",
    memories: MemoryStore | None = None,
) -> ToolContext:
    """A :class:`ToolContext` for ``plugin`` in ``chat`` (default: Alice's private chat), with
    an in-memory store and an outbound seam with no senders. ``conversation_key`` defaults to
    the chat's shared conversation (a private chat's own)."""
    return ToolContext(
        chat=chat,
        is_admin=is_admin,
        plugin=plugin,
        store=PluginStore(MemoryKV(), plugin),
        outbound=Outbound(),
        settings=settings,
        memories=memories,
        conversation_key=conversation_key,
    )
