"""Section 5: the Telegram path. Rendering a long reply, and a burst of chats end to end.

The end-to-end figure is the real adapter (aiogram polling the fake Bot API, the service on the
fake LLM with no latency), so it measures our overhead plus aiogram's, both fakes included.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from pathlib import Path

from adapters.telegram.adapter import TelegramAdapter
from adapters.telegram.output import render_chunks
from bench.common import make_settings, median
from bot.app import App
from bot.testing.fake_llm import FakeLLM
from bot.testing.fake_telegram import FakeTelegram

RENDER_RUNS = 50


@dataclass(frozen=True, slots=True)
class TelegramFigures:
    render_s: float  # markdown_to_html + split_html of one long reply
    reply_chars: int
    chunks: int
    chats: int
    burst_s: float  # from pushing every message to the last reply delivered
    delivered: int


def long_reply(chars: int = 10_000) -> str:
    parts: list[str] = []
    n = 0
    while sum(len(p) for p in parts) < chars:
        n += 1
        parts.append(
            f"## Step {n}\n\nUse **bold**, _italics_ and `code`; see [docs](https://example.com/{n}).\n\n"
            f"- first point about <tags> & entities\n- second point\n\n"
            f"```python\nprint({n} * 2)  # a comment\n```\n"
        )
    return "\n".join(parts)


def measure_render() -> tuple[float, int, int]:
    text = long_reply()
    times: list[float] = []
    chunks = 0
    for _ in range(RENDER_RUNS):
        started = time.perf_counter()
        chunks = len(render_chunks(text))
        times.append(time.perf_counter() - started)
    return median(times), len(text), chunks


async def measure_burst(root: Path, chats: int) -> tuple[float, int]:
    async with FakeLLM() as llm, FakeTelegram() as tg:
        telegram = {"enabled": True, "token": tg.token, "api_server": tg.api_server}
        settings = make_settings(
            llm.base_url, root / "telegram.db", telegram=telegram | {"polling_timeout": 5}
        )
        async with App(settings) as app:
            adapter = TelegramAdapter(app.platform)
            task = asyncio.ensure_future(adapter.run())
            await tg.wait_until(lambda: any(c.method == "getUpdates" for c in tg.calls), 30)
            users = [tg.user(1000 + n, f"User {n}") for n in range(chats)]
            rooms = [tg.private_chat(u) for u in users]
            started = time.perf_counter()
            for user, room in zip(users, rooms, strict=True):
                tg.send(room, user, "hello there")

            def done() -> bool:
                return all(
                    (m := tg.messages(r["id"])) and m[-1]["text"] == "echo: hello there"
                    for r in rooms
                )

            with contextlib.suppress(AssertionError):  # counted below
                await tg.wait_until(done, timeout=120)
            elapsed = time.perf_counter() - started
            delivered = sum(
                1
                for r in rooms
                if any(m["text"] == "echo: hello there" for m in tg.messages(r["id"]))
            )
            await adapter.stop()
            await task
    return elapsed, delivered


async def measure_telegram(root: Path, chats: int = 200) -> TelegramFigures:
    render_s, chars, chunks = measure_render()
    burst_s, delivered = await measure_burst(root, chats)
    return TelegramFigures(render_s, chars, chunks, chats, burst_s, delivered)
