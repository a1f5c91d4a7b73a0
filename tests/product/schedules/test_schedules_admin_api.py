"""Scheduled posts in the admin API and on the dashboard: real requests against the running
server, checked against what the scheduler holds and what the chat's own ``/schedule`` lists."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import aiohttp

from bot.app import App
from bot.scheduling.kinds import SCHEDULED_POSTS_KIND
from bot.testing.fake_llm import FakeLLM, reply
from tests.conftest import AppFactory, group, private
from tests.http_harness import ADMIN_TOKEN, CHAT_TOKEN, logged_in, serve_http
from tests.product.schedules.test_schedule_command_telegram import soon, until

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
WEEKLY = {"chat_key": "telegram:-100", "schedule": "every monday 09:00 Europe/Berlin"}


def pending(app: App) -> list[str]:
    assert app.scheduler is not None
    return [job.job_id for job in app.scheduler.pending(SCHEDULED_POSTS_KIND)]


async def call(
    http: aiohttp.ClientSession, method: str, path: str, status: int, body: Any = None, **kw: Any
) -> Any:
    async with http.request(method, path, json=body, headers=ADMIN, **kw) as r:
        assert r.status == status, await r.text()
        return None if status == 204 else await r.json()


class Posts:
    """The platform's sender: what the bot posted unasked."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str | None, str]] = []

    async def send_text(self, chat_id: str, thread_id: str | None, text: str) -> None:
        self.sent.append((chat_id, thread_id, text))


async def known_chats(app: App, fake_llm: FakeLLM) -> None:
    """A group and a private chat the bot has talked in (the directory knows them)."""
    fake_llm.script(reply("hello"), reply("hi"))
    await app.service.chat(group("1", "Alice"), "we ship on Friday")
    await app.service.chat(private("1", "Alice"), "psst")


async def test_create_list_and_cancel_through_the_api(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with serve_http(make_app) as served, aiohttp.ClientSession(served.url) as http:
        app = served.app
        await known_chats(app, fake_llm)
        made = await call(http, "POST", "/api/schedules", 201, {**WEEKLY, "prompt": "summarise"})
        assert (made["id"], made["chat_key"], made["thread_id"]) == (1, "telegram:-100", None)
        assert made["schedule"] == "every Monday at 09:00 (Europe/Berlin)"
        assert made["rule"] == "every monday 09:00 Europe/Berlin"
        assert (made["recurring"], made["timezone"]) == (True, "Europe/Berlin")
        assert (made["created_by"], made["prompt"]) == ("http:ops", "summarise")
        local = datetime.fromisoformat(made["next_run"]).astimezone(ZoneInfo("Europe/Berlin"))
        assert (local.weekday(), local.hour, local.minute) == (0, 9, 0)
        assert pending(app) == ["schedules:1"]

        listed = await call(http, "GET", "/api/schedules", 200)
        assert listed == {"schedules": [made]}
        assert (await call(http, "GET", "/api/schedules?chat=telegram:-100", 200)) == listed
        assert (await call(http, "GET", "/api/schedules?chat=telegram:9", 200))["schedules"] == []
        error = await call(http, "GET", "/api/schedules?chat=nokey", 400)
        assert error["error"]["code"] == "invalid_parameter"

        # the chat's own command lists the same post, and may cancel it
        admin_here = replace(group("1", "Alice"), is_admin=True)
        shown = await app.commands.handle(admin_here, "schedule", "list")
        assert "#1 every Monday at 09:00 (Europe/Berlin)" in shown.text

        await call(http, "DELETE", "/api/schedules/1", 204)
        assert pending(app) == []
        missing = await call(http, "DELETE", "/api/schedules/1", 404)
        assert missing["error"]["code"] == "not_found"
        await call(http, "DELETE", "/api/schedules/abc", 404)
        await call(http, "DELETE", "/api/schedules/99999999999999999999999", 404)


async def test_a_refused_schedule_is_a_400_saying_why_and_schedules_nothing(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    refusals = [
        ({**WEEKLY, "schedule": "every monday 09:00 Europe/Berln"}, "Unknown time zone"),
        ({**WEEKLY, "schedule": "every monday 9.30"}, "'9.30' is not a time of day"),
        ({**WEEKLY, "schedule": "once 2021-06-01 12:00"}, "has already passed"),
        ({**WEEKLY, "chat_key": "telegram:-999"}, "No chat telegram:-999 is known"),
        ({**WEEKLY, "chat_key": "telegram:1"}, "Scheduled posts are for group chats"),
        ({**WEEKLY, "prompt": "x" * 2001}, "That prompt is 2,001 characters; the limit is 2,000"),
    ]
    malformed = [
        [1, 2],
        {**WEEKLY},  # no prompt
        {**WEEKLY, "prompt": "hi", "extra": 1},
        {**WEEKLY, "prompt": "hi", "chat_key": "nokey"},
        {**WEEKLY, "prompt": "hi", "thread_id": True},
        {**WEEKLY, "prompt": 5},
    ]
    async with serve_http(make_app) as served, aiohttp.ClientSession(served.url) as http:
        await known_chats(served.app, fake_llm)
        for body, told in refusals:
            body.setdefault("prompt", "summarise")
            error = (await call(http, "POST", "/api/schedules", 400, body))["error"]
            assert error["code"] == "invalid_schedule" and told in error["message"], error
        for body in malformed:
            error = (await call(http, "POST", "/api/schedules", 400, body))["error"]
            assert error["code"] == "invalid_parameter", error
        async with http.post("/api/schedules", data=b"{not json", headers=ADMIN) as r:
            assert r.status == 400
        body = {**WEEKLY, "prompt": "hi"}
        async with http.post("/api/schedules", json=body) as r:
            assert r.status == 401
        async with http.post(
            "/api/schedules", json=body, headers={"Authorization": f"Bearer {CHAT_TOKEN}"}
        ) as r:
            assert r.status == 403
        assert pending(served.app) == []


async def test_a_post_set_through_the_api_runs_and_is_posted_to_its_thread(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with serve_http(make_app) as served, aiohttp.ClientSession(served.url) as http:
        app = served.app
        posts = Posts()
        app.outbound.register("telegram", posts)
        await known_chats(app, fake_llm)
        fake_llm.script(reply("Weekly digest: Friday ship."))
        body = {"chat_key": "telegram:-100", "schedule": soon(), "prompt": "digest"}
        await call(http, "POST", "/api/schedules", 201, {**body, "thread_id": 42})
        await until(lambda: posts.sent)
        assert posts.sent == [("-100", "42", "Weekly digest: Friday ship.")]
        assert "digest" in str(fake_llm.chat_requests[-1].json["messages"][-1]["content"])
        (listed,) = (await call(http, "GET", "/api/schedules", 200))["schedules"]
        next_run = datetime.fromisoformat(listed["next_run"])
        assert next_run > datetime.now(UTC) + timedelta(days=6)


async def csrf_of(http: aiohttp.ClientSession, path: str) -> str:
    async with http.get(path) as r:
        found = re.search(r'name="csrf" value="([^"]+)"', await r.text())
    assert found
    return found.group(1)


async def test_the_dashboard_page_lists_creates_with_csrf_and_cancels(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with serve_http(make_app) as served:
        app = served.app
        await known_chats(app, fake_llm)
        async with await logged_in(served) as http:
            async with http.get("/schedules") as r:
                page = await r.text()
            assert "No posts are scheduled." in page
            assert '<option value="telegram:-100">' in page  # a group the form offers
            assert '<option value="telegram:1">' not in page  # never a private chat
            form = {**WEEKLY, "prompt": "summarise the week"}
            async with http.post("/schedules", data=form, allow_redirects=False) as r:
                assert r.status == 403  # no CSRF field
            csrf = await csrf_of(http, "/schedules")

            bad = {**form, "schedule": "every monday 09:00 Mars/Base", "csrf": csrf}
            async with http.post("/schedules", data=bad) as r:
                assert r.status == 400
                page = await r.text()
            assert "Not scheduled: Unknown time zone &#39;Mars/Base&#39;" in page
            assert 'value="every monday 09:00 Mars/Base"' in page  # what was typed stays
            assert pending(app) == []

            async with http.post("/schedules", data={**form, "csrf": csrf}) as r:
                assert r.status == 200 and str(r.url).endswith("/schedules?done=created&id=1")
                page = await r.text()
            assert "Scheduled post #1 created." in page
            assert "every Monday at 09:00 (Europe/Berlin)" in page
            assert "summarise the week" in page and 'action="/schedules/1/cancel"' in page
            assert pending(app) == ["schedules:1"]
            (job,) = app.scheduler.pending(SCHEDULED_POSTS_KIND) if app.scheduler else []
            assert job.payload["created_by"] == "http:ops"

            async with http.post("/schedules/1/cancel", data={"csrf": csrf}) as r:
                page = await r.text()
            assert "Scheduled post cancelled." in page and "summarise the week" not in page
            assert pending(app) == []
            async with http.post("/schedules/1/cancel", data={"csrf": csrf}) as r:
                assert r.status == 404


async def test_with_schedules_off_nothing_can_be_scheduled(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with serve_http(make_app, schedules={"enabled": False}) as served:
        await known_chats(served.app, fake_llm)
        async with aiohttp.ClientSession(served.url) as http:
            assert (await call(http, "GET", "/api/schedules", 200)) == {"schedules": []}
            body = {**WEEKLY, "prompt": "hi"}
            error = (await call(http, "POST", "/api/schedules", 404, body))["error"]
            assert error["code"] == "schedules_off"
        async with await logged_in(served) as http, http.get("/schedules") as r:
            assert "Scheduled posts are off" in await r.text()
