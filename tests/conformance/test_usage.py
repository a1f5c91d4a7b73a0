"""The usage ledger (bot.storage.usage): booked by the turn writes, kept, moved."""

from __future__ import annotations

import asyncio

from bot.guardrails.budgets import utc_day
from bot.storage import Storage
from bot.values import BOT_USER, TurnStatus, Usage
from tests.conformance.conftest import Backend, answered, turn


async def test_a_completed_turn_is_booked_on_its_day(storage: Storage) -> None:
    today = utc_day()
    turn_id = await storage.begin_turn(turn("tg:-2", "e"))
    assert await storage.daily_usage(today) == []  # nothing until it completes
    await storage.complete_turn(turn_id, [{"role": "assistant", "content": "f"}], Usage(1, 2), "m")
    [row] = await storage.daily_usage(today)
    assert (row.day, row.chat_key, row.user_id, row.user_name, row.turns, row.usage) == (
        today,
        "tg:-2",
        "u1",
        "name-u1",
        1,
        Usage(1, 2),
    )


async def test_booking_by_chat_and_user(storage: Storage) -> None:
    today = utc_day()
    first = await storage.begin_turn(turn("tg:-1", "a", user="1"))
    await storage.complete_turn(first, [{"role": "assistant", "content": "b"}], Usage(10, 2), "m")
    second = await storage.begin_turn(turn("tg:-1:u:2", "c", chat="tg:-1", user="2"))
    await storage.complete_turn(second, [{"role": "assistant", "content": "d"}], Usage(5, 5), "m")
    third = await storage.begin_turn(turn("tg:-7", "e", user="1"))
    await storage.complete_turn(third, [{"role": "assistant", "content": "f"}], Usage(1, 1), "m")
    other = await storage.begin_turn(turn("dc:-7", "g", user="1"))
    await storage.complete_turn(other, [{"role": "assistant", "content": "h"}], Usage(100), "m")
    assert await storage.tokens_on(today) == 12 + 10 + 2 + 100
    assert await storage.tokens_on(today, "tg:-1") == 22
    assert await storage.tokens_on(today, "tg:-1", "2") == 10
    assert await storage.user_tokens_on(today, "tg", "1") == 14  # every tg chat, not dc
    assert await storage.tokens_on("1999-01-01") == 0
    assert await storage.budget_figures(today, "tg:-1", "tg", "1") == (124, 22, 14)
    assert await storage.budget_figures(today, "tg:-9", "dc", "2") == (124, 0, 0)
    assert await storage.budget_figures("1999-01-01", "tg:-1", "tg", "1") == (0, 0, 0)
    asked = [
        (today, "tg:-1", "tg", "1"),
        ("1999-01-01", "tg:-1", "tg", "1"),
        (today, "tg:-9", "dc", "2"),
        (today, "tg:-1", "tg", "2"),
        (today, "dc:-7", "dc", "1"),
    ] * 3
    figures = await asyncio.gather(*(storage.budget_figures(*a) for a in asked))  # at once
    assert figures == [(124, 22, 14), (0, 0, 0), (124, 0, 0), (124, 22, 10), (124, 100, 100)] * 3
    rows = await storage.daily_usage(today)
    assert [(r.chat_key, r.user_id, r.turns) for r in rows] == [
        ("dc:-7", "1", 1),
        ("tg:-1", "1", 1),
        ("tg:-1", "2", 1),
        ("tg:-7", "1", 1),
    ]
    assert [r.chat_key for r in await storage.daily_usage(today, "tg:-7")] == ["tg:-7"]
    assert await storage.daily_usage("9999-01-01") == []


async def test_failed_turns_book_tokens_not_turns(storage: Storage) -> None:
    today = utc_day()
    failed = await storage.begin_turn(turn("tg:1", "a"))
    await storage.fail_turn(failed, "LLMError", Usage(7, 0))
    free = await storage.begin_turn(turn("tg:1", "b"))
    await storage.fail_turn(free, "LLMError")
    [row] = await storage.daily_usage(today)
    assert (row.turns, row.usage) == (0, Usage(7, 0))


async def test_an_answer_after_the_turn_was_closed_is_booked(backend: Backend) -> None:
    async with backend.open() as dying:
        turn_id = await dying.begin_turn(turn("tg:1", "a"))
    async with backend.open() as store:  # the owner is gone: closed as interrupted at open
        [closed] = await store.load_window("tg:1", 5)
        assert closed.status is TurnStatus.UNANSWERED
        answer = [{"role": "assistant", "content": "late"}]
        await store.complete_turn(turn_id, answer, Usage(2, 2), "m")
        [row] = await store.daily_usage(utc_day())
        assert (row.turns, row.usage) == (1, Usage(2, 2))


async def test_undelivered_leaves_the_answered_count(storage: Storage) -> None:
    turn_id = await answered(storage, "tg:1", "a", "b", usage=Usage(3, 3))
    await storage.mark_undelivered(turn_id, "refused")
    [row] = await storage.daily_usage(utc_day())
    assert (row.turns, row.usage) == (0, Usage(3, 3))


async def test_clear_and_retention_keep_the_ledger(storage: Storage) -> None:
    await answered(storage, "tg:1", "a", "b", usage=Usage(3, 3))
    await storage.clear_chat("tg:1", "a", "A")
    await answered(storage, "tg:2", "a", "b", usage=Usage(1, 1))
    await storage.delete_older_than(-1)
    assert await storage.tokens_on(utc_day()) == 8


async def test_migration_moves_the_ledger(storage: Storage) -> None:
    today = utc_day()
    await answered(storage, "tg:-1", "a", "b", usage=Usage(3, 3))
    await answered(storage, "tg:-100", "c", "d", usage=Usage(1, 1))
    await storage.migrate_chat("tg:-1", "tg:-100")
    assert await storage.tokens_on(today, "tg:-1") == 0
    [row] = await storage.daily_usage(today)
    assert (row.chat_key, row.turns, row.usage) == ("tg:-100", 2, Usage(4, 4))


async def test_usage_outside_a_turn(storage: Storage) -> None:
    today = utc_day()
    await storage.book_usage("tg:1", BOT_USER, "(summaries)", Usage(40, 2))
    await storage.book_usage("tg:1", BOT_USER, "(summaries)", Usage(1, 1))
    [row] = await storage.daily_usage(today)
    assert (row.user_id, row.user_name, row.turns, row.usage) == (
        BOT_USER,
        "(summaries)",
        0,
        Usage(41, 3),
    )
    assert await storage.tokens_on(today, "tg:1", BOT_USER) == 44


async def test_cached_input_is_booked_with_its_turn(storage: Storage) -> None:
    today = utc_day()
    first = await storage.begin_turn(turn("tg:-1", "a", user="1"))
    await storage.complete_turn(
        first, [{"role": "assistant", "content": "b"}], Usage(2000, 5, 1536), "m"
    )
    second = await storage.begin_turn(turn("tg:-1", "c", user="1"))
    await storage.complete_turn(
        second, [{"role": "assistant", "content": "d"}], Usage(2100, 5, 1920), "m"
    )
    failed = await storage.begin_turn(turn("tg:-1", "e", user="1"))
    await storage.fail_turn(failed, "LLMError", Usage(2200, 0, 2048))  # its rounds were billed
    elsewhere = await storage.begin_turn(turn("tg:-9", "f", user="1"))
    await storage.complete_turn(
        elsewhere, [{"role": "assistant", "content": "g"}], Usage(10, 1), "m"
    )
    other_platform = await storage.begin_turn(turn("dc:-1", "h", user="1"))
    await storage.complete_turn(
        other_platform, [{"role": "assistant", "content": "i"}], Usage(3000, 1, 2944), "m"
    )
    rows = {row.chat_key: row for row in await storage.daily_usage(today)}
    assert rows["tg:-1"].usage == Usage(6300, 10, 1536 + 1920 + 2048)
    assert rows["tg:-1"].turns == 2
    assert rows["tg:-9"].usage.cached_tokens == 0
    # cached input is part of the prompt, not extra spending
    assert await storage.tokens_on(today, "tg:-1") == 6310
    assert await storage.user_usage_on(today, "tg", "1") == Usage(6310, 11, 5504)
    assert await storage.user_usage_on(today, "tg", "2") == Usage()
    assert await storage.user_usage_on("1999-01-01", "dc", "1") == Usage()


async def test_cached_input_outside_a_turn_and_through_a_migration(storage: Storage) -> None:
    today = utc_day()
    await storage.book_usage("tg:-1", BOT_USER, "(summaries)", Usage(1500, 20, 1280))
    await storage.book_usage("tg:-1", BOT_USER, "(summaries)", Usage(1600, 20, 1408))
    await answered(storage, "tg:-1", "a", "b", usage=Usage(1200, 3, 1024))
    await answered(storage, "tg:-100", "c", "d", usage=Usage(1300, 3, 1152))
    await storage.migrate_chat("tg:-1", "tg:-100")
    rows = await storage.daily_usage(today)
    assert [(r.chat_key, r.user_id, r.usage) for r in rows] == [
        ("tg:-100", BOT_USER, Usage(3100, 40, 2688)),
        ("tg:-100", "u1", Usage(2500, 6, 2176)),
    ]
