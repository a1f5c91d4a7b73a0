"""Arrival order per conversation while admission checks await (shared limits in a database).

The conversation's lock (:mod:`bot.conversation.locks`) serves messages in the order they ask
for it. With the limits in memory nothing awaits before that, so arrival order is lock order.
With the limits in the database each check is a round trip, and two messages' trips may come
back in either order. A message therefore takes a :class:`Ticket` the moment it arrives; its
checks run concurrently with everyone else's (a flood is refused at the database's speed, not
one trip at a time), and it leaves the line only when every earlier arrival has left, right
before it asks for the lock. A message refused on the way leaves at once.
"""

from __future__ import annotations

import asyncio
from collections import deque

__all__ = ["ArrivalOrder", "Ticket"]


class Ticket:
    def __init__(self, order: ArrivalOrder, key: str) -> None:
        self._order = order
        self._key = key
        self._turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._left = False

    async def turn(self) -> None:
        """Wait until every message of the key that arrived earlier has left the line."""
        await self._turn

    def let_go(self) -> None:
        """It is this ticket's turn now (once; later calls change nothing)."""
        if not self._turn.done():
            self._turn.set_result(None)

    def leave(self) -> None:
        """Out of the line (idempotent); the next in line may go once this task yields."""
        if self._left:
            return
        self._left = True
        lines = self._order.lines
        line = lines[self._key]
        was_first = line[0] is self
        line.remove(self)
        if not line:
            del lines[self._key]
        elif was_first:
            line[0].let_go()


class ArrivalOrder:
    """One line per key; a key's entry lives only while someone is in its line."""

    def __init__(self) -> None:
        self.lines: dict[str, deque[Ticket]] = {}

    def join(self, key: str) -> Ticket:
        """Take a place at the end of ``key``'s line (no await: call it on arrival)."""
        ticket = Ticket(self, key)
        line = self.lines.setdefault(key, deque())
        line.append(ticket)
        if len(line) == 1:
            ticket.let_go()
        return ticket

    def __len__(self) -> int:
        return len(self.lines)
