"""The model's stream, read by a task of its own into a buffer.

A slow reader (an adapter waiting out a platform's flood control) never holds an LLM slot or the
provider's connection: the task takes the slot, reads the stream to its end into an unbounded
queue and gives both back as soon as the model is done, whatever the reader is doing.

Past ``limits.max_reply_chars`` the task hangs up on the model (its rest would be paid for and
thrown away) and ends the round itself: the text up to the cut, the note, the :class:`Cut`, then
the completion ``hung_up`` makes for it (billed by our own count).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import AsyncGenerator, Callable
from contextlib import AbstractAsyncContextManager

from bot.conversation.reply_cap import Cut, StreamCap
from bot.llm.client import Completion, StreamItem, TextDelta

log = logging.getLogger(__name__)

_Item = StreamItem | Cut | Exception | None


class _Buffer:
    """An unbounded queue with one reader. (``asyncio.Queue``'s bookkeeping, for bounds, many
    getters and putters and ``join``, cost more per streamed chunk than the rest of its way.)"""

    __slots__ = ("_items", "_waiter")

    def __init__(self) -> None:
        self._items: deque[_Item] = deque()
        self._waiter: asyncio.Future[None] | None = None

    def put_nowait(self, item: _Item) -> None:
        self._items.append(item)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def get(self) -> _Item:
        while not self._items:
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._items.popleft()


async def buffered(
    open_stream: Callable[[], AsyncGenerator[StreamItem, None]],
    *,
    slot: Callable[[], AbstractAsyncContextManager[None]],
    max_chars: int,
    paid: Callable[[Completion], Completion],
    hung_up: Callable[[Cut], Completion],
) -> AsyncGenerator[StreamItem | Cut, None]:
    """The items of ``open_stream()`` (opened inside ``slot()``), read ahead by a task.

    Each completion passes through ``paid`` as soon as it arrives. An error of the stream is
    raised here, to the reader; closing this generator early cancels the task."""
    buffer = _Buffer()

    async def read() -> None:
        cap = StreamCap(max_chars)
        try:
            async with slot(), contextlib.aclosing(open_stream()) as items:
                async for item in items:
                    if isinstance(item, Completion):
                        item = paid(item)
                    else:
                        shown, done = cap.feed(item.text)
                        if done is not None:  # leaving closes the model's stream
                            _hang_up(buffer, shown, done, hung_up, max_chars)
                            return
                    buffer.put_nowait(item)
        except Exception as exc:  # handed to the reader, raised there
            buffer.put_nowait(exc)
        finally:
            buffer.put_nowait(None)  # the end, however the task ends

    reader = asyncio.ensure_future(read())
    try:
        while (item := await buffer.get()) is not None:
            if isinstance(item, Exception):
                raise item
            yield item
    finally:
        if not reader.done():
            reader.cancel()
            await asyncio.wait({reader})  # never swallows our own cancellation


def _hang_up(
    buffer: _Buffer, shown: str, done: Cut, hung_up: Callable[[Cut], Completion], max_chars: int
) -> None:
    """End a streamed round at the reply cap: what may still be shown, the note, the cut, and
    the completion (the provider's never arrives)."""
    log.warning("answer passed limits.max_reply_chars=%d; hung up", max_chars)
    if shown:
        buffer.put_nowait(TextDelta(shown))
    buffer.put_nowait(TextDelta(done.tail))
    buffer.put_nowait(done)
    buffer.put_nowait(hung_up(done))
