"""The tool catalogue: which tools exist, and which of them a chat is offered.

Permissions are code, not prompt: a tool the caller may not use (an admin tool, a private-chat
tool, or one whose plugin or server this chat's ``chats:`` preset leaves out) is not offered,
and the runner (:mod:`bot.plugins.runner`) refuses it if called anyway. Every tool is a
:class:`~bot.plugins.tool_protocol.Tool`, whoever provides it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from bot.context import ChatContext
from bot.plugins.declare import Permission, ToolDefinitionError, ToolSpec
from bot.plugins.tool_protocol import ContextFactory, Enabled, PluginTool, Tool

__all__ = ["OfferedTool", "PluginsFor", "ToolCatalog"]

log = logging.getLogger(__name__)

PluginsFor = Callable[[ChatContext], "frozenset[str] | None"]
"""The plugin modules (or, for ``servers_for``, MCP servers) enabled in a chat (None: all)."""


@dataclass(frozen=True, slots=True)
class OfferedTool:
    """One line of ``/tools``: a tool offered in a chat and who provides it."""

    name: str
    source: str  # "plugin:plugins.clock", "mcp:search", or "builtin" (added without a plugin)
    admin_only: bool


class ToolCatalog:
    def __init__(
        self,
        is_admin: Callable[[ChatContext], bool],
        *,
        plugins_for: PluginsFor | None = None,
        servers_for: PluginsFor | None = None,
    ) -> None:
        self.is_admin = is_admin
        self.plugins_for = plugins_for
        self.servers_for = servers_for
        self._tools: dict[str, Tool] = {}

    def add(self, spec: ToolSpec, context: ContextFactory, *, plugin: str | None = None) -> None:
        """A plugin's tool (``plugin`` None: the bot's own)."""
        self.add_tool(PluginTool(spec, context, plugin))

    def add_tool(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ToolDefinitionError(f"tool {tool.name!r} is already registered")
        self._tools[tool.name] = tool

    def add_external(self, tool: Tool) -> None:
        self.add_tool(tool)

    def replace_source(self, source: str, tools: Iterable[Tool]) -> None:
        """Swap every tool of ``source`` for ``tools`` at once (a server's refreshed list;
        empty: it went away). A name another source holds is skipped, with a warning."""
        for name in [n for n, t in self._tools.items() if t.source == source]:
            del self._tools[name]
        for tool in tools:
            if tool.name in self._tools:
                log.warning("tool %s from %s skipped: the name is taken", tool.name, source)
                continue
            self._tools[tool.name] = tool

    def remove(self, name: str) -> None:
        self._tools.pop(name, None)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return sorted(self._tools)

    def plugin_names(self) -> frozenset[str]:
        """The names plugin tools hold (an MCP tool that collides gets its server's prefix)."""
        return frozenset(
            n
            for n, t in self._tools.items()
            if t.source == "builtin" or t.source.startswith("plugin:")
        )

    @property
    def has_admin_tools(self) -> bool:
        """Adapters look up a sender's admin rights before a turn only when it matters."""
        return any(t.permission is Permission.ADMINS for t in self._tools.values())

    def enabled_here(self, tool: Tool, ctx: ChatContext) -> bool:
        """A chat's preset may list the plugins (and MCP servers) used there."""
        plugins = self.plugins_for(ctx) if self.plugins_for is not None else None
        servers = self.servers_for(ctx) if self.servers_for is not None else None
        return tool.enabled(Enabled(plugins, servers))

    def allowed(self, tool: Tool, ctx: ChatContext) -> bool:
        if not self.enabled_here(tool, ctx):
            return False
        if tool.permission is Permission.ADMINS:
            return self.is_admin(ctx)
        if tool.permission is Permission.PRIVATE:
            return ctx.is_private
        return True

    def offered(self, ctx: ChatContext) -> list[OfferedTool]:
        """The tools ``ctx`` may use and where each comes from (``/tools``)."""
        return [
            OfferedTool(name, tool.source, tool.permission is Permission.ADMINS)
            for name, tool in sorted(self._tools.items())
            if self.allowed(tool, ctx)
        ]

    def definitions(self, ctx: ChatContext) -> list[dict[str, Any]]:
        """The tools offered to ``ctx``, by name: the same set in the same order and form on
        every turn, so the request's prefix (tools come first) stays cacheable."""
        return [t.definition() for _, t in sorted(self._tools.items()) if self.allowed(t, ctx)]

    def source_of(self, name: str) -> str:
        """Who provides tool ``name``: ``plugin:<module>``, ``mcp:<server>``, ``builtin``, or
        ``unknown`` (bounded by config: a metric label)."""
        tool = self._tools.get(name)
        return tool.source if tool is not None else "unknown"
