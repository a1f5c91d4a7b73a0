"""Section 2: many conversations at once against a slow (1 s) fake model.

* **fan-out**: N private chats each send one message, all at once (``asyncio.gather``). With
  conversations independent, the wall time should stay near one model latency. Every reply must
  come back to its own caller: reply == ``"echo: <its text>"``, for its own conversation key.
* **floors**: the same number of bare requests at once, bodies shaped like the service's
  (system prompt + one user message): through the client the service itself uses, through the
  SDK on its default httpx transport, and with no SDK at all (plain aiohttp).
* **ordered**: C chats x M messages each, all fired at once, interleaved the way they would
  arrive (message 1 of every chat, then message 2, ...). Each conversation handles its messages
  one by one, so the floor is M x latency; what matters is that every conversation's stored
  turns (``store.export``) are in the order sent, each answered with the right echo.

Each function takes the fake's base URL, so the fake may run in this process (sharing the event
loop, as in the test suite) or in its own process (like a real model server).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import aiohttp
import openai
from openai.types.chat import ChatCompletion

from bench.common import API_KEY, make_settings, private
from bot.app import App
from bot.conversation.service import Reply


@dataclass(frozen=True, slots=True)
class Burst:
    """One burst of concurrent calls: how long it took and how many came back right."""

    calls: int
    wall: float
    correct: int
    errors: int
    first_error: str
    in_order: int = 0  # conversations whose stored turns match what was sent (ordered only)


def _failures(results: list[Any]) -> tuple[int, str]:
    failures = [r for r in results if isinstance(r, BaseException)]
    first = f"{type(failures[0]).__name__}: {failures[0]}"[:160] if failures else ""
    return len(failures), first


async def _warm_up(app: App) -> None:
    """One turn first: tokenizers and the HTTP client are ready before the clock starts."""
    await app.service.chat(private("999999999"), "warm up")


async def fan_out(base_url: str, db_path: Path, conversations: int = 1000) -> Burst:
    async with App(make_settings(base_url, db_path)) as app:
        await _warm_up(app)
        service = app.service
        contexts = [private(str(200_000 + i)) for i in range(conversations)]
        texts = [f"hello from conversation {i}" for i in range(conversations)]
        started = time.perf_counter()
        results: list[Reply | BaseException] = await asyncio.gather(
            *(service.chat(ctx, text) for ctx, text in zip(contexts, texts, strict=True)),
            return_exceptions=True,
        )
        wall = time.perf_counter() - started
        correct = sum(
            1
            for ctx, text, result in zip(contexts, texts, results, strict=True)
            if isinstance(result, Reply)
            and result.text == f"echo: {text}"
            and result.conversation_key == service.conversation_key(ctx)
        )
    errors, first = _failures(results)
    return Burst(conversations, wall, correct, errors, first)


Transport = Literal["service", "httpx", "aiohttp-raw"]


async def sdk_floor(
    base_url: str, db_path: Path, calls: int = 1000, *, transport: Transport = "service"
) -> Burst:
    """``calls`` bare chat requests at once, bodies built by the service's own ``Endpoint``.

    ``service``: ``client.post`` through the very client the service uses. ``httpx``: the same
    call through an SDK client on the SDK's default httpx transport. ``aiohttp-raw``: no SDK at
    all, one ``aiohttp`` session posting the JSON (what the HTTP round trips alone cost).
    """
    async with App(make_settings(base_url, db_path)) as app, AsyncExitStack() as stack:
        await _warm_up(app)
        endpoint = app.service.llm.endpoints[0]
        llm = app.settings.llm

        def body(i: int) -> dict[str, Any]:
            messages = [
                {"role": "system", "content": app.settings.chat.system_prompt},
                {"role": "user", "content": f"hello from conversation {i}"},
            ]
            return endpoint.body(
                messages,
                max_tokens=llm.max_output_tokens,
                temperature=llm.temperature,
                tools=None,
                stream=False,
            )

        post: Callable[[int], Awaitable[str | None]]
        if transport == "aiohttp-raw":
            session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=calls),
                headers={"Authorization": f"Bearer {API_KEY}"},
            )
            await stack.enter_async_context(session)

            async def post_raw(i: int) -> str | None:
                url = f"{endpoint.base_url}/chat/completions"
                async with session.post(url, json=body(i)) as response:
                    response.raise_for_status()
                    data = await response.json()
                content: str | None = data["choices"][0]["message"]["content"]
                return content

            post = post_raw
        else:
            client = endpoint.client
            if transport == "httpx":
                client = openai.AsyncOpenAI(
                    api_key=API_KEY, base_url=endpoint.base_url, max_retries=0, timeout=llm.timeout
                )
                await stack.enter_async_context(client)

            async def post_sdk(i: int) -> str | None:
                completion = await client.post(
                    "/chat/completions",
                    body=body(i),
                    cast_to=ChatCompletion,
                    options={"security": {"bearer_auth": True}},
                )
                return completion.choices[0].message.content

            post = post_sdk

        await post(0)  # this client's first connection
        started = time.perf_counter()
        results: list[str | BaseException | None] = await asyncio.gather(
            *(post(i) for i in range(calls)), return_exceptions=True
        )
        wall = time.perf_counter() - started
        correct = sum(
            1 for i, result in enumerate(results) if result == f"echo: hello from conversation {i}"
        )
    errors, first = _failures(results)
    return Burst(calls, wall, correct, errors, first)


async def ordered(
    base_url: str, db_path: Path, conversations: int = 100, messages: int = 10
) -> Burst:
    async with App(make_settings(base_url, db_path)) as app:
        await _warm_up(app)
        service = app.service
        contexts = [private(str(300_000 + i)) for i in range(conversations)]
        sends = [
            (ctx, f"conversation {c} message {m}")
            for m in range(messages)
            for c, ctx in enumerate(contexts)
        ]
        started = time.perf_counter()
        results: list[Reply | BaseException] = await asyncio.gather(
            *(service.chat(ctx, text) for ctx, text in sends), return_exceptions=True
        )
        wall = time.perf_counter() - started
        correct = sum(
            1
            for (_, text), result in zip(sends, results, strict=True)
            if isinstance(result, Reply) and result.text == f"echo: {text}"
        )
        in_order = 0
        for c, ctx in enumerate(contexts):
            sent = [f"conversation {c} message {m}" for m in range(messages)]
            expected = [part for text in sent for part in (text, f"echo: {text}")]
            records = [r async for r in app.store.export(service.conversation_key(ctx))]
            turn_ids = [r["turn"] for r in records]
            if [r["content"] for r in records] == expected and turn_ids == sorted(turn_ids):
                in_order += 1
    errors, first = _failures(results)
    return Burst(len(sends), wall, correct, errors, first, in_order)
