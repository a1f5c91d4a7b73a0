"""The tool registry: what the model may call here, and running one call safely.

Permissions are code, not prompt: a tool the caller may not use (an admin tool, a private-chat
tool, or one from a plugin that this chat's ``chats:`` preset leaves out) is not offered, and is
refused if called anyway. Whatever goes wrong (unknown tool, arguments that are not JSON or do
not fit the schema, a timeout, an exception) comes back as a tool message the model can read and
act on; the turn never crashes. Output is capped so one tool cannot flood the context window.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from bot.context import ChatContext
from bot.plugins.context import ToolContext
from bot.plugins.declare import Permission, ToolDefinitionError, ToolSpec

if TYPE_CHECKING:
    from bot.llm.client import ToolCall

log = logging.getLogger(__name__)

ContextFactory = Callable[[ToolSpec, ChatContext], ToolContext]
PluginsFor = Callable[[ChatContext], "frozenset[str] | None"]
"""The plugin modules enabled in a chat (None: all of them)."""


class ToolRegistry:
    def __init__(
        self, is_admin: Callable[[ChatContext], bool], *, plugins_for: PluginsFor | None = None
    ) -> None:
        self.is_admin = is_admin
        self.plugins_for = plugins_for
        self._tools: dict[str, tuple[ToolSpec, ContextFactory]] = {}
        self._owners: dict[str, str] = {}  # tool name -> the plugin module that added it

    def add(self, spec: ToolSpec, context: ContextFactory, *, plugin: str | None = None) -> None:
        if spec.name in self._tools:
            raise ToolDefinitionError(f"tool {spec.name!r} is already registered")
        self._tools[spec.name] = (spec, context)
        if plugin is not None:
            self._owners[spec.name] = plugin

    def remove(self, name: str) -> None:
        self._tools.pop(name, None)
        self._owners.pop(name, None)

    def names(self) -> list[str]:
        return sorted(self._tools)

    @property
    def has_admin_tools(self) -> bool:
        """Adapters look up a sender's admin rights before a turn only when it matters."""
        return any(spec.permission is Permission.ADMINS for spec, _ in self._tools.values())

    def allowed(self, spec: ToolSpec, ctx: ChatContext) -> bool:
        if not self._enabled_here(spec, ctx):
            return False
        if spec.permission is Permission.ADMINS:
            return self.is_admin(ctx)
        if spec.permission is Permission.PRIVATE:
            return ctx.is_private
        return True

    def _enabled_here(self, spec: ToolSpec, ctx: ChatContext) -> bool:
        """A chat's preset may list the plugins used there; only their tools are offered."""
        enabled = self.plugins_for(ctx) if self.plugins_for is not None else None
        return enabled is None or self._owners.get(spec.name) in enabled

    # -- ToolRunner --------------------------------------------------------------------------

    def definitions(self, ctx: ChatContext) -> list[dict[str, Any]]:
        """The tools offered to ``ctx``, by name: the same set in the same order and form on
        every turn, so the request's prefix (tools come first) stays cacheable."""
        offered = (
            spec for name, (spec, _) in sorted(self._tools.items()) if self.allowed(spec, ctx)
        )
        return [spec.definition() for spec in offered]

    async def run(self, ctx: ChatContext, call: ToolCall) -> str:
        entry = self._tools.get(call.name)
        if entry is None:
            offered = (
                ", ".join(
                    sorted(n for n, (spec, _) in self._tools.items() if self.allowed(spec, ctx))
                )
                or "none"
            )
            return f"Error: there is no tool named {call.name!r}. Available tools: {offered}."
        spec, context = entry
        if not self.allowed(spec, ctx):
            log.warning("tool %s refused chat=%s user=%s", spec.name, ctx.chat_key, ctx.user_id)
            if not self._enabled_here(spec, ctx):
                return f"Error: {spec.name} is not enabled in this chat. Tell the user so."
            who = "admins of this chat" if spec.permission is Permission.ADMINS else "private chats"
            return f"Error: {spec.name} is only available to {who}. Tell the user so."
        try:
            raw = json.loads(call.arguments or "{}")
        except json.JSONDecodeError as exc:
            return f"Error: the arguments are not valid JSON ({exc.msg}). Call {spec.name} again."
        try:
            arguments = spec.arguments.model_validate(raw)
        except ValidationError as exc:
            return f"Error: invalid arguments for {spec.name}: {_problems(exc)}"
        values = {name: getattr(arguments, name) for name in type(arguments).model_fields}
        try:
            result = await asyncio.wait_for(spec.func(context(spec, ctx), **values), spec.timeout)
        except TimeoutError:
            log.warning(
                "tool %s timed out after %ss chat=%s", spec.name, spec.timeout, ctx.chat_key
            )
            return f"Error: {spec.name} did not finish within {spec.timeout:g} seconds."
        except Exception as exc:
            log.exception("tool %s failed chat=%s", spec.name, ctx.chat_key)
            return f"Error: {spec.name} failed: {type(exc).__name__}: {exc}"
        return _capped(_as_text(result), spec.max_output)


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
