"""Section 2: many conversations at once against a slow (1 s) fake model.

* **fan-out**: N private chats each send one message, all at once (``asyncio.gather``). With
  conversations independent, the wall time should stay near one model latency. Every reply must
  come back to its own caller: reply == ``"echo: <its text>"``, for its own conversation key.
* **SDK floor**: the same number of bare ``client.post`` calls at once, through the client the
  service itself uses, with bodies shaped like the service's (system prompt + one user message).
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openai.types.chat import ChatCompletion

from bench.common import make_settings, private
from bot.app import App
from bot.service import Reply


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


async def sdk_floor(base_url: str, db_path: Path, calls: int = 1000) -> Burst:
    """``calls`` bare ``client.post`` requests at once through the service's own client."""
    async with App(make_settings(base_url, db_path)) as app:
        await _warm_up(app)
        endpoint = app.service.llm.endpoints[0]
        client = endpoint.client
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

        async def post(i: int) -> ChatCompletion:
            return await client.post(
                "/chat/completions",
                body=body(i),
                cast_to=ChatCompletion,
                options={"security": {"bearer_auth": True}},
            )

        started = time.perf_counter()
        results: list[ChatCompletion | BaseException] = await asyncio.gather(
            *(post(i) for i in range(calls)), return_exceptions=True
        )
        wall = time.perf_counter() - started
        correct = sum(
            1
            for i, result in enumerate(results)
            if isinstance(result, ChatCompletion)
            and result.choices[0].message.content == f"echo: hello from conversation {i}"
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
