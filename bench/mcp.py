"""Section 10: MCP tools (issue 17): what a server costs the bot's start, and a tool call.

The demo server (:mod:`bot.testing.mcp_demo`, the SDK's own ``MCPServer``) over stdio and over
streamable HTTP, called through the registry exactly as the tool loop calls it
(``ToolRegistry.run``: schema check, permission, timeout, result conversion):

* **start**: ``async with App`` with a stdio server and a server whose command does not exist
  configured, against the same with no servers: the bot must not wait for either;
* **ready**: from the start until the stdio server's tools are in the registry;
* **call latency**: the median and 95th percentile of ``CALLS`` sequential ``echo`` calls;
* **concurrent calls**: ``CALLS`` calls, ``PARALLEL`` at a time, calls per second;
* **crash to tools back**: a ``crash`` call, until the restarted server's tools are offered
  again (the first retry waits 1 s by design).

``python -m bench.mcp`` runs this section alone and prints its rows.
"""

from __future__ import annotations

import asyncio
import logging
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import Row, fmt_ms, make_settings, private
from bench.table import render
from bot.app import App
from bot.llm.client import ToolCall
from bot.testing.fake_llm import FakeLLM
from bot.testing.ports import free_port, wait_listening

S10 = "10. MCP tools"
CALLS = 300
PARALLEL = 10
DEMO = [sys.executable, "-m", "bot.testing.mcp_demo"]
READY_WAIT = 60.0


@dataclass(frozen=True, slots=True)
class CallFigures:
    transport: str
    p50: float
    p95: float
    per_second: float


@dataclass(frozen=True, slots=True)
class MCPFigures:
    start_plain: float
    start_with_servers: float
    ready: float
    calls: tuple[CallFigures, ...]
    crash_to_back: float


async def _timed_start(fake: FakeLLM, db: Path, servers: dict[str, Any]) -> tuple[float, float]:
    began = time.perf_counter()
    settings = make_settings(fake.base_url, db, mcp={"servers": servers})
    async with App(settings) as app:
        started = time.perf_counter() - began
        ready = float("nan")
        if app.mcp is not None and await app.mcp.wait_ready(READY_WAIT, names=["demo"]):
            ready = time.perf_counter() - began
    return started, ready


async def _calls(fake: FakeLLM, db: Path, transport: str, server: dict[str, Any]) -> CallFigures:
    settings = make_settings(fake.base_url, db, mcp={"servers": {"demo": server}})
    ctx = private("1")
    async with App(settings) as app:
        assert app.mcp is not None and await app.mcp.wait_ready(READY_WAIT)

        async def one(n: int) -> float:
            call = ToolCall(id=f"c{n}", name="echo", arguments=f'{{"text": "m{n}"}}')
            began = time.perf_counter()
            result = await app.tools.run(ctx, call)
            took = time.perf_counter() - began
            assert str(getattr(result, "text", result)) == f"echo: m{n}", result
            return took

        for n in range(20):  # warm up
            await one(n)
        sequential = [await one(n) for n in range(CALLS)]
        gate = asyncio.Semaphore(PARALLEL)

        async def limited(n: int) -> float:
            async with gate:
                return await one(n)

        began = time.perf_counter()
        await asyncio.gather(*(limited(n) for n in range(CALLS)))
        wall = time.perf_counter() - began
    cuts = statistics.quantiles(sequential, n=20)
    return CallFigures(transport, statistics.median(sequential), cuts[18], CALLS / wall)


async def _crash(fake: FakeLLM, db: Path) -> float:
    settings = make_settings(fake.base_url, db, mcp={"servers": {"demo": {"command": DEMO}}})
    async with App(settings) as app:
        assert app.mcp is not None and await app.mcp.wait_ready(READY_WAIT)
        began = time.perf_counter()
        await app.tools.run(private("1"), ToolCall(id="x", name="crash", arguments="{}"))
        while "echo" in app.tools.names():  # noqa: ASYNC110 - gone once the crash is seen
            await asyncio.sleep(0.005)
        while "echo" not in app.tools.names():  # noqa: ASYNC110 - the registry has no event
            await asyncio.sleep(0.005)
        return time.perf_counter() - began


async def measure_mcp(root: Path) -> MCPFigures:
    fake = FakeLLM(latency=0)
    await fake.start()
    port = free_port()
    http = subprocess.Popen(  # noqa: ASYNC220 - the bench's own server, stopped below
        [*DEMO, "http", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        plain, _ = await _timed_start(fake, root / "mcp-plain.db", {})
        servers = {"demo": {"command": DEMO}, "missing": {"command": ["/nonexistent/mcp"]}}
        with_servers, ready = await _timed_start(fake, root / "mcp-start.db", servers)
        stdio = await _calls(fake, root / "mcp-stdio.db", "stdio", {"command": DEMO})
        await wait_listening(port, http)
        url = f"http://127.0.0.1:{port}/mcp"
        over_http = await _calls(fake, root / "mcp-http.db", "streamable HTTP", {"url": url})
        crash = await _crash(fake, root / "mcp-crash.db")
    finally:
        http.terminate()
        http.wait(10)
        await fake.stop()
    return MCPFigures(plain, with_servers, ready, (stdio, over_http), crash)


def mcp_rows(f: MCPFigures) -> list[Row]:
    rows = [
        Row(
            S10,
            "bot start (`async with App`): no servers / a stdio server and a missing command",
            f"{fmt_ms(f.start_plain)} / {fmt_ms(f.start_with_servers)}",
            "the servers add < 250 ms",
            f.start_with_servers - f.start_plain < 0.25,
        ),
        Row(S10, "... until the stdio server's tools are offered", fmt_ms(f.ready)),
    ]
    for c in f.calls:
        rows += [
            Row(
                S10,
                f"`echo` through the registry over {c.transport}: median / p95 of {CALLS}",
                f"{fmt_ms(c.p50)} / {fmt_ms(c.p95)}",
                "median < 20 ms",
                c.p50 < 0.020,
            ),
            Row(S10, f"... {PARALLEL} at a time: calls per second", f"{c.per_second:,.0f}"),
        ]
    rows.append(
        Row(
            S10,
            "a `crash` call until the restarted server's tools are back (first retry: 1 s)",
            fmt_ms(f.crash_to_back),
            "< 5 s",
            f.crash_to_back < 5,
        )
    )
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    logging.getLogger("bot.mcp").setLevel(logging.ERROR)  # the missing server's retries
    with tempfile.TemporaryDirectory(prefix="parlour-bench-mcp-") as tmp:
        figures = asyncio.run(measure_mcp(Path(tmp)))
    print(render(mcp_rows(figures)))


if __name__ == "__main__":
    main()
