"""One MCP server, kept connected by a task of its own: start, list tools, watch, restart.

The task owns the SDK's ``Client`` context (anyio needs it entered and left in one task); tool
calls come from the turns' tasks and use the live client directly. A connection attempt is
bounded by ``connect_timeout``; a server that fails or dies is retried with exponential
backoff (1 s doubling to 60 s; a connection that stayed up a minute starts again at 1 s), so
a broken server costs a log line per attempt, never the bot's start or another server.

Change of tools: on a 2026-07-28 connection the ``subscriptions/listen`` stream announces it
(and ends abruptly when the server dies, so an idle crash is seen at once); on an older one
the ``notifications/tools/list_changed`` notification does, and a ping every
``PROBE_SECONDS`` finds an idle crash. Either way the list is fetched again and handed to
``on_tools``.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from typing import Any, ClassVar

import anyio
import mcp_types as types
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.session import IncomingMessage
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import SubscriptionLost
from mcp_types.jsonrpc import CONNECTION_CLOSED
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from bot.config import MCPServerSettings, safe_url
from bot.mcp.status import ServerState
from bot.mcp.stderr import StderrPump

__all__ = ["OnTools", "ServerConnection", "ServerUnavailableError", "describe_failure"]

log = logging.getLogger(__name__)

FIRST_BACKOFF, MAX_BACKOFF = 1.0, 60.0
STABLE_SECONDS = 60.0  # up this long: the next failure retries at FIRST_BACKOFF again
PROBE_SECONDS = 15.0  # older protocol: how often an idle connection is pinged
CLOSE_GRACE = 5.0  # seconds a connected server gets to end its session when the bot stops
MAX_PAGES = 100  # tools/list pages followed (a paginator that never ends cannot hang us)

OnTools = Callable[[Sequence[types.Tool]], None]


class ServerUnavailableError(Exception):
    """A call reached a server that is not connected (starting, or restarting)."""


class ServerConnection:
    # "auto": the newest protocol the server speaks, falling back to the initialize handshake
    # of older servers (tests pin "legacy" to exercise that path against the SDK's server)
    MODE: ClassVar[str] = "auto"

    def __init__(self, name: str, settings: MCPServerSettings, *, on_tools: OnTools) -> None:
        self.name = name
        self.settings = settings
        self._on_tools = on_tools
        self.state = ServerState.STARTING
        self.error = ""
        self.restarts = 0
        self.retry_at: float | None = None  # monotonic time of the next attempt
        self.ready = asyncio.Event()
        self._client: Client | None = None
        self._lost = asyncio.Event()  # a caller saw the connection close
        self._relist = asyncio.Event()  # notifications/tools/list_changed (older protocol)
        self._task: asyncio.Task[None] | None = None
        self._scope: anyio.CancelScope | None = None
        self._closing = False

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"mcp:{self.name}")

    async def aclose(self) -> None:
        """Stop the owner task. A connected session ends as if it were lost, so its transport
        closes normally (an HTTP session is deleted; a stdio child has its stdin closed, then
        is killed); one still connecting, or not ending within :data:`CLOSE_GRACE`, is cut
        through the task's anyio scope. Never ``Task.cancel()``: the SDK stops a stdio child
        in a shielded scope that a native cancel cuts short, and then waits for the child's
        stdout to end, i.e. as long as a hung server lives."""
        self._closing = True
        self._lost.set()
        task = self._task
        if task is not None:
            if self._client is None and self._scope is not None:
                self._scope.cancel()  # connecting or waiting to retry: nothing to end gently
            done, _ = await asyncio.wait({task}, timeout=CLOSE_GRACE)
            if not done and self._scope is not None:
                self._scope.cancel()
            await asyncio.wait({task})  # not gather: a cancelled caller must not cancel it
            self._task = None
        self._set(ServerState.STOPPED)

    async def call(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        client = self._client
        if client is None:
            raise ServerUnavailableError(self.unavailable())
        try:
            # the registry's wait_for cancels first; this bounds a call made some other way
            return await client.call_tool(
                tool, arguments, read_timeout_seconds=self.settings.timeout + 5
            )
        except MCPError as exc:
            if exc.error.code == CONNECTION_CLOSED and self._client is client:
                self._mark_lost()
            raise

    def unavailable(self) -> str:
        why = f" ({self.error})" if self.error else ""
        return f"the MCP server {self.name} is {self.state.value}{why}"

    async def list_once(self, seconds: float) -> tuple[str, list[types.Tool]]:
        """Connect, list the tools, disconnect (``doctor``): the bot's own client code, bounded
        by ``seconds``. Leaving the stack stops a stdio child, also after a timeout (an anyio
        deadline enclosing it, not ``asyncio.timeout``: see :meth:`aclose`)."""
        with anyio.CancelScope(deadline=anyio.current_time() + seconds):
            async with AsyncExitStack() as stack:
                client = await stack.enter_async_context(self._client_for(stack))
                tools = await self._list(client)
                return client.protocol_version, tools
        raise TimeoutError

    # -- the owner task ----------------------------------------------------------------------

    async def _run(self) -> None:
        with anyio.CancelScope() as self._scope:
            await self._retry_forever()

    async def _retry_forever(self) -> None:
        backoff = FIRST_BACKOFF
        while not self._closing:
            began = time.monotonic()
            self.retry_at = None  # an attempt under way (a retry shows "retrying now")
            try:
                await self._connection()
                reason = "the server closed the connection"
            except asyncio.CancelledError:
                if self._closing:
                    raise
                # a dying HTTP transport cancels the scope it runs in: that is a loss, not a stop
                task = asyncio.current_task()
                if task is not None:
                    task.uncancel()
                reason = "the connection was cut"
            except Exception as exc:  # every failure of a server is reported and retried
                reason = describe_failure(exc, self.settings)
            finally:
                self._client = None
                self.ready.clear()
                self._on_tools(())
            if self._closing:
                return
            if time.monotonic() - began >= STABLE_SECONDS:
                backoff = FIRST_BACKOFF
            self.error = reason
            self.retry_at = time.monotonic() + backoff
            self._set(ServerState.RETRYING)
            log.warning(
                "mcp server %s unavailable: %s; retrying in %.0f s", self.name, reason, backoff
            )
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF)
            self.restarts += 1

    async def _connection(self) -> None:
        # anyio's deadline, not asyncio.timeout (see aclose); it encloses the client's scopes
        with anyio.CancelScope(deadline=anyio.current_time() + self.settings.connect_timeout) as (
            deadline
        ):
            async with AsyncExitStack() as stack:
                client = await stack.enter_async_context(self._client_for(stack))
                tools = await self._list(client)
                deadline.deadline = math.inf  # connected: no deadline from here on
                await self._serve(client, tools)
        if deadline.cancelled_caught:
            raise TimeoutError

    async def _serve(self, client: Client, tools: list[types.Tool]) -> None:
        if self._closing:
            return  # closed while connecting: the stack ends the session
        self._lost.clear()
        self._client = client
        self._on_tools(tools)
        self.error, self.retry_at = "", None
        self.ready.set()
        self._set(ServerState.READY)
        log.info(
            "mcp server %s ready: %d tools (protocol %s)",
            self.name,
            len(tools),
            client.protocol_version,
        )
        if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
            await self._listen(client)
        else:
            await self._probe(client)

    def _client_for(self, stack: AsyncExitStack) -> Client:
        settings = self.settings
        if settings.command is not None:
            params = StdioServerParameters(
                command=settings.command[0],
                args=list(settings.command[1:]),
                env={key: value.get_secret_value() for key, value in settings.env.items()},
                cwd=settings.cwd,
            )
            pump = stack.enter_context(StderrPump(self.name))
            transport = stdio_client(params, errlog=pump.file)
        else:
            import httpx2  # the SDK's HTTP client; headers are set here, never logged

            assert settings.url is not None
            headers = {key: value.get_secret_value() for key, value in settings.headers.items()}
            http = httpx2.AsyncClient(
                headers=headers, timeout=httpx2.Timeout(30, read=settings.timeout + 30)
            )
            stack.push_async_callback(http.aclose)
            transport = streamable_http_client(settings.url, http_client=http)
        return Client(transport, mode=self.MODE, message_handler=self._message, cache=None)

    async def _list(self, client: Client) -> list[types.Tool]:
        tools: list[types.Tool] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools += page.tools
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    async def _listen(self, client: Client) -> None:
        """Until the stream ends: each event fetches the tool list again."""
        try:
            async with client.listen(tools_list_changed=True) as events:
                lost = asyncio.create_task(self._lost.wait())
                try:
                    async for _ in _until(events, lost):
                        await self._refresh(client)
                finally:
                    lost.cancel()
        except SubscriptionLost:
            raise ConnectionError("the server stopped") from None

    async def _probe(self, client: Client) -> None:
        while True:
            wake = asyncio.create_task(self._wake())
            done, _ = await asyncio.wait({wake}, timeout=PROBE_SECONDS)
            wake.cancel()
            if self._lost.is_set():
                raise ConnectionError("the server stopped")
            if self._relist.is_set():
                self._relist.clear()
                await self._refresh(client)
            elif not done:
                async with asyncio.timeout(self.settings.connect_timeout):
                    await client.send_ping()

    async def _wake(self) -> None:
        lost = asyncio.create_task(self._lost.wait())
        relist = asyncio.create_task(self._relist.wait())
        try:
            await asyncio.wait({lost, relist}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            lost.cancel()
            relist.cancel()

    async def _refresh(self, client: Client) -> None:
        tools = await self._list(client)
        log.info("mcp server %s changed its tools: now %d", self.name, len(tools))
        self._on_tools(tools)

    async def _message(self, message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._relist.set()

    def _mark_lost(self) -> None:
        self.ready.clear()  # before the signal: a retry must not race onto the dead client
        self._client = None
        self._lost.set()

    def _set(self, state: ServerState) -> None:
        self.state = state


async def _until(events: Any, stop: asyncio.Task[Any]) -> Any:
    """``events`` (an async iterator) until ``stop`` finishes; then ConnectionError."""
    iterator = aiter(events)
    while True:
        step = asyncio.ensure_future(anext(iterator))
        step.add_done_callback(_retrieved)
        try:
            done, _ = await asyncio.wait({step, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            step.cancel()  # no-op when it finished
        if step not in done:
            raise ConnectionError("the server stopped")
        try:
            item = step.result()
        except StopAsyncIteration:
            return
        yield item


def _retrieved(task: asyncio.Future[Any]) -> None:
    """A step abandoned at shutdown must not log "exception was never retrieved"."""
    if not task.cancelled():
        task.exception()


def describe_failure(exc: BaseException, settings: MCPServerSettings) -> str:
    """One line for the log and ``/tools``: the innermost cause, never a header or env value."""
    leaf = exc
    while isinstance(leaf, BaseExceptionGroup) and leaf.exceptions:
        leaf = leaf.exceptions[0]
    if isinstance(leaf, TimeoutError):
        return f"no answer within connect_timeout={settings.connect_timeout:g} s"
    if isinstance(leaf, FileNotFoundError) and settings.command is not None:
        return f"cannot start {settings.command[0]!r} (not found, or its cwd does not exist)"
    if isinstance(leaf, ConnectionError) and str(leaf):
        return str(leaf)
    if isinstance(leaf, MCPError):
        return f"MCP error {leaf.error.code}: {leaf.error.message}"[:300]
    text = str(leaf).strip() or type(leaf).__name__
    if settings.url:  # an HTTP error may quote the URL: never its userinfo or query
        text = text.replace(settings.url, safe_url(settings.url))
    return f"{type(leaf).__name__}: {text}"[:300]
