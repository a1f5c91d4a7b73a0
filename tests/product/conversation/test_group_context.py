"""Group chatter kept as context, and chats that change their id (group -> supergroup)."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

from bot.context import Scope
from bot.storage.sqlite import SQLiteStore
from bot.storage.sqlite.migrations import MIGRATIONS
from bot.testing.fake_llm import FakeLLM
from bot.values import TurnStatus
from tests.conftest import AppFactory, group, private
from tests.product.storage.test_sqlite_backend import turn


def sent_contents(fake: FakeLLM, index: int = -1) -> list[str]:
    body: dict[str, Any] = fake.chat_requests[index].json
    return [str(m["content"]) for m in body["messages"] if m["role"] == "user"]


async def test_overheard_chatter_reaches_the_prompt_once(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with make_app() as app:
        svc = app.service
        assert await svc.overhear(group("2", "Bob"), "Rome or Paris this summer?")
        assert await svc.overhear(group("3", "Carol"), "Paris, obviously")
        await svc.chat(group("1", "Alice"), "what do you think?")
        assert sent_contents(fake_llm) == [
            "[Bob] Rome or Paris this summer?",
            "[Carol] Paris, obviously",
            "[Alice] what do you think?",
        ]
        # Now part of the history, in order, and no longer waiting as overheard.
        await svc.chat(group("1", "Alice"), "and you?")
        assert sent_contents(fake_llm)[:3] == sent_contents(fake_llm, 0)
        assert len(sent_contents(fake_llm)) == 4
        window = await app.store.load_window("telegram:-100", 10)
        assert [t.status for t in window][:2] == [TurnStatus.CONTEXT, TurnStatus.CONTEXT]
        stats = await app.store.stats("telegram:-100")
        assert stats.turns_stored == 2  # context rows are not turns the bot answered


async def test_overheard_is_bounded_by_count_and_age(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with make_app(history={"context_messages": 3, "context_max_age": 0.3}) as app:
        for n in range(6):
            await app.service.overhear(group("2", "Bob"), f"old {n}")
        await asyncio.sleep(0.4)
        for n in range(5):
            await app.service.overhear(group("2", "Bob"), f"new {n}")
        await app.service.chat(group(), "summary please")
    assert sent_contents(fake_llm) == [
        "[Bob] new 2",
        "[Bob] new 3",
        "[Bob] new 4",
        "[Alice] summary please",
    ]


async def test_overheard_is_off_in_private_chats_and_when_disabled(make_app: AppFactory) -> None:
    async with make_app(history={"context_messages": 0}) as app:
        assert not await app.service.overhear(group(), "chatter")
    async with make_app() as app:
        assert not await app.service.overhear(private(), "hello")
        assert not await app.service.overhear(group(), "   ")


async def test_clear_drops_overheard_too(make_app: AppFactory, fake_llm: FakeLLM) -> None:
    async with make_app() as app:
        await app.service.overhear(group("2", "Bob"), "secret plans")
        await app.service.clear(group(is_admin=True))
        await app.service.chat(group(), "hi")
    assert sent_contents(fake_llm) == ["[Alice] hi"]


async def test_migrated_chat_keeps_history_and_settings(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with make_app() as app:
        old = group(chat="-5")
        await app.service.set_scope(old, Scope.USER)
        await app.service.chat(old, "remember the blue door")
        await app.service.overhear(group("2", "Bob", chat="-5"), "the red one")
        moved = await app.service.migrate_chat("telegram:-5", "telegram:-1005")
        assert moved == 1
        new = group(chat="-1005")
        assert app.service.scope_for(new) is Scope.USER
        await app.service.chat(new, "which door?")
        assert sent_contents(fake_llm) == ["remember the blue door", "which door?"]
        assert await app.store.load_window("telegram:-5:u:1", 10) == []
    async with make_app() as app:  # and after a restart
        assert app.service.scope_for(group(chat="-1005")) is Scope.USER
        stats = await app.store.stats("telegram:-1005:u:1")
        assert stats.turns_stored == 2


async def test_schema_v1_database_upgrades_in_place(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as raw:
        raw.executescript(MIGRATIONS[0])
        raw.execute("PRAGMA user_version = 1")
        for n in (1, 2, 3):
            raw.execute(
                "INSERT INTO turns (conv_key, chat_key, user_id, user_text, status, created_at)"
                " VALUES ('tg:1', 'tg:1', 'u', ?, 'unanswered', 0)",
                (f"m{n}",),
            )
        raw.execute("DELETE FROM turns WHERE id = 3")  # ids never go back, even after deletes
    async with SQLiteStore(path) as store:
        window = await store.load_window("tg:1", 10)
        assert [t.messages[0]["content"] for t in window] == ["m1", "m2"]
        assert await store.begin_turn(turn("tg:1")) == 4


async def test_reset_forgets_overheard_chatter(make_app: AppFactory, fake_llm: FakeLLM) -> None:
    async with make_app() as app:
        await app.service.overhear(group("2", "Bob"), "my password is hunter2")
        await app.service.reset(group())
        await app.service.chat(group(), "hi")
    assert sent_contents(fake_llm) == ["[Alice] hi"]


async def test_chatter_does_not_push_real_turns_out_of_the_window(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with make_app(history={"max_turns": 2}) as app:
        for n in range(3):
            for m in range(3):
                await app.service.overhear(group("2", "Bob"), f"chatter {n}.{m}")
            await app.service.chat(group(), f"question {n}")
        cached = await app.store.load_window("telegram:-100", 2)
    async with make_app(history={"max_turns": 2}) as app:
        stored = await app.store.load_window("telegram:-100", 2)
    for window in (cached, stored):
        assert [t.messages[0]["content"] for t in window] == [
            "question 1",
            "chatter 2.0",
            "chatter 2.1",
            "chatter 2.2",
            "question 2",
        ]
