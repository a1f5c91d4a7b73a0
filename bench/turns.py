"""Section 1: what ``ChatService.chat`` costs per turn on top of the bare HTTP round trip.

Against an instant fake (latency 0), in one App over a seeded database:

* **service**: ``await service.chat(ctx, text)``, the whole turn (lock, window load, prompt
  assembly, token counting and trimming, begin/complete transactions, the request);
* **floor**: the very body the service last sent, re-sent through the same ``AsyncOpenAI``
  client the service uses, with the same low-level ``client.post`` call the service makes;
* **create**, for reference: ``client.chat.completions.create(**body)`` with that body.

The fake runs in the same process and event loop, so its own work (parsing, counting the
prompt's tokens, answering) is in all three figures alike; its prompt-cache emulation is off,
since it would work harder for the service's new prompts than for the floor's repeated one.
The database is a seeded SQLite file (a ``Path``) or a seeded PostgreSQL schema (its
``storage.url``). Batches of the three kinds are interleaved so drift in the machine's speed
hits them equally; the figure is the median of the batches' means, and the ratio the median of
the batches' ratios.
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openai import AsyncOpenAI
from openai.types.chat import ChatCompletion

from bench.common import make_settings, median, private
from bench.seed import MEASURED_USER
from bot.app import App
from bot.testing.fake_llm import FakeLLM


@dataclass(slots=True)
class TurnFigures:
    stored_messages: int
    backend: str = "SQLite"
    window_messages: int = 0  # messages in the request body the service sent
    service: list[float] = field(default_factory=list)  # seconds per turn, one per batch
    floor: list[float] = field(default_factory=list)
    create: list[float] = field(default_factory=list)
    wrong_replies: int = 0

    @property
    def service_s(self) -> float:
        return median(self.service)

    @property
    def floor_s(self) -> float:
        return median(self.floor)

    @property
    def create_s(self) -> float:
        return median(self.create)

    @property
    def ratio(self) -> float:
        """Median of the per-batch ratios (each service batch paired with the floor batch after
        it), which shrugs off a slow moment of a shared machine better than a ratio of medians."""
        return median([s / f for s, f in zip(self.service, self.floor, strict=True)])


def _text(n: int) -> str:
    return f"bench turn {n}: could you sum up what we said about the garden plan so far?"


async def _post(client: AsyncOpenAI, body: dict[str, Any]) -> ChatCompletion:
    return await client.post(
        "/chat/completions",
        body=body,
        cast_to=ChatCompletion,
        options={"security": {"bearer_auth": True}},
    )


async def measure_turns(
    db_path: Path | str,
    stored_messages: int,
    *,
    turns: int = 200,
    create_calls: int = 40,
    batches: int = 5,
    warmup: int = 60,
) -> TurnFigures:
    """Time ``batches`` x ``turns`` turns (``create_calls`` for the slow reference) per kind."""
    figures = TurnFigures(stored_messages, "SQLite" if isinstance(db_path, Path) else "PostgreSQL")
    ctx = private(MEASURED_USER)
    n = 0
    async with FakeLLM(latency=0.0) as fake:
        # Off: its prefix-cache emulation tokenizes the prefix a new prompt shares with the last
        # one, while the floor re-sends one prompt it has counted before, so the fake would do
        # more for a turn than for the floor (bench.fake_child).
        fake.prompt_cache = False
        settings = make_settings(fake.base_url, db_path)
        async with App(settings) as app:
            service = app.service
            client = service.llm.endpoints[0].client

            async def service_batch(count: int) -> float:
                nonlocal n
                started = time.perf_counter()
                for _ in range(count):
                    n += 1
                    text = _text(n)
                    reply = await service.chat(ctx, text)
                    if reply.text != f"echo: {text}":
                        figures.wrong_replies += 1
                return (time.perf_counter() - started) / count

            async def floor_batch(body: dict[str, Any], count: int) -> float:
                started = time.perf_counter()
                for _ in range(count):
                    await _post(client, body)
                return (time.perf_counter() - started) / count

            async def create_batch(body: dict[str, Any], count: int) -> float:
                started = time.perf_counter()
                for _ in range(count):
                    await client.chat.completions.create(**body)
                return (time.perf_counter() - started) / count

            await service_batch(warmup)  # loads the tokenizer, fills the 50-turn window
            body: dict[str, Any] = fake.requests[-1].json
            await floor_batch(body, warmup // 4)
            await create_batch(body, 5)
            for _ in range(batches):
                fake.requests.clear()  # the fake keeps every request; don't let it pile up
                gc.collect()
                figures.service.append(await service_batch(turns))
                body = fake.requests[-1].json
                fake.requests.clear()
                gc.collect()
                figures.floor.append(await floor_batch(body, turns))
                fake.requests.clear()
                gc.collect()
                figures.create.append(await create_batch(body, create_calls))
            figures.window_messages = len(body["messages"])
            fake.requests.clear()
    return figures
