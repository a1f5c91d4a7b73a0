"""Section 8: 1,000 conversations at once across two replicas on one PostgreSQL database.

Two ``App`` instances in this process share one fresh schema: replicas as far as the database is
concerned (each has its own locks, caches and connection pool, of the default size). The fake
model (1 s latency) runs in its own process, like a real model server.

* **fan-out**: 1,000 private chats send one message each, chat ``c`` to replica ``c % 2``, all
  at once: the wall time, and every reply its own echo.
* **hopping**: the same chats then send ``MESSAGES`` more each, one at a time per chat (as a
  lane of the inbox runs: one update after the other, on whichever replica holds it), message
  ``m`` of chat ``c`` to replica ``(c + m) % 2``, all chats at once. A chat's order is kept when
  its stored turns (``export``, read back through the *other* replica) are its messages in the
  order sent, each answered with its own echo, and both replicas load the same window.
"""

from __future__ import annotations

import asyncio
import dataclasses
import tempfile
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path

from bench.common import fake_in_child, make_settings
from bench.concurrency import Burst, _failures
from bench.pg import bench_schema
from bot.app import App
from bot.context import ChatContext, ChatType
from bot.conversation.service import Reply

CONVERSATIONS = 1000
MESSAGES = 2  # hopping messages per chat, after the fan-out one
LATENCY = 1.0
REPLICA_POOL = 10  # the store's default pool size: what each replica gets in a deployment


@dataclass(frozen=True, slots=True)
class ReplicaFigures:
    fan_out: Burst
    hopping: Burst  # in_order: chats whose turns are in the order sent on both replicas
    per_replica: tuple[int, int]  # turns each replica answered, both phases


def _chat(c: int) -> ChatContext:
    return ChatContext("telegram", str(500_000 + c), ChatType.PRIVATE, str(500_000 + c), f"u{c}")


def _text(c: int, m: int) -> str:
    return f"chat {c} message {m}"


async def measure_replicas(
    pg_url: str, conversations: int = CONVERSATIONS, messages: int = MESSAGES
) -> ReplicaFigures:
    async with (
        bench_schema(pg_url, "replicas") as schema,
        fake_in_child(LATENCY) as base_url,
        AsyncExitStack() as stack,
    ):
        url = dataclasses.replace(schema, pool_size=REPLICA_POOL).url
        jobs = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="parlour-replicas-")))
        apps = [
            await stack.enter_async_context(
                App(make_settings(base_url, url, storage={"jobs_path": str(jobs / name)}))
            )
            for name in ("a.jobs.sqlite", "b.jobs.sqlite")
        ]
        for n, app in enumerate(apps):  # tokenizers, pools and HTTP clients ready
            await app.service.chat(_chat(10**6 + n), "warm up")
        answered = [0, 0]

        async def send(c: int, m: int) -> Reply:
            replica = (c + m) % 2
            reply = await apps[replica].service.chat(_chat(c), _text(c, m))
            answered[replica] += 1
            return reply

        started = time.perf_counter()
        first: list[Reply | BaseException] = await asyncio.gather(
            *(send(c, 0) for c in range(conversations)), return_exceptions=True
        )
        fan_wall = time.perf_counter() - started
        fan_correct = sum(
            1
            for c, r in enumerate(first)
            if isinstance(r, Reply) and r.text == f"echo: {_text(c, 0)}"
        )

        async def lane(c: int) -> list[Reply]:
            return [await send(c, m) for m in range(1, messages + 1)]

        started = time.perf_counter()
        lanes: list[list[Reply] | BaseException] = await asyncio.gather(
            *(lane(c) for c in range(conversations)), return_exceptions=True
        )
        hop_wall = time.perf_counter() - started
        hop_correct = 0
        for c, replies in enumerate(lanes):
            if isinstance(replies, list):
                hop_correct += sum(
                    1 for m, r in enumerate(replies, 1) if r.text == f"echo: {_text(c, m)}"
                )
        in_order = 0
        for c in range(conversations):
            sent = [_text(c, m) for m in range(messages + 1)]
            expected = [part for text in sent for part in (text, f"echo: {text}")]
            key = apps[0].service.conversation_key(_chat(c))
            reader = apps[(c + messages + 1) % 2]  # not the replica that answered last
            records = [r async for r in reader.store.export(key)]
            turn_ids = [r["turn"] for r in records]
            windows = [await app.store.load_window(key, 50) for app in apps]
            if (
                [r["content"] for r in records] == expected
                and turn_ids == sorted(turn_ids)
                and windows[0] == windows[1]
            ):
                in_order += 1
    fan_errors, fan_first = _failures(first)
    hop_errors, hop_first = _failures(lanes)
    return ReplicaFigures(
        Burst(conversations, fan_wall, fan_correct, fan_errors, fan_first),
        Burst(conversations * messages, hop_wall, hop_correct, hop_errors, hop_first, in_order),
        (answered[0], answered[1]),
    )
