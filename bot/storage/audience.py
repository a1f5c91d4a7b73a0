"""Which remembered facts a conversation may recall: the isolation rule of long-term memory.

(Here, below memory, so that storage applies it without importing :mod:`bot.memory`, which
re-exports it as :mod:`bot.memory.scope`.)

A memory belongs to the conversation it was said in (its ``conversation_key``): the person in a
group under ``/scope user``, the topic or thread under ``/scope thread``, the group under
``/scope chat``, the private chat. A search for a conversation admits exactly:

1. memories of that conversation;
2. the asker's own facts about themselves (scope ``member``) said anywhere in the same chat,
   so a person's facts follow them across the topics or scopes of one group, never to others;
3. with ``memory.share_private`` (and only in a group), the asker's own private-chat memories on
   the same platform.

:meth:`Audience.admits` states the rule; a storage backend applies the same rule inside its
search (:mod:`bot.storage.memories`), never as a filter afterwards, and the conformance suite's
property test holds it to this method.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from bot.context import ChatContext
from bot.values import MemoryScope

__all__ = ["Audience", "MemoryScope"]


class _Scoped(Protocol):
    @property
    def chat_key(self) -> str: ...
    @property
    def conversation_key(self) -> str: ...
    @property
    def user_id(self) -> str: ...
    @property
    def scope(self) -> MemoryScope: ...


@dataclass(frozen=True, slots=True)
class Audience:
    """Who asks, and in which conversation: decides what a memory search may return."""

    chat_key: str
    conversation_key: str
    user_id: str
    share_private: bool = False  # also the asker's private memories (groups only; opt-in)

    @classmethod
    def of(
        cls, ctx: ChatContext, conversation_key: str, *, share_private: bool = False
    ) -> Audience:
        return cls(
            ctx.chat_key, conversation_key, ctx.user_id, share_private and not ctx.is_private
        )

    @property
    def platform_prefix(self) -> str:
        return self.chat_key.split(":", 1)[0] + ":"

    def admits(self, memory: _Scoped) -> bool:
        """The rule itself (module docstring), as the SQL applies it."""
        if memory.conversation_key == self.conversation_key:
            return True
        if memory.user_id != self.user_id:
            return False
        if memory.scope is MemoryScope.MEMBER:
            return memory.chat_key == self.chat_key
        return (
            self.share_private
            and memory.scope is MemoryScope.PRIVATE
            and memory.chat_key.startswith(self.platform_prefix)
        )
