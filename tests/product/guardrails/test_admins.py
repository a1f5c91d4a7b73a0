"""Who is an admin (``bot.guardrails.admins``): one policy, and every platform's admins get what it
grants.

The Telegram tests drive the real aiogram client against the fake Bot API, where a group's
creator and administrators are known only through ``getChatMember``.
"""

from __future__ import annotations

import re

from bot.testing.fake_discord import FakeDiscord
from bot.testing.fake_llm import FakeLLM, reply, tool_calls
from bot.testing.fake_telegram import FakeTelegram
from tests.conftest import AppFactory, group, private
from tests.discord_harness import running_discord, world
from tests.product.discord.test_discord import answered
from tests.telegram_harness import FedBot, fed_bot

MEMORY = ["plugins.memory"]


async def _said(fed: FedBot, chat: dict[str, object], user: dict[str, object], text: str) -> str:
    """Send ``text`` and return the bot's next message in the chat."""
    chat_id = int(str(chat["id"]))
    count = len(fed.tg.messages(chat_id)) + 1
    fed.tg.send(chat, user, text)
    return str((await fed.replies(chat_id, count=count))[count - 1]["text"])


async def test_telegram_group_creator_manages_memories_and_sees_chat_usage(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    alice, bob, carol = tg.user(7, "Alice"), tg.user(8, "Bob"), tg.user(9, "Carol")
    team = tg.group(-100, "Team", supergroup=True)
    tg.set_member(team["id"], alice["id"], "creator")
    tg.set_member(team["id"], bob["id"], "member")
    tg.set_member(team["id"], carol["id"], "member")
    fake_llm.script(
        tool_calls(("remember", {"fact": "Bob plays the cello"})),
        reply("Noted.", usage={"prompt_tokens": 40, "completion_tokens": 2, "total_tokens": 42}),
    )
    async with fed_bot(make_app, tg, plugins=MEMORY) as fed:
        await _said(fed, team, bob, "@parlour_bot remember that I play the cello")
        own = await _said(fed, team, bob, "/memory")
        found = re.search(r"#(\d+) \"Bob plays the cello\"", own)
        assert found, own
        number = found.group(1)

        # A member sees only their own memories and cannot delete another's...
        assert "no memories here" in await _said(fed, team, carol, "/memory")
        refused = await _said(fed, team, carol, f"/memory delete {number}")
        assert f"No memory #{number} you may delete here" in refused
        # ...nor the chat's usage.
        assert "This chat used" not in await _said(fed, team, carol, "/usage")

        # The group's creator (getChatMember: creator) sees the chat's and may delete.
        listed = await _said(fed, team, alice, "/memory")
        assert "this chat's memories" in listed and "Bob plays the cello" in listed
        usage = await _said(fed, team, alice, "/usage")
        assert "This chat used" in usage, usage
        assert "The whole bot used" not in usage  # a chat admin, not a bot admin
        assert f"Forgot memory #{number}" in await _said(
            fed, team, alice, f"/memory delete {number}"
        )
        assert "no memories here" in await _said(fed, team, bob, "/memory")

    lookups = [c for c in tg.calls if c.method == "getChatMember"]
    assert {int(c.params["user_id"]) for c in lookups} == {7, 8, 9}
    assert len(lookups) == 3  # cached: one per user however many commands they ran


async def test_telegram_administrator_counts_and_a_demoted_one_stops_counting(
    make_app: AppFactory, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    dana = tg.user(10, "Dana")
    team = tg.group(-100, "Team", supergroup=True)
    tg.set_member(team["id"], dana["id"], "administrator")
    async with fed_bot(make_app, tg, telegram={"admin_cache_seconds": 0}) as fed:
        assert "This chat used" in await _said(fed, team, dana, "/usage")
        tg.set_member(team["id"], dana["id"], "member")
        assert "This chat used" not in await _said(fed, team, dana, "/usage")


async def test_one_policy_for_commands_tools_and_exemptions(make_app: AppFactory) -> None:
    async with make_app(admins=["telegram:42"], plugins=MEMORY) as app:
        member, chat_admin, bot_admin = group("1"), group("2", is_admin=True), group("42")
        assert [app.admins.is_admin(c) for c in (member, chat_admin, bot_admin)] == [
            False,
            True,
            True,
        ]
        assert [app.admins.is_bot_admin(c) for c in (member, chat_admin, bot_admin)] == [
            False,
            False,
            True,
        ]
        for ctx in (member, chat_admin, bot_admin):  # every caller asks the same policy
            assert app.commands.is_admin(ctx) is app.admins.is_admin(ctx)
            assert app.tools.is_admin(ctx) is app.admins.is_admin(ctx)
            assert app.service.access.exempt(ctx) is app.admins.is_bot_admin(ctx)
        assert "The whole bot used" in (await app.commands.handle(bot_admin, "usage")).text
        assert "This chat used" in (await app.commands.handle(chat_admin, "usage")).text
        assert "This chat used" not in (await app.commands.handle(private("2"), "usage")).text
        needs = {i.name for i in app.commands.infos if app.commands.needs_admin_status(i.name)}
        assert needs == {
            "help", "reset", "clear", "scope", "persona", "usage", "memory", "tools", "ambient",
            "schedule",
        }  # fmt: skip


async def test_discord_moderators_get_the_same(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    """Parity: Manage Messages in the channel is Discord's chat admin, for the same commands."""
    dc = fake_discord
    w = world(dc)
    fake_llm.script(tool_calls(("remember", {"fact": "Bob plays the cello"})), reply("Noted."))
    async with running_discord(make_app, dc, plugins=MEMORY):
        await answered(dc, dc.slash(w.general, w.member, "ask", {"prompt": "I play the cello"}))
        member_usage = await answered(dc, dc.slash(w.general, w.member, "usage"))
        assert "This chat used" not in member_usage["content"]
        listed = await answered(dc, dc.slash(w.general, w.admin, "memory"))
        assert "Bob plays the cello" in listed["content"]
        number = re.search(r"#(\d+) \"Bob plays", listed["content"])
        assert number, listed["content"]
        admin_usage = await answered(dc, dc.slash(w.general, w.admin, "usage"))
        assert "This chat used" in admin_usage["content"]
        deleted = dc.slash(w.general, w.admin, "memory", {"text": f"delete {number.group(1)}"})
        assert "Forgot memory" in (await answered(dc, deleted))["content"]
