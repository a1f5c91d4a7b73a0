"""Which remembered facts a conversation may recall: the isolation rule of long-term memory.

A memory belongs to the conversation it was said in (its ``conversation_key``): the person in a
group under ``/scope user``, the topic or thread under ``/scope thread``, the group under
``/scope chat``, the private chat. A search for a conversation admits exactly:

1. memories of that conversation;
2. the asker's own facts about themselves (scope ``member``) said anywhere in the same chat,
   so a person's facts follow them across the topics or scopes of one group, never to others;
3. with ``memory.share_private`` (and only in a group), the asker's own private-chat memories on
   the same platform.

:meth:`Audience.admits` states the rule in Python (the property tests hold the SQL to it); the
SQL clause and the full-text scope tokens below say the same thing for the database, so a search
intersects its terms with the audience inside the index and never filters afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from bot.context import ChatContext
from bot.history.scopes import scope_token

__all__ = ["Audience", "MemoryScope", "index_scope"]


class MemoryScope(StrEnum):
    PRIVATE = "private"  # said in a private chat: recalled there only (unless shared by config)
    MEMBER = "member"  # about one member, said in a group: that member's, in that group
    CHAT = "chat"  # about the group (or topic) itself: recalled in its conversation


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

    def index_scopes(self) -> list[str]:
        """The full-text scope tokens this audience may match (see :func:`index_scope`)."""
        tokens = [scope_token("c", self.conversation_key), _own(self.chat_key, self.user_id)]
        if self.share_private:
            tokens.append(scope_token("p", self.platform_prefix + self.user_id))
        return tokens

    def sql_args(self) -> tuple[str, str, str, str | None]:
        """Parameters ?2..?5 of :data:`IN_AUDIENCE`."""
        prefix = self.platform_prefix if self.share_private else None
        return self.conversation_key, self.chat_key, self.user_id, prefix


def _own(chat_key: str, user_id: str) -> str:
    # A newline never occurs in a chat key, so the pair cannot be forged by another pair.
    return scope_token("o", f"{chat_key}\n{user_id}")


def index_scope(chat_key: str, conversation_key: str, user_id: str, scope: MemoryScope) -> str:
    """A memory's tokens in the ``scope`` column of ``memories_fts``: ``c`` its conversation,
    ``o`` chat+user for a member's own fact, ``p`` platform:user for a private one. The SQL of
    migration 11 and ``RESCOPE_MEMORIES`` builds the same."""
    tokens = [scope_token("c", conversation_key)]
    if scope is MemoryScope.MEMBER:
        tokens.append(_own(chat_key, user_id))
    elif scope is MemoryScope.PRIVATE:
        platform = chat_key.split(":", 1)[0]
        tokens.append(scope_token("p", f"{platform}:{user_id}"))
    return " ".join(tokens)


# The rule in SQL, over ``memories AS m``. ?2 conversation, ?3 chat, ?4 user, ?5 "platform:" when
# private memories may join (else NULL).
IN_AUDIENCE = """(m.conv_key = ?2
    OR (m.user_id = ?4 AND m.scope = 'member' AND m.chat_key = ?3)
    OR (?5 IS NOT NULL AND m.user_id = ?4 AND m.scope = 'private'
        AND substr(m.chat_key, 1, length(?5)) = ?5))"""
