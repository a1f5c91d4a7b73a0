"""Turns and the context window: what a conversation said, and what the model answered.

A turn is written in two steps, each one transaction: :meth:`Turns.begin_turn` makes the
user's message durable at once (status ``pending``), and :meth:`Turns.complete_turn` writes
every assistant and tool message of the answer together with the status flip. A crash in between
leaves a lone user message, which is a valid history for the API; nothing the user typed is lost
and no half of an answer is ever stored. The adapter delivers the answer after it is stored; if
the platform refuses it past every retry, :meth:`Turns.mark_undelivered` says so.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any, Protocol

from bot.values import NO_USAGE, HistoryStats, NewTurn, StoredTurn, Usage

__all__ = ["TurnArchive", "Turns"]


class Turns(Protocol):
    """Writing turns and reading the context window.

    A backend must provide:

    - **Arrival order.** Turn ids grow in the order :meth:`begin_turn` calls return, across
      every conversation and every process sharing the database; a conversation's window lists
      its turns in that order.
    - **One transaction per step.** ``begin_turn`` stores the user's message (and, with
      ``NewTurn.overheard``, first moves those overheard messages in as ``context`` turns and
      drops every overheard message of the conversation up to the newest chosen one) atomically;
      ``complete_turn`` stores the whole answer with the status flip atomically. A reader never
      sees half of either.
    - **Usage booked on completion.** ``complete_turn`` adds the turn's tokens (cached input
      included, ``Usage.cached_tokens``) to the usage
      ledger (:mod:`bot.storage.usage`) on the UTC day it completes, as one answered turn, in
      the same transaction (SQLite: trigger ``turns_usage``). ``fail_turn`` of a pending turn
      books its tokens (the rounds that ran were billed) but no answered turn. An answer that
      arrives after the turn was closed as interrupted is booked too.
    - **Undelivered leaves the answered count.** ``mark_undelivered`` turns an answered turn
      ``undelivered``: its answer stays in the window, its tokens stay booked, and it no longer
      counts as answered, neither in :meth:`TurnArchive.stats` nor in the ledger's ``turns``.
    - **Windows in O(window).** ``load_window`` returns the newest ``max_turns`` turns after
      the conversation's last reset, oldest first, with the ``context`` turns stored after the
      oldest of them (they do not count toward ``max_turns``), at a cost independent of the
      history's length. Each turn's messages are the user's message then the stored answer, in
      OpenAI format, with only ``role``, ``content``, ``tool_calls``, ``tool_call_id`` and
      ``name`` kept (empty extras dropped). A backend may cache windows but must never return
      one older than its own last write or another process's last commit.
    - **Deletes follow.** A deleted turn (``/clear``, retention) leaves no trace in the search
      index of past messages (:mod:`bot.storage.memories`; SQLite: trigger ``turns_fts_delete``).
    """

    async def begin_turn(self, turn: NewTurn) -> int:
        """Store the user's message as a pending turn; returns the turn id (arrival order).

        ``turn.overheard`` (chatter) and then ``turn.burst`` (the sender's earlier messages it
        answers too) go in first as context rows, in the same transaction."""
        ...

    async def complete_turn(
        self, turn_id: int, messages: Sequence[Mapping[str, Any]], usage: Usage, model: str
    ) -> None:
        """Store the whole answer (assistant, tool calls, tool results) in one transaction."""
        ...

    async def fail_turn(self, turn_id: int, reason: str, usage: Usage = NO_USAGE) -> None:
        """Mark a pending turn unanswered; its user message stays in the history. ``usage``:
        tokens of the model rounds that did run (billed all the same). No-op for a turn that is
        no longer pending."""
        ...

    async def mark_undelivered(self, turn_id: int, reason: str) -> bool:
        """An answered turn whose reply the platform never took: status ``undelivered``. The
        answer stays in the history (the model wrote it, its tools ran). False if the turn was
        not answered (or is gone)."""
        ...

    async def load_window(self, conversation_key: str, max_turns: int) -> list[StoredTurn]:
        """The newest ``max_turns`` turns after the last reset, oldest first, in O(window)."""
        ...


class TurnArchive(Protocol):
    """Reading stored turns outside the context window: statistics, export, discovery.

    ``stats`` counts a conversation's turns, ``context`` rows excluded: every stored one, those
    after the last reset, the unanswered and the undelivered, and the tokens they spent (still
    stored: unlike the ledger, this forgets cleared turns). ``export`` yields every stored
    message oldest first as plain JSON-able dicts: ``chat`` (the chat key), ``turn``, ``seq``
    (0 is the user's message), the message's own fields, ``status``, ``created_at`` (the
    turn's, then its completion's), and on ``seq`` 0 ``user_id`` and ``user_name``.
    """

    async def stats(self, conversation_key: str) -> HistoryStats: ...

    def export(self, conversation_key: str) -> AsyncGenerator[dict[str, Any], None]:
        """Every stored message of a conversation, oldest first, as plain JSON-able dicts."""
        ...

    async def conversations(self) -> list[tuple[str, int]]:
        """Every conversation key with its stored turn count, ordered by key."""
        ...

    async def turn_exists(self, turn_id: int) -> bool:
        """Whether the turn is still stored (not cleared, not expired)."""
        ...
