"""Telegram tells the chat directory what each chat is called: a group's title (a rename
follows), a private chat's person."""

from __future__ import annotations

import asyncio

from bot.app import App
from bot.storage.directory import ChatSummary
from bot.testing.fake_llm import FakeLLM
from bot.testing.fake_telegram import FakeTelegram
from tests.conftest import AppFactory
from tests.telegram_harness import running_bot


async def chats_once_stored(app: App, query: str, turns: int) -> list[ChatSummary]:
    """The chats matching ``query`` once ``turns`` turns are stored: a reply reaches Telegram
    before its turn is committed, so on a loaded machine the directory can lag the chat."""
    for _ in range(200):  # 10 s
        chats = await app.store.list_chats(query)
        if sum(c.turns for c in chats) >= turns:
            return chats
        await asyncio.sleep(0.05)
    return await app.store.list_chats(query)


async def test_groups_and_private_chats_are_listed_by_name(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    alice = tg.user(7, "Alice", last_name="Liddell")
    team = tg.group(-100, "Team", supergroup=True)
    async with running_bot(make_app, tg) as (app, _):
        tg.send(tg.private_chat(alice), alice, "hi")
        await tg.wait_until(lambda: len(tg.messages(7)) == 1, timeout=10)
        tg.send(team, alice, "@parlour_bot hello team")
        await tg.wait_until(lambda: len(tg.messages(-100)) == 1, timeout=10)
        chats = {c.chat_key: (c.title, c.chat_type) for c in await chats_once_stored(app, "", 2)}
        assert chats == {
            "telegram:7": ("Alice Liddell", "private"),
            "telegram:-100": ("Team", "group"),
        }
        renamed = tg.group(-100, "Team Rocket", supergroup=True)  # the group was renamed
        tg.send(renamed, alice, "@parlour_bot new name")
        await tg.wait_until(lambda: len(tg.messages(-100)) == 2, timeout=10)
        [found] = await chats_once_stored(app, "rocket", 2)
        assert found.chat_key == "telegram:-100" and found.turns == 2
