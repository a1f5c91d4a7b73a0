"""Telegram failure paths and output mechanics: blocked bots, polling errors, rollover, /help.

Updates are fed in-process (``fed_bot``) where their delivery is not the point; polling errors
and the two-updates-at-once ordering of /clear keep the polling path (``running_bot``)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import pytest
from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer

from adapters.telegram.output import Outbox, Target
from adapters.telegram.split import utf16_len
from adapters.telegram.streaming import StreamingReply, typing_indicator
from bot.conversation.preview import EditThrottle
from bot.testing.fake_llm import FakeLLM, reply
from bot.testing.fake_telegram import FakeTelegram
from tests.conftest import AppFactory
from tests.telegram_harness import fed_bot, running_bot


@pytest.fixture
async def bot(fake_telegram: FakeTelegram) -> AsyncIterator[Bot]:
    session = AiohttpSession(api=TelegramAPIServer.from_base(fake_telegram.api_server))
    client = Bot(fake_telegram.token, session=session)
    yield client
    await client.session.close()


async def test_blocked_chat_is_logged_and_others_still_served(
    make_app: AppFactory,
    fake_llm: FakeLLM,
    fake_telegram: FakeTelegram,
    caplog: pytest.LogCaptureFixture,
) -> None:
    tg = fake_telegram
    alice, bob = tg.user(7, "Alice"), tg.user(8, "Bob")
    blocked, open_chat = tg.private_chat(alice), tg.private_chat(bob)
    tg.block(blocked["id"])
    async with fed_bot(make_app, tg) as fed:
        tg.send(blocked, alice, "hello?")
        await fed.silence(blocked["id"])
        assert any(c.method == "sendMessage" and c.error for c in tg.calls)
        tg.send(open_chat, bob, "hi")
        await fed.replies(open_chat["id"])
        stats = await fed.app.store.stats("telegram:7:u:7")
    assert stats.turns_stored == 1  # the turn is kept even though it could not be delivered
    assert "bot was blocked by the user" in caplog.text


async def test_polling_survives_network_errors(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    chat = tg.private_chat(alice)
    async with running_bot(make_app, tg):
        tg.fail("getUpdates", 502, "Bad Gateway", times=1)
        tg.send(chat, alice, "still there?")
        await tg.wait_for_message(chat["id"], timeout=10)
    assert any(c.method == "getUpdates" and c.error for c in tg.calls)


async def test_help_tells_group_admins_about_privacy_mode(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram  # privacy mode is on by default, as for a new BotFather bot
    admin, member = tg.user(7, "Alice"), tg.user(8, "Bob")
    group = tg.group(-100, "Team", supergroup=True)
    tg.set_member(group["id"], admin["id"], "administrator")
    async with fed_bot(make_app, tg) as fed:
        tg.send(group, member, "/help")
        await fed.replies(group["id"])
        tg.send(group, admin, "/help@parlour_bot")
        await fed.replies(group["id"], count=2)
    member_help, admin_help = (m["text"] for m in tg.messages(group["id"]))
    assert "/ask" in member_help and "/clear" not in member_help
    assert "Privacy mode is on" not in member_help
    assert "/clear" in admin_help and "Privacy mode is on" in admin_help


async def test_anonymous_admin_can_clear_without_a_member_lookup(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    group = tg.group(-100, "Team", supergroup=True)
    async with fed_bot(make_app, tg) as fed:
        tg.send(group, alice, "@parlour_bot hi")
        await fed.replies(group["id"])
        tg.send(group, alice, "/clear", anonymous_admin=True)
        messages = await fed.replies(group["id"], count=2)
    assert "Deleted this chat's history (1 turns)" in messages[-1]["text"]
    assert not any(c.method == "getChatMember" for c in tg.calls)


async def test_streaming_rolls_over_before_the_limit(
    fake_telegram: FakeTelegram, bot: Bot, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    tg = fake_telegram
    chat = tg.private_chat(tg.user(7, "Alice"))
    outbox = Outbox(bot, Target(chat["id"]))
    indicator = typing_indicator(bot, chat["id"], None)
    indicator.start()
    reply = StreamingReply(outbox, EditThrottle(0.0, 0.0), private=True, typing=indicator)
    sentence = "The quick brown fox jumps over the lazy dog 🦊. "
    text = ""
    while len(text) < 9_000:
        text += sentence
        await reply.feed(sentence)
    streamed = tg.messages(chat["id"])
    assert len(streamed) == 3
    assert all(utf16_len(m["text"]) <= 4096 for m in streamed)
    await reply.finish(text)
    final = tg.messages(chat["id"])
    assert [m["message_id"] for m in final] == [m["message_id"] for m in streamed]
    assert " ".join(m["text"] for m in final).split() == text.split()
    assert not any(c.error for c in tg.calls), tg.summary()
    await asyncio.sleep(0)


async def test_a_failed_preview_edit_does_not_lose_the_answer(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    chat = tg.private_chat(alice)
    fake_llm.stream_interval = 0.01
    fake_llm.script(reply(" ".join(f"w{n}" for n in range(80))))
    tg.flood("editMessageText", retry_after=600, times=1)  # longer than anyone should wait
    async with fed_bot(make_app, tg, telegram={"edit_interval_private": 0.1}) as fed:
        tg.send(chat, alice, "go")
        await fed.feed()
        stats = await fed.app.store.stats("telegram:7:u:7")
    [message] = tg.messages(chat["id"])
    assert message["text"] == " ".join(f"w{n}" for n in range(80))
    assert stats.unanswered == 0


async def test_clear_is_not_overtaken_by_the_next_message(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    admin = tg.user(7, "Alice")
    group = tg.group(-100, "Team", supergroup=True)
    tg.set_member(group["id"], admin["id"], "administrator")
    async with running_bot(make_app, tg):
        tg.send(group, admin, "@parlour_bot my secret is 1234")
        await tg.wait_for_message(group["id"])
        await tg.wait_idle()
        tg.send(group, admin, "/clear")  # needs a getChatMember lookup first
        tg.send(group, admin, "@parlour_bot what do you know?")
        await tg.wait_for_message(group["id"], count=3)
        await tg.wait_idle()
    last = fake_llm.chat_requests[-1].json["messages"]
    assert "1234" not in str(last)
    assert [m["content"] for m in last if m["role"] == "user"] == ["[Alice] what do you know?"]
    assert sum(c.method == "getMe" for c in tg.calls) == 1  # aiogram reuses our cached getMe


async def test_the_model_cannot_ping_people(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    group = tg.group(-100, "Team", supergroup=True)
    fake_llm.script(reply("Sure, @bob_smith and [Carol](tg://user?id=9) are pinged."))
    async with fed_bot(make_app, tg) as fed:
        tg.send(group, alice, "@parlour_bot ping bob")
        await fed.feed()
    [answer] = tg.messages(group["id"])
    assert answer["text"] == "Sure, @\u2060bob_smith and Carol are pinged."
    kinds = {e["type"] for e in answer.get("entities", [])}
    assert not kinds & {"mention", "text_mention", "text_link"}
