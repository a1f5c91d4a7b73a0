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


async def test_a_follow_up_that_mentions_someone_else_is_theirs_not_the_bursts(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    """ "@bot what time is it", then "@Alice can you check the door": the second is for Alice
    (or another bot), so it is kept as context, never answered as part of the bot's turn;
    an unaddressed follow-up still joins."""
    dc = fake_discord
    w = world(dc)
    bot, alice = dc.application_id, w.admin["id"]
    async with running_discord(make_app, dc, chat={"burst_window": 0.8}, limits=NO_RATE):
        dc.message(w.general, w.member, f"<@{bot}> what time is it")
        await asyncio.sleep(0.2)
        dc.message(w.general, w.member, f"<@{alice}> can you check the door")
        await asyncio.sleep(0.2)
        dc.message(w.general, w.member, "in Berlin")
        [answer] = await settled(dc, GENERAL)
    [request] = fake_llm.chat_requests
    asked = user_texts(fake_llm)
    assert asked[-2:] == ["[Bobby] what time is it", "[Bobby] in Berlin"]
    assert not any("check the door" in text for text in asked)
    assert answer["content"] == "echo: [Bobby] in Berlin"
    assert request.json["messages"][-1]["content"] == "[Bobby] in Berlin"
