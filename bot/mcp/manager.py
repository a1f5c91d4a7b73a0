"""All configured MCP servers: started together, their tools kept in the registry.

``start`` returns at once: each server connects in its own task (:mod:`bot.mcp.connection`),
and its tools join the registry when it is ready and leave it when it goes away. Names are
decided over every server's last known list (:mod:`bot.mcp.catalog`), so a tool keeps its name
while another server restarts. A call's failure of any kind comes back as the tool's text.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Collection, Sequence
from typing import Any

import mcp_types as types
from mcp import MCPError
from mcp_types.jsonrpc import CONNECTION_CLOSED, REQUEST_TIMEOUT

from bot.config import Settings
from bot.context import ChatContext
from bot.mcp.catalog import Catalog, build_catalog, chat_name, picked
from bot.mcp.connection import OnTools, ServerConnection, ServerUnavailableError, describe_failure
from bot.mcp.results import ResultPolicy, to_output
from bot.mcp.status import ServerState, ServerStatus
from bot.plugins.external import ExternalCall
from bot.plugins.output import ToolOutput
from bot.plugins.registry import PluginsFor, ToolRegistry

__all__ = ["MCPManager"]

log = logging.getLogger(__name__)


class MCPManager:
    def __init__(
        self, settings: Settings, registry: ToolRegistry, *, servers_for: PluginsFor | None = None
    ) -> None:
        self._registry = registry
        self._servers_for = servers_for
        self._policy = ResultPolicy(
            vision=settings.llm.vision,
            max_images=settings.llm.max_images,
            max_image_bytes=settings.llm.max_image_bytes,
        )
        self._known: dict[str, Sequence[types.Tool]] = {}  # last list each server gave
        self._catalogs: dict[str, Catalog] = {}
        self._connections = {
            name: ServerConnection(name, server, on_tools=self._listener(name))
            for name, server in settings.mcp.enabled.items()
        }

    def start(self) -> None:
        """Every server connects in the background; nothing here waits for one."""
        for connection in self._connections.values():
            connection.start()
        if self._connections:
            log.info("mcp servers starting: %s", ", ".join(self._connections))

    async def aclose(self) -> None:
        await asyncio.gather(*(c.aclose() for c in self._connections.values()))

    async def wait_ready(self, seconds: float, names: Collection[str] | None = None) -> bool:
        """True when every server (or each of ``names``) is ready within ``seconds``."""
        waits = [
            c.ready.wait() for n, c in self._connections.items() if names is None or n in names
        ]
        try:
            async with asyncio.timeout(seconds):
                await asyncio.gather(*waits)
        except TimeoutError:
            return False
        return True

    def statuses(self, ctx: ChatContext | None = None) -> list[ServerStatus]:
        """Each server's state; with ``ctx``, only the servers whose tools that chat may use."""
        enabled = self._servers_for(ctx) if ctx is not None and self._servers_for else None
        now = time.monotonic()
        out = []
        for name, connection in self._connections.items():
            if enabled is not None and name not in enabled:
                continue
            catalog = self._catalogs.get(name, Catalog((), ()))
            retry = connection.retry_at
            out.append(
                ServerStatus(
                    name=name,
                    transport=connection.settings.transport,
                    state=connection.state,
                    tools=tuple(t.name for t in catalog.tools)
                    if connection.state is ServerState.READY
                    else (),
                    skipped=catalog.skipped,
                    error=connection.error,
                    retry_in=max(0.0, retry - now) if retry is not None else None,
                    restarts=connection.restarts,
                )
            )
        return out

    # -- keeping the registry in step ---------------------------------------------------------

    def _listener(self, server: str) -> OnTools:
        return lambda tools: self._tools_of(server, tools)

    def _tools_of(self, server: str, tools: Sequence[types.Tool]) -> None:
        if tools:
            self._known[server] = tools
        live = {n for n, c in self._connections.items() if c.ready.is_set() or n == server}
        if not tools:
            live.discard(server)
            self._registry.replace_source(f"mcp:{server}", ())
        for name in sorted(live):
            self._install(name)

    def _install(self, server: str) -> None:
        """Rebuild ``server``'s tools: a name another server also offers gets the prefix."""
        others = {
            chat_name(tool.name)
            for name, tools in self._known.items()
            if name != server
            for tool in tools
            if picked(tool.name, self._connections[name].settings)
        }
        taken = self._registry.plugin_names() | others
        connection = self._connections[server]
        catalog = build_catalog(
            server,
            connection.settings,
            self._known.get(server, ()),
            taken=taken,
            call=lambda remote, shown: self._caller(connection, remote, shown),
        )
        for skip in catalog.skipped:
            if skip not in self._catalogs.get(server, Catalog((), ())).skipped:
                log.warning("mcp server %s: tool %s left out: %s", server, skip.name, skip.reason)
        self._catalogs[server] = catalog
        self._registry.replace_source(f"mcp:{server}", catalog.tools)

    def _caller(self, connection: ServerConnection, remote: str, shown: str) -> ExternalCall:
        async def call(arguments: dict[str, Any]) -> ToolOutput:
            try:
                result = await connection.call(remote, arguments)
            except ServerUnavailableError as exc:
                return ToolOutput(
                    f"Error: {shown} is unavailable right now: {exc}. Tell the user it should"
                    " work again shortly."
                )
            except MCPError as exc:
                return ToolOutput(f"Error: {shown} failed: {_protocol_error(connection, exc)}")
            except Exception as exc:  # a transport failure: the model reads it, the turn goes on
                why = describe_failure(exc, connection.settings)
                log.warning("mcp tool %s on %s failed: %s", remote, connection.name, why)
                return ToolOutput(f"Error: {shown} failed: {why}")
            return to_output(shown, result, self._policy)

        return call


def _protocol_error(connection: ServerConnection, exc: MCPError) -> str:
    code = exc.error.code
    if code == CONNECTION_CLOSED:
        return f"the MCP server {connection.name} stopped during the call (it is restarting)"
    if code == REQUEST_TIMEOUT:
        return f"the MCP server {connection.name} did not answer in time"
    return f"{exc.error.message} (MCP error {code})"[:500]
