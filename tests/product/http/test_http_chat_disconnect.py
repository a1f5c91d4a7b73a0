"""A client that leaves before its answer: the turn is stored as what the client was given.

A raw socket posts to ``/v1/chat/completions`` while the fake LLM holds its answer, then closes.
Non-streamed or streamed, nothing reached the client: the turn is stored unanswered (the user's
message kept, no answer), which the admin API shows alike for both. An answer already stored
when the client turns out to be gone is stored undelivered.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import aiohttp
import pytest

import adapters.http.openai.once as openai_once
from bot.testing.fake_llm import FakeLLM, held, reply
from tests.conftest import AppFactory
from tests.http_harness import ADMIN_TOKEN, CHAT_TOKEN, Served, serve_http

SETTLE = 10.0  # seconds a turn may take to leave "pending" on a loaded machine


async def history(served: Served, user: str) -> list[dict[str, Any]]:
    """The user's turns as the admin API lists them: what was said, what is kept, the status."""
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    async with aiohttp.ClientSession(served.url, headers=admin) as http:
        async with http.get("/api/chats", params={"q": user}) as r:
            keys = [c["chat_key"] for c in (await r.json())["chats"] if c["title"] == user]
        items = []
        for key in keys:
            async with http.get(f"/api/chats/{key}/history") as r:
                items += (await r.json())["items"]
    return [{k: item[k] for k in ("text", "answer", "status")} for item in items]


async def settled(
    served: Served, user: str, *, within: float = SETTLE, still: tuple[str, ...] = ("pending",)
) -> list[dict[str, Any]]:
    """The history once no turn's status is one of ``still`` (or as it is after ``within``
    seconds)."""
    deadline = asyncio.get_running_loop().time() + within
    while True:
        items = await history(served, user)
        moving = any(item["status"] in still for item in items)
        if (items and not moving) or asyncio.get_running_loop().time() > deadline:
            return items
        await asyncio.sleep(0.05)


async def abandon(served: Served, fake: FakeLLM, gate: asyncio.Event, body: dict[str, Any]) -> None:
    """Post ``body`` on a raw socket, wait until the model was asked, hang up, then let the
    model answer (once the server noticed, or after a while if it never does)."""
    asked = len(fake.chat_requests)
    payload = json.dumps(body).encode()
    reader, writer = await asyncio.open_connection("127.0.0.1", served.adapter.port)
    writer.write(
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: parlour\r\n"
        b"Authorization: Bearer " + CHAT_TOKEN.encode() + b"\r\n"
        b"Content-Type: application/json\r\n"
        b"Content-Length: " + str(len(payload)).encode() + b"\r\n\r\n" + payload
    )
    await writer.drain()
    while len(fake.chat_requests) == asked:  # noqa: ASYNC110 (the fake model has no change event)
        await asyncio.sleep(0.01)
    writer.close()
    await writer.wait_closed()
    assert await reader.read() == b""  # nothing was ever sent to this client
    await settled(served, body["user"], within=2.0)
    gate.set()


async def test_a_non_streamed_client_that_leaves_early_is_stored_like_an_abandoned_stream(
    make_app: AppFactory, fake_llm: FakeLLM, caplog: pytest.LogCaptureFixture
) -> None:
    plain, streamed = asyncio.Event(), asyncio.Event()
    fake_llm.script(
        held(plain, reply("Nobody reads this.")),
        held(streamed, reply("Nobody reads this either.")),
        reply("Fresh answer"),
    )
    async with serve_http(make_app) as served:
        said = [{"role": "user", "content": "are you there?"}]
        ask = {"model": "parlour", "messages": said}
        await abandon(served, fake_llm, plain, {**ask, "user": "nina"})
        await abandon(served, fake_llm, streamed, {**ask, "user": "olga", "stream": True})
        nina, olga = await settled(served, "nina"), await settled(served, "olga")
        async with (  # the conversation is free again: the next message is answered
            aiohttp.ClientSession(served.url) as http,
            http.post(
                "/v1/chat/completions",
                json={**ask, "user": "nina"},
                headers={"Authorization": f"Bearer {CHAT_TOKEN}"},
            ) as r,
        ):
            again = await r.json()
        nina_now = await settled(served, "nina")
    assert olga == [{"text": "are you there?", "answer": "", "status": "unanswered"}]
    assert nina == olga  # the same state: the user's message kept, no answer
    assert again["choices"][0]["message"]["content"] == "Fresh answer"
    assert [item["status"] for item in nina_now] == ["answered", "unanswered"]  # newest first
    assert "Nobody reads this" not in json.dumps(fake_llm.chat_requests[-1].json)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]  # no traceback either


async def test_an_answer_stored_for_a_client_already_gone_is_stored_undelivered(
    make_app: AppFactory, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(openai_once, "POLL_SECONDS", 3600.0)  # the watch never sees it leave
    gate = asyncio.Event()
    fake_llm.script(held(gate, reply("Written to a closed socket.")))
    async with serve_http(make_app) as served:
        ask = {"model": "parlour", "messages": [{"role": "user", "content": "hi"}]}
        await abandon(served, fake_llm, gate, {**ask, "user": "pia"})
        pia = await settled(served, "pia", still=("pending", "answered"))
    assert pia == [{"text": "hi", "answer": "Written to a closed socket.", "status": "undelivered"}]
