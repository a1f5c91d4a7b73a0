"""A Telegram group that becomes a supergroup takes its reminders along (the plugin's
``on_chat_moved`` hook), through the real adapter on the fake Bot API: the supergroup's
``list_reminders`` shows them, the admin API's listing names the new chat, and a reminder falls
due straight in the supergroup. Reminders set elsewhere stay where they were. A plugin whose
hook fails does not keep the others from being told."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.app import App
from bot.scheduling.kinds import REMINDERS_KIND
from bot.testing.fake_llm import FakeLLM, reply, tool_calls
from bot.testing.fake_telegram import FakeTelegram
from tests.conftest import AppFactory, group
from tests.product.plugins.test_reminders import tool_result
from tests.telegram_harness import fed_bot

SETUP = {"telegram": {"stream": False}, "plugins": ["plugins.reminders"]}
OLD, NEW = -5, -1005


def chats_of(app: App) -> dict[str, str]:
    """Pending reminders: job id -> the chat key its job names."""
    assert app.scheduler is not None
    return {job.job_id: job.payload["chat_key"] for job in app.scheduler.pending(REMINDERS_KIND)}


async def test_a_groups_reminders_follow_it_to_the_supergroup(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    group = tg.group(OLD, "Small group")
    direct = tg.private_chat(alice)
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).replace(microsecond=0).isoformat()
    async with fed_bot(make_app, tg, **SETUP) as fed:
        fake_llm.script(
            tool_calls(
                ("set_reminder", {"text": "stretch", "in_minutes": 0.1}),
                ("set_reminder", {"text": "standup", "at": tomorrow}),
            ),
            reply("Will do."),
            tool_calls(("set_reminder", {"text": "call mum", "at": tomorrow})),
            reply("Sure."),
        )
        tg.send(group, alice, "@parlour_bot remind me soon to stretch, and tomorrow of standup")
        await fed.feed()
        tg.send(direct, alice, "remind me tomorrow to call mum")
        await fed.feed()
        assert chats_of(fed.app) == {
            "reminders:1": f"telegram:{OLD}",
            "reminders:2": f"telegram:{OLD}",
            "reminders:3": "telegram:7",
        }

        supergroup = tg.migrate(group, NEW)
        await fed.feed()
        migrated_at = len(tg.calls)
        assert chats_of(fed.app) == {
            "reminders:1": f"telegram:{NEW}",
            "reminders:2": f"telegram:{NEW}",
            "reminders:3": "telegram:7",  # a private chat's: not the group's
        }

        fake_llm.script(tool_calls(("list_reminders", {})), reply("Two."))
        tg.send(supergroup, alice, "@parlour_bot my reminders?")
        await fed.feed()
        listed = tool_result(fake_llm)
        # soonest first; the two were set by parallel tool calls, so either may be #1
        first, second, others = listed.splitlines()
        assert first.endswith(": stretch") and second.endswith(": standup")
        assert {first[:3], second[:3]} == {"#1 ", "#2 "}
        assert others == "(and 1 set in other chats)"  # the private one, as before

        await tg.wait_until(lambda: len(tg.messages(NEW)) >= 2, 15, what="the reminder")
        assert tg.messages(NEW)[-1]["text"] == "⏰ Alice, you asked me to remind you: stretch"
        sends = [c for c in tg.calls[migrated_at:] if c.method == "sendMessage"]
        assert {str(c.params["chat_id"]) for c in sends} == {str(NEW)}  # never the old id


async def test_a_chats_move_reaches_every_plugin_even_past_one_that_fails(
    make_app: AppFactory, fake_llm: FakeLLM, caplog: pytest.LogCaptureFixture
) -> None:
    """``Platform.migrate_chat`` (what an adapter calls): history, scheduled posts and each
    plugin's records; a plugin whose hook raises is logged and the next one is still told."""
    plugins = ["tests.sample_plugins.moves", "plugins.reminders"]
    admin = group(is_admin=True)
    async with make_app(plugins=plugins) as app:
        fake_llm.script(
            tool_calls(("set_reminder", {"text": "standup", "in_minutes": 600})), reply("ok")
        )
        await app.service.chat(admin, "remind me of standup")
        assert app.schedules is not None
        await app.schedules.schedule(admin, "every monday 09:00", "summarise the week")

        moved = await app.platform.migrate_chat("telegram:-100", "telegram:-1009")
        assert moved == 1  # the turn
        assert chats_of(app) == {"reminders:1": "telegram:-1009"}
        assert [post.target.chat_key for post in app.schedules.listed()] == ["telegram:-1009"]
        assert await app.store.kv_get("moves", "moved:telegram:-100") == "telegram:-1009"
        assert await app.platform.migrate_chat("telegram:-100", "telegram:-1009") == 0
        assert chats_of(app) == {"reminders:1": "telegram:-1009"}
    assert "plugin moves failed to move chat telegram:-100 to telegram:-1009" in caplog.text
