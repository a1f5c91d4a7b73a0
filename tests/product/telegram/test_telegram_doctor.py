"""Telegram's doctor rows (aiogram against the fake Bot API) and the same checks logged at
WARNING when the adapter starts."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer

from adapters.telegram import diagnose
from bot.doctor import Check, exit_code
from bot.testing.fake_llm import FakeLLM
from bot.testing.fake_telegram import FakeTelegram
from tests.conftest import AppFactory, make_settings
from tests.telegram_harness import running_bot, telegram_section

TEAM = -100123


@pytest.fixture
async def bot(fake_telegram: FakeTelegram) -> AsyncIterator[Bot]:
    session = AiohttpSession(api=TelegramAPIServer.from_base(fake_telegram.api_server))
    client = Bot(fake_telegram.token, session=session)
    yield client
    await client.session.close()


async def rows_for(
    fake_llm: FakeLLM, tg: FakeTelegram, tmp_path: Path, **telegram: Any
) -> dict[str, Check]:
    settings = make_settings(
        fake_llm,
        tmp_path,
        telegram=telegram_section(tg, **telegram),
        access={"allow": [f"telegram:{TEAM}", "telegram:42", "*:private"]},
    )
    return {check.name: check for check in await diagnose(settings)}


async def test_a_healthy_bot_passes(
    fake_llm: FakeLLM, fake_telegram: FakeTelegram, tmp_path: Path
) -> None:
    tg = fake_telegram
    tg.group(TEAM, "Team", supergroup=True)
    tg.set_member(TEAM, tg.bot_id, "administrator")
    rows = await rows_for(fake_llm, tg, tmp_path)
    # telegram:42 is a person's private chat: not a group to be admin in
    assert list(rows) == [
        "telegram token",
        "telegram privacy mode",
        f"telegram chat {TEAM}",
        "telegram webhook",
    ]
    assert rows["telegram token"].detail == f"@parlour_bot (id {tg.bot_id})"
    assert rows[f"telegram chat {TEAM}"].detail == "'Team': the bot is an admin"
    assert rows["telegram webhook"].detail == "none set (polling); 0 updates waiting"
    assert rows["telegram privacy mode"].status == "warn"  # on, as for a new BotFather bot
    assert exit_code(list(rows.values())) == 0
    assert [c.method for c in tg.calls] == [
        "getMe",
        "getChat",
        "getChatMember",
        "getWebhookInfo",
    ]
    [member] = [c for c in tg.calls if c.method == "getChatMember"]
    assert member.params["user_id"] in (tg.bot_id, str(tg.bot_id))


async def test_a_wrong_token_is_named_as_rejected(
    fake_llm: FakeLLM, fake_telegram: FakeTelegram, tmp_path: Path
) -> None:
    rows = await rows_for(fake_llm, fake_telegram, tmp_path, token="123456:not-the-real-one")
    [token] = rows.values()
    assert token.status == "FAIL"
    assert token.detail == "the bot token was rejected by Telegram (401 Unauthorized)"
    assert "BotFather" in token.fix
    assert "not-the-real-one" not in token.detail + token.fix


async def test_each_of_several_bots_has_its_token_checked(
    fake_llm: FakeLLM, fake_telegram: FakeTelegram, tmp_path: Path
) -> None:
    tg = fake_telegram
    async with FakeTelegram("654321:TEST-helper", bot_username="helper_bot") as helper:
        bots = [
            {"name": "helper", "token": helper.token, "api_server": helper.api_server},
            {"name": "gone", "token": "777:TEST-revoked", "api_server": helper.api_server},
        ]
        rows = await rows_for(fake_llm, tg, tmp_path, bots=bots)
    assert rows["telegram token"].status == "ok"
    assert rows["telegram.helper token"].detail == "@helper_bot (id 654321)"
    assert rows["telegram.helper privacy mode"].status == "warn"  # on: a new BotFather bot
    assert rows["telegram.gone token"].status == "FAIL"  # the fake knows only its own token
    assert "TEST-revoked" not in rows["telegram.gone token"].detail
    assert "the token of telegram.bots 'gone'" in rows["telegram.gone token"].fix


async def test_privacy_mode_on_is_a_warning_with_the_botfather_fix(
    fake_llm: FakeLLM, fake_telegram: FakeTelegram, tmp_path: Path
) -> None:
    rows = await rows_for(fake_llm, fake_telegram, tmp_path, group_trigger={"keywords": ["bot"]})
    privacy = rows["telegram privacy mode"]
    assert privacy.status == "warn"
    assert "sees only commands, @mentions and replies" in privacy.detail
    assert privacy.detail.endswith(
        "; keyword triggers and group context (keep_context) need every message"
    )
    assert privacy.fix.startswith("BotFather: /setprivacy")

    fake_telegram.privacy_mode = False
    rows = await rows_for(fake_llm, fake_telegram, tmp_path)
    assert rows["telegram privacy mode"].ok


async def test_not_admin_in_a_configured_group_fails_when_its_trigger_needs_every_message(
    fake_llm: FakeLLM, fake_telegram: FakeTelegram, tmp_path: Path
) -> None:
    tg = fake_telegram
    tg.group(TEAM, "Team", supergroup=True)  # the bot is a plain member; privacy mode is on
    rows = await rows_for(fake_llm, tg, tmp_path)
    chat = rows[f"telegram chat {TEAM}"]
    assert chat.status == "FAIL"
    assert "not an admin and privacy mode is on" in chat.detail and "keep_context" in chat.detail
    assert chat.fix.startswith("make @parlour_bot an admin of this chat")
    assert exit_code(list(rows.values())) == 1

    # Only mentions and replies wanted there: a member is enough.
    chats = {str(TEAM): {"keep_context": False}}
    rows = await rows_for(fake_llm, tg, tmp_path, chats=chats)
    assert rows[f"telegram chat {TEAM}"].ok


async def test_a_chat_named_by_a_chats_preset_is_checked(
    fake_llm: FakeLLM, fake_telegram: FakeTelegram, tmp_path: Path
) -> None:
    tg = fake_telegram
    tg.group(-100777, "Book club", supergroup=True)  # not on the allow list, only in a preset
    settings = make_settings(
        fake_llm,
        tmp_path,
        telegram=telegram_section(tg),
        chats=[{"match": ["telegram:-100777", "telegram:*"], "system_prompt": "Talk books."}],
    )
    rows = {check.name: check for check in await diagnose(settings)}
    assert "telegram chat -100777" in rows  # the wildcard names no chat
    assert [name for name in rows if name.startswith("telegram chat")] == ["telegram chat -100777"]


async def test_a_configured_chat_the_bot_is_not_in_fails(
    fake_llm: FakeLLM, fake_telegram: FakeTelegram, tmp_path: Path
) -> None:
    rows = await rows_for(fake_llm, fake_telegram, tmp_path)  # -100123 was never created
    chat = rows[f"telegram chat {TEAM}"]
    assert chat.status == "FAIL" and "chat not found" in chat.detail
    assert chat.fix.startswith("add @parlour_bot to the chat")


async def test_a_webhook_delivery_error_fails_with_telegrams_message(
    fake_llm: FakeLLM, fake_telegram: FakeTelegram, tmp_path: Path, bot: Bot
) -> None:
    tg = fake_telegram
    tg.webhook_retry_delays = ()  # one attempt per update
    url = "http://127.0.0.1:9/telegram/webhook"  # nothing listens on the discard port
    await bot.set_webhook(url)
    alice = tg.user(7, "Alice")
    tg.send(tg.private_chat(alice), alice, "anyone there?")
    await tg.wait_until(lambda: bool(tg.webhook_deliveries))
    rows = await rows_for(
        fake_llm, tg, tmp_path, mode="webhook", webhook={"url": url, "listen_port": 0}
    )
    hook = rows["telegram webhook"]
    assert hook.status == "FAIL"
    assert hook.detail.startswith(f"{url}: last delivery error ")
    assert "Connection failed" in hook.detail
    assert "telegram.webhook.url" in hook.fix

    rows = await rows_for(fake_llm, tg, tmp_path)  # polling while a webhook is set
    assert rows["telegram webhook"].status == "warn"
    assert "polling deletes it" in rows["telegram webhook"].fix


async def test_run_logs_the_same_problems_at_warning_on_start(
    make_app: AppFactory,
    fake_llm: FakeLLM,
    fake_telegram: FakeTelegram,
    caplog: pytest.LogCaptureFixture,
) -> None:
    tg = fake_telegram
    tg.group(TEAM, "Team", supergroup=True)
    caplog.set_level(logging.INFO, logger="adapters.telegram")
    async with running_bot(make_app, tg, access={"allow": [f"telegram:{TEAM}"]}):
        pass
    warnings = [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and r.name == "adapters.telegram.adapter"
    ]
    assert any(m.startswith("telegram: telegram privacy mode: on:") for m in warnings), warnings
    assert any(
        m.startswith(f"telegram: telegram chat {TEAM}: 'Team': the bot is not an admin")
        and "(fix: make @parlour_bot an admin" in m
        for m in warnings
    ), warnings
    assert not any("webhook" in m for m in warnings)  # none set: nothing to say
    assert any("telegram bot @parlour_bot" in r.getMessage() for r in caplog.records)
