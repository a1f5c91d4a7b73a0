"""Bursts on Discord, through the real discord.py client on the fake gateway: quick mentions
from one member answered as one turn; slash commands each get their own answer."""

from __future__ import annotations

import asyncio

from bot.testing.fake_discord import FakeDiscord
from bot.testing.fake_llm import FakeLLM
from tests.conftest import AppFactory
from tests.discord_harness import GENERAL, running_discord, world
from tests.product.discord.test_discord import answered, settled, user_texts

NO_RATE = {"messages_per_minute": None, "one_in_flight": True}


async def test_quick_mentions_from_one_member_are_answered_once(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    w = world(dc)
    bot = dc.application_id
    async with running_discord(make_app, dc, chat={"burst_window": 0.8}, limits=NO_RATE):
        for text in ("hey", "can you", "summarise this"):
            dc.message(w.general, w.member, f"<@{bot}> {text}")
            await asyncio.sleep(0.2)
        [answer] = await settled(dc, GENERAL)
    assert len(fake_llm.chat_requests) == 1
    assert user_texts(fake_llm)[-3:] == ["[Bobby] hey", "[Bobby] can you", "[Bobby] summarise this"]
    assert "summarise this" in answer["content"]


async def test_slash_commands_are_never_gathered(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    w = world(dc)
    async with running_discord(make_app, dc, chat={"burst_window": 0.8}, limits=NO_RATE):
        first = dc.slash(w.general, w.admin, "ask", {"prompt": "one?"})
        second = dc.slash(w.general, w.admin, "ask", {"prompt": "two?"})
        one, two = await answered(dc, first), await answered(dc, second)
    assert (one["content"], two["content"]) == ("echo: [Alice] one?", "echo: [Alice] two?")
    assert len(fake_llm.chat_requests) == 2
