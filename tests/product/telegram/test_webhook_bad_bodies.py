"""Webhook bodies no Telegram sends, with the right secret (issue 25): an ``update_id`` past
64 bits, of the wrong type, or JSON nested past the recursion limit. Each is a 400 before it
reaches the inbox (SQLite or PostgreSQL), never a 500 with a traceback; real updates go on."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest

from adapters.telegram.webhook import SECRET_HEADER
from bot.app import App
from bot.cli.storage_copy import portable
from bot.storage.portable import TABLES
from bot.testing.fake_llm import FakeLLM
from bot.testing.fake_telegram import FakeTelegram
from tests.conftest import AppFactory
from tests.telegram_harness import free_port, running_bot

SECRET = "s3cret-value"
BIGGEST = 2**63 - 1  # what both backends' inbox keeps (SQLite INTEGER, PostgreSQL bigint)


def update(update_id: str, chat: dict[str, Any], text: str, message_id: int = 900) -> str:
    """An update's JSON text with ``update_id`` spelled exactly as given."""
    message = {
        "message_id": message_id,
        "date": int(time.time()),
        "chat": chat,
        "from": {"id": chat["id"], "is_bot": False, "first_name": "Alice"},
        "text": text,
    }
    return f'{{"update_id": {update_id}, "message": {json.dumps(message)}}}'


def refused(chat: dict[str, Any]) -> dict[str, str | bytes]:
    """Bodies Telegram never posts, by what is wrong with them."""
    ids = {
        "1e999": "1e999",
        "-1e999": "-1e999",
        "10^29": str(10**29),
        "2^63": str(2**63),
        "-2^63-1": str(-(2**63) - 1),
        "true": "true",
        "false": "false",
        "a string": '"5"',
        "a float": "5.0",
        "null": "null",
        "a list": "[5]",
        "an object": '{"id": 5}',
        "NaN": "NaN",
        "Infinity": "Infinity",
        "5000 digits": "9" * 5000,
    }
    deep_object = '{"a": ' * 50_000 + "1" + "}" * 50_000
    return {
        **{f"update_id {name}": update(value, chat, "never stored") for name, value in ids.items()},
        "no update_id": '{"message": {}}',
        "nested 100000 deep": "[" * 100_000 + "]" * 100_000,
        "a message nested 50000 deep": '{"update_id": 5, "message": ' + deep_object + "}",
        "an array": "[1, 2]",
        "a number": "5",
        "not UTF-8": b'{"update_id": 5, "message": {"text": "\xff"}}',
        "empty": "",
    }


async def inbox_ids(store: Any) -> list[int]:
    [table] = [t for t in TABLES if t.name == "inbox"]
    rows = await portable(store).read(table, None, 1000)
    return sorted(int(row[table.columns.index("update_id")]) for row in rows)


@dataclass
class Hook:
    app: App
    http: aiohttp.ClientSession
    url: str
    chat: dict[str, Any]

    async def post(self, body: str | bytes) -> tuple[int, Any]:
        headers = {SECRET_HEADER: SECRET, "Content-Type": "application/json"}
        async with self.http.post(self.url, data=body, headers=headers) as r:
            text = await r.text()
        return r.status, json.loads(text) if r.content_type == "application/json" else text


@asynccontextmanager
async def webhook_bot(make_app: AppFactory, tg: FakeTelegram) -> AsyncIterator[Hook]:
    """The bot in webhook mode, and a client posting to it with the right secret."""
    chat = tg.private_chat(tg.user(7, "Alice"))
    port = free_port()
    url = f"http://127.0.0.1:{port}/hook"
    webhook = {"url": url, "path": "/hook", "listen_host": "127.0.0.1", "listen_port": port}
    section = {"mode": "webhook", "webhook": {**webhook, "secret_token": SECRET}}
    async with (
        running_bot(make_app, tg, telegram=section) as (app, _),
        aiohttp.ClientSession() as http,
    ):
        yield Hook(app, http, url, chat)


def noisy(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


async def test_a_webhook_body_no_telegram_sends_is_a_400_and_never_stored(
    make_app: AppFactory,
    fake_llm: FakeLLM,
    fake_telegram: FakeTelegram,
    caplog: pytest.LogCaptureFixture,
) -> None:
    tg = fake_telegram
    async with webhook_bot(make_app, tg) as hook:
        answers = {name: await hook.post(body) for name, body in refused(hook.chat).items()}
        bad_request = (400, {"ok": False, "description": "Bad Request"})
        assert {name: a for name, a in answers.items() if a != bad_request} == {}
        assert await inbox_ids(hook.app.store) == []
        # the largest id the inbox keeps is a real update: stored, answered, once
        assert (await hook.post(update(str(BIGGEST), hook.chat, "edge")))[0] == 200
        await tg.wait_for_message(hook.chat["id"], timeout=8)
        assert (await hook.post(update(str(BIGGEST), hook.chat, "edge")))[0] == 200  # again
        assert await inbox_ids(hook.app.store) == [BIGGEST]
    assert [m["text"] for m in tg.messages(hook.chat["id"])] == ["echo: edge"]
    assert noisy(caplog) == []


async def test_an_edit_with_half_a_utf16_pair_is_stored_not_a_500(
    make_app: AppFactory,
    fake_llm: FakeLLM,
    fake_telegram: FakeTelegram,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Telegram never sends a lone surrogate, but ``"\\ud800"`` is JSON: the edit must not
    fail the inbox's insert on either backend."""
    async with webhook_bot(make_app, fake_telegram) as hook:
        edit = update("77", hook.chat, "x").replace('"message"', '"edited_message"')
        edit = edit.replace('"text": "x"', '"text": "half \\ud800 a pair", "edit_date": 5')
        assert (await hook.post(edit))[0] == 200
        assert await inbox_ids(hook.app.store) == [77]
    assert noisy(caplog) == []
