"""Messages of one channel reach the core in the order they arrived, downloads or not.

The core keeps a conversation's messages in arrival order as long as each reaches it without
an await first: its place in line is taken in the same step as the event (see ``adapter.py``).
A message with an image or a voice message must first download it; the messages after it in
that channel wait until it has taken its place, so a quick "what is in it?" sent right after a
picture is not answered before the picture. A channel with nothing downloading costs nothing:
:meth:`Place.wait` does not suspend then.
"""

from __future__ import annotations

import asyncio

__all__ = ["ChannelOrder", "Place"]


class Place:
    """One message's place in its channel: wait for the one before, then hand over."""

    def __init__(
        self, order: ChannelOrder, channel_id: int, before: asyncio.Future[None] | None
    ) -> None:
        self._order = order
        self._channel_id = channel_id
        self._before = before
        self.handed_over: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def wait(self) -> None:
        """Until the message before this one in the channel reached the core (or gave up)."""
        if self._before is not None and not self._before.done():
            await asyncio.shield(self._before)  # our cancellation must not end theirs

    def hand_over(self) -> None:
        """Call right before the core is called, with no await in between: the next message
        wakes only after this task's next suspension, by when the core has taken its place.
        Idempotent; call it in a ``finally`` too, so a failure never blocks the channel."""
        if not self.handed_over.done():
            self.handed_over.set_result(None)
        self._order._left(self._channel_id, self.handed_over)


class ChannelOrder:
    """The newest place per channel, kept only while it has not handed over."""

    def __init__(self) -> None:
        self._last: dict[int, asyncio.Future[None]] = {}

    def arrive(self, channel_id: int) -> Place:
        """Take the place after the channel's newest (no await: call it on arrival)."""
        place = Place(self, channel_id, self._last.get(channel_id))
        self._last[channel_id] = place.handed_over
        return place

    def _left(self, channel_id: int, handed_over: asyncio.Future[None]) -> None:
        if self._last.get(channel_id) is handed_over:
            del self._last[channel_id]

    def __len__(self) -> int:
        return len(self._last)
