"""The fake Telegram Bot API, driven by the real aiogram client: its answers must parse as in prod.

Raw aiohttp requests cover what aiogram never sends (JSON and GET bodies, wrong tokens) and
pin the exact error bodies; ``parse_html`` is checked directly against TDLib's behaviour.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from aiogram import Bot, Dispatcher
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiogram.exceptions import (
    TelegramBadRequest,
    TelegramConflictError,
    TelegramForbiddenError,
    TelegramMigrateToChat,
    TelegramRetryAfter,
    TelegramServerError,
    TelegramUnauthorizedError,
)
from aiogram.types import (
    BotCommand,
    BotCommandScopeAllGroupChats,
    BotCommandScopeChat,
    ChatMemberAdministrator,
    ChatMemberLeft,
    ChatMemberMember,
    ChatMemberOwner,
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    Message,
    ReplyParameters,
)
from aiogram.webhook.aiohttp_server import SimpleRequestHandler
from aiohttp import web

from bot.testing.fake_telegram import FakeTelegram
from bot.testing.telegram.parse_html import TelegramHTMLError, parse_html

ROOT = Path(__file__).resolve().parents[2]  # tests/kit/ -> the project
JSONDict = dict[str, Any]


class LocalSession(AiohttpSession):
    """aiogram's session without the 250 ms TLS-shutdown grace sleep on close (plain HTTP)."""

    async def close(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()


def make_bot(fake: FakeTelegram, token: str | None = None) -> Bot:
    api = TelegramAPIServer.from_base(fake.api_server)
    return Bot(token or fake.token, session=LocalSession(api=api))


@pytest_asyncio.fixture
async def bot(fake_telegram: FakeTelegram) -> AsyncIterator[Bot]:
    client = make_bot(fake_telegram)
    try:
        yield client
    finally:
        await client.session.close()


@pytest.fixture
def alice(fake_telegram: FakeTelegram) -> JSONDict:
    return fake_telegram.user(42, "Alice", username="alice")


@pytest.fixture
def dm(fake_telegram: FakeTelegram, alice: JSONDict) -> JSONDict:
    return fake_telegram.private_chat(alice)


async def raw(
    fake: FakeTelegram, method: str, *, token: str | None = None, **kwargs: Any
) -> tuple[int, JSONDict]:
    """One plain HTTP request; kwargs go to ``aiohttp.ClientSession.request`` (json/data/params)."""
    verb = "GET" if "params" in kwargs else "POST"
    url = f"{fake.api_server}/bot{token or fake.token}/{method}"
    async with aiohttp.ClientSession() as http, http.request(verb, url, **kwargs) as response:
        assert response.content_type == "application/json"
        return response.status, await response.json()


# ----------------------------------------------------------------- wire and errors


async def test_get_me_describes_the_bot(fake_telegram: FakeTelegram, bot: Bot) -> None:
    me = await bot.get_me()
    assert (me.id, me.username, me.first_name, me.is_bot) == (
        123456,
        "parlour_bot",
        "Parlour",
        True,
    )
    assert me.can_read_all_group_messages is False  # privacy mode is on by default
    fake_telegram.privacy_mode = False
    assert (await bot.get_me()).can_read_all_group_messages is True
    assert [c.method for c in fake_telegram.calls] == ["getMe", "getMe"]


async def test_wrong_token_is_401_and_unknown_method_404(fake_telegram: FakeTelegram) -> None:
    stranger = make_bot(fake_telegram, token="999:nope")
    try:
        with pytest.raises(TelegramUnauthorizedError, match="Unauthorized"):
            await stranger.get_me()
    finally:
        await stranger.session.close()
    status, body = await raw(fake_telegram, "getMe", token="999:nope", json={})
    assert (status, body) == (401, {"ok": False, "error_code": 401, "description": "Unauthorized"})
    status, body = await raw(fake_telegram, "sendTelepathy", json={})
    assert (status, body) == (404, {"ok": False, "error_code": 404, "description": "Not Found"})
    assert [(c.method, c.ok) for c in fake_telegram.calls] == [
        ("getMe", False),
        ("getMe", False),
        ("sendTelepathy", False),
    ]


async def test_json_form_and_query_bodies_all_work(
    fake_telegram: FakeTelegram, dm: JSONDict
) -> None:
    keyboard = {"inline_keyboard": [[{"text": "Yes", "callback_data": "y"}]]}
    status, body = await raw(
        fake_telegram, "SENDMESSAGE", json={"chat_id": 42, "text": "json", "reply_markup": keyboard}
    )
    assert status == 200 and body["ok"] is True
    assert body["result"]["reply_markup"] == keyboard
    form = {"chat_id": "42", "text": "form", "reply_markup": json.dumps(keyboard)}
    status, body = await raw(fake_telegram, "sendMessage", data=form)
    assert status == 200 and body["result"]["text"] == "form"
    status, body = await raw(fake_telegram, "getme", params={})
    assert status == 200 and body["result"]["username"] == "parlour_bot"
    sent = [c for c in fake_telegram.calls if c.method == "sendMessage"]
    assert [c.params["reply_markup"] for c in sent] == [keyboard, keyboard]  # decoded both times
    assert [m["message_id"] for m in fake_telegram.sent] == [1, 2]


async def test_bad_json_field_is_a_400(fake_telegram: FakeTelegram, dm: JSONDict) -> None:
    status, body = await raw(
        fake_telegram, "sendMessage", data={"chat_id": "42", "text": "x", "reply_markup": "{"}
    )
    assert status == 400
    assert body["description"] == "Bad Request: can't parse reply keyboard markup JSON object"


async def test_chat_not_found(fake_telegram: FakeTelegram, bot: Bot) -> None:
    with pytest.raises(TelegramBadRequest, match="Bad Request: chat not found"):
        await bot.send_message(777, "hello?")
    assert fake_telegram.calls[-1].error == "Bad Request: chat not found"
    assert fake_telegram.sent == []


# ---------------------------------------------------------------- sendMessage rules


async def test_html_is_parsed_into_entities(
    fake_telegram: FakeTelegram, bot: Bot, dm: JSONDict
) -> None:
    message = await bot.send_message(42, "😀 <b>bold</b> &amp; <i>it</i>", parse_mode="HTML")
    assert message.text == "😀 bold & it"
    assert [(e.type, e.offset, e.length) for e in message.entities or []] == [
        ("bold", 3, 4),
        ("italic", 10, 2),
    ]
    assert fake_telegram.sent[0]["text"] == "😀 bold & it"


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("<b>x", 'Can\'t find end tag corresponding to start tag "b"'),
        ("é<foo>x</foo>", 'Unsupported start tag "foo" at byte offset 2'),
        ("2 < 3", 'Unsupported start tag "" at byte offset 2'),
        ("x</b>", "Unexpected end tag at byte offset 1"),
        ("<b>x</i>", 'Unmatched end tag at byte offset 4, expected "</b>", found "</i>"'),
        ("<span>x</span>", 'Tag "span" must have class "tg-spoiler" at byte offset 0'),
    ],
)
async def test_bad_html_is_rejected_like_telegram(
    fake_telegram: FakeTelegram, bot: Bot, dm: JSONDict, text: str, error: str
) -> None:
    with pytest.raises(TelegramBadRequest) as caught:
        await bot.send_message(42, text, parse_mode="html")
    assert caught.value.message == f"Bad Request: can't parse entities: {error}"
    assert fake_telegram.sent == []


async def test_length_limit_counts_utf16_after_parsing(
    fake_telegram: FakeTelegram, bot: Bot, dm: JSONDict
) -> None:
    await bot.send_message(42, "a" * 4096)
    await bot.send_message(42, "😀" * 2048)  # 4096 UTF-16 units
    await bot.send_message(42, f"<b>{'a' * 4096}</b>", parse_mode="HTML")  # tags don't count
    for too_long in ("a" * 4097, "😀" * 2048 + "a", "a" * 4095 + "😀"):
        with pytest.raises(TelegramBadRequest, match="message is too long"):
            await bot.send_message(42, too_long)
    assert len(fake_telegram.sent) == 3


async def test_empty_text_is_rejected(fake_telegram: FakeTelegram, bot: Bot, dm: JSONDict) -> None:
    for text, mode in (("   \n", None), ("<b> </b>", "HTML")):
        with pytest.raises(TelegramBadRequest, match="Bad Request: message text is empty"):
            await bot.send_message(42, text, parse_mode=mode)
    message = await bot.send_message(42, "  padded  ")
    assert message.text == "padded"  # the server trims surrounding whitespace


async def test_plain_and_markdown_text_keep_given_entities(
    fake_telegram: FakeTelegram, bot: Bot, dm: JSONDict
) -> None:
    status, body = await raw(
        fake_telegram,
        "sendMessage",
        json={
            "chat_id": 42,
            "text": "see https://example.org now",
            "entities": [{"type": "bold", "offset": 0, "length": 3}],
        },
    )
    assert status == 200
    assert body["result"]["entities"] == [
        {"type": "bold", "offset": 0, "length": 3},
        {"type": "url", "offset": 4, "length": 19},
    ]
    message = await bot.send_message(42, "*not parsed*", parse_mode="MarkdownV2")
    assert message.text == "*not parsed*"


async def test_blocked_kicked_and_migrated_chats(
    fake_telegram: FakeTelegram, bot: Bot, dm: JSONDict, alice: JSONDict
) -> None:
    fake_telegram.block(42)
    with pytest.raises(TelegramForbiddenError, match="Forbidden: bot was blocked by the user"):
        await bot.send_message(42, "hi")
    fake_telegram.unblock(42)
    await bot.send_message(42, "hi again")

    fake_telegram.group(-5, "Kickers", supergroup=True)
    fake_telegram.block(-5, kicked=True)
    with pytest.raises(TelegramForbiddenError, match="bot was kicked from the supergroup chat"):
        await bot.send_message(-5, "hi")

    group = fake_telegram.group(-7, "Old group")
    fake_telegram.set_member(-7, 42, "creator")
    new_chat = fake_telegram.migrate(group, -1001234567890)
    assert new_chat == {"id": -1001234567890, "title": "Old group", "type": "supergroup"}
    with pytest.raises(TelegramMigrateToChat) as caught:
        await bot.send_message(-7, "hi")
    assert caught.value.migrate_to_chat_id == -1001234567890
    assert "group chat was upgraded to a supergroup chat" in caught.value.message
    await bot.send_message(new_chat["id"], "hello supergroup")
    updates = await bot.get_updates()
    goodbye, hello = (u.message for u in updates)
    assert goodbye is not None and hello is not None
    assert (goodbye.chat.id, goodbye.migrate_to_chat_id) == (-7, -1001234567890)
    assert goodbye.from_user is not None and goodbye.from_user.id == 42  # the creator upgraded
    assert (hello.chat.id, hello.migrate_from_chat_id) == (-1001234567890, -7)
    assert hello.sender_chat is not None and hello.sender_chat.id == -1001234567890


async def test_replies_nest_the_target_and_missing_targets_fail(
    fake_telegram: FakeTelegram, bot: Bot, dm: JSONDict, alice: JSONDict
) -> None:
    question = fake_telegram.send(dm, alice, "what time is it?")
    answer = await bot.send_message(42, "noon", reply_parameters=ReplyParameters(message_id=1))
    assert answer.reply_to_message is not None
    assert answer.reply_to_message.text == "what time is it?"
    assert answer.message_id == question["message_id"] + 1
    with pytest.raises(TelegramBadRequest, match="message to be replied not found"):
        await bot.send_message(42, "?", reply_parameters=ReplyParameters(message_id=99))
    lenient = ReplyParameters(message_id=99, allow_sending_without_reply=True)
    assert (await bot.send_message(42, "ok", reply_parameters=lenient)).reply_to_message is None
    status, body = await raw(
        fake_telegram, "sendMessage", json={"chat_id": 42, "text": "x", "reply_to_message_id": 1}
    )
    assert status == 200 and body["result"]["reply_to_message"]["message_id"] == 1

    followup = fake_telegram.send(dm, alice, "thanks", reply_to=fake_telegram.sent[0])
    assert followup["reply_to_message"]["from"]["id"] == fake_telegram.bot_id
    assert "reply_to_message" not in followup["reply_to_message"]  # one level only


async def test_forum_topics(fake_telegram: FakeTelegram, bot: Bot, alice: JSONDict) -> None:
    fake_telegram.privacy_mode = False
    forum = fake_telegram.group(-1009, "Forum", forum=True)
    topic = fake_telegram.topic(forum, "Support")
    message = fake_telegram.send(forum, alice, "help", thread_id=topic)
    assert message["message_thread_id"] == topic and message["is_topic_message"] is True
    assert message["reply_to_message"]["forum_topic_created"]["name"] == "Support"

    answer = await bot.send_message(-1009, "on it", message_thread_id=topic)
    assert answer.message_thread_id == topic and answer.is_topic_message is True
    elsewhere = await bot.send_message(-1009, "general")
    assert elsewhere.message_thread_id is None
    assert [m["text"] for m in fake_telegram.messages(-1009, thread_id=topic)] == ["on it"]
    assert len(fake_telegram.messages(-1009)) == 2
    with pytest.raises(TelegramBadRequest, match="message thread not found"):
        await bot.send_message(-1009, "lost", message_thread_id=777)
    await bot.send_chat_action(-1009, "typing", message_thread_id=topic)
    assert fake_telegram.actions[-1].message_thread_id == topic

    updates = await bot.get_updates()
    assert updates[0].message is not None and updates[0].message.forum_topic_created is not None
    assert updates[1].message is not None and updates[1].message.is_topic_message is True


# ------------------------------------------------------------ edits and deletes


async def test_edit_text_and_not_modified(
    fake_telegram: FakeTelegram, bot: Bot, dm: JSONDict
) -> None:
    sent = await bot.send_message(42, "<b>draft</b>", parse_mode="HTML")
    with pytest.raises(TelegramBadRequest, match="message is not modified: specified new message"):
        await bot.edit_message_text(
            "<b>draft</b>", chat_id=42, message_id=sent.message_id, parse_mode="HTML"
        )
    edited = await bot.edit_message_text("draft", chat_id=42, message_id=sent.message_id)
    assert isinstance(edited, Message) and edited.edit_date is not None
    assert edited.text == "draft" and not edited.entities  # plain now: entities differ
    await bot.edit_message_text("final answer", chat_id=42, message_id=sent.message_id)
    assert fake_telegram.sent[0]["text"] == "final answer"  # current state after edits
    history = fake_telegram.edits(42, sent.message_id)
    assert [c.params["text"] for c in history] == ["draft", "final answer"]
    with pytest.raises(TelegramBadRequest, match="Bad Request: message to edit not found"):
        await bot.edit_message_text("x", chat_id=42, message_id=99)
    with pytest.raises(TelegramBadRequest, match="can't parse entities"):
        await bot.edit_message_text(
            "<i>x", chat_id=42, message_id=sent.message_id, parse_mode="HTML"
        )


async def test_keyboard_counts_for_not_modified(
    fake_telegram: FakeTelegram, bot: Bot, dm: JSONDict
) -> None:
    keyboard = InlineKeyboardMarkup(
        inline_keyboard=[[InlineKeyboardButton(text="Go", callback_data="go")]]
    )
    sent = await bot.send_message(42, "pick", reply_markup=keyboard)
    assert sent.reply_markup is not None
    assert sent.reply_markup.model_dump() == keyboard.model_dump()
    edited = await bot.edit_message_text("pick", chat_id=42, message_id=sent.message_id)
    assert isinstance(edited, Message) and edited.reply_markup is None  # dropping it is a change
    with pytest.raises(TelegramBadRequest, match="message is not modified"):
        await bot.edit_message_reply_markup(chat_id=42, message_id=sent.message_id)
    with pytest.raises(TelegramBadRequest, match="BUTTON_DATA_INVALID"):
        big = InlineKeyboardButton(text="x", callback_data="x" * 65)
        await bot.send_message(42, "x", reply_markup=InlineKeyboardMarkup(inline_keyboard=[[big]]))


async def test_delete_message(fake_telegram: FakeTelegram, bot: Bot, dm: JSONDict) -> None:
    sent = await bot.send_message(42, "oops")
    assert await bot.delete_message(42, sent.message_id) is True
    assert fake_telegram.messages(42) == [] and fake_telegram.deleted == [(42, sent.message_id)]
    with pytest.raises(TelegramBadRequest, match="Bad Request: message to delete not found"):
        await bot.delete_message(42, sent.message_id)


# ------------------------------------------------------------- members and chats


async def test_chat_members_parse_into_aiogram_types(
    fake_telegram: FakeTelegram, bot: Bot, alice: JSONDict
) -> None:
    fake_telegram.group(-100, "Team", supergroup=True)
    bob = fake_telegram.user(43, "Bob")
    carol = fake_telegram.user(44, "Carol", last_name="C")
    dave = fake_telegram.user(45, "Dave")
    fake_telegram.set_member(-100, 42, "creator")
    fake_telegram.set_member(-100, 43, "administrator")
    fake_telegram.set_member(-100, 44, "member")
    fake_telegram.set_member(-100, fake_telegram.bot_id, "administrator")
    assert isinstance(await bot.get_chat_member(-100, 42), ChatMemberOwner)
    admin = await bot.get_chat_member(-100, 43)
    assert isinstance(admin, ChatMemberAdministrator) and admin.user.first_name == bob["first_name"]
    assert isinstance(await bot.get_chat_member(-100, 44), ChatMemberMember)
    assert isinstance(await bot.get_chat_member(-100, dave["id"]), ChatMemberLeft)
    assert carol["last_name"] == "C"
    admins = await bot.get_chat_administrators(-100)
    assert [(type(a).__name__, a.user.id) for a in admins] == [
        ("ChatMemberOwner", 42),
        ("ChatMemberAdministrator", 43),
        ("ChatMemberAdministrator", fake_telegram.bot_id),
    ]
    assert await bot.get_chat_member_count(-100) == 4
    with pytest.raises(TelegramBadRequest, match="user not found"):
        await bot.get_chat_member(-100, 999)
    chat = await bot.get_chat(-100)
    assert (chat.id, chat.type, chat.title) == (-100, "supergroup", "Team")


async def test_commands_per_scope_and_language(fake_telegram: FakeTelegram, bot: Bot) -> None:
    fake_telegram.group(-3, "G")
    await bot.set_my_commands([BotCommand(command="help", description="Show help")])
    await bot.set_my_commands(
        [BotCommand(command="reset", description="Forget")], scope=BotCommandScopeAllGroupChats()
    )
    await bot.set_my_commands(
        [BotCommand(command="hilfe", description="Hilfe")], language_code="de"
    )
    await bot.set_my_commands(
        [BotCommand(command="only", description="Here")], scope=BotCommandScopeChat(chat_id=-3)
    )
    assert set(fake_telegram.commands) == {
        "default",
        "all_group_chats",
        "default/de",
        '{"chat_id": -3, "type": "chat"}',
    }
    assert fake_telegram.commands_for("all_group_chats") == [
        {"command": "reset", "description": "Forget"}
    ]
    assert [c.command for c in await bot.get_my_commands()] == ["help"]
    assert [c.command for c in await bot.get_my_commands(language_code="de")] == ["hilfe"]
    await bot.delete_my_commands()
    assert await bot.get_my_commands() == []
    with pytest.raises(TelegramBadRequest, match="BOT_COMMAND_INVALID"):
        await bot.set_my_commands([BotCommand(command="Bad Command", description="x")])


async def test_chat_actions_are_recorded(
    fake_telegram: FakeTelegram, bot: Bot, dm: JSONDict
) -> None:
    assert await bot.send_chat_action(42, "typing") is True
    with pytest.raises(TelegramBadRequest, match="wrong parameter action"):
        await bot.send_chat_action(42, "dancing")
    assert [(a.chat_id, a.action) for a in fake_telegram.actions] == [(42, "typing")]


async def test_callback_queries(
    fake_telegram: FakeTelegram, bot: Bot, dm: JSONDict, alice: JSONDict
) -> None:
    keyboard = InlineKeyboardMarkup(
        inline_keyboard=[[InlineKeyboardButton(text="Go", callback_data="go")]]
    )
    await bot.send_message(42, "pick", reply_markup=keyboard)
    query = fake_telegram.press(fake_telegram.sent[0], alice, "go")
    [update] = await bot.get_updates()
    assert update.callback_query is not None and update.callback_query.data == "go"
    assert update.callback_query.message is not None
    assert await bot.answer_callback_query(query["id"], text="Done") is True
    assert fake_telegram.callback_answers[0]["text"] == "Done"
    with pytest.raises(TelegramBadRequest, match="query is too old"):
        await bot.answer_callback_query(query["id"])


# ------------------------------------------------------------------ fault injection


async def test_flood_gives_retry_after_and_skips_the_call(
    fake_telegram: FakeTelegram, bot: Bot, dm: JSONDict
) -> None:
    fake_telegram.flood("sendMessage", retry_after=3)
    with pytest.raises(TelegramRetryAfter) as caught:
        await bot.send_message(42, "spam")
    assert caught.value.retry_after == 3
    assert caught.value.message.endswith("Original description: Too Many Requests: retry after 3")
    assert fake_telegram.sent == []
    await bot.send_message(42, "later")
    assert [m["text"] for m in fake_telegram.sent] == ["later"]

    fake_telegram.flood("sendMessage", retry_after=5)
    status, body = await raw(fake_telegram, "sendMessage", json={"chat_id": 42, "text": "x"})
    assert (status, body) == (
        429,
        {
            "ok": False,
            "error_code": 429,
            "description": "Too Many Requests: retry after 5",
            "parameters": {"retry_after": 5},
        },
    )


async def test_fail_injects_any_error(fake_telegram: FakeTelegram, bot: Bot, dm: JSONDict) -> None:
    fake_telegram.fail("sendMessage", 502, "Bad Gateway", times=2)
    for _ in range(2):
        with pytest.raises(TelegramServerError, match="Bad Gateway"):
            await bot.send_message(42, "x")
    await bot.send_message(42, "x")
    assert [c.ok for c in fake_telegram.calls] == [False, False, True]


# ------------------------------------------------------------------ user messages


async def test_send_computes_utf16_entities(
    fake_telegram: FakeTelegram, bot: Bot, dm: JSONDict, alice: JSONDict
) -> None:
    message = fake_telegram.send(dm, alice, "😀 hi @parlour_bot")
    assert message["entities"] == [{"type": "mention", "offset": 6, "length": 12}]
    command = fake_telegram.send(dm, alice, "/ask@parlour_bot what is 2+2? see https://x.org/a.")
    assert command["entities"] == [
        {"type": "bot_command", "offset": 0, "length": 16},
        {"type": "url", "offset": 34, "length": 15},
    ]
    [first, _] = await bot.get_updates()
    assert first.message is not None and first.message.entities is not None
    mention = first.message.entities[0]
    assert mention.extract_from(first.message.text or "") == "@parlour_bot"


async def test_photo_caption_and_anonymous_admin(
    fake_telegram: FakeTelegram, bot: Bot, alice: JSONDict
) -> None:
    fake_telegram.privacy_mode = False
    group = fake_telegram.group(-200, "Photos", supergroup=True)
    photo = fake_telegram.send(group, alice, "look @alice", caption=True)
    assert "text" not in photo and photo["caption"] == "look @alice"
    assert photo["caption_entities"] == [{"type": "mention", "offset": 5, "length": 6}]
    anon = fake_telegram.send(group, alice, "announcement", anonymous_admin=True)
    assert anon["from"]["username"] == "GroupAnonymousBot" and anon["sender_chat"]["id"] == -200
    first, second = [u.message for u in await bot.get_updates()]
    assert first is not None and first.photo is not None and len(first.photo) == 3
    assert second is not None and second.sender_chat is not None


# ------------------------------------------------------------------ long polling


async def test_get_updates_long_polls_and_honours_offset(
    fake_telegram: FakeTelegram, bot: Bot, dm: JSONDict, alice: JSONDict
) -> None:
    started = time.monotonic()
    poll = asyncio.create_task(bot.get_updates(timeout=5))
    await asyncio.sleep(0.1)
    assert not poll.done()
    fake_telegram.send(dm, alice, "ping")
    [update] = await poll
    assert time.monotonic() - started < 2
    assert update.message is not None and update.message.text == "ping"
    assert [u.update_id for u in await bot.get_updates()] == [update.update_id]  # unconfirmed
    fake_telegram.send(dm, alice, "second")
    later = await bot.get_updates(offset=update.update_id + 1)
    assert [u.message.text for u in later if u.message] == ["second"]
    assert [u["update_id"] for u in fake_telegram.pending_updates] == [later[0].update_id]
    assert await bot.get_updates(offset=later[0].update_id + 1, timeout=0) == []


async def test_second_poller_terminates_the_first(fake_telegram: FakeTelegram, bot: Bot) -> None:
    first = asyncio.create_task(bot.get_updates(timeout=5))
    await asyncio.sleep(0.1)
    second = asyncio.create_task(bot.get_updates(timeout=0))
    with pytest.raises(TelegramConflictError, match="terminated by other getUpdates request"):
        await first
    assert await second == []


async def test_aiogram_polling_end_to_end(
    fake_telegram: FakeTelegram, bot: Bot, dm: JSONDict, alice: JSONDict
) -> None:
    dispatcher = Dispatcher()

    @dispatcher.message()
    async def echo(message: Message) -> None:
        await message.answer(f"echo: {message.text}")

    polling = asyncio.create_task(
        dispatcher.start_polling(
            bot, handle_signals=False, close_bot_session=False, polling_timeout=1
        )
    )
    try:
        fake_telegram.send(dm, alice, "hello")
        fake_telegram.send(dm, alice, "again")
        replies = await fake_telegram.wait_for_message(42, count=2)
        await fake_telegram.wait_idle(quiet=0.05)
    finally:
        await dispatcher.stop_polling()
        await polling
    assert [m["text"] for m in replies] == ["echo: hello", "echo: again"]
    assert all(m["from"]["id"] == fake_telegram.bot_id for m in replies)


async def test_take_updates_hands_over_what_a_poll_would_and_confirms_it(
    fake_telegram: FakeTelegram, bot: Bot, dm: JSONDict, alice: JSONDict
) -> None:
    fake_telegram.send(dm, alice, "one")
    fake_telegram.push_update({"chat_member": {"not": "subscribed"}})
    fake_telegram.send(dm, alice, "two")
    taken = fake_telegram.take_updates(["message"])
    assert [u["message"]["text"] for u in taken] == ["one", "two"]
    assert taken[0]["update_id"] < taken[1]["update_id"]
    assert fake_telegram.pending_updates == []  # confirmed, and the unwanted one dropped
    assert await bot.get_updates(timeout=0) == []
    assert fake_telegram.take_updates() == []
    await bot.set_webhook("http://127.0.0.1:9/hook")
    with pytest.raises(RuntimeError, match="webhook is active"):
        fake_telegram.take_updates()


async def test_wait_for_message_timeout_explains(
    fake_telegram: FakeTelegram, bot: Bot, dm: JSONDict
) -> None:
    await bot.send_message(42, "only one")
    with pytest.raises(AssertionError, match=r"2 bot message\(s\) in chat 42[\s\S]*only one"):
        await fake_telegram.wait_for_message(42, count=2, timeout=0.2)


# ---------------------------------------------------------------------- webhooks


class Receiver:
    """A tiny webhook endpoint that answers with scripted statuses and records requests."""

    def __init__(self, statuses: list[int] | None = None) -> None:
        self.statuses = list(statuses or [])
        self.requests: list[tuple[dict[str, str], JSONDict]] = []
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def __aenter__(self) -> Receiver:
        app = web.Application()
        app.router.add_post("/hook", self.handle)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}/hook"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()

    async def handle(self, request: web.Request) -> web.Response:
        self.requests.append((dict(request.headers), await request.json()))
        status = self.statuses.pop(0) if self.statuses else 200
        return web.json_response({}, status=status)


async def test_webhook_delivers_in_order_with_secret_and_retries(
    fake_telegram: FakeTelegram, bot: Bot, dm: JSONDict, alice: JSONDict
) -> None:
    fake_telegram.webhook_retry_delays = (0.01, 0.01, 0.01)
    async with Receiver([500, 503]) as receiver:
        assert await bot.set_webhook(receiver.url, secret_token="s3cret-token")
        with pytest.raises(
            TelegramConflictError, match="can't use getUpdates method while webhook"
        ):
            await bot.get_updates()
        fake_telegram.send(dm, alice, "one")
        fake_telegram.send(dm, alice, "two")
        await fake_telegram.wait_until(lambda: len(receiver.requests) == 4)
        info = await bot.get_webhook_info()
    assert [body["message"]["text"] for _, body in receiver.requests] == [
        "one",
        "one",
        "one",
        "two",
    ]
    assert {h["X-Telegram-Bot-Api-Secret-Token"] for h, _ in receiver.requests} == {"s3cret-token"}
    assert fake_telegram.webhook_statuses == [500, 503, 200, 200]
    assert info.url == receiver.url and info.pending_update_count == 0
    assert info.last_error_message == "Wrong response from the webhook: 503 Service Unavailable"
    assert await bot.delete_webhook()
    assert (await bot.get_webhook_info()).url == ""


async def test_webhook_gives_up_and_unreachable_is_recorded(
    fake_telegram: FakeTelegram, bot: Bot, dm: JSONDict, alice: JSONDict
) -> None:
    fake_telegram.webhook_retry_delays = (0.01,)
    async with Receiver([500, 500]) as receiver:
        await bot.set_webhook(receiver.url)
        fake_telegram.send(dm, alice, "doomed")
        await fake_telegram.wait_until(lambda: len(fake_telegram.webhook_deliveries) == 2)
        await fake_telegram.wait_until(lambda: not fake_telegram.pending_updates)
    assert "X-Telegram-Bot-Api-Secret-Token" not in receiver.requests[0][0]
    await bot.set_webhook(receiver.url)  # the receiver is gone now
    fake_telegram.send(dm, alice, "lost")
    await fake_telegram.wait_until(lambda: len(fake_telegram.webhook_deliveries) == 4)
    assert fake_telegram.webhook_statuses == [500, 500, None, None]
    assert (fake_telegram.webhook_deliveries[-1].error or "").startswith("Connection failed")


async def test_aiogram_webhook_end_to_end(
    fake_telegram: FakeTelegram, bot: Bot, dm: JSONDict, alice: JSONDict
) -> None:
    dispatcher = Dispatcher()

    @dispatcher.message()
    async def shout(message: Message) -> None:
        await message.answer((message.text or "").upper())

    app = web.Application()
    SimpleRequestHandler(dispatcher, bot, secret_token="right").register(app, path="/tg")
    runner = web.AppRunner(app)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        await bot.set_webhook(f"http://127.0.0.1:{runner.addresses[0][1]}/tg", secret_token="right")
        fake_telegram.send(dm, alice, "quiet")
        [reply] = await fake_telegram.wait_for_message(42)
        assert reply["text"] == "QUIET"
        forged = {"update_id": 1, "message": fake_telegram.sent[0]}
        assert await fake_telegram.deliver_raw(forged, secret="wrong") == 401
        assert await fake_telegram.deliver_raw(forged, secret=None) == 401
    finally:
        await runner.cleanup()
    assert fake_telegram.webhook_statuses == [200]


async def test_webhook_reply_in_response_body_is_executed(
    fake_telegram: FakeTelegram, bot: Bot, dm: JSONDict, alice: JSONDict
) -> None:
    dispatcher = Dispatcher()

    @dispatcher.message()
    async def answer_inline(message: Message) -> Any:
        return message.answer(f"<i>{message.text}</i>", parse_mode="HTML")  # not awaited

    app = web.Application()
    SimpleRequestHandler(dispatcher, bot, handle_in_background=False).register(app, path="/tg")
    runner = web.AppRunner(app)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        await bot.set_webhook(f"http://127.0.0.1:{runner.addresses[0][1]}/tg")
        fake_telegram.send(dm, alice, "inline")
        [reply] = await fake_telegram.wait_for_message(42)
    finally:
        await runner.cleanup()
    assert reply["text"] == "inline"
    assert reply["entities"] == [{"type": "italic", "offset": 0, "length": 6}]
    assert fake_telegram.calls[-1].method == "sendMessage"


# ---------------------------------------------------------- HTML parser, directly


def test_parse_html_entities_and_offsets() -> None:
    text, entities = parse_html(
        '<pre><code class="language-python">x = 1</code></pre>\n'
        '<a href="https://example.org">link</a> &lt;3 &foo; &#128512;'
        "<blockquote expandable>q</blockquote><tg-spoiler>s</tg-spoiler>"
    )
    assert text == "x = 1\nlink <3 &foo; 😀qs"
    assert entities == [
        {"type": "pre", "offset": 0, "length": 5, "language": "python"},
        {"type": "text_link", "offset": 6, "length": 4, "url": "https://example.org"},
        {"type": "expandable_blockquote", "offset": 22, "length": 1},
        {"type": "spoiler", "offset": 23, "length": 1},
    ]


def test_parse_html_error_text_is_exact() -> None:
    with pytest.raises(TelegramHTMLError) as caught:
        parse_html("hi <b>there")
    assert caught.value.description == (
        "Bad Request: can't parse entities: Can't find end tag corresponding to start tag \"b\""
    )


# ------------------------------------------------------------- control API and CLI


async def test_http_control_api(fake_telegram: FakeTelegram, bot: Bot) -> None:
    async with aiohttp.ClientSession() as http:
        payload = {"chat_id": 7, "user_id": 7, "first_name": "Eve", "text": "hi /start"}
        async with http.post(f"{fake_telegram.api_server}/_fake/send", json=payload) as response:
            sent = await response.json()
        assert sent["ok"] is True and sent["result"]["chat"]["type"] == "private"
        [update] = await bot.get_updates()
        assert update.message is not None and update.message.text == "hi /start"
        await bot.send_message(7, "welcome")
        async with http.get(f"{fake_telegram.api_server}/_fake/sent") as response:
            assert [m["text"] for m in await response.json()] == ["welcome"]
        async with http.get(f"{fake_telegram.api_server}/_fake/calls") as response:
            calls = await response.json()
    assert [c["method"] for c in calls] == ["getUpdates", "sendMessage"]
    assert calls[1]["params"]["text"] == "welcome" and calls[1]["ok"] is True


@pytest.mark.slow
async def test_cli_serves_until_sigterm() -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.testing.fake_telegram",
        "--port",
        "0",
        "--token",
        "77:cli",
        cwd=ROOT,
        stdout=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        line = (await asyncio.wait_for(proc.stdout.readline(), 20)).decode().strip()
        assert line.startswith("TELEGRAM_API_SERVER=http://127.0.0.1:")
        base = line.partition("=")[2]
        async with aiohttp.ClientSession() as http, http.get(f"{base}/bot77:cli/getMe") as response:
            assert (await response.json())["result"]["id"] == 77
    finally:
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 10) == 0


async def test_privacy_mode_limits_what_reaches_the_bot(
    fake_telegram: FakeTelegram, bot: Bot, alice: JSONDict
) -> None:
    tg = fake_telegram
    group = tg.group(-300, "Team", supergroup=True)
    tg.send(group, alice, "just chatting")
    tg.send(group, alice, "/weather@other_bot")
    mention = tg.send(group, alice, "😀 @Parlour_Bot hi")
    command = tg.send(group, alice, "/help")
    mine = await bot.send_message(-300, "an answer")
    tg.send(group, alice, "thanks", reply_to=tg.messages(-300)[-1])
    received = [u.message.text for u in await bot.get_updates() if u.message]
    assert received == [mention["text"], command["text"], "thanks"]
    assert mine.text == "an answer"
    tg.set_member(-300, tg.bot_id, "administrator")  # admins see everything
    tg.send(group, alice, "now you see me")
    updates = await bot.get_updates(offset=-1)
    assert updates[-1].message is not None and updates[-1].message.text == "now you see me"


# -- files: getFile and the download route ---------------------------------------------------


async def test_a_photo_is_fetched_with_get_file_and_the_file_route(
    fake_telegram: FakeTelegram, bot: Bot, dm: JSONDict, alice: JSONDict
) -> None:
    big, thumb = b"\xff\xd8\xff big photo", b"\xff\xd8\xff thumb"
    sent = fake_telegram.send_photo(dm, alice, big, "look @nobody", thumbnails=[thumb])
    (update,) = await bot.get_updates()
    message = update.message
    assert message is not None and message.photo is not None
    assert message.caption == "look @nobody" and message.caption_entities
    small, large = message.photo
    assert (large.width, large.height, large.file_size) == (1280, 960, len(big))
    assert (small.width, small.height) == (640, 480)
    assert sent["photo"][1]["file_id"] == large.file_id
    file = await bot.get_file(large.file_id)
    assert file.file_path is not None and file.file_path.startswith("photos/")
    assert file.file_size == len(big)
    downloaded = await bot.download_file(file.file_path)
    assert downloaded is not None and downloaded.read() == big
    assert fake_telegram.downloads == [file.file_path]
    assert (await bot.get_file(large.file_id)).file_path == file.file_path  # stable


async def test_voice_documents_and_audio_carry_their_fields(
    fake_telegram: FakeTelegram, bot: Bot, dm: JSONDict, alice: JSONDict
) -> None:
    fake_telegram.send_voice(dm, alice, b"OggS voice", duration=7)
    fake_telegram.send_document(dm, alice, b"\x89PNG doc", "chart.png", "image/png", "see")
    fake_telegram.send_audio(dm, alice, b"ID3 song", file_name="song.mp3")
    voice, document, audio = [u.message for u in await bot.get_updates()]
    assert voice is not None and voice.voice is not None
    assert (voice.voice.duration, voice.voice.mime_type) == (7, "audio/ogg")
    assert voice.caption is None and voice.text is None
    assert document is not None and document.document is not None
    assert (document.document.file_name, document.document.mime_type) == ("chart.png", "image/png")
    assert document.caption == "see"
    assert audio is not None and audio.audio is not None and audio.audio.file_name == "song.mp3"
    path = (await bot.get_file(voice.voice.file_id)).file_path
    assert path is not None and path.startswith("voice/") and path.endswith(".oga")
    data = await bot.download_file(path)
    assert data is not None and data.read() == b"OggS voice"


async def test_file_errors_are_telegrams(
    fake_telegram: FakeTelegram, bot: Bot, dm: JSONDict, alice: JSONDict
) -> None:
    with pytest.raises(TelegramBadRequest, match="invalid file_id"):
        await bot.get_file("no-such-file")
    huge = fake_telegram.send_document(dm, alice, bytes(20 * 1024 * 1024 + 1), "big.bin", "x/y")
    with pytest.raises(TelegramBadRequest, match="file is too big"):
        await bot.get_file(huge["document"]["file_id"])
    voice = fake_telegram.send_voice(dm, alice, b"OggS")
    path = (await bot.get_file(voice["voice"]["file_id"])).file_path
    async with aiohttp.ClientSession() as http:
        base = f"{fake_telegram.api_server}/file"
        async with http.get(f"{base}/bot1:wrong/{path}") as response:
            assert response.status == 401
        async with http.get(f"{base}/bot{fake_telegram.token}/voice/nothing.oga") as response:
            assert response.status == 404
    assert fake_telegram.downloads == []


async def test_privacy_mode_sees_a_captioned_mention_only(
    fake_telegram: FakeTelegram, bot: Bot, alice: JSONDict
) -> None:
    group = fake_telegram.group(-100, "Team")
    fake_telegram.send_photo(group, alice, b"\xff\xd8\xff one", "just a photo")
    fake_telegram.send_photo(group, alice, b"\xff\xd8\xff two", "@parlour_bot what is it?")
    (update,) = await bot.get_updates()
    assert update.message is not None and update.message.caption == "@parlour_bot what is it?"
