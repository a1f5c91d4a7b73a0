"""The dashboard's playground over plain HTTP: its chat route answers as the OpenAI-compatible
endpoint does (server-sent events, streamed as the model streams), with the session and its
CSRF token, in one conversation of its own, and never with a token in the page."""

from __future__ import annotations

import html
import json
import re
import time

import aiohttp

from bot.testing.fake_llm import FakeLLM, reply
from tests.conftest import AppFactory
from tests.http_harness import ADMIN_TOKEN, CHAT_TOKEN, Served, logged_in, serve_http

ROUTE = "/playground/chat/completions"
ANSWER = "Lisbon in May: mild days, long evenings, and the trams run late."


def asked(text: str, **extra: object) -> dict[str, object]:
    return {"model": "parlour", "messages": [{"role": "user", "content": text}], **extra}


async def playground_csrf(http: aiohttp.ClientSession) -> str:
    async with http.get("/playground") as r:
        page = await r.text()
    assert r.status == 200
    assert ADMIN_TOKEN not in page and CHAT_TOKEN not in page  # the page holds no token
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found
    return found.group(1)


async def events(response: aiohttp.ClientResponse) -> list[tuple[float, str]]:
    """Each ``data:`` event with the time it arrived."""
    arrived: list[tuple[float, str]] = []
    buffered = b""
    async for piece in response.content.iter_any():
        buffered += piece
        while b"\n\n" in buffered:
            event, buffered = buffered.split(b"\n\n", 1)
            for line in event.decode().splitlines():
                if line.startswith("data: "):
                    arrived.append((time.monotonic(), line[6:]))
    return arrived


async def test_the_playground_streams_the_answer_in_a_conversation_of_its_own(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.stream_interval = 0.05  # a slow model: a piece every 50 ms
    fake_llm.script(reply(ANSWER))
    async with serve_http(make_app) as served, await logged_in(served) as http:
        csrf = await playground_csrf(http)
        body = asked("Where in May?", stream=True, user="mallory")  # whose chat is not theirs
        async with http.post(ROUTE, json=body) as r:  # the cookie without its CSRF token
            assert r.status == 403 and (await r.json())["error"]["code"] == "csrf_failed"
        async with http.post(ROUTE, json=body, headers={"X-CSRF-Token": csrf}) as r:
            assert r.status == 200
            assert r.headers["Content-Type"].startswith("text/event-stream")
            arrived = await events(r)

        assert arrived[-1][1] == "[DONE]"
        chunks = [json.loads(data) for _, data in arrived[:-1]]
        assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
        assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
        contents = [
            (at, c["choices"][0]["delta"]["content"])
            for (at, _), c in zip(arrived, chunks, strict=False)
            if c["choices"] and c["choices"][0]["delta"].get("content")
        ]
        assert "".join(text for _, text in contents) == ANSWER
        assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
        # streamed as the model streams: the first words arrived well before the end
        pieces = len(contents)
        assert pieces > 5
        assert arrived[-1][0] - contents[0][0] >= 0.5 * (pieces - 1) * fake_llm.stream_interval
        assert fake_llm.requests[-1].json["stream"] is True

        # the admin token calling with user "playground": its own conversation, not mallory's
        chats = [c.chat_key for c in await served.app.store.list_chats()]
        assert chats == ["http:ops:playground"]
        async with http.get("/playground") as r:
            page = await r.text()
        assert "Where in May?" in page and ANSWER in page


async def test_only_a_dashboard_session_or_an_admin_token_reaches_the_route(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.script(reply("admin via Bearer"))
    async with serve_http(make_app) as served, aiohttp.ClientSession(served.url) as http:
        body = asked("hello", stream=True)
        async with http.post(ROUTE, json=body, allow_redirects=False) as r:
            assert r.status == 303 and r.headers["Location"].startswith("/login")
        bearer = {"Authorization": f"Bearer {CHAT_TOKEN}"}
        async with http.post(ROUTE, json=body, headers=bearer) as r:
            assert r.status == 403  # a chat token has the chat endpoint, not the dashboard
        bearer = {"Authorization": f"Bearer {ADMIN_TOKEN}"}  # a script: no cookie, no CSRF
        async with http.post(ROUTE, json=asked("hello"), headers=bearer) as r:  # not streamed
            assert r.status == 200
            answered = await r.json()
        assert answered["choices"][0]["message"]["content"] == "admin via Bearer"
        assert [c.chat_key for c in await served.app.store.list_chats()] == ["http:ops:playground"]


async def test_a_refusal_comes_in_openais_shape_and_the_form_shows_it(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    """Access lists apply to the playground as to any caller of the chat endpoint."""
    access = {"allow": ["telegram:*"]}
    async with serve_http(make_app, access=access) as served, await logged_in(served) as http:
        csrf = await playground_csrf(http)
        body = asked("let me in", stream=True)
        async with http.post(ROUTE, json=body, headers={"X-CSRF-Token": csrf}) as r:
            assert r.status == 403
            error = (await r.json())["error"]
        assert error["code"] == "access_denied" and error["message"]
        form = {"csrf": csrf, "message": "let me in"}
        async with http.post("/playground", data=form) as r:
            page = await r.text()
        assert r.status == 403 and error["message"] in html.unescape(page)
    assert fake_llm.requests == []


async def test_without_javascript_the_form_answers_and_the_page_shows_the_turn(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.script(reply("Plain HTML works too."))
    async with serve_http(make_app) as served, await logged_in(served) as http:
        csrf = await playground_csrf(http)
        async with http.post("/playground", data={"message": "no script"}) as r:
            assert r.status == 403  # the form's CSRF field is needed too
        form = {"csrf": csrf, "message": "no script"}
        async with http.post("/playground", data=form, allow_redirects=False) as r:
            assert r.status == 303 and r.headers["Location"] == "/playground#latest"
        async with http.get("/playground") as r:
            page = await r.text()
        assert "no script" in page and "Plain HTML works too." in page
        await expect_one_turn(served)


async def expect_one_turn(served: Served) -> None:
    [(conversation, turns)] = await served.app.store.conversations()
    assert conversation.startswith("http:ops:playground") and turns == 1
