"""Section 1, measured outside the process: the per-turn floor with the fake in its own process.

Section 1 proper puts the floor fake in the bench's own process and event loop, so the fake's
work is in both figures. Here the fake LLM runs in a child process (latency 0, its prompt-cache
emulation off: :mod:`bench.fake_child` says why), like a real model server, and one App on a
fresh SQLite file (the bench's settings: no plugins, no recall) answers:

* **console**: ``ConsoleAdapter.handle(text)``, the terminal's whole streamed turn (the adapter,
  admission, the lock, the window load, prompt assembly and trimming, the streamed request, the
  bill, the two writes);
* **replay**: the very bodies the console turns sent (recorded on their way out of the SDK),
  re-sent one after the other through the same ``AsyncOpenAI`` client's ``client.post`` with the
  same streaming arguments, each stream read to its end: the HTTP round trip and the SDK alone.

The conversation's 50-turn window is filled first (``WARMUP`` turns); then ``BATCHES`` pairs of
``TURNS`` console turns and their replay are interleaved, so drift on a shared machine hits both
alike. Figures: the median of the batches' means, the ratio the median of the batches' ratios.

``python -m bench.floor`` prints these rows alone; ``--profile N`` instead runs N console turns
under cProfile and prints where their time goes (the fake's work is not in it: it runs in
the child).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import io
import pstats
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openai import AsyncOpenAI, AsyncStream
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from adapters.console import ConsoleAdapter
from bench.common import Row, fake_in_child, fmt_ms, make_settings, median
from bench.rows import RATIO_TARGET, S1
from bot.app import App

TURNS, BATCHES, WARMUP = 200, 5, 60


@dataclass(slots=True)
class FloorFigures:
    """Seconds per turn, one figure per batch, for each kind (see the module docstring)."""

    console: list[float] = field(default_factory=list)
    replay: list[float] = field(default_factory=list)  # the console's bodies, streamed, chunks
    # read as dicts like the client does (bot.llm.streaming)
    replay_typed: list[float] = field(default_factory=list)  # same, SDK's typed chunk models
    chat: list[float] = field(default_factory=list)  # ChatService.chat, not streamed
    replay_chat: list[float] = field(default_factory=list)  # its bodies, not streamed
    window_messages: int = 0  # messages in the last request
    wrong_replies: int = 0

    @staticmethod
    def ratio_of(numerator: list[float], denominator: list[float]) -> float:
        """Median of the per-batch ratios: shrugs off a slow moment of a shared machine."""
        return median([n / d for n, d in zip(numerator, denominator, strict=True)])

    @staticmethod
    def own(turns: list[float], replays: list[float]) -> float:
        """Median over the batches of turn - replay: what Parlour adds to the round trip."""
        return median([t - r for t, r in zip(turns, replays, strict=True)])

    @property
    def ratio(self) -> float:
        return self.ratio_of(self.console, self.replay)

    @property
    def chat_ratio(self) -> float:
        return self.ratio_of(self.chat, self.replay_chat)


def _text(n: int) -> str:
    return f"bench turn {n}: could you sum up what we said about the garden plan so far?"


def _record_bodies(client: AsyncOpenAI, into: list[dict[str, Any]]) -> None:
    """Keep every body the client posts (one list append per request), for the replay."""
    post = client.post

    async def recording(path: str, *args: Any, **kwargs: Any) -> Any:
        into.append(kwargs["body"])
        return await post(path, *args, **kwargs)

    client.post = recording  # type: ignore[method-assign]


_AUTH: Any = {"security": {"bearer_auth": True}}


async def _replay(client: AsyncOpenAI, body: dict[str, Any]) -> None:
    """One body through ``client.post`` as the service sends it; a stream read to its end."""
    if not body.get("stream"):
        await client.post("/chat/completions", body=body, options=_AUTH, cast_to=ChatCompletion)
        return
    stream = await client.post(
        "/chat/completions",
        body=body,
        options=_AUTH,
        cast_to=ChatCompletion,
        stream=True,
        stream_cls=AsyncStream[ChatCompletionChunk],
    )
    async with stream:
        async for chunk in stream:
            for choice in chunk.choices[:1]:
                _ = choice.delta.content


async def _replay_dicts(client: AsyncOpenAI, body: dict[str, Any]) -> None:
    """The same stream with its chunks left as the JSON dicts they arrive as (the SDK still
    decodes the events, raises its errors, closes the response): no pydantic models."""
    stream = await client.post(
        "/chat/completions",
        body=body,
        options=_AUTH,
        cast_to=object,
        stream=True,
        stream_cls=AsyncStream[object],
    )
    async with stream:
        async for chunk in stream:
            assert isinstance(chunk, dict)
            for choice in chunk["choices"][:1]:
                _ = choice["delta"].get("content")


class _Run:
    """One App and its console on the fake at ``url``; counts turns across batches."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.out = io.StringIO()
        self.console = ConsoleAdapter(app.platform, stdin=io.StringIO(), stdout=self.out)
        self.client = app.service.llm.endpoints[0].client
        self.bodies: list[dict[str, Any]] = []
        _record_bodies(self.client, self.bodies)
        self.n = 0
        self.wrong = 0

    async def console_turns(self, count: int) -> float:
        started = time.perf_counter()
        for _ in range(count):
            self.n += 1
            await self.console.handle(_text(self.n))
        elapsed = time.perf_counter() - started
        if self.out.getvalue().count("echo: bench turn") != count:
            self.wrong += 1
        self.out.seek(0)
        self.out.truncate()
        return elapsed / count

    async def chat_turns(self, count: int) -> float:
        """The same conversation through ``ChatService.chat`` (no streaming), as section 1."""
        service, ctx = self.app.service, self.console.ctx
        started = time.perf_counter()
        for _ in range(count):
            self.n += 1
            reply = await service.chat(ctx, _text(self.n))
            self.wrong += reply.text != f"echo: {_text(self.n)}"
        return (time.perf_counter() - started) / count

    async def replay(self, bodies: list[dict[str, Any]], *, dicts: bool = False) -> float:
        send = _replay_dicts if dicts else _replay
        started = time.perf_counter()
        for body in bodies:
            await send(self.client, body)
        return (time.perf_counter() - started) / len(bodies)

    def take_bodies(self) -> list[dict[str, Any]]:
        bodies = list(self.bodies)
        self.bodies.clear()
        gc.collect()
        return bodies


async def _with_run(root: Path, work: Callable[[_Run], Awaitable[None]]) -> None:
    # The fake's cache emulation would do more for a turn than for its replay (bench.fake_child).
    fake = fake_in_child(0.0, prompt_cache=False)
    async with fake as url, App(make_settings(url, root / "floor.db")) as app:
        await work(_Run(app))


async def measure_floor(
    root: Path, *, turns: int = TURNS, batches: int = BATCHES, warmup: int = WARMUP
) -> FloorFigures:
    figures = FloorFigures()

    async def work(run: _Run) -> None:
        await run.console_turns(warmup)  # the tokenizer, the connection, a full 50-turn window
        await run.chat_turns(warmup // 4)
        await run.replay(run.take_bodies()[-warmup // 4 :])
        for _ in range(batches):
            run.take_bodies()
            figures.console.append(await run.console_turns(turns))
            streamed = run.take_bodies()
            figures.replay.append(await run.replay(streamed, dicts=True))
            figures.replay_typed.append(await run.replay(streamed))
            figures.window_messages = len(streamed[-1]["messages"])
            run.take_bodies()
            figures.chat.append(await run.chat_turns(turns))
            figures.replay_chat.append(await run.replay(run.take_bodies()))
        figures.wrong_replies = run.wrong

    await _with_run(root, work)
    return figures


async def profile_console(root: Path, turns: int, warmup: int = WARMUP) -> pstats.Stats:
    """``turns`` console turns (after ``warmup``) under cProfile."""
    profiler = cProfile.Profile()

    async def work(run: _Run) -> None:
        await run.console_turns(warmup)
        run.bodies.clear()
        profiler.enable()
        await run.console_turns(turns)
        profiler.disable()

    await _with_run(root, work)
    return pstats.Stats(profiler)


def floor_rows(f: FloorFigures) -> list[Row]:
    """Section 1 with the fake in its own process: each turn against the replay of its own
    requests through the same client."""
    where = "fake in its own process"
    rows = [
        Row(
            S1,
            f"console turn (`ConsoleAdapter.handle`, streamed), {where}"
            f" ({f.window_messages}-message request)",
            f"{fmt_ms(median(f.console))}/turn",
        ),
        Row(
            S1,
            "floor: the same requests replayed in a row, same client, `client.post`, streamed"
            " (chunks read as dicts, as the client reads them)",
            f"{fmt_ms(median(f.replay))}/turn",
        ),
        Row(
            S1,
            f"ratio console / replay, {where}",
            f"{f.ratio:.2f}x",
            f"<= {RATIO_TARGET}x",
            f.ratio <= RATIO_TARGET,
        ),
        Row(
            S1,
            "reference: the same streams parsed into the SDK's typed chunks (the client did"
            " until issue 15)",
            f"{fmt_ms(median(f.replay_typed))}/turn",
        ),
        Row(
            S1,
            f"`ChatService.chat` (not streamed), same conversation, {where}",
            f"{fmt_ms(median(f.chat))}/turn",
        ),
        Row(
            S1,
            "floor: its requests replayed in a row, `client.post`, not streamed",
            f"{fmt_ms(median(f.replay_chat))}/turn",
        ),
        Row(
            S1,
            f"ratio chat / replay, {where}",
            f"{f.chat_ratio:.2f}x",
            f"<= {RATIO_TARGET}x",
            f.chat_ratio <= RATIO_TARGET,
        ),
        Row(
            S1,
            "Parlour's own time per turn, streamed (console - replay) / not (chat - replay)",
            f"{fmt_ms(f.own(f.console, f.replay))} / {fmt_ms(f.own(f.chat, f.replay_chat))}",
        ),
        Row(
            S1,
            "ratio console / not-streamed replay (what the issue compared)",
            f"{f.ratio_of(f.console, f.replay_chat):.2f}x",
        ),
    ]
    if f.wrong_replies:
        rows.append(Row(S1, "wrong replies", str(f.wrong_replies), "0", False))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.floor", description=__doc__)
    parser.add_argument("--profile", type=int, default=0, metavar="TURNS")
    parser.add_argument("--sort", default="tottime", help="pstats sort key (tottime, cumulative)")
    parser.add_argument("--limit", type=int, default=45)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="parlour-bench-") as tmp:
        if args.profile:
            stats = asyncio.run(profile_console(Path(tmp), args.profile))
            stats.sort_stats(args.sort).print_stats(args.limit)
            return 0
        figures = asyncio.run(measure_floor(Path(tmp)))
    from bench.table import machine_line, render

    print(machine_line())
    print()
    print(render(floor_rows(figures)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
