"""``/tools`` (admins): the tools offered in this chat and where each comes from.

The list is the registry's own answer for this chat (its preset and the caller's rights), so
what it shows is what the model is offered. MCP servers that are not ready are named too, with
their last error: an operator sees why a server's tools are missing without reading logs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from bot.context import ChatContext
from bot.conversation.commands import Commands
from bot.mcp.status import ServerState, ServerStatus
from bot.plugins.commands import CommandInfo, CommandResult
from bot.plugins.registry import OfferedTool, ToolRegistry

__all__ = ["TOOLS_COMMAND", "add_tools_command", "describe_tools"]

TOOLS_COMMAND = CommandInfo(
    "tools", "List the tools I can use here and where they come from", admin_only=True
)


def describe_tools(
    offered: Sequence[OfferedTool], servers: Sequence[ServerStatus], bases: Sequence[str] = ()
) -> str:
    """``bases``: the knowledge bases ``search_knowledge`` searches here (none: not offered)."""
    listed = [f"- {tool.name} ({_source(tool.source)}{_admins(tool)})" for tool in offered]
    if bases:
        listed.append(f"- search_knowledge (built in: knowledge bases {', '.join(bases)})")
    if listed:
        lines = [f"Tools offered here ({len(listed)}):", *listed]
    else:
        lines = ["No tools are offered here."]
    waiting = [s for s in servers if s.state is not ServerState.READY]
    if waiting:
        lines += ["", "MCP servers not ready:"] + [f"- {s.line()}" for s in waiting]
    skipped = [(s.name, skip) for s in servers for skip in s.skipped]
    if skipped:
        lines += ["", "Left out (the chat API would refuse them):"]
        lines += [f"- {server}: {skip.name}: {skip.reason}" for server, skip in skipped]
    return "\n".join(lines)


def add_tools_command(
    commands: Commands,
    registry: ToolRegistry,
    servers: Callable[[ChatContext], Sequence[ServerStatus]],
) -> None:
    """Register ``/tools``; ``servers(ctx)``: the MCP servers whose tools this chat may use."""
    knowledge = commands.service.knowledge

    async def handle(ctx: ChatContext, args: str) -> CommandResult:
        offers_search = commands.service.settings.knowledge.tool
        bases = await knowledge.bases(ctx) if offers_search else ()
        text = describe_tools(registry.offered(ctx), servers(ctx), bases)
        return CommandResult(text, private=True)

    commands.register(TOOLS_COMMAND, handle)


def _source(source: str) -> str:
    kind, _, name = source.partition(":")
    if kind == "mcp":
        return f"MCP server {name}"
    if kind == "plugin":
        return f"plugin {name}"
    return "built in"


def _admins(tool: OfferedTool) -> str:
    return ", admins only" if tool.admin_only else ""
