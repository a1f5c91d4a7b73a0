"""The admin API's usage, plugins, MCP and reminders routes, and the OpenAPI document: real
requests against the running server, checked against what the bot stored and scheduled."""

from __future__ import annotations

import logging
import re
from typing import Any

import aiohttp
import pytest

from adapters.http.server import build_web_app
from bot.scheduling.scheduler import REMINDERS_KIND
from bot.testing.fake_llm import FakeLLM, reply, tool_calls
from tests.conftest import AppFactory, group, private
from tests.http_harness import ADMIN_TOKEN, CHAT_TOKEN, OTHER_ADMIN_TOKEN, serve_http
from tests.mcp_harness import stdio_server

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
READY = 30.0  # seconds an MCP server may take to start on a loaded machine


async def get(http: aiohttp.ClientSession, path: str, status: int = 200) -> Any:
    async with http.get(path, headers=ADMIN) as r:
        assert r.status == status, await r.text()
        assert r.content_type == "application/json"
        return await r.json()


async def test_usage_per_day_chat_and_user_with_cached_tokens(
    make_app: AppFactory, fake_llm: FakeLLM, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with serve_http(make_app) as served, aiohttp.ClientSession(served.url) as http:
        fake_llm.script(
            reply("one", usage={"prompt_tokens": 100, "completion_tokens": 5, "cached_tokens": 60}),
            reply("two", usage={"prompt_tokens": 50, "completion_tokens": 3, "cached_tokens": 0}),
            reply("three", usage={"prompt_tokens": 10, "completion_tokens": 1, "cached_tokens": 0}),
        )
        await served.app.service.chat(group("1", "Alice"), "hi")
        await served.app.service.chat(group("2", "Bob"), "hello")
        await served.app.service.chat(private("1", "Alice"), "psst")
        report = await get(http, "/api/usage?days=7")
        assert report["total"] == {
            "turns": 3,
            "prompt_tokens": 160,
            "completion_tokens": 9,
            "cached_tokens": 60,
            "total_tokens": 169,
        }
        assert len(report["days"]) == 7 and report["days"][0]["day"] == report["since"]
        assert [d["turns"] for d in report["days"]] == [0, 0, 0, 0, 0, 0, 3]  # zeros: a chart
        assert [c["chat_key"] for c in report["chats"]] == ["telegram:-100", "telegram:1"]
        assert report["chats"][0]["total_tokens"] == 158
        alice = report["users"][0]
        assert (alice["user_id"], alice["user_name"], alice["turns"]) == ("1", "Alice", 2)
        assert alice["cached_tokens"] == 60
        assert len(report["rows"]) == 3
        one_chat = await get(http, "/api/usage?days=1&chat=telegram:-100")
        assert one_chat["total"]["turns"] == 2 and len(one_chat["days"]) == 1
        bob = await get(http, "/api/usage?user=telegram:2")
        assert [u["user_name"] for u in bob["users"]] == ["Bob"]
        assert bob["total"]["prompt_tokens"] == 50
        for bad in ("days=0", "days=400", "days=ten", "chat=nokey"):
            error = await get(http, f"/api/usage?{bad}", status=400)
            assert error["error"]["code"] == "invalid_parameter" and error["error"]["message"]
    for token in (ADMIN_TOKEN, OTHER_ADMIN_TOKEN, CHAT_TOKEN):
        assert token not in caplog.text


async def test_admin_routes_need_an_admin_token(make_app: AppFactory) -> None:
    paths = ["/api/usage", "/api/plugins", "/api/mcp", "/api/reminders", "/api/openapi.json"]
    async with serve_http(make_app) as served, aiohttp.ClientSession(served.url) as http:
        for path in paths:
            async with http.get(path) as r:
                assert r.status == 401 and (await r.json())["error"]["code"] == "invalid_api_key"
            async with http.get(path, headers={"Authorization": f"Bearer {CHAT_TOKEN}"}) as r:
                assert r.status == 403 and (await r.json())["error"]["code"] == "forbidden"
        async with http.delete("/api/reminders/reminders:1") as r:
            assert r.status == 401


async def test_plugins_with_their_tools_and_a_failed_one(make_app: AppFactory) -> None:
    plugins = ["plugins.calculator", "plugins.reminders", "no_such_plugin_here"]
    async with (
        serve_http(make_app, plugins=plugins) as served,
        aiohttp.ClientSession(served.url) as http,
    ):
        listed = await get(http, "/api/plugins")
    by_module = {p["module"]: p for p in listed["plugins"]}
    assert sorted(by_module) == ["plugins.calculator", "plugins.reminders"]
    assert by_module["plugins.calculator"]["tools"] == ["calculate"]
    reminders = by_module["plugins.reminders"]
    assert "set_reminder" in reminders["tools"] and reminders["job_kinds"] == [REMINDERS_KIND]
    (failed,) = listed["failed"]
    assert failed["module"] == "no_such_plugin_here" and "cannot be imported" in failed["error"]


async def test_mcp_servers_with_their_state_and_tools(make_app: AppFactory) -> None:
    async with serve_http(make_app) as served, aiohttp.ClientSession(served.url) as http:
        assert await get(http, "/api/mcp") == {"servers": []}  # none configured
    mcp = {"servers": {"demo": stdio_server()}}
    async with serve_http(make_app, mcp=mcp) as served, aiohttp.ClientSession(served.url) as http:
        assert served.app.mcp is not None
        assert await served.app.mcp.wait_ready(READY)
        (server,) = (await get(http, "/api/mcp"))["servers"]
        async with http.get("/metrics", headers=ADMIN) as r:
            metrics = await r.text()
    assert (server["name"], server["transport"], server["state"]) == ("demo", "stdio", "ready")
    assert "echo" in server["tools"] and server["restarts"] == 0 and server["error"] == ""
    assert 'parlour_mcp_servers{state="ready"} 1.0' in metrics


async def test_reminders_are_listed_and_cancelled_for_good(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    alice = group("1", "Alice")
    async with serve_http(make_app, plugins=["plugins.reminders"]) as served:
        app = served.app
        fake_llm.script(
            tool_calls(("set_reminder", {"text": "standup", "in_minutes": 60})), reply("set")
        )
        await app.service.chat(alice, "remind me of standup in an hour")
        jar = aiohttp.CookieJar(unsafe=True)
        async with aiohttp.ClientSession(served.url, cookie_jar=jar) as http:
            (listed,) = (await get(http, "/api/reminders"))["reminders"]
            assert listed["id"] == "reminders:1" and listed["chat_key"] == "telegram:-100"
            assert (listed["user_id"], listed["user_name"], listed["text"]) == (
                "1",
                "Alice",
                "standup",
            )
            assert listed["next_run"].endswith("+00:00")
            assert (await get(http, "/api/reminders?chat=telegram:-100"))["reminders"]
            assert (await get(http, "/api/reminders?chat=telegram:9"))["reminders"] == []
            async with http.post("/login", data={"token": ADMIN_TOKEN}) as r:
                assert r.status == 200
            async with http.delete("/api/reminders/reminders:1") as r:  # cookie, no CSRF
                assert r.status == 403 and (await r.json())["error"]["code"] == "csrf_failed"
            assert app.scheduler is not None and len(app.scheduler.pending(REMINDERS_KIND)) == 1
        async with aiohttp.ClientSession(served.url) as http:
            async with http.delete("/api/reminders/reminders:1", headers=ADMIN) as r:
                assert r.status == 204
            async with http.delete("/api/reminders/reminders:1", headers=ADMIN) as r:
                assert r.status == 404 and (await r.json())["error"]["code"] == "not_found"
            async with http.delete("/api/reminders/housekeeping", headers=ADMIN) as r:
                assert r.status == 404  # not a reminder: the app's own job stays
            assert (await get(http, "/api/reminders"))["reminders"] == []
        fake_llm.script(tool_calls(("list_reminders", {})), reply("none"))
        await app.service.chat(alice, "my reminders?")
        sent = fake_llm.chat_requests[-1].json["messages"]
        assert [m for m in sent if m["role"] == "tool"][-1]["content"].startswith(
            "The user has no pending reminders"
        )
    async with make_app(plugins=["plugins.reminders"]) as again:  # nor at the next start
        assert again.scheduler is not None and again.scheduler.pending(REMINDERS_KIND) == []


async def test_the_openapi_document_describes_every_api_route(make_app: AppFactory) -> None:
    async with serve_http(make_app) as served, aiohttp.ClientSession(served.url) as http:
        document = await get(http, "/api/openapi.json")
        web_app = build_web_app(served.adapter.context)  # the routes the running server has
    assert document["openapi"].startswith("3.1")
    paths = document["paths"]
    for route in web_app.router.routes():
        path = route.resource.canonical if route.resource is not None else ""
        if route.method == "HEAD" or not re.match(r"^(/api/|/v1/|/metrics$)", path):
            continue
        assert route.method.lower() in paths.get(path, {}), f"{route.method} {path} undocumented"
    for path in ("/healthz", "/readyz", "/v1/chat/completions", "/v1/models", "/metrics"):
        assert path in paths
    for path in ("/api/chats", "/api/chats/{chat_key}/history", "/api/chats/{chat_key}/clear"):
        assert path in paths
    schemas = document["components"]["schemas"]
    for operation in (op for item in paths.values() for op in item.values() if "responses" in op):
        for response in operation["responses"].values():
            for media in response.get("content", {}).values():
                ref = media.get("schema", {}).get("$ref", "")
                assert not ref or ref.removeprefix("#/components/schemas/") in schemas, ref
    assert document["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
