"""Setting and cancelling a scheduled post is an admin's change, so it is in the chat's audit
trail with who made it: an admin's ``/schedule`` in a Telegram group (through the real adapter
on the fake Bot API, read back with ``python -m bot history audit``), an operator's request to
the admin API or the dashboard's form (named by the token, read back with
``GET /api/chats/{chat_key}/audit`` and on the chat's page). A refusal is not a change."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp
import pytest

from bot.testing.fake_llm import FakeLLM
from bot.testing.fake_telegram import FakeTelegram
from bot.values import AuditAction
from tests.conftest import AppFactory
from tests.http_harness import ADMIN_TOKEN, OTHER_ADMIN_TOKEN, logged_in, serve_http
from tests.product.schedules.test_schedule_command_telegram import SETUP, team
from tests.product.schedules.test_schedules_admin_api import (
    WEEKLY,
    call,
    csrf_of,
    known_chats,
    pending,
)
from tests.product.storage.test_history_cli import run, write_config
from tests.telegram_harness import fed_bot

LONG_PROMPT = (
    "summarise last week's discussion: the decisions, who owns what, and what is still open"
)
SHOWN = '"summarise last week\'s discussion: the decisions, who owns w…"'


async def test_an_admins_set_and_cancel_are_audited_and_history_audit_shows_them(
    make_app: AppFactory,
    fake_llm: FakeLLM,
    fake_telegram: FakeTelegram,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    tg = fake_telegram
    chat, admin, member = team(tg)
    async with fed_bot(make_app, tg, **SETUP) as fed:
        tg.send(chat, member, "/schedule every monday 09:00 | post something")  # refused
        tg.send(chat, admin, "/schedule every monday 09:00 Europe/Berln | hi")  # refused
        await fed.feed()
        tg.send(chat, admin, f"/schedule every monday 09:00 Europe/Berlin | {LONG_PROMPT}")
        await fed.feed()
        tg.send(chat, member, "/schedule cancel 1")  # refused: not an admin
        tg.send(chat, admin, "/schedule cancel 2")  # refused: no such post
        await fed.feed()
        tg.send(chat, admin, "/schedule cancel 1")
        said = [m["text"] for m in await fed.replies(chat["id"], count=6)]
        assert said[2].startswith("Scheduled post #1: every Monday at 09:00 (Europe/Berlin).")
        assert said[-1].startswith("Cancelled scheduled post #1")
        assert pending(fed.app) == []
        trail = await fed.app.store.audit("telegram:-200")
    assert [(e.action, e.actor_id, e.actor_name, e.detail) for e in trail] == [
        (
            AuditAction.SCHEDULE,
            "7",
            "Alice",
            f"set #1: every monday 09:00 Europe/Berlin: {SHOWN}",
        ),
        (
            AuditAction.SCHEDULE,
            "7",
            "Alice",
            f"cancelled #1: every monday 09:00 Europe/Berlin: {SHOWN}",
        ),
    ]

    config = write_config(tmp_path, fake_llm)
    code, out, err = await run(capsys, config, "history", "audit", "--chat", "telegram:-200")
    assert code == 0 and err.strip() == "2 audit entries in telegram:-200"
    header, first, second = out.splitlines()
    assert header.split() == ["when", "chat", "action", "who", "what"]
    assert "  schedule  Alice (7)  set #1: every monday 09:00 Europe/Berlin: " in first
    assert "  schedule  Alice (7)  cancelled #1: every monday 09:00 Europe/Berlin: " in second
    code, out, _ = await run(capsys, config, "history", "audit", "--json")
    records = [json.loads(line) for line in out.splitlines()]
    assert [(r["action"], r["actor_id"], r["chat"]) for r in records] == [
        ("schedule", "7", "telegram:-200"),
        ("schedule", "7", "telegram:-200"),
    ]


async def audit_of(http: aiohttp.ClientSession, chat_key: str) -> list[dict[str, Any]]:
    """The chat's trail through the admin API, oldest first."""
    entries = await call(http, "GET", f"/api/chats/{quote(chat_key, safe='')}/audit", 200)
    return list(reversed(entries["entries"]))


async def test_the_api_and_the_dashboard_audit_in_the_tokens_name(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    night = {"Authorization": f"Bearer {OTHER_ADMIN_TOKEN}"}
    async with serve_http(make_app) as served, aiohttp.ClientSession(served.url) as http:
        app = served.app
        await known_chats(app, fake_llm)
        body = {**WEEKLY, "prompt": "summarise\nthe week", "thread_id": 42}
        async with http.post("/api/schedules", json=body, headers=night) as r:
            assert r.status == 201
        refused = {**WEEKLY, "schedule": "every monday 09:00 Mars/Base", "prompt": "hi"}
        await call(http, "POST", "/api/schedules", 400, refused)  # nothing set: no entry
        await call(http, "DELETE", "/api/schedules/1", 204)  # by ops, not night
        await call(http, "DELETE", "/api/schedules/1", 404)  # gone: no second entry

        async with await logged_in(served) as page:  # the dashboard logs in as ops
            csrf = await csrf_of(page, "/schedules")
            form = {**WEEKLY, "schedule": "daily 08:30 UTC", "prompt": "a question", "csrf": csrf}
            async with page.post("/schedules", data=form) as r:
                assert r.status == 200 and "Scheduled post #2 created." in await r.text()
            async with page.post("/schedules/2/cancel", data={"csrf": csrf}) as r:
                assert "Scheduled post cancelled." in await r.text()
            async with page.get("/chats/telegram:-100") as r:  # the chat's page shows the trail
                shown = await r.text()
            assert 'set #2: every day 08:30 UTC: "a question"' in shown.replace("&#34;", '"')
        assert pending(app) == []

        entries = await audit_of(http, "telegram:-100")
    assert [
        (e["action"], e["actor_id"], e["actor_name"], e["actor_kind"], e["detail"]) for e in entries
    ] == [
        (
            "schedule",
            "http:night",
            "http:night",
            "token",
            'set #1 in thread 42: every monday 09:00 Europe/Berlin: "summarise the week"',
        ),
        (
            "schedule",
            "http:ops",
            "http:ops",
            "token",
            'cancelled #1 in thread 42: every monday 09:00 Europe/Berlin: "summarise the week"',
        ),
        ("schedule", "http:ops", "http:ops", "token", 'set #2: every day 08:30 UTC: "a question"'),
        (
            "schedule",
            "http:ops",
            "http:ops",
            "token",
            'cancelled #2: every day 08:30 UTC: "a question"',
        ),
    ]
    assert ADMIN_TOKEN not in str(entries) and OTHER_ADMIN_TOKEN not in str(entries)
