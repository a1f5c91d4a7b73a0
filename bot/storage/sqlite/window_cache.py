"""The recent window of recently active conversations, kept in memory in step with our writes.

Every message reloads its conversation's window; parsing ~50 turns from SQLite costs about as
much as the rest of a turn together (bench/). The store updates this cache on each of its own
writes and tags every entry with SQLite's ``data_version`` as seen by the writer connection,
which changes only when *another* connection (another process) commits: then the entry is
dropped and the window is read from disk again. A window read from disk is only cached if none
of our own writes happened while it was being read (``epoch``), so a slow read can never
overwrite a newer state.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from bot.storage.values import StoredTurn, TurnStatus


def window_tail(turns: Sequence[StoredTurn], max_turns: int) -> list[StoredTurn]:
    """The newest ``max_turns`` turns with the overheard context rows among them.

    Context rows do not count: a chatty group must not push real turns out of the window.
    With fewer turns than that, everything is kept (the store's query does the same).
    """
    if max_turns <= 0:
        return []
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


class WindowCache:
    def __init__(self, max_conversations: int = 2048) -> None:
        self.max_conversations = max_conversations
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._pending: dict[int, str] = {}  # turn id -> conversation key, until completed
        self.epoch = 0  # bumped by every write we make

    def __len__(self) -> int:
        return len(self._entries)

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
        self._entries[key] = _Entry(chat_key, version, capacity, list(turns))
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_conversations:
            self._entries.popitem(last=False)

    def began(self, key: str, turn: StoredTurn) -> None:
        self.epoch += 1
        entry = self._entries.get(key)
        if entry is None:
            return
        self._pending[turn.turn_id] = key
        entry.turns.append(turn)
        entry.turns = window_tail(entry.turns, entry.capacity)

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
        if entry is None:
            return
        for index in range(len(entry.turns) - 1, -1, -1):
            turn = entry.turns[index]
            if turn.turn_id == turn_id:
                if turn.status is TurnStatus.PENDING:
                    messages = (turn.messages[0], *answer)
                    entry.turns[index] = replace(turn, status=status, messages=messages)
                return

    def forget(self, key: str) -> None:
        self.epoch += 1
        self._entries.pop(key, None)

    def forget_chat(self, chat_key: str) -> None:
        self.epoch += 1
        for key in [k for k, e in self._entries.items() if e.chat_key == chat_key]:
            del self._entries[key]

    def clear(self) -> None:
        self.epoch += 1
        self._entries.clear()
        self._pending.clear()
