"""Section 11: the HTTP API (issue 18): what the OpenAI-compatible endpoint adds to a turn.

The same turn three ways against the latency-0 fake LLM in this process: ``ChatService.chat``
directly, ``POST /v1/chat/completions`` through the real aiohttp server with the official
openai SDK as the client (plain and streamed), each over ``TURNS`` turns of distinct users;
then the admin API's chats list and the dashboard's chats page over ``CHATS`` stored chats.

``python -m bench.http_api`` runs this section alone and prints its rows.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import openai
from openai.types.chat import ChatCompletionMessageParam

from adapters.http.auth import Principal, Role
from adapters.http.server import HTTPAdapter
from bench.common import Row, fmt_ms, make_settings, private
from bench.table import render
from bot.app import App
from bot.testing.fake_llm import FakeLLM

S11 = "11. HTTP API"
TURNS = 200
CHATS = 1000
TOKEN = "bench-admin-token-0123456789"


@dataclass(frozen=True, slots=True)
class HTTPFigures:
    direct: float
    plain: float
    streamed: float
    chats_api: float
    chats_page: float


async def _median(step: Callable[[int], Awaitable[object]], runs: int) -> float:
    times = []
    for n in range(runs):
        began = time.perf_counter()
        await step(n)
        times.append(time.perf_counter() - began)
    return statistics.median(times)


async def measure_http(root: Path) -> HTTPFigures:
    async with FakeLLM(latency=0) as fake:
        http = {
            "enabled": True,
            "listen_port": 0,
            "admin_tokens": {"bench": TOKEN},
            "failed_logins_per_minute": 10_000,
        }
        settings = make_settings(fake.base_url, root / "http.db", http=http)
        async with App(settings) as app:
            adapter = HTTPAdapter(app.platform)
            task = asyncio.create_task(adapter.run())
            await adapter.ready.wait()
            url = f"http://127.0.0.1:{adapter.port}"
            try:
                direct = await _median(
                    lambda n: app.service.chat(private(f"d{n}"), "hello there"), TURNS
                )
                client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=TOKEN, max_retries=0)
                message: list[ChatCompletionMessageParam] = [
                    {"role": "user", "content": "hello there"}
                ]

                async def plain(n: int) -> None:
                    await client.chat.completions.create(
                        model="parlour",
                        user=f"p{n}",
                        messages=message,
                    )

                async def streamed(n: int) -> None:
                    stream = await client.chat.completions.create(
                        model="parlour",
                        user=f"s{n}",
                        messages=message,
                        stream=True,
                    )
                    async for _ in stream:
                        pass

                plain_s = await _median(plain, TURNS)
                streamed_s = await _median(streamed, TURNS)
                await client.close()
                for n in range(CHATS - 3 * TURNS):
                    await app.service.chat(private(f"c{n}"), "hi")
                headers = {"Authorization": f"Bearer {TOKEN}"}
                async with aiohttp.ClientSession(url, headers=headers) as session:

                    async def chats_api(n: int) -> None:
                        async with session.get("/api/chats?limit=50") as response:
                            await response.read()

                    api_s = await _median(chats_api, 50)
                cookie = adapter.context.auth.new_session(_admin(adapter))
                async with aiohttp.ClientSession(
                    url, cookies={"parlour_session": cookie}
                ) as session:

                    async def chats_page(n: int) -> None:
                        async with session.get("/") as response:
                            await response.read()

                    page_s = await _median(chats_page, 50)
            finally:
                await adapter.stop()
                await task
    return HTTPFigures(direct, plain_s, streamed_s, api_s, page_s)


def _admin(adapter: HTTPAdapter) -> Principal:
    return Principal("bench", Role.ADMIN)


def http_rows(f: HTTPFigures) -> list[Row]:
    return [
        Row(S11, f"a turn, `ChatService.chat` directly: median of {TURNS}", fmt_ms(f.direct)),
        Row(
            S11,
            "... through `POST /v1/chat/completions` with the openai SDK: plain / streamed",
            f"{fmt_ms(f.plain)} / {fmt_ms(f.streamed)}",
            "the endpoint adds < 10 ms",
            f.plain - f.direct < 0.010,
        ),
        Row(
            S11,
            f"`GET /api/chats?limit=50` / the dashboard's chats page, {CHATS:,} chats stored",
            f"{fmt_ms(f.chats_api)} / {fmt_ms(f.chats_page)}",
            "< 100 ms",
            max(f.chats_api, f.chats_page) < 0.100,
        ),
    ]


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="parlour-bench-http-") as tmp:
        figures = asyncio.run(measure_http(Path(tmp)))
    print(render(http_rows(figures)))


if __name__ == "__main__":
    main()
