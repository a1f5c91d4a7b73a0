"""End to end: the real aiogram adapter on the fake Bot API, the openai SDK on the fake LLM.

Most tests feed their updates to the adapter's dispatcher in-process (``fed_bot``); the webhook
and the token-in-logs tests keep the real delivery path (``running_bot``)."""

from __future__ import annotations

import asyncio
import itertools
import logging
from typing import Any

import pytest

from adapters.telegram.split import utf16_len
from bot.testing.fake_llm import FakeLLM, reply
from bot.testing.fake_telegram import FakeTelegram
from tests.conftest import AppFactory, Sleeps
from tests.telegram_harness import fed_bot, free_port, running_bot, webhook_on


def user_texts(fake: FakeLLM, index: int = -1) -> list[str]:
    body: dict[str, Any] = fake.chat_requests[index].json
    return [str(m["content"]) for m in body["messages"] if m["role"] == "user"]


async def replies(tg: FakeTelegram, chat_id: int, count: int = 1) -> list[dict[str, Any]]:
    """The bot's messages in the chat once ``count`` exist and streaming has settled."""
    await tg.wait_for_message(chat_id, count=count)
    await tg.wait_idle(quiet=0.3)
    return tg.messages(chat_id)


async def silence(tg: FakeTelegram, chat_id: int, seconds: float = 0.3) -> None:
    before = len(tg.messages(chat_id))
    await asyncio.sleep(seconds)
    assert len(tg.messages(chat_id)) == before, "the bot answered when it should stay quiet"


async def test_private_chat_multi_turn(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    chat = tg.private_chat(alice)
    fake_llm.script(reply("Hello **Alice**!"), reply("You said hi."))
    async with fed_bot(make_app, tg) as fed:
        tg.send(chat, alice, "hi, I'm Alice")
        [first] = await fed.replies(chat["id"])
        assert first["text"] == "Hello Alice!"
        assert any(e["type"] == "bold" for e in first.get("entities", []))
        tg.send(chat, alice, "what did I say?")
        await fed.replies(chat["id"], count=2)
    assert user_texts(fake_llm) == ["hi, I'm Alice", "what did I say?"]
    assert any(c.method == "sendChatAction" for c in tg.calls)
    assert "reply_to_message" not in first  # private replies do not quote


async def test_group_triggers_and_silence(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    tg.privacy_mode = False  # to see (and keep as context) messages not addressed to it
    alice, bob = tg.user(7, "Alice"), tg.user(8, "Bob")
    group = tg.group(-100, "Team", supergroup=True)
    async with fed_bot(make_app, tg) as fed:
        tg.send(group, bob, "lunch at noon?")
        await fed.silence(group["id"])
        mention = tg.send(group, alice, "@parlour_bot what did Bob ask?")
        [answer] = await fed.replies(group["id"])
        assert answer["reply_to_message"]["message_id"] == mention["message_id"]
        assert user_texts(fake_llm) == ["[Bob] lunch at noon?", "[Alice] what did Bob ask?"]

        tg.send(group, bob, "thanks", reply_to=answer)
        await fed.replies(group["id"], count=2)
        tg.send(group, bob, "/ask@parlour_bot and dinner?")
        await fed.replies(group["id"], count=3)
        assert user_texts(fake_llm)[-2:] == ["[Bob] thanks", "[Bob] and dinner?"]

        tg.send(group, alice, "/ask")
        usage = await fed.replies(group["id"], count=4)
        assert "/ask <your question>" in usage[-1]["text"]
        tg.send(group, alice, "@someone_else hi")
        tg.send(group, tg.user(9, "Spam", username="spam_bot", is_bot=True), "@parlour_bot hi")
        await fed.silence(group["id"])
    assert len(fake_llm.chat_requests) == 3


async def test_forum_topics_are_isolated(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    forum = tg.group(-300, "Forum", supergroup=True, forum=True)
    async with fed_bot(make_app, tg, chat={"default_scope": "thread"}) as fed:
        tg.send(forum, alice, "@parlour_bot topic ten secret", thread_id=10)
        await fed.replies(forum["id"])
        tg.send(forum, alice, "@parlour_bot what is the secret?", thread_id=20)
        await fed.replies(forum["id"], count=2)
    assert user_texts(fake_llm) == ["[Alice] what is the secret?"]
    assert [m.get("message_thread_id") for m in tg.messages(forum["id"])] == [10, 20]


async def test_scope_user_by_admin_and_clear_rights(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    admin, member = tg.user(7, "Alice"), tg.user(8, "Bob")
    group = tg.group(-100, "Team", supergroup=True)
    tg.set_member(group["id"], admin["id"], "creator")
    tg.set_member(group["id"], member["id"], "member")
    async with fed_bot(make_app, tg) as fed:
        tg.send(group, member, "/scope user")
        [refused] = await fed.replies(group["id"])
        assert "Only this chat's admins" in refused["text"]
        tg.send(group, admin, "/scope user")
        await fed.replies(group["id"], count=2)
        tg.send(group, admin, "@parlour_bot my code is 1234")
        await fed.replies(group["id"], count=3)
        tg.send(group, member, "@parlour_bot what is the code?")
        await fed.replies(group["id"], count=4)
        assert user_texts(fake_llm) == ["what is the code?"]  # Bob's own conversation

        tg.send(group, member, "/clear")
        messages = await fed.replies(group["id"], count=5)
        assert "Only this chat's admins" in messages[-1]["text"]
        stats = await fed.app.store.stats("telegram:-100:u:7")
        assert stats.turns_stored == 1
        tg.send(group, admin, "/clear")
        messages = await fed.replies(group["id"], count=6)
        assert "Deleted this chat's history (2 turns)" in messages[-1]["text"]
        assert (await fed.app.store.stats("telegram:-100:u:7")).turns_stored == 0
    member_checks = [c for c in tg.calls if c.method == "getChatMember"]
    assert len(member_checks) == 2  # one per user: the answer is cached


async def test_flood_control_still_delivers(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    chat = tg.private_chat(alice)
    waits = Sleeps()
    tg.flood("sendMessage", retry_after=3, times=2)
    async with fed_bot(make_app, tg, flood_sleeps=waits, telegram={"stream": False}) as fed:
        for n in range(3):
            tg.send(chat, alice, f"message {n}")
        await fed.replies(chat["id"], count=3)
    assert waits == [3, 3]
    assert sum(1 for c in tg.calls if c.method == "sendMessage" and c.error) == 2


async def test_html_rejected_falls_back_to_plain_text(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    chat = tg.private_chat(alice)
    fake_llm.script(reply("Use **bold** and `code` <here>"))
    tg.fail("sendMessage", 400, "Bad Request: can't parse entities: Unsupported start tag", times=1)
    async with fed_bot(make_app, tg, telegram={"stream": False}) as fed:
        tg.send(chat, alice, "format something")
        [message] = await fed.replies(chat["id"])
    assert message["text"] == "Use bold and code <here>"
    sends = [c for c in tg.calls if c.method == "sendMessage"]
    assert [c.params.get("parse_mode") for c in sends] == ["HTML", None]


async def test_long_reply_is_split_into_valid_chunks(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    chat = tg.private_chat(alice)
    paragraphs = [f"**Part {n}.** " + "lorem ipsum dolor sit amet " * 14 for n in range(26)]
    text = "\n\n".join(paragraphs)
    assert len(text) > 10_000
    fake_llm.script(reply(text))
    async with fed_bot(make_app, tg, llm={"max_output_tokens": 8000}) as fed:
        tg.send(chat, alice, "write a lot")
        await fed.feed()
    messages = tg.messages(chat["id"])
    assert len(messages) == 3
    assert all(utf16_len(m["text"]) <= 4096 for m in messages)
    shown = " ".join(m["text"] for m in messages)
    assert shown.split() == text.replace("**", "").split()
    assert all(any(e["type"] == "bold" for e in m["entities"]) for m in messages)


async def test_streaming_edits_are_throttled(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    chat = tg.private_chat(alice)
    fake_llm.stream_interval = 0.02
    fake_llm.script(reply(" ".join(f"word{n}" for n in range(120))))
    async with fed_bot(make_app, tg, telegram={"edit_interval_private": 0.5}) as fed:
        tg.send(chat, alice, "stream please")
        await fed.feed()
    [message] = tg.messages(chat["id"])
    edits = tg.edits(chat["id"], message["message_id"])
    streamed = [e for e in edits if e.params.get("parse_mode") is None]
    assert 1 <= len(streamed) <= 6  # ~2.4 s of streaming at one edit per 0.5 s
    times = [c.at for c in tg.calls if c.method in ("sendMessage", "editMessageText")]
    gaps = [b - a for a, b in itertools.pairwise(times[:-1])]
    assert all(gap >= 0.45 for gap in gaps), gaps  # the final formatting edit is not throttled
    assert edits[-1].params.get("parse_mode") == "HTML"
    assert message["text"].endswith("word119")


async def test_group_migration_keeps_history(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    group = tg.group(-5, "Small group")
    async with fed_bot(make_app, tg) as fed:
        tg.send(group, alice, "@parlour_bot remember the blue door")
        await fed.replies(group["id"])
        supergroup = tg.migrate(group, -1005)
        tg.send(supergroup, alice, "@parlour_bot which door?")
        await fed.replies(supergroup["id"])
    assert user_texts(fake_llm) == ["[Alice] remember the blue door", "[Alice] which door?"]


async def test_webhook_mode_checks_the_secret_and_ignores_duplicates(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    chat = tg.private_chat(alice)
    port = free_port()
    webhook = webhook_on(port, secret_token="s3cret-value")
    async with running_bot(make_app, tg, telegram={"mode": "webhook", "webhook": webhook}):
        message = tg.send(chat, alice, "via webhook")
        await replies(tg, chat["id"])
        [delivery] = tg.webhook_deliveries
        assert delivery.status == 200
        update = {"update_id": delivery.update_id, "message": message}
        assert await tg.deliver_raw(update, secret="wrong") == 401
        assert await tg.deliver_raw(update, secret=None) == 401
        assert await tg.deliver_raw(update, secret="s3cret-value") == 200  # a redelivery
        await silence(tg, chat["id"])
    assert len(fake_llm.chat_requests) == 1
    assert not any(c.method == "getUpdates" for c in tg.calls)


async def test_fake_token_never_logged(
    make_app: AppFactory,
    fake_llm: FakeLLM,
    fake_telegram: FakeTelegram,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    chat = tg.private_chat(alice)
    tg.fail("sendMessage", 500, "Internal Server Error", times=1)
    async with running_bot(make_app, tg, telegram={"stream": False}):
        tg.send(chat, alice, "hello")
        tg.send(chat, alice, "again")
        await replies(tg, chat["id"])
    assert caplog.records
    secret = tg.token.split(":", 1)[1]
    assert secret not in caplog.text


async def test_group_admins_are_offered_admin_only_tools(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    alice, bob = tg.user(7, "Alice"), tg.user(8, "Bob")
    group = tg.group(-100, "Team", supergroup=True)
    tg.set_member(group["id"], alice["id"], "administrator")
    toolbox = {"module": "tests.sample_plugins.toolbox", "settings": {"greeting": "Ahoy"}}
    async with fed_bot(make_app, tg, plugins=[toolbox]) as fed:
        tg.send(group, bob, "@parlour_bot wipe everything")
        await fed.replies(group["id"])
        tg.send(group, alice, "@parlour_bot wipe everything")
        await fed.replies(group["id"], count=2)
    offered = [
        [t["function"]["name"] for t in r.json.get("tools", [])] for r in fake_llm.chat_requests
    ]
    assert "wipe_everything" not in offered[0]  # Bob is a member
    assert "wipe_everything" in offered[1]  # Alice is an admin of this chat (getChatMember)
    lookups = [c for c in tg.calls if c.method == "getChatMember"]
    assert {int(c.params["user_id"]) for c in lookups} == {7, 8}
