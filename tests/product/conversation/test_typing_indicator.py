"""The typing indicator's loop (``bot.conversation.preview.Repeating``): it runs until stopped,
and a start that comes after the stop (the service starts it one loop step after admission, and
a turn may end before that step) starts nothing."""

from __future__ import annotations

import asyncio

from bot.conversation.preview import Repeating


async def test_it_repeats_until_stopped() -> None:
    calls: list[float] = []
    thrice = asyncio.Event()

    async def action() -> None:
        calls.append(asyncio.get_running_loop().time())
        if len(calls) == 3:
            thrice.set()

    typing = Repeating(action, 0.01, "typing")
    typing.start()
    typing.start()  # once only
    await asyncio.wait_for(thrice.wait(), 10)
    await typing.stop()
    seen = len(calls)
    await asyncio.sleep(0.05)
    assert len(calls) == seen


async def test_a_start_after_the_stop_starts_nothing() -> None:
    calls: list[int] = []

    async def action() -> None:
        calls.append(1)

    typing = Repeating(action, 0.01, "typing")
    await typing.stop()  # the turn ended first
    asyncio.get_running_loop().call_soon(typing.start)  # ... and then the late start came
    await asyncio.sleep(0.05)
    assert calls == []
