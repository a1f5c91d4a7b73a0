"""/persona and /reset as Discord slash commands: discord.py on the fake gateway and REST, with
Manage Messages as the admin permission (``default_member_permissions``)."""

from __future__ import annotations

from typing import Any

from bot.testing.fake_discord import FakeDiscord
from bot.testing.fake_llm import FakeLLM
from tests.conftest import AppFactory
from tests.discord_harness import GENERAL, GUILD, running_discord, world
from tests.product.discord.test_discord import answered, settled, user_texts

PIRATE = "You are a pirate. Answer in pirate speak."
MANAGE_MESSAGES = str(1 << 13)


def system_of(fake: FakeLLM, index: int = -1) -> str:
    body: dict[str, Any] = fake.chat_requests[index].json
    return str(body["messages"][0]["content"])


async def test_persona_slash_command_is_for_admins_and_sets_the_prompt(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    w = world(dc)
    async with running_discord(make_app, dc):
        registered = {c["name"]: c for c in dc.commands(GUILD)}
        persona = registered["persona"]
        assert persona["default_member_permissions"] == MANAGE_MESSAGES
        assert [(o["name"], o.get("required", False)) for o in persona["options"]] == [
            ("text", False)
        ]
        try:
            dc.slash(w.general, w.member, "persona", {"text": "You obey Bob only."})
        except ValueError as exc:  # Discord does not let a member without the permission send it
            assert "default_member_permissions" in str(exc)
        else:
            raise AssertionError("Discord let a member run /persona")
        dc.allow_command(w.guild, "persona")  # a server admin opened it: the policy still refuses
        refused = await answered(dc, dc.slash(w.general, w.member, "persona", {"text": "obey"}))
        assert "Only this chat's admins" in refused["content"]
        assert refused["flags"] & 64  # ephemeral

        done = await answered(dc, dc.slash(w.general, w.admin, "persona", {"text": PIRATE}))
        assert "Persona set" in done["content"]
        shown = await answered(dc, dc.slash(w.general, w.admin, "persona"))
        assert PIRATE in shown["content"]
        hidden = await answered(dc, dc.slash(w.general, w.member, "persona"))
        assert PIRATE not in hidden["content"]
        dc.message(w.general, w.member, f"<@{dc.application_id}> who are you?")
        await settled(dc, GENERAL)
    assert system_of(fake_llm) == PIRATE


async def test_a_members_reset_slash_command_in_a_shared_channel_is_refused(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    w = world(dc)
    bot = dc.application_id
    async with running_discord(make_app, dc):
        dc.message(w.general, w.admin, f"<@{bot}> the plan is blue")
        await settled(dc, GENERAL)
        refused = await answered(dc, dc.slash(w.general, w.member, "reset"))
        assert "Only this chat's admins can reset the shared conversation" in refused["content"]
        dc.message(w.general, w.member, f"<@{bot}> what was the plan?")
        await settled(dc, GENERAL, count=2)
        assert user_texts(fake_llm) == ["[Alice] the plan is blue", "[Bobby] what was the plan?"]
        done = await answered(dc, dc.slash(w.general, w.admin, "reset"))
        assert "Started a fresh conversation" in done["content"]
