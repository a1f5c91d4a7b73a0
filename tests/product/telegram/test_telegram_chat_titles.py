"""Telegram tells the chat directory what each chat is called: a group's title (a rename
follows), a private chat's person. Updates are fed in-process (``fed_bot``): once one is
handled its turn is stored, so the directory is read at once."""

from __future__ import annotations

from bot.testing.fake_llm import FakeLLM
from bot.testing.fake_telegram import FakeTelegram
from tests.conftest import AppFactory
from tests.telegram_harness import fed_bot


async def test_groups_and_private_chats_are_listed_by_name(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    alice = tg.user(7, "Alice", last_name="Liddell")
    team = tg.group(-100, "Team", supergroup=True)
    async with fed_bot(make_app, tg) as fed:
        tg.send(tg.private_chat(alice), alice, "hi")
        [_] = await fed.replies(7)
        tg.send(team, alice, "@parlour_bot hello team")
        [_] = await fed.replies(-100)
        chats = {c.chat_key: (c.title, c.chat_type) for c in await fed.app.store.list_chats("")}
        assert chats == {
            "telegram:7": ("Alice Liddell", "private"),
            "telegram:-100": ("Team", "group"),
        }
        renamed = tg.group(-100, "Team Rocket", supergroup=True)  # the group was renamed
        tg.send(renamed, alice, "@parlour_bot new name")
        [_, _] = await fed.replies(-100)
        [found] = await fed.app.store.list_chats("rocket")
        assert found.chat_key == "telegram:-100" and found.turns == 2
