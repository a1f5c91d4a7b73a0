"""Conversation keys and per-conversation locks."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from bot.context import ChatContext, ChatType, Scope
from bot.conversation.locks import KeyedLocks


@pytest.mark.parametrize(
    ("chat_type", "thread", "scope", "key"),
    [
        (ChatType.GROUP, None, Scope.CHAT, "tg:-1"),
        (ChatType.GROUP, "7", Scope.CHAT, "tg:-1"),
        (ChatType.GROUP, None, Scope.USER, "tg:-1:u:42"),
        (ChatType.GROUP, "7", Scope.THREAD, "tg:-1:t:7"),
        (ChatType.GROUP, None, Scope.THREAD, "tg:-1"),
        (ChatType.PRIVATE, None, Scope.CHAT, "tg:-1:u:42"),
        (ChatType.PRIVATE, "7", Scope.THREAD, "tg:-1:u:42"),
        (ChatType.CHANNEL, None, Scope.CHAT, "tg:-1"),
    ],
)
def test_conversation_keys(chat_type: ChatType, thread: str | None, scope: Scope, key: str) -> None:
    ctx = ChatContext("tg", "-1", chat_type, "42", "Alice", thread_id=thread)
    assert ctx.conversation_key(scope) == key


def test_context_is_frozen_and_validated() -> None:
    ctx = ChatContext("tg", "-1", ChatType.GROUP, "42")
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.user_id = "43"  # type: ignore[misc]
    with pytest.raises(ValueError, match="platform"):
        ChatContext("a:b", "-1", ChatType.GROUP, "42")
    with pytest.raises(ValueError, match="chat_id"):
        ChatContext("tg", "", ChatType.GROUP, "42")


async def test_locks_keep_arrival_order_and_do_not_pile_up() -> None:
    locks = KeyedLocks()
    order: list[int] = []

    async def work(i: int) -> None:
        async with locks.hold(f"k{i % 3}"):
            await asyncio.sleep(0.001 * (5 - i % 5))
            order.append(i)

    await asyncio.gather(*(work(i) for i in range(30)))
    for k in range(3):
        mine = [i for i in order if i % 3 == k]
        assert mine == sorted(mine)
    assert len(locks) == 0


async def test_lock_released_on_error() -> None:
    locks = KeyedLocks()
    with pytest.raises(RuntimeError):
        async with locks.hold("k"):
            raise RuntimeError("boom")
    assert len(locks) == 0
    async with locks.hold("k"):
        pass
