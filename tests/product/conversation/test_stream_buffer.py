"""``bot.conversation.stream_buffer``: a slow reader never holds the LLM slot; the cap hangs up."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator

import pytest

from bot.conversation.reply_cap import NOTE, REPLY_LIMIT, Cut
from bot.conversation.stream_buffer import buffered
from bot.llm.client import Completion, StreamItem, TextDelta


class Model:
    """A stream of ``deltas`` then a completion; records the slot and whether it was closed."""

    def __init__(self, deltas: list[str]) -> None:
        self.deltas = deltas
        self.slot_held = False
        self.closed = False
        self.sent = 0

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        self.slot_held = True
        try:
            yield
        finally:
            self.slot_held = False

    async def stream(self) -> AsyncGenerator[StreamItem, None]:
        assert self.slot_held, "the stream is opened inside the slot"
        try:
            for delta in self.deltas:
                self.sent += 1
                yield TextDelta(delta)
                await asyncio.sleep(0)
            yield Completion("".join(self.deltas))
        finally:
            self.closed = True

    def read(self, max_chars: int = 1000) -> AsyncGenerator[StreamItem | Cut, None]:
        return buffered(
            self.stream,
            slot=self.slot,
            max_chars=max_chars,
            paid=lambda completion: Completion(completion.text, model="paid"),
            hung_up=lambda done: Completion(done.text, finish_reason=REPLY_LIMIT),
        )


async def test_the_slot_is_given_back_before_a_slow_reader_is_done() -> None:
    model = Model(["a", "b", "c"])
    async with contextlib.aclosing(model.read()) as items:
        assert await anext(items) == TextDelta("a")
        for _ in range(10):  # the reader dawdles; the task reads on
            await asyncio.sleep(0)
        assert not model.slot_held and model.closed
        rest = [item async for item in items]
    assert rest == [TextDelta("b"), TextDelta("c"), Completion("abc", model="paid")]


async def test_the_cap_hangs_up_on_the_model() -> None:
    model = Model(["word " * 4] * 100)
    items = [item async for item in model.read(max_chars=50)]
    assert model.closed and model.sent < 100  # the rest is never read
    *deltas, done, final = items
    assert isinstance(done, Cut) and deltas[-1] == TextDelta(done.tail)
    assert NOTE in done.tail
    assert "".join(d.text for d in deltas if isinstance(d, TextDelta)) == done.text
    assert final == Completion(done.text, finish_reason=REPLY_LIMIT)


async def test_an_error_reaches_the_reader_and_closing_early_stops_the_task() -> None:
    async def failing() -> AsyncGenerator[StreamItem, None]:
        yield TextDelta("x")
        raise RuntimeError("model went away")

    model = Model([])
    items = buffered(
        failing, slot=model.slot, max_chars=10, paid=lambda c: c, hung_up=lambda d: Completion("")
    )
    with pytest.raises(RuntimeError, match="went away"):
        async for _ in items:
            pass
    endless = Model(["x"] * 10_000)
    async with contextlib.aclosing(endless.read(max_chars=10**6)) as stream:
        await anext(stream)
    assert endless.closed and not endless.slot_held
