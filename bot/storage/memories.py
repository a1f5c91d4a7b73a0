"""Long-term memories, their search, and the search over past user messages.

The isolation rule is :class:`bot.memory.scope.Audience` (``Audience.admits``); every query
below applies it *inside* the search, never as a filter afterwards, so a result set can never
hold (or be cut short by) rows the audience may not see.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from bot.storage.bounds import storable_text
from bot.values import FoundTurn, Memory, NewMemory

if TYPE_CHECKING:
    from bot.storage.audience import Audience

__all__ = [
    "MemoryRecords",
    "MemorySearch",
    "MemoryVectors",
    "storable_memory",
]


def storable_memory(memory: NewMemory) -> NewMemory:
    """``memory`` as every backend stores it: NUL in its text or name as U+FFFD (PostgreSQL
    cannot hold NUL), so SQLite and PostgreSQL keep, show and recall the same text."""
    text, name = storable_text(memory.text), storable_text(memory.user_name)
    if text is memory.text and name is memory.user_name:
        return memory
    return replace(memory, text=text, user_name=name)


class MemoryRecords(Protocol):
    """Storing and forgetting memories.

    A backend must provide: ids that grow; ``add_memory`` stores the memory, its search-index
    entry and (when given) its vector in one transaction, so a search never sees a memory
    half-indexed, with its text and user name as :func:`storable_memory` makes them (NUL as
    U+FFFD, the same on every backend); deleting a memory -- by :meth:`delete_memory`,
    :meth:`clear_memories`, a chat clear or any other writer -- deletes its index entry and
    vector with it (SQLite: triggers ``memories_fts_delete`` and ``memory_vectors_delete``);
    :meth:`move_memories` (and a chat migration) re-keys a chat's memories and their index
    scope, conversation suffixes kept; :meth:`delete_memory` of an id no row can have (outside
    signed 64-bit) is False, not a driver's error.
    """

    async def add_memory(
        self,
        memory: NewMemory,
        vector: Sequence[float] | None = None,
        model: str | None = None,
    ) -> Memory:
        """Store ``memory`` (with ``vector`` made by ``model``, if any); returns it stored."""
        ...

    async def delete_memory(self, memory_id: int, *, chat_key: str, user_id: str | None) -> bool:
        """Forget one memory of ``chat_key``: ``user_id``'s own, or anyone's when None."""
        ...

    async def list_memories(
        self, chat_key: str, user_id: str | None = None, limit: int = 50
    ) -> list[Memory]:
        """The chat's memories (or one user's there), newest first, ``score`` 0."""
        ...

    async def clear_memories(self, chat_key: str) -> int:
        """Forget every memory of the chat; returns how many."""
        ...

    async def move_memories(self, old_chat_key: str, new_chat_key: str) -> int:
        """Re-key a chat's memories (conversation suffixes kept); returns how many."""
        ...


class MemorySearch(Protocol):
    """Full-text recall in any language (CJK included: :func:`bot.memory.search.search_form`).

    A backend must provide: a query's terms are OR-ed, each a plain string (user text such as
    ``AND``, ``"`` or ``NEAR(`` is searched for, never parsed, and never raises); stop words
    are ignored and a query of nothing else finds nothing; ``score`` is a relevance, higher
    better, comparable to ``min_score`` (SQLite: -bm25, where 1.0 is one matching term found
    in at most about a quarter of the rows); results are best first, ties newest first.
    """

    async def search_memories(
        self, audience: Audience, query: str, *, limit: int, min_score: float
    ) -> list[Memory]:
        """The memories ``audience`` admits that match ``query``, best first."""
        ...

    async def search_turns(
        self,
        conversation_key: str,
        query: str,
        *,
        before_turn_id: int,
        limit: int,
        min_score: float,
    ) -> list[FoundTurn]:
        """This conversation's user messages below ``before_turn_id`` and after its last reset
        that match ``query``, best first (``score`` as for memories). Sees every turn stored
        before the call (SQLite indexes them lazily: :meth:`index_turns`)."""
        ...

    async def turns_beside(
        self, conversation_key: str, turn_ids: Sequence[int], *, before_turn_id: int
    ) -> dict[int, list[FoundTurn]]:
        """For each of ``turn_ids`` in this conversation: the conversation's turn said right
        after it, then the one right before it, each only if it is below ``before_turn_id``
        and after the last reset (ids of other conversations, or of no turn, map to nothing;
        ``score`` 0). An answer often follows the message that shares the question's words."""
        ...

    async def index_turns(self, batch: int = 1000) -> int:
        """Bring the past-message index up to date; returns how many turns were indexed. Safe
        to call from several processes at once (no turn is indexed twice)."""
        ...


class MemoryVectors(Protocol):
    """Embedding vectors of memories and of past user messages (turns), one per row, with the
    model that made it.

    A backend must provide: a vector is stored only for a memory (turn) that still exists (one
    deleted while its vector was computed gets none); storing replaces the row's vector; a
    vector goes with its memory or turn, however it is deleted (a clear, retention, a chat
    clear; SQLite: triggers ``memory_vectors_delete``, ``turn_vectors_delete``); vectors of
    another model or size never join a search. Vectors come back as given (float32 precision).
    """

    async def put_vectors(self, model: str, vectors: Sequence[tuple[int, Sequence[float]]]) -> None:
        """Store ``(memory_id, vector)`` pairs made by ``model``, in one transaction."""
        ...

    async def unembedded(self, model: str, after_id: int, limit: int) -> list[tuple[int, str]]:
        """``(memory_id, text)`` of memories with ids above ``after_id`` that have no vector
        of ``model``, by id."""
        ...

    async def memory_vectors(
        self, audience: Audience, model: str, dims: int, limit: int
    ) -> list[tuple[Memory, Sequence[float]]]:
        """The newest ``limit`` memories ``audience`` admits that have a ``model`` vector of
        ``dims`` floats, with it, newest first."""
        ...

    async def put_turn_vectors(
        self, model: str, vectors: Sequence[tuple[int, Sequence[float]]]
    ) -> None:
        """Store ``(turn_id, vector)`` pairs of turns' user messages made by ``model``."""
        ...

    async def unembedded_turns(
        self, conversation_key: str, model: str, *, after_turn_id: int, limit: int
    ) -> list[tuple[int, str]]:
        """``(turn_id, user_text)`` of the conversation's turns with ids above
        ``after_turn_id`` and after its last reset that have no vector of ``model``, newest
        first (the ones recall will reach first)."""
        ...

    async def turn_vectors(
        self, conversation_key: str, model: str, dims: int, *, before_turn_id: int, limit: int
    ) -> list[tuple[FoundTurn, Sequence[float]]]:
        """The newest ``limit`` turns of the conversation below ``before_turn_id`` and after
        its last reset that have a ``model`` vector of ``dims`` floats, with it, newest first
        (``score`` 0)."""
        ...
