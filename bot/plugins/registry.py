"""The tool registry: what the model may call here, and running one call safely.

Two kinds of tool live here side by side: a plugin's Python function (:mod:`bot.plugins.declare`)
and an external tool with a JSON schema (an MCP server's, :mod:`bot.plugins.external`). The
rules are the same for both. Permissions are code, not prompt: a tool the caller may not use (an
admin tool, a private-chat tool, or one whose plugin or server this chat's ``chats:`` preset
leaves out) is not offered, and is refused if called anyway. Whatever goes wrong (unknown tool,
arguments that are not JSON or do not fit the schema, a timeout, an exception) comes back as a
tool message the model can read and act on; the turn never crashes. An unexpected exception's
text never does: it may be a driver's or a library's, with internals the model would repeat in
the chat, so the model reads only that the tool failed and the log gets the traceback (a
:class:`~bot.errors.UserFacingError`'s ``chat_text`` is meant for the chat, and passes). Output
is capped so one tool cannot flood the context window.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from bot.context import ChatContext
from bot.errors import UserFacingError
from bot.plugins.context import ToolContext
from bot.plugins.declare import Permission, ToolDefinitionError, ToolSpec
from bot.plugins.external import ExternalTool
from bot.plugins.output import ToolOutput, ToolResult

if TYPE_CHECKING:
    from bot.llm.client import ToolCall
    from bot.metrics import Metrics

log = logging.getLogger(__name__)

ContextFactory = Callable[[ToolSpec, ChatContext], ToolContext]
PluginsFor = Callable[[ChatContext], "frozenset[str] | None"]
"""The plugin modules (or, for ``servers_for``, MCP servers) enabled in a chat (None: all)."""


@dataclass(frozen=True, slots=True)
class OfferedTool:
    """One line of ``/tools``: a tool offered in a chat and who provides it."""

    name: str
    source: str  # "plugin:plugins.clock", "mcp:search", or "builtin" (added without a plugin)
    admin_only: bool


class ToolRegistry:
    def __init__(
        self,
        is_admin: Callable[[ChatContext], bool],
        *,
        plugins_for: PluginsFor | None = None,
        servers_for: PluginsFor | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self.is_admin = is_admin
        self.metrics = metrics  # calls by source and outcome (parlour_tool_calls_total)
        self.plugins_for = plugins_for
        self.servers_for = servers_for
        self._tools: dict[str, tuple[ToolSpec, ContextFactory] | ExternalTool] = {}
        self._owners: dict[str, str] = {}  # plugin tool name -> the plugin module that added it

    def add(self, spec: ToolSpec, context: ContextFactory, *, plugin: str | None = None) -> None:
        if spec.name in self._tools:
            raise ToolDefinitionError(f"tool {spec.name!r} is already registered")
        self._tools[spec.name] = (spec, context)
        if plugin is not None:
            self._owners[spec.name] = plugin

    def add_external(self, tool: ExternalTool) -> None:
        if tool.name in self._tools:
            raise ToolDefinitionError(f"tool {tool.name!r} is already registered")
        self._tools[tool.name] = tool

    def replace_source(self, source: str, tools: Iterable[ExternalTool]) -> None:
        """Swap every external tool of ``source`` for ``tools`` at once (a server's refreshed
        list; empty: it went away). A name another source holds is skipped, with a warning."""
        for name in [n for n, t in self._tools.items() if _source(t) == source]:
            del self._tools[name]
        for tool in tools:
            if tool.name in self._tools:
                log.warning("tool %s from %s skipped: the name is taken", tool.name, source)
                continue
            self._tools[tool.name] = tool

    def remove(self, name: str) -> None:
        self._tools.pop(name, None)
        self._owners.pop(name, None)

    def names(self) -> list[str]:
        return sorted(self._tools)

    def plugin_names(self) -> frozenset[str]:
        """The names plugin tools hold (an MCP tool that collides gets its server's prefix)."""
        return frozenset(n for n, t in self._tools.items() if not isinstance(t, ExternalTool))

    @property
    def has_admin_tools(self) -> bool:
        """Adapters look up a sender's admin rights before a turn only when it matters."""
        return any(_permission(t) is Permission.ADMINS for t in self._tools.values())

    def allowed(self, tool: ToolSpec | ExternalTool, ctx: ChatContext) -> bool:
        if not self._enabled_here(tool, ctx):
            return False
        if tool.permission is Permission.ADMINS:
            return self.is_admin(ctx)
        if tool.permission is Permission.PRIVATE:
            return ctx.is_private
        return True

    def _enabled_here(self, tool: ToolSpec | ExternalTool, ctx: ChatContext) -> bool:
        """A chat's preset may list the plugins (and MCP servers) used there; only their tools
        are offered."""
        if isinstance(tool, ExternalTool):
            servers = self.servers_for(ctx) if self.servers_for is not None else None
            return servers is None or tool.source.removeprefix("mcp:") in servers
        enabled = self.plugins_for(ctx) if self.plugins_for is not None else None
        return enabled is None or self._owners.get(tool.name) in enabled

    def offered(self, ctx: ChatContext) -> list[OfferedTool]:
        """The tools ``ctx`` may use and where each comes from (``/tools``)."""
        lines = []
        for name, entry in sorted(self._tools.items()):
            tool = entry if isinstance(entry, ExternalTool) else entry[0]
            if self.allowed(tool, ctx):
                source = _source(entry)
                if source is None:
                    owner = self._owners.get(name)
                    source = f"plugin:{owner}" if owner else "builtin"
                lines.append(OfferedTool(name, source, tool.permission is Permission.ADMINS))
        return lines

    # -- ToolRunner --------------------------------------------------------------------------

    def definitions(self, ctx: ChatContext) -> list[dict[str, Any]]:
        """The tools offered to ``ctx``, by name: the same set in the same order and form on
        every turn, so the request's prefix (tools come first) stays cacheable."""
        out = []
        for _, entry in sorted(self._tools.items()):
            tool = entry if isinstance(entry, ExternalTool) else entry[0]
            if self.allowed(tool, ctx):
                out.append(tool.definition())
        return out

    async def run(self, ctx: ChatContext, call: ToolCall) -> ToolResult:
        result = await self._run(ctx, call)
        if self.metrics is not None:
            text = result.text if isinstance(result, ToolOutput) else result
            outcome = "error" if text.startswith("Error:") else "ok"
            self.metrics.tool_call(self.source_of(call.name), outcome)
        return result

    def source_of(self, name: str) -> str:
        """Who provides tool ``name``: ``plugin:<module>``, ``mcp:<server>``, ``builtin``, or
        ``unknown`` (bounded by config: a metric label)."""
        entry = self._tools.get(name)
        if entry is None:
            return "unknown"
        source = _source(entry)
        if source is None:
            owner = self._owners.get(name)
            source = f"plugin:{owner}" if owner else "builtin"
        return source

    async def _run(self, ctx: ChatContext, call: ToolCall) -> ToolResult:
        entry = self._tools.get(call.name)
        if entry is None:
            return (
                f"Error: there is no tool named {call.name!r}. Available tools: {self._list(ctx)}."
            )
        tool = entry if isinstance(entry, ExternalTool) else entry[0]
        if not self.allowed(tool, ctx):
            log.warning("tool %s refused chat=%s user=%s", tool.name, ctx.chat_key, ctx.user_id)
            if not self._enabled_here(tool, ctx):
                return f"Error: {tool.name} is not enabled in this chat. Tell the user so."
            who = "admins of this chat" if tool.permission is Permission.ADMINS else "private chats"
            return f"Error: {tool.name} is only available to {who}. Tell the user so."
        try:
            raw = json.loads(call.arguments or "{}")
        except json.JSONDecodeError as exc:
            return f"Error: the arguments are not valid JSON ({exc.msg}). Call {tool.name} again."
        if isinstance(entry, ExternalTool):
            problems = entry.problems(raw)
            if problems is not None:
                return f"Error: invalid arguments for {entry.name}: {problems}"
            values: dict[str, Any] = raw
        else:
            try:
                arguments = entry[0].arguments.model_validate(raw)
            except ValidationError as exc:
                return f"Error: invalid arguments for {tool.name}: {_problems(exc)}"
            values = {name: getattr(arguments, name) for name in type(arguments).model_fields}
        try:
            result = await asyncio.wait_for(_invoke(entry, ctx, values), tool.timeout)
        except TimeoutError:
            log.warning(
                "tool %s timed out after %ss chat=%s", tool.name, tool.timeout, ctx.chat_key
            )
            return f"Error: {tool.name} did not finish within {tool.timeout:g} seconds."
        except UserFacingError as exc:  # raised on purpose, its chat_text meant to be read
            log.warning("tool %s refused chat=%s: %s", tool.name, ctx.chat_key, exc)
            return f"Error: {tool.name} failed: {exc.chat_text}"
        except Exception:
            log.exception("tool %s failed chat=%s", tool.name, ctx.chat_key)
            return f"Error: {tool.name} failed (an internal error). Tell the user it did not work."
        if isinstance(result, ToolOutput):
            return replace(result, text=_capped(result.text, tool.max_output))
        return _capped(_as_text(result), tool.max_output)

    def _list(self, ctx: ChatContext) -> str:
        return ", ".join(line.name for line in self.offered(ctx)) or "none"


async def _invoke(
    entry: tuple[ToolSpec, ContextFactory] | ExternalTool, ctx: ChatContext, values: dict[str, Any]
) -> Any:
    if isinstance(entry, ExternalTool):
        return await entry.call(values)
    spec, context = entry
    return await spec.func(context(spec, ctx), **values)


def _source(entry: tuple[ToolSpec, ContextFactory] | ExternalTool) -> str | None:
    return entry.source if isinstance(entry, ExternalTool) else None


def _permission(entry: tuple[ToolSpec, ContextFactory] | ExternalTool) -> Permission:
    return entry.permission if isinstance(entry, ExternalTool) else entry[0].permission


def _problems(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors()[:5]:
        where = ".".join(str(p) for p in error["loc"]) or "arguments"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)


def _as_text(result: Any) -> str:
    if isinstance(result, str):
        return result
    if result is None:
        return "done"
    try:
        return json.dumps(result, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(result)


def _capped(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"… [cut: {len(text) - limit} more characters]"
