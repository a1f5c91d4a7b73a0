"""The demo MCP server (:mod:`bot.testing.mcp_demo`) for tests: its stdio command, or a running
HTTP instance on a free port, and config sections that point the bot at it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from typing import Any

STDIO = [sys.executable, "-m", "bot.testing.mcp_demo"]


def stdio_server(**options: Any) -> dict[str, Any]:
    """A ``mcp.servers`` entry that starts the demo server over stdio."""
    return {"command": STDIO, **options}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


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
        await _accepting(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def _accepting(port: int, process: subprocess.Popen[bytes]) -> None:
    for _ in range(300):
        if process.poll() is not None:
            raise RuntimeError(f"the demo server exited with {process.returncode}")
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.05)
            continue
        writer.close()
        await writer.wait_closed()
        return
    raise RuntimeError("the demo server did not listen within 15 s")
