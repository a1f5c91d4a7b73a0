"""Where each conversation's prompt begins: the boundary of what was last sent to the model.

A prompt that starts with the bytes of the previous one is billed at a fraction by the
provider's prefix cache (:mod:`bot.prompt.window`). So the window is not re-trimmed every
turn: it keeps its first turn until history passes its budget, then is cut in one step. The
boundary is stored, not recomputed, because it is a fact about what the model was sent: recall
searches every turn before it (nothing trimmed vanishes), compaction summarises those turns, and
the summary shown in the prompt is pinned with the boundary so it changes only at a cut.
"""

from __future__ import annotations

from typing import Protocol

from bot.values import PromptRows, WindowMark

__all__ = ["PromptRows", "PromptWindows", "WindowMark"]


class PromptWindows(Protocol):
    """One mark per conversation. A backend must provide: :meth:`save_window_mark` replaces the
    mark (not the conversation's summary nor its turn count); the mark is forgotten with the
    conversation's summary (a reset of the conversation, a clear of its chat, retention) and
    moves with a migrated chat."""

    #: Whether a read waits for a server (PostgreSQL): a turn then makes its reads together.
    #: False where reads are answered in this process (SQLite: from memory, or by a statement
    #: run on the loop's thread): tasks to run them together would cost more than the reads.
    reads_wait: bool

    async def load_window_mark(self, conversation_key: str) -> WindowMark | None:
        """The conversation's mark, or None (never cut, or forgotten)."""
        ...

    async def save_window_mark(
        self, conversation_key: str, chat_key: str, mark: WindowMark
    ) -> None: ...

    async def load_prompt_rows(
        self, conversation_key: str, max_turns: int, overheard_since: float | None
    ) -> PromptRows:
        """``load_window(conversation_key, max_turns)``, ``load_overheard(conversation_key,
        overheard_since)`` (none when it is None) and ``load_window_mark(conversation_key)``
        together: what a turn reads before its prompt, in one round trip where the backend can
        (PostgreSQL; SQLite reads its caches)."""
        ...
