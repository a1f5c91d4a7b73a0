"""Loopback ports for servers a test or bench starts as its own process (the demo MCP server)."""

from __future__ import annotations

import asyncio
import socket
import subprocess

__all__ = ["free_port", "wait_listening"]


def free_port() -> int:
    """A port nothing listens on right now (the OS picks it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def wait_listening(
    port: int, process: subprocess.Popen[bytes] | None = None, seconds: float = 30
) -> None:
    """Return once 127.0.0.1:``port`` accepts connections; fail if ``process`` exits first
    or nothing listens within ``seconds``."""
    for _ in range(int(seconds / 0.05)):
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}")
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.05)
            continue
        writer.close()
        await writer.wait_closed()
        return
    raise RuntimeError(f"nothing listened on port {port} within {seconds:g} s")
