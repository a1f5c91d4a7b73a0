"""Doctor: each MCP server starts (or answers), lists its tools, and the chat API would take them.

One connection per enabled server, through the bot's own client code
(:meth:`bot.mcp.connection.ServerConnection.list_once`), all at once, each bounded by the
smaller of the doctor's limit and the server's ``connect_timeout``; a stdio child is stopped
before its row is returned. The tools go through the same :func:`bot.mcp.catalog.build_catalog`
the bot uses, so a tool the bot would leave out (a schema the chat API refuses) or a server whose
every tool ``allow``/``deny`` drop is a warning here rather than a surprise in ``/tools``.
A failure's row names the program or the URL (without credentials or query), never a header or
an env value.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

import mcp_types as types

from bot.config import MCPServerSettings, Settings, safe_url
from bot.doctor import Check, fail, passed, warn
from bot.mcp.catalog import Catalog, build_catalog, chat_name
from bot.mcp.connection import ServerConnection, describe_failure
from bot.plugins.external import ExternalCall
from bot.plugins.output import ToolOutput
from bot.text import counted

__all__ = ["check_mcp"]

SHOWN = 8  # tool names in a row, then "..."

Listed = tuple[str, list[types.Tool]]  # protocol version, tools


async def check_mcp(settings: Settings, seconds: float) -> list[Check]:
    """One row per configured server, in config order (a disabled one says so and passes)."""
    servers = settings.mcp.servers
    enabled = {name: server for name, server in servers.items() if server.enabled}
    outcomes = await asyncio.gather(
        *(_list(name, server, seconds) for name, server in enabled.items()),
        return_exceptions=True,
    )
    results = dict(zip(enabled, outcomes, strict=True))
    tools = {name: r[1] for name, r in results.items() if not isinstance(r, BaseException)}
    rows = []
    for name, server in servers.items():
        row_name = f"mcp {name}"
        if not server.enabled:
            rows.append(passed(row_name, "disabled (enabled: false): not started, not checked"))
            continue
        result = results[name]
        bound = min(seconds, server.connect_timeout)
        if isinstance(result, BaseException):
            rows.append(_failure(row_name, name, server, result, bound))
            continue
        others = {chat_name(t.name) for n, listed in tools.items() if n != name for t in listed}
        catalog = build_catalog(name, server, result[1], taken=others, call=_never_called)
        rows.append(_listed(row_name, name, server, result, catalog))
    return rows


async def _list(name: str, server: MCPServerSettings, seconds: float) -> Listed:
    connection = ServerConnection(name, server, on_tools=lambda _tools: None)
    return await connection.list_once(min(seconds, server.connect_timeout))


def _listed(
    row: str, name: str, server: MCPServerSettings, result: Listed, catalog: Catalog
) -> Check:
    protocol, tools = result
    count = len(tools)
    found = f"{counted(count, 'tool')} via {server.transport} (protocol {protocol})"
    offered = [tool.name for tool in catalog.tools]
    if catalog.skipped:
        reasons = "; ".join(f"{s.name}: {s.reason}" for s in catalog.skipped)
        return warn(
            row,
            f"{found}; {len(catalog.skipped)} left out ({reasons}); offered: {_names(offered)}",
            "nothing if those tools are not needed (deny them to silence this); else the "
            "server must give each an object schema without oneOf/anyOf/allOf/enum/not at the "
            "top level (the chat API refuses those)",
        )
    if not offered:
        return warn(
            row,
            f"{found}, none offered: allow/deny leave out every one "
            f"({_names(t.name for t in tools)})",
            f"check mcp.servers.{name}.allow and deny (fnmatch patterns over the names listed)",
        )
    picked = f", {len(offered)} offered by allow/deny" if len(offered) < count else ""
    return passed(row, f"{found}{picked}: {_names(offered)}")


def _names(names: Iterable[str]) -> str:
    listed = list(names)
    shown = ", ".join(listed[:SHOWN]) + (", ..." if len(listed) > SHOWN else "")
    return shown or "none"


def _failure(
    row: str, name: str, server: MCPServerSettings, exc: BaseException, bound: float
) -> Check:
    if _timed_out(exc):
        why = f"no answer within {bound:g} s"
    elif isinstance(exc, asyncio.CancelledError):
        why = "the connection was cut"
    else:
        why = describe_failure(exc, server)
    key = f"mcp.servers.{name}"
    if server.command is not None:
        where = f"{server.command[0]!r} (stdio)"
        fix = (
            f"check that {key}.command exists (an absolute path, or on the bot's PATH), that "
            "its cwd exists, and that the program speaks MCP over stdio"
        )
    else:
        assert server.url is not None
        where = safe_url(server.url)
        why = why.replace(server.url, where)  # an error may quote the URL with its query
        fix = (
            f"check that {key}.url is reachable from here and serves MCP (streamable HTTP, "
            "often ending in /mcp), and that its headers (e.g. Authorization) are what the "
            "server expects"
        )
    if _timed_out(exc):
        fix += f"; a server slow to start needs a larger {key}.connect_timeout"
    return fail(row, f"{where}: cannot list its tools: {_scrub(why, server)}", fix)


def _timed_out(exc: BaseException) -> bool:
    leaf = exc
    while isinstance(leaf, BaseExceptionGroup) and leaf.exceptions:
        leaf = leaf.exceptions[0]
    return isinstance(leaf, TimeoutError)


def _scrub(text: str, server: MCPServerSettings) -> str:
    """Belt and braces: a header or env value quoted back by some error is cut out here too."""
    for secret in (*server.headers.values(), *server.env.values()):
        value = secret.get_secret_value()
        if value:
            text = text.replace(value, "***")
    return text


def _never_called(remote: str, name: str) -> ExternalCall:
    """``build_catalog`` wants a caller per tool; the doctor only lists them."""

    async def call(arguments: dict[str, object]) -> ToolOutput:
        raise AssertionError(f"doctor does not call tools ({remote})")

    return call
