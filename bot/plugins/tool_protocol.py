"""One protocol for every tool the model may call, whoever provides it.

A plugin's Python function (:class:`PluginTool`, over its :class:`~bot.plugins.declare.ToolSpec`)
and an external tool with a JSON schema (:class:`~bot.plugins.external.ExternalTool`, an MCP
server's) look the same to the catalogue and the runner: a name and a definition for the model,
the rules (permission, timeout, output cap, which preset entry enables it), a check of the
arguments, and a call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import ValidationError

from bot.context import ChatContext
from bot.plugins.context import ToolContext
from bot.plugins.declare import Permission, ToolSpec

__all__ = ["ContextFactory", "Enabled", "PluginTool", "Tool"]

ContextFactory = Callable[[ToolSpec, ChatContext], ToolContext]


@dataclass(frozen=True, slots=True)
class Enabled:
    """What a chat's ``chats:`` preset enables (None: everything of that kind)."""

    plugins: frozenset[str] | None = None
    servers: frozenset[str] | None = None


class Tool(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def permission(self) -> Permission: ...
    @property
    def timeout(self) -> float: ...
    @property
    def max_output(self) -> int: ...
    @property
    def source(self) -> str:
        """Who provides it: ``plugin:<module>``, ``mcp:<server>`` or ``builtin``."""
        ...

    def definition(self) -> dict[str, Any]:
        """The chat API's ``tools`` entry."""
        ...

    def enabled(self, here: Enabled) -> bool:
        """Whether the chat's preset enables it."""
        ...

    def arguments(self, raw: Any) -> dict[str, Any] | str:
        """The arguments to call it with, or a line saying what is wrong with ``raw``."""
        ...

    async def invoke(self, ctx: ChatContext, values: dict[str, Any]) -> Any:
        """Run it with arguments that passed :meth:`arguments`."""
        ...


@dataclass(frozen=True, slots=True)
class PluginTool:
    """A plugin's (or the bot's own) Python tool, with the context factory it is called with."""

    spec: ToolSpec
    context: ContextFactory
    plugin: str | None = None  # the module that added it (None: built in)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def permission(self) -> Permission:
        return self.spec.permission

    @property
    def timeout(self) -> float:
        return self.spec.timeout

    @property
    def max_output(self) -> int:
        return self.spec.max_output

    @property
    def source(self) -> str:
        return f"plugin:{self.plugin}" if self.plugin else "builtin"

    def definition(self) -> dict[str, Any]:
        return self.spec.definition()

    def enabled(self, here: Enabled) -> bool:
        return here.plugins is None or self.plugin in here.plugins

    def arguments(self, raw: Any) -> dict[str, Any] | str:
        try:
            parsed = self.spec.arguments.model_validate(raw)
        except ValidationError as exc:
            return _problems(exc)
        return {name: getattr(parsed, name) for name in type(parsed).model_fields}

    async def invoke(self, ctx: ChatContext, values: dict[str, Any]) -> Any:
        return await self.spec.func(self.context(self.spec, ctx), **values)


def _problems(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors()[:5]:
        where = ".".join(str(p) for p in error["loc"]) or "arguments"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)
