"""Telegram edited messages and channel posts (issue 16 item 7), through aiogram and the fakes.

An edit before the bot started on the message replaces it (polling: queued behind the
conversation; webhook: unclaimed in the inbox); an edit after the answer, or of a message that
already joined a turn, is context for the next answer and gets no reply; an edited overheard
message is replaced where it waits; channel posts are not subscribed to and dropped if they come.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from adapters.telegram.adapter import TelegramAdapter
from bot.app import App
from bot.testing.fake_llm import FakeLLM, reply
from bot.testing.fake_telegram import FakeTelegram
from bot.testing.llm.script import held
from tests.conftest import AppFactory
from tests.telegram_harness import free_port, running_bot

SECRET = "edits-secret-token"


def user_texts(fake: FakeLLM, index: int = -1) -> list[str]:
    body: dict[str, Any] = fake.chat_requests[index].json
    return [str(m["content"]) for m in body["messages"] if m["role"] == "user"]


def every_prompt(fake: FakeLLM) -> str:
    return "\n".join("\n".join(user_texts(fake, i)) for i in range(len(fake.chat_requests)))


async def replies(tg: FakeTelegram, chat_id: int, count: int = 1) -> list[dict[str, Any]]:
    await tg.wait_for_message(chat_id, count=count)
    await tg.wait_idle(quiet=0.3)
    return tg.messages(chat_id)


async def silence(tg: FakeTelegram, chat_id: int, seconds: float = 0.3) -> None:
    before = len(tg.messages(chat_id))
    await asyncio.sleep(seconds)
    assert len(tg.messages(chat_id)) == before, "the bot answered when it should stay quiet"


def webhook_section() -> dict[str, Any]:
    port = free_port()
    return {
        "mode": "webhook",
        "stream": False,
        "webhook": {
            "url": f"http://127.0.0.1:{port}/hook",
            "path": "/hook",
            "listen_host": "127.0.0.1",
            "listen_port": port,
            "secret_token": SECRET,
        },
    }


@asynccontextmanager
async def bot_in(
    mode: str, make_app: AppFactory, tg: FakeTelegram, **sections: Any
) -> AsyncIterator[tuple[App, TelegramAdapter]]:
    section = webhook_section() if mode == "webhook" else {"stream": False}
    async with running_bot(make_app, tg, telegram=section, **sections) as running:
        yield running


def taken(tg: FakeTelegram, mode: str, update_id: int) -> Callable[[], bool]:
    """The bot has the update: confirmed by the next poll, or acknowledged by the webhook
    (stored, or folded into its original, before the 200)."""
    if mode == "webhook":
        return lambda: any(
            d.update_id == update_id and d.status == 200 for d in tg.webhook_deliveries
        )
    return lambda: (
        all(u["update_id"] != update_id for u in tg.pending_updates)
        and any(
            c.method == "getUpdates" and int(c.params.get("offset") or 0) > update_id
            for c in tg.calls
        )
    )


@pytest.mark.parametrize("mode", ["polling", "webhook"])
async def test_an_edit_before_the_answer_replaces_the_message(
    mode: str, make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    group = tg.group(-100, "Team", supergroup=True)
    busy = asyncio.Event()
    fake_llm.script(held(busy, reply("first answer")), reply("second answer"))
    async with bot_in(mode, make_app, tg):
        tg.send(group, alice, "@parlour_bot first question")
        await tg.wait_until(lambda: len(fake_llm.chat_requests) == 1, what="the first request")
        # The bot is busy with the first; the second waits (for the conversation, or unclaimed
        # in the inbox behind the first) when its author fixes a typo.
        second = tg.send(group, alice, "@parlour_bot secnd qestion")
        tg.edit(second, "@parlour_bot second question, fixed")
        edit_id = tg.pending_updates[-1]["update_id"]
        await tg.wait_until(taken(tg, mode, edit_id), what="the edit taken")
        busy.set()
        first, answer = await replies(tg, group["id"], count=2)
        await silence(tg, group["id"])
    assert [first["text"], answer["text"]] == ["first answer", "second answer"]
    assert answer["reply_to_message"]["message_id"] == second["message_id"]
    assert len(fake_llm.chat_requests) == 2  # one answer to the edited message, none to both
    assert user_texts(fake_llm)[-1] == "[Alice] second question, fixed"
    assert "secnd" not in every_prompt(fake_llm)


@pytest.mark.parametrize("mode", ["polling", "webhook"])
async def test_an_edit_after_the_answer_is_context_and_gets_no_reply(
    mode: str, make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    chat = tg.private_chat(alice)
    async with bot_in(mode, make_app, tg):
        question = tg.send(chat, alice, "what is the capital of Australia?")
        await replies(tg, chat["id"])
        tg.edit(question, "what is the capital of Austria?")
        edit_id = tg.pending_updates[-1]["update_id"]
        await tg.wait_until(taken(tg, mode, edit_id), what="the edit taken")
        await silence(tg, chat["id"])
        assert len(fake_llm.chat_requests) == 1  # not answered again
        tg.send(chat, alice, "and its population?")
        await replies(tg, chat["id"], count=2)
    assert user_texts(fake_llm) == [
        "what is the capital of Australia?",
        "[edited] what is the capital of Austria?",
        "and its population?",
    ]


async def test_an_edited_overheard_message_is_replaced_and_not_answered(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    tg.privacy_mode = False  # the bot sees, and keeps as context, what is not addressed to it
    alice, bob = tg.user(7, "Alice"), tg.user(8, "Bob")
    group = tg.group(-100, "Team", supergroup=True)
    async with bot_in("polling", make_app, tg):
        lunch = tg.send(group, bob, "lunch at noon?")
        tg.edit(lunch, "lunch at one?")
        tg.edit(lunch, "lunch at one, @parlour_bot?")  # a mention added later: still not asked
        await tg.wait_until(lambda: not tg.pending_updates, what="the edits taken")
        await silence(tg, group["id"])
        assert fake_llm.chat_requests == []
        tg.send(group, alice, "@parlour_bot when is lunch?")
        await replies(tg, group["id"])
    assert user_texts(fake_llm) == ["[Bob] lunch at one, ?", "[Alice] when is lunch?"]
    assert "noon" not in every_prompt(fake_llm)


async def test_an_edit_of_chatter_that_joined_a_turn_is_added_not_rewritten(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    tg.privacy_mode = False
    alice, bob = tg.user(7, "Alice"), tg.user(8, "Bob")
    group = tg.group(-100, "Team", supergroup=True)
    async with bot_in("polling", make_app, tg):
        lunch = tg.send(group, bob, "lunch at noon?")
        tg.send(group, alice, "@parlour_bot is noon fine?")
        await replies(tg, group["id"])
        tg.edit(lunch, "lunch at one?")
        await tg.wait_until(lambda: not tg.pending_updates, what="the edit taken")
        await silence(tg, group["id"])
        tg.send(group, alice, "@parlour_bot and now?")
        await replies(tg, group["id"], count=2)
    assert user_texts(fake_llm) == [
        "[Bob] lunch at noon?",  # the history as it was answered
        "[Alice] is noon fine?",
        "[Bob] [edited] lunch at one?",
        "[Alice] and now?",
    ]


@pytest.mark.parametrize("mode", ["polling", "webhook"])
async def test_allowed_updates_take_edits_and_no_channel_posts(
    mode: str, make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    chat = tg.private_chat(alice)
    news = tg.channel(-1009, "News")
    async with bot_in(mode, make_app, tg):
        post = tg.post(news, "breaking: nothing happened")
        tg.edit(post, "breaking: something happened")
        tg.send(chat, alice, "hello")
        await replies(tg, chat["id"])
    method = "setWebhook" if mode == "webhook" else "getUpdates"
    allowed = [c.params.get("allowed_updates") for c in tg.calls if c.method == method]
    assert allowed and all(
        "edited_message" in a and "message" in a and "channel_post" not in a
        for a in allowed
        if a is not None
    )
    assert allowed[0] is not None
    # Telegram filters by allowed_updates: the post and its edit were never delivered.
    assert user_texts(fake_llm) == ["hello"]
    assert not tg.pending_updates
    if mode == "webhook":
        assert len(tg.webhook_deliveries) == 1


async def test_a_channel_post_that_arrives_anyway_is_dropped_quietly(
    make_app: AppFactory,
    fake_llm: FakeLLM,
    fake_telegram: FakeTelegram,
    caplog: pytest.LogCaptureFixture,
) -> None:
    tg = fake_telegram
    news = tg.channel(-1009, "News")
    caplog.set_level(logging.DEBUG, logger="adapters.telegram")
    async with bot_in("webhook", make_app, tg) as (app, _):
        started = len(caplog.records)  # the start-up diagnostics (privacy mode) are not ours
        # Another tool set the webhook for every update type: posts reach the bot anyway.
        post = tg.post(news, "a secret scoop for subscribers")
        edited = {**post, "text": "a scoop", "edit_date": post["date"] + 1}
        in_channel = {**post, "message_id": post["message_id"] + 1, "text": "hi @parlour_bot"}
        updates = [
            {"update_id": 900, "channel_post": post},
            {"update_id": 901, "edited_channel_post": edited},
            {"update_id": 902, "message": in_channel},
        ]
        for update in updates:
            assert await tg.deliver_raw(update, secret=SECRET) == 200
        assert await app.store.inbox_pending(f"telegram:{tg.bot_id}") == 0
        await tg.wait_idle(quiet=0.3)
    assert fake_llm.chat_requests == []
    assert not [r for r in caplog.records[started:] if r.levelno >= logging.WARNING]
    dropped = [r for r in caplog.records if "channel post" in r.getMessage()]
    assert [r.levelno for r in dropped] == [logging.DEBUG] * 3
    for record, update in zip(dropped, updates, strict=True):
        assert str(update["update_id"]) in record.getMessage()
    assert "scoop" not in caplog.text  # the update id only, never the content


async def test_edited_commands_do_not_run_and_quiet_groups_keep_no_edits(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    chat = tg.private_chat(alice)
    quiet = tg.group(-200, "Quiet", supergroup=True)
    section = {"stream": False, "chats": {"-200": {"keep_context": False}}}
    async with running_bot(make_app, tg, telegram=section):
        question = tg.send(chat, alice, "remember the number 4")
        await replies(tg, chat["id"])
        command = tg.send(chat, alice, "/help")
        await replies(tg, chat["id"], count=2)
        tg.edit(command, "/reset")  # not run: the history survives
        tg.edit(question, "/clear")  # an edit into a command is not run, nor kept
        mention = tg.send(quiet, alice, "@parlour_bot hi")
        await replies(tg, quiet["id"])
        tg.edit(mention, "@parlour_bot hi, typo fixed")  # answered already; nothing kept here
        await tg.wait_until(lambda: not tg.pending_updates, what="the edits taken")
        await silence(tg, chat["id"])
        assert len(tg.messages(quiet["id"])) == 1
        tg.send(chat, alice, "which number?")
        tg.send(quiet, alice, "@parlour_bot again")
        await replies(tg, chat["id"], count=3)
        await replies(tg, quiet["id"], count=2)
    private_prompt = next(
        user_texts(fake_llm, i)
        for i in range(len(fake_llm.chat_requests))
        if user_texts(fake_llm, i)[-1] == "which number?"
    )
    assert private_prompt == ["remember the number 4", "which number?"]
    quiet_prompt = next(
        user_texts(fake_llm, i)
        for i in range(len(fake_llm.chat_requests))
        if user_texts(fake_llm, i)[-1] == "[Alice] again"
    )
    assert quiet_prompt == ["[Alice] hi", "[Alice] again"]
    assert "/" not in every_prompt(fake_llm) and "typo" not in every_prompt(fake_llm)
