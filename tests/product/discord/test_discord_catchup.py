"""``/catchup`` on Discord, end to end (discord.py on the fake gateway and REST): a public digest
of the channel's conversation that pings its asker and nobody else; refusals only the asker
sees."""

from __future__ import annotations

import asyncio
import json

from bot.app import App
from bot.testing.fake_discord import FakeDiscord
from bot.testing.fake_llm import FakeLLM, reply
from tests.conftest import AppFactory
from tests.discord_harness import GENERAL, GUILD, running_discord, world
from tests.product.discord.test_discord import answered

EPHEMERAL = 1 << 6


async def stored(app: App, conversation: str, count: int) -> None:
    """Until the conversation's transcript holds ``count`` messages (chatter is kept in the
    event's own task)."""
    async with asyncio.timeout(10):
        # a store has no change event to wait on
        while len(await app.store.said(conversation, 0, 100)) < count:  # noqa: ASYNC110
            await asyncio.sleep(0.02)


async def test_slash_catchup_is_public_and_pings_only_its_asker(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    w = world(dc)
    async with running_discord(make_app, dc) as (app, _):
        dc.message(w.general, w.member, "lunch at noon?")
        dc.message(w.general, w.member, "@everyone party at 5, ask <@7>")
        dc.message(w.random, w.member, "the random channel's secret")
        await stored(app, f"discord:{GENERAL}", 2)
        fake_llm.script(reply("- Bobby asked about lunch and invited @everyone to a party."))
        interaction = dc.slash(w.general, w.admin, "catchup")
        digest = await answered(dc, interaction)
    request = fake_llm.chat_requests[-1].json
    lines = [json.loads(x) for x in request["messages"][-1]["content"].splitlines() if x[:1] == "["]
    assert [(who, words) for _, who, words in lines] == [
        ("Bobby", "lunch at noon?"),
        ("Bobby", "@everyone party at 5, ask @Alice"),
    ]
    assert "random channel" not in json.dumps(request)
    assert digest["content"].startswith(
        f"<@{w.admin['id']}> Catch-up of the latest 2 messages from Bobby"
    )
    assert "@\u2060everyone" in digest["content"] and "@everyone" not in digest["content"]
    assert not int(digest["flags"]) & EPHEMERAL  # the channel sees it
    mentions = digest["allowed_mentions"]
    assert [int(user) for user in mentions["users"]] == [int(w.admin["id"])]
    assert mentions.get("parse") == [] and not mentions.get("roles")
    assert not mentions.get("replied_user")
    [declared] = [c for c in dc.commands(GUILD) if c["name"] == "catchup"]
    [option] = declared["options"]
    assert (option["name"], option.get("required", False)) == ("text", False)
    assert "since your last message" in option["description"]


async def test_a_refusal_is_the_askers_alone(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    w = world(dc)
    everywhere = {"guild_ids": []}  # commands synced globally: DMs have them too
    async with running_discord(make_app, dc, discord=everywhere, synced=False):
        await dc.wait_until(lambda: bool(dc.commands(None)))
        bad = dc.slash(w.general, w.member, "catchup", {"text": "since tuesday"})
        await dc.wait_until(lambda: bool(dc.followups(int(bad["id"]))))
        private = dc.slash(dc.dm(w.member), w.member, "catchup")
        await dc.wait_until(lambda: bool(dc.followups(int(private["id"]))))
        quiet = dc.slash(w.random, w.member, "catchup", {"text": "3h"})
        await dc.wait_until(lambda: bool(dc.followups(int(quiet["id"]))))
    [told] = dc.followups(int(bad["id"]))
    assert told["content"].startswith("That is not a span I know. Usage: /catchup")
    assert int(told["flags"]) & EPHEMERAL
    assert dc.original(int(bad["id"])) is None  # the public "thinking…" placeholder is gone
    [in_private] = dc.followups(int(private["id"]))
    assert "only you and me" in in_private["content"]
    [nothing] = dc.followups(int(quiet["id"]))
    assert nothing["content"] == "Nothing was said here in the last 3 hours that I can see."
    assert int(nothing["flags"]) & EPHEMERAL
    assert not fake_llm.chat_requests
