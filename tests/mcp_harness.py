"""The demo MCP server (:mod:`bot.testing.mcp_demo`) for tests: its stdio command, or a running
HTTP instance on a free port, and config sections that point the bot at it."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from typing import Any

from bot.testing.ports import free_port, wait_listening

STDIO = [sys.executable, "-m", "bot.testing.mcp_demo"]


def stdio_server(**options: Any) -> dict[str, Any]:
    """A ``mcp.servers`` entry that starts the demo server over stdio."""
    return {"command": STDIO, **options}


@contextlib.asynccontextmanager
async def http_demo(token: str = "") -> AsyncIterator[str]:
    """The demo server over streamable HTTP; yields its URL, stops it afterwards. ``token``:
    the bearer token its ``whoami`` tool expects."""
    port = free_port()
    env = {**os.environ, "DEMO_HTTP_TOKEN": token}
    process = subprocess.Popen(  # noqa: ASYNC220 - started once per test, never waited on here
        [*STDIO, "http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        await wait_listening(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextlib.asynccontextmanager
async def recording_proxy(target: str) -> AsyncIterator[tuple[str, list[str]]]:
    """A pass-through HTTP proxy in front of ``target`` (an MCP URL); yields its own URL and
    the methods of the requests it forwarded, in order (streamed answers stream through)."""
    from aiohttp import ClientSession, web

    methods: list[str] = []
    hop = {"host", "content-length", "transfer-encoding", "connection"}

    async def forward(request: web.Request) -> web.StreamResponse:
        methods.append(request.method)
        headers = {k: v for k, v in request.headers.items() if k.lower() not in hop}
        async with session.request(
            request.method, target, headers=headers, data=await request.read()
        ) as upstream:
            answer = web.StreamResponse(
                status=upstream.status,
                headers={k: v for k, v in upstream.headers.items() if k.lower() not in hop},
            )
            await answer.prepare(request)
            async for chunk in upstream.content.iter_any():
                await answer.write(chunk)
            await answer.write_eof()
            return answer

    app = web.Application()
    app.router.add_route("*", "/mcp", forward)
    runner = web.AppRunner(app, access_log=None)
    async with ClientSession() as session:
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        try:
            yield f"http://127.0.0.1:{port}/mcp", methods
        finally:
            await runner.cleanup()
