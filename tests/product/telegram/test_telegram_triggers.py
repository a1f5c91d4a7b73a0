"""Telegram messages -> ChatContext and trigger decisions: pure, over real aiogram types."""

from __future__ import annotations

from typing import Any

import pytest
from aiogram.types import Message, User

from adapters.telegram.normalise import normalise
from adapters.telegram.settings import GroupTrigger, telegram_settings
from adapters.telegram.triggers import Action, decide
from bot.config import settings_from_mapping
from bot.context import ChatType
from bot.errors import ConfigError

ME = User(id=42, is_bot=True, first_name="Parlour", username="parlour_bot")
ALICE = {"id": 7, "is_bot": False, "first_name": "Alice", "last_name": "Liddell"}
GROUP = {"id": -100, "type": "supergroup", "title": "Team"}
FORUM = {"id": -200, "type": "supergroup", "title": "Forum", "is_forum": True}
COMMANDS = {"help", "reset", "clear", "history", "scope", "ask"}


def utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def message(text: str, chat: dict[str, Any] = GROUP, **extra: Any) -> Message:
    entities = []
    for word in text.split():
        if word.startswith("@"):
            start = text.index(word)
            entities.append(
                {"type": "mention", "offset": utf16(text[:start]), "length": utf16(word)}
            )
    if text.startswith("/"):
        entities.append({"type": "bot_command", "offset": 0, "length": utf16(text.split()[0])})
    data: dict[str, Any] = {
        "message_id": 5,
        "date": 0,
        "chat": chat,
        "from": ALICE,
        "text": text,
        "entities": entities,
        **extra,
    }
    return Message.model_validate(data)


def bot_message(message_id: int = 3) -> dict[str, Any]:
    return {
        "message_id": message_id,
        "date": 0,
        "chat": GROUP,
        "from": ME.model_dump(exclude_none=True),
        "text": "earlier answer",
    }


def decision(msg: Message, trigger: GroupTrigger | None = None) -> tuple[Action, str]:
    d = decide(normalise(msg, ME), trigger or GroupTrigger(), COMMANDS)
    return d.action, d.text


def test_group_message_context() -> None:
    ctx = normalise(message("hi"), ME).ctx
    assert (ctx.platform, ctx.chat_id, ctx.chat_type) == ("telegram", "-100", ChatType.GROUP)
    assert (ctx.user_id, ctx.user_name, ctx.message_id) == ("7", "Alice Liddell", "5")
    assert ctx.thread_id is None and not ctx.is_admin


def test_private_chat_always_answers() -> None:
    private = {"id": 7, "type": "private", "first_name": "Alice"}
    assert decision(message("hello", private)) == (Action.ANSWER, "hello")
    assert normalise(message("x", private), ME).ctx.is_private


def test_mention_with_emoji_before_it_is_found_and_removed() -> None:
    msg = message("😀 hey @parlour_bot what is 2+2?")
    assert msg.entities and msg.entities[0].offset == 7  # UTF-16: the emoji counts two
    assert decision(msg) == (Action.ANSWER, "😀 hey what is 2+2?")


def test_mention_of_someone_else_is_overheard() -> None:
    assert decision(message("ask @bob about it")) == (Action.OVERHEAR, "ask @bob about it")


def test_reply_to_the_bot_answers() -> None:
    msg = message("why?", reply_to_message=bot_message())
    assert decision(msg) == (Action.ANSWER, "why?")
    assert normalise(msg, ME).ctx.reply_to_message_id == "3"


def test_mention_in_a_reply_to_someone_else_quotes_them() -> None:
    bob = {"message_id": 4, "date": 0, "chat": GROUP, "text": "the earth is flat"}
    bob["from"] = {"id": 8, "is_bot": False, "first_name": "Bob"}
    action, text = decision(message("@parlour_bot is this right?", reply_to_message=bob))
    assert action is Action.ANSWER
    assert text == '[replying to Bob: "the earth is flat"]\nis this right?'


def test_ask_command_and_commands_for_other_bots() -> None:
    assert decision(message("/ask what time is it")) == (Action.ANSWER, "what time is it")
    assert decision(message("/ask@parlour_bot why")) == (Action.ANSWER, "why")
    assert decision(message("/ask@other_bot why"))[0] is Action.IGNORE
    assert decision(message("/weather")) == (Action.IGNORE, "")  # someone else's command
    d = decide(normalise(message("/scope user"), ME), GroupTrigger(), COMMANDS)
    assert (d.action, d.command, d.text) == (Action.COMMAND, "scope", "user")


def test_triggers_can_be_switched_off_and_keywords_added() -> None:
    quiet = GroupTrigger(mention=False, ask_command=False, keep_context=False)
    assert decision(message("@parlour_bot hi"), quiet) == (Action.IGNORE, "")
    assert decision(message("/ask hi"), quiet) == (Action.IGNORE, "")
    keyed = GroupTrigger(keywords=("Parlour",))
    assert decision(message("hey parlour, help"), keyed) == (Action.ANSWER, "hey parlour, help")


def test_other_bots_are_ignored_but_anonymous_admins_are_admins() -> None:
    other = {"id": 9, "is_bot": True, "first_name": "Spam", "username": "spam_bot"}
    assert decision(message("@parlour_bot hi", **{"from": other}))[0] is Action.IGNORE
    anon = {
        "id": 1087968824,
        "is_bot": True,
        "first_name": "Group",
        "username": "GroupAnonymousBot",
    }
    msg = message("@parlour_bot hi", **{"from": anon, "sender_chat": GROUP})
    incoming = normalise(msg, ME)
    assert decision(msg)[0] is Action.ANSWER
    assert incoming.ctx.is_admin and incoming.ctx.user_name == "Team (admin)"


def test_forum_topics_are_threads() -> None:
    root = {"message_id": 10, "date": 0, "chat": FORUM, "from": ALICE}
    root["forum_topic_created"] = {"name": "Ideas", "icon_color": 0}
    msg = message(
        "@parlour_bot hi",
        FORUM,
        message_thread_id=10,
        is_topic_message=True,
        reply_to_message=root,
    )
    incoming = normalise(msg, ME)
    assert incoming.ctx.thread_id == "10"
    assert incoming.quoted is None and incoming.ctx.reply_to_message_id is None


def test_captions_count_as_text() -> None:
    msg = Message.model_validate(
        {
            "message_id": 1,
            "date": 0,
            "chat": GROUP,
            "from": ALICE,
            "photo": [{"file_id": "a", "file_unique_id": "b", "width": 1, "height": 1}],
            "caption": "@parlour_bot what is this?",
            "caption_entities": [{"type": "mention", "offset": 0, "length": 12}],
        }
    )
    assert decision(msg) == (Action.ANSWER, "what is this?")


def test_settings_name_the_field_and_hide_the_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TELEGRAM_BOT_TOKEN", raising=False)
    bad = settings_from_mapping({"telegram": {"enabled": True, "token": "not-a-token"}})
    with pytest.raises(ConfigError, match=r"telegram: .*does not look like a bot token") as err:
        telegram_settings(bad)
    assert "not-a-token" not in str(err.value)
    with pytest.raises(ConfigError, match="TELEGRAM_BOT_TOKEN"):
        telegram_settings(settings_from_mapping({"telegram": {"enabled": True}}))
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", "123:abc")
    config = telegram_settings(settings_from_mapping({"telegram": {"enabled": True}}))
    assert config.bot_token == "123:abc"
    hook = {"enabled": True, "mode": "webhook", "webhook": {"url": "ftp://x"}}
    with pytest.raises(ConfigError, match=r"telegram\.webhook"):
        telegram_settings(settings_from_mapping({"telegram": hook}))
    per_chat = {"chats": {"-100": {"mention": False}}}
    config = telegram_settings(settings_from_mapping({"telegram": per_chat}))
    assert not config.trigger_for(-100).mention and config.trigger_for(-5).mention


def test_updates_without_entities_still_find_mentions_and_commands() -> None:
    bare = Message.model_validate(
        {"message_id": 1, "date": 0, "chat": GROUP, "from": ALICE, "text": "hi 😀 @Parlour_Bot!"}
    )
    assert decision(bare) == (Action.ANSWER, "hi 😀 !")
    ask = Message.model_validate(
        {"message_id": 2, "date": 0, "chat": GROUP, "from": ALICE, "text": "/ask@parlour_bot why"}
    )
    assert decision(ask) == (Action.ANSWER, "why")
    email = Message.model_validate(
        {"message_id": 3, "date": 0, "chat": GROUP, "from": ALICE, "text": "me@parlour_bot.com"}
    )
    assert decision(email)[0] is Action.OVERHEAR


def test_paths_are_not_commands() -> None:
    private = {"id": 7, "type": "private", "first_name": "Alice"}
    for text in ("/usr/bin/python crashes", "/etc/nginx/nginx.conf: what is wrong?"):
        bare = Message.model_validate(
            {"message_id": 1, "date": 0, "chat": private, "from": ALICE, "text": text}
        )
        assert decision(bare) == (Action.ANSWER, text)
