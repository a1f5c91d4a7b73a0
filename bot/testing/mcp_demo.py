"""A real MCP server, written with the official SDK: try ``mcp.servers`` without one of your own.

``python -m bot.testing.mcp_demo`` serves stdio; ``... http PORT`` serves streamable HTTP at
``http://127.0.0.1:PORT/mcp``. Its tools cover every kind of result and failure the bot must
handle: text, structured content, an image, a resource link, a tool error, a hang, a crash,
and a tool list that changes. Parlour's own tests and ``bench`` run it; a plugin author's
tests can too (``command: [python, -m, bot.testing.mcp_demo]``).
"""

from __future__ import annotations

import asyncio
import os
import struct
import sys
import zlib

from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ResourceLink
from pydantic import BaseModel

server = MCPServer("parlour-demo", version="1.0")


def png(width: int, height: int) -> bytes:
    """A real PNG of one colour (its header carries the size the bot reads)."""
    rows = b"".join(b"\x00" + b"\xff\x80\x00" * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


class Forecast(BaseModel):
    city: str
    temp_c: float
    sky: str


@server.tool()
def echo(text: str) -> str:
    """Repeat the text back."""
    return f"echo: {text}"


@server.tool()
def forecast(city: str) -> Forecast:
    """Tomorrow's weather for a city."""
    return Forecast(city=city, temp_c=21.5, sky="clear")


@server.tool()
def chart() -> Image:
    """A chart of this week's numbers, as a picture."""
    return Image(data=png(4, 3), format="png")


@server.tool()
def manual() -> ResourceLink:
    """Where the manual lives."""
    return ResourceLink(
        type="resource_link",
        name="manual",
        title="The Parlour manual",
        uri="https://example.org/manual",
        mime_type="text/html",
    )


@server.tool()
def fail(reason: str) -> str:
    """Always fails, saying why."""
    raise ToolError(f"refused: {reason}")


@server.tool()
async def hang() -> str:
    """Never answers."""
    await asyncio.sleep(3600)
    return "never"


@server.tool()
def wipe() -> str:
    """Delete everything (an admin tool)."""
    return "wiped"


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
def long(size: int) -> str:
    """A text of ``size`` characters."""
    return "x" * size


@server.tool()
def env(name: str) -> str:
    """An environment variable of the server process."""
    return f"{name}={os.environ.get(name)!r}"


@server.tool()
def whoami(ctx: Context) -> str:
    """Whether this HTTP request's Authorization header holds the expected bearer token (the
    server's DEMO_HTTP_TOKEN); the token itself is never echoed."""
    expected = os.environ.get("DEMO_HTTP_TOKEN")
    given = (ctx.headers or {}).get("authorization")
    if given is None:
        return "unauthorised: no Authorization header"
    return (
        "authorised" if expected and given == f"Bearer {expected}" else "unauthorised: wrong token"
    )


@server.tool()
async def grow(name: str, ctx: Context) -> str:
    """Add a new tool called ``name`` and tell the client its tools changed."""

    def added() -> str:
        return f"I am {name}"

    server.add_tool(added, name=name, description=f"A tool added at run time ({name}).")
    await ctx.session.send_tool_list_changed()  # older protocol versions
    await ctx.notify_tools_changed()  # 2026-07-28: the subscriptions/listen stream
    return f"added {name}"


@server.tool()
def crash() -> str:
    """End the server process at once (a crash)."""
    sys.stderr.write("demo server: crashing on purpose\n")
    sys.stderr.flush()
    os._exit(3)


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()


if __name__ == "__main__":
    main()


__all__ = ["png", "server"]
