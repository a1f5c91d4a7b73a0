"""``/schedule`` as a Discord slash command: discord.py on the fake gateway and REST, Manage
Messages as the admin permission; the post reaches the channel with the model's answer."""

from __future__ import annotations

from bot.testing.fake_discord import FakeDiscord
from bot.testing.fake_llm import FakeLLM, reply
from tests.conftest import AppFactory
from tests.discord_harness import GENERAL, GUILD, running_discord, world
from tests.product.discord.test_discord import answered
from tests.product.discord.test_discord_persona import MANAGE_MESSAGES
from tests.product.schedules.test_schedule_command_telegram import soon


async def test_an_admin_schedules_a_post_that_reaches_the_channel(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    w = world(dc)
    async with running_discord(make_app, dc) as (app, _):
        registered = {c["name"]: c for c in dc.commands(GUILD)}
        assert registered["schedule"]["default_member_permissions"] == MANAGE_MESSAGES
        dc.allow_command(w.guild, "schedule")  # opened to members: the policy still refuses
        refused = await answered(
            dc, dc.slash(w.general, w.member, "schedule", {"text": "daily 09:00 | hi"})
        )
        assert refused["content"] == "Only this chat's admins can use /schedule."

        fake_llm.script(reply("Weekly recap: the plan is blue."))
        text = f"{soon(3)} | recap the week"
        done = await answered(dc, dc.slash(w.general, w.admin, "schedule", {"text": text}))
        assert done["content"].startswith("Scheduled post #1: every ")
        await dc.wait_until(
            lambda: any(
                m["content"] == "Weekly recap: the plan is blue." for m in dc.messages(GENERAL)
            ),
            timeout=15,
        )
        listed = await answered(dc, dc.slash(w.general, w.admin, "schedule", {"text": "list"}))
        assert listed["content"].startswith("Scheduled posts here (1):\n#1 every ")
        assert app.schedules is not None and [p.id for p in app.schedules.listed()] == [1]
