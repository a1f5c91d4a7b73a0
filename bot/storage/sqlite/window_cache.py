"""The recent window of recently active conversations, kept in memory in step with our writes.

Every message reloads its conversation's window; parsing ~50 turns from SQLite costs about as
much as the rest of a turn together (bench/). The store updates this cache on each of its own
writes and tags every entry with SQLite's ``data_version`` as seen by the writer connection,
which changes only when *another* connection (another process) commits: then the entry is
dropped and the window is read from disk again. A window read from disk is only cached if none
of our own writes happened while it was being read (``epoch``), so a slow read can never
overwrite a newer state.

Bounded twice, least recently used first: by conversations (``MAX_CONVERSATIONS``) and by the
approximate size of the windows held (``MAX_BYTES``), since one window of 50 long turns weighs
as much as hundreds of one-line ones. An evicted window is simply read from disk again. Turns
waiting for their answer are remembered at most ``MAX_PENDING`` at a time; past that the oldest
one's window is dropped with it, so no entry can keep a turn pending that has been answered.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from bot.values import StoredTurn, TurnStatus

MAX_CONVERSATIONS = 2048  # windows kept
MAX_BYTES = 32 * 2**20  # approximate memory of the windows kept (see ``turn_size``)
MAX_PENDING = 4096  # turns begun and not yet completed or failed, across all conversations
TURN_OVERHEAD = 400  # bytes a turn costs besides its text: the objects around it


def turn_size(turn: StoredTurn) -> int:
    """Approximately what ``turn`` costs in memory: its text plus a fixed overhead per message."""
    size = TURN_OVERHEAD
    for message in turn.messages:
        size += TURN_OVERHEAD // 2
        for value in message.values():
            size += len(value) if isinstance(value, str) else len(repr(value))
    return size


def window_tail(turns: Sequence[StoredTurn], max_turns: int) -> list[StoredTurn]:
    """The newest ``max_turns`` turns with the overheard context rows among them.

    Context rows do not count: a chatty group must not push real turns out of the window.
    With fewer turns than that, everything is kept (the store's query does the same).
    """
    if max_turns <= 0:
        return []
    if len(turns) <= max_turns:  # fewer rows than turns wanted: every one is kept
        return list(turns)
    seen = 0
    for index in range(len(turns) - 1, -1, -1):
        if turns[index].status is not TurnStatus.CONTEXT:
            seen += 1
            if seen == max_turns:
                return list(turns[index:])
    return list(turns)


@dataclass
class _Entry:
    chat_key: str
    version: int
    capacity: int  # the window holds the newest `capacity` turns after the last reset
    turns: list[StoredTurn]
    size: int = 0  # sum of turn_size over turns, kept up to date by the cache


class WindowCache:
    def __init__(
        self,
        max_conversations: int | None = None,
        *,
        max_bytes: int | None = None,
        max_pending: int | None = None,
    ) -> None:
        """Bounds default to the module's constants, read now (a test may lower them)."""
        self.max_conversations = (
            MAX_CONVERSATIONS if max_conversations is None else max_conversations
        )
        self.max_bytes = MAX_BYTES if max_bytes is None else max_bytes
        self.max_pending = MAX_PENDING if max_pending is None else max_pending
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._pending: dict[int, str] = {}  # turn id -> conversation key, oldest first
        self._size = 0  # sum of the entries' sizes
        self.epoch = 0  # bumped by every write we make

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def size(self) -> int:
        """Approximate bytes held by the cached windows (bounded by ``max_bytes``)."""
        return self._size

    @property
    def pending(self) -> int:
        """Turns remembered as waiting for their answer (bounded by ``max_pending``)."""
        return len(self._pending)

    def get(self, key: str, max_turns: int, version: int) -> list[StoredTurn] | None:
        entry = self._entries.get(key)
        if entry is None or entry.version != version or max_turns > entry.capacity:
            return None
        self._entries.move_to_end(key)
        return window_tail(entry.turns, max_turns)

    def put(
        self,
        key: str,
        chat_key: str,
        turns: Sequence[StoredTurn],
        *,
        capacity: int,
        version: int,
        epoch: int,
    ) -> None:
        if epoch != self.epoch:
            return  # something was written while these turns were read
        self._drop(key)
        entry = _Entry(chat_key, version, capacity, list(turns))
        self._entries[key] = entry
        for turn in entry.turns:  # read while pending: its answer must still reach the entry
            if turn.status is TurnStatus.PENDING:
                self._remember_pending(turn.turn_id, key)
        self._grew(key, entry, sum(map(turn_size, entry.turns)))

    def began(self, key: str, turn: StoredTurn) -> None:
        self.epoch += 1
        entry = self._entries.get(key)
        if entry is None:
            return
        self._entries.move_to_end(key)
        entry.turns.append(turn)
        kept = window_tail(entry.turns, entry.capacity)  # a suffix: the oldest turns go
        gone = entry.turns[: len(entry.turns) - len(kept)]
        entry.turns = kept
        self._grew(key, entry, turn_size(turn) - sum(map(turn_size, gone)))
        self._remember_pending(turn.turn_id, key)

    def completed(self, turn_id: int, answer: Sequence[Mapping[str, Any]]) -> None:
        self._update(turn_id, TurnStatus.ANSWERED, answer)

    def failed(self, turn_id: int) -> None:
        self._update(turn_id, TurnStatus.UNANSWERED, ())

    def _update(
        self, turn_id: int, status: TurnStatus, answer: Sequence[Mapping[str, Any]]
    ) -> None:
        self.epoch += 1
        key = self._pending.pop(turn_id, None)
        entry = self._entries.get(key) if key is not None else None
        if key is None or entry is None:
            return
        for index in range(len(entry.turns) - 1, -1, -1):
            turn = entry.turns[index]
            if turn.turn_id == turn_id:
                if turn.status is TurnStatus.PENDING:
                    messages = (turn.messages[0], *answer)
                    done = replace(turn, status=status, messages=messages)
                    entry.turns[index] = done
                    self._grew(key, entry, turn_size(done) - turn_size(turn))
                return

    def forget(self, key: str) -> None:
        self.epoch += 1
        self._drop(key)

    def forget_chat(self, chat_key: str) -> None:
        self.epoch += 1
        for key in [k for k, e in self._entries.items() if e.chat_key == chat_key]:
            self._drop(key)

    def clear(self) -> None:
        self.epoch += 1
        self._entries.clear()
        self._pending.clear()
        self._size = 0

    # -- the bounds ------------------------------------------------------------------------

    def _remember_pending(self, turn_id: int, key: str) -> None:
        self._pending[turn_id] = key
        while len(self._pending) > self.max_pending:
            oldest = next(iter(self._pending))
            self._drop(self._pending.pop(oldest))  # its answer could no longer reach the entry

    def _grew(self, key: str, entry: _Entry, delta: int) -> None:
        """``entry`` (cached under ``key``) changed size by ``delta``: evict down to the bounds,
        least recently used first (that may be ``entry`` itself, when it alone is too big)."""
        if self._entries.get(key) is not entry:
            return  # dropped meanwhile: its size no longer counts
        entry.size += delta
        self._size += delta
        while self._entries and (
            len(self._entries) > self.max_conversations or self._size > self.max_bytes
        ):
            self._drop(next(iter(self._entries)))

    def _drop(self, key: str) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._size -= entry.size
