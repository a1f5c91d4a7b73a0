"""Ambient mode on Discord: discord.py on the fake gateway and REST. A server channel's message
that says the bot's name (or asks into its exchange) without a mention is answered as if it
mentioned it; chatter is still only overheard; the switch is a slash command for admins."""

from __future__ import annotations

from bot.testing.fake_discord import FakeDiscord
from bot.testing.fake_llm import FakeLLM, reply
from tests.conftest import AppFactory
from tests.discord_harness import GENERAL, GUILD, running_discord, world
from tests.product.discord.test_discord import settled, silence, user_texts


async def test_a_channel_message_naming_the_bot_is_answered_without_a_mention(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    w = world(dc)
    chats = [{"match": f"discord:guild:{GUILD}", "ambient": True}]
    fake_llm.script(reply("It is noon."), reply("Quite sure."))
    async with running_discord(make_app, dc, chats=chats) as (app, _):
        dc.message(w.general, w.member, "lunch at noon?")
        await silence(dc, GENERAL)
        asked = dc.message(w.general, w.admin, "Parlour, what time is it?")
        [answer] = await settled(dc, GENERAL)
        assert answer["content"] == "It is noon."
        assert answer["message_reference"]["message_id"] == asked["id"]
        quoting = dc.message(w.general, w.admin, "hm", reply_to=answer)  # a reply to the bot
        await settled(dc, GENERAL, count=2)
        dc.message(w.general, w.member, "are you sure?", reply_to=quoting)  # into its exchange
        await settled(dc, GENERAL, count=3)
        dc.message(w.general, w.member, "ok then")
        await silence(dc, GENERAL)
        assert user_texts(fake_llm, 0) == [
            "[Bobby] lunch at noon?",
            "[Alice] Parlour, what time is it?",
        ]
        assert user_texts(fake_llm)[-1].endswith("[Bobby] are you sure?")
    assert len(fake_llm.chat_requests) == 3
    assert app.service.ambient_mode.limits.status(f"discord:{GENERAL}").answers_this_hour == 2


async def test_off_by_default_and_the_switch_is_an_admin_slash_command(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    w = world(dc)
    async with running_discord(make_app, dc):
        dc.message(w.general, w.member, "Parlour, what time is it?")
        await silence(dc, GENERAL)
        [command] = [c for c in dc.commands(GUILD) if c["name"] == "ambient"]
    assert command["default_member_permissions"] == str(1 << 13)  # Manage Messages: admins
    assert fake_llm.chat_requests == []
