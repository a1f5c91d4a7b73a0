"""Arrival order per conversation while admission checks await (bot/conversation/arrivals.py):
whatever order the checks finish in, messages reach the conversation's lock in arrival order."""

from __future__ import annotations

import asyncio

import pytest

from bot.conversation.arrivals import ArrivalOrder
from bot.conversation.locks import KeyedLocks


async def test_messages_reach_the_lock_in_arrival_order_whatever_their_checks_cost() -> None:
    order, locks = ArrivalOrder(), KeyedLocks()
    served: list[str] = []
    checks = {"m1": asyncio.Event(), "m2": asyncio.Event(), "m3": asyncio.Event()}

    async def message(name: str, key: str = "chat", *, refused: bool = False) -> None:
        ticket = order.join(key)  # on arrival, before any await
        try:
            await checks[name].wait()  # a database round trip of its own length
            if refused:
                raise PermissionError(name)
            await ticket.turn()
        finally:
            ticket.leave()
        async with locks.hold(key):
            served.append(name)

    tasks = [
        asyncio.ensure_future(message("m1")),
        asyncio.ensure_future(message("m2", refused=True)),
        asyncio.ensure_future(message("m3")),
    ]
    await asyncio.sleep(0)
    for name in ("m3", "m2", "m1"):  # the checks come back last-first
        checks[name].set()
        await asyncio.sleep(0)
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert served == ["m1", "m3"]  # m3 waited for m1; refused m2 held nobody up
    assert isinstance(results[1], PermissionError)
    assert len(order) == 0  # nothing kept once the line is empty


async def test_other_conversations_and_cancelled_arrivals_hold_nobody_up() -> None:
    order = ArrivalOrder()
    first = order.join("a")
    other = order.join("b")
    await asyncio.wait_for(other.turn(), 1)  # another conversation's line
    other.leave()
    second = order.join("a")
    waiting = asyncio.ensure_future(second.turn())
    third = order.join("a")
    await asyncio.sleep(0)
    assert not waiting.done()
    waiting.cancel()  # the second arrival gives up (its request was cancelled)
    with pytest.raises(asyncio.CancelledError):
        await waiting
    second.leave()
    first.leave()
    await asyncio.wait_for(third.turn(), 1)  # next in line after the first
    third.leave()
    third.leave()  # idempotent
    assert len(order) == 0
