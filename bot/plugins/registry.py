"""The tool registry: the catalogue of what the model may call (:mod:`bot.plugins.catalog`) and
the running of one call, safely.

Whatever goes wrong (unknown tool, arguments that are not JSON or do not fit the schema, a
tool the caller may not use, a timeout, an exception) comes back as a tool message the model
can read and act on; the turn never crashes. An unexpected exception's text never does: it may
be a driver's or a library's, with internals the model would repeat in the chat, so the model
reads only that the tool failed and the log gets the traceback (a
:class:`~bot.errors.UserFacingError`'s ``chat_text`` is meant for the chat, and passes). Output
is capped so one tool cannot flood the context window.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from bot.context import ChatContext
from bot.errors import UserFacingError
from bot.plugins.catalog import OfferedTool, PluginsFor, ToolCatalog
from bot.plugins.declare import Permission
from bot.plugins.output import ToolOutput, ToolResult
from bot.plugins.tool_protocol import ContextFactory

if TYPE_CHECKING:
    from bot.llm.client import ToolCall
    from bot.metrics import Metrics

__all__ = ["ContextFactory", "OfferedTool", "PluginsFor", "ToolRegistry"]

log = logging.getLogger(__name__)


class ToolRegistry(ToolCatalog):
    """The catalogue, and :meth:`run` (the conversation's ``ToolRunner``)."""

    def __init__(
        self,
        is_admin: Callable[[ChatContext], bool],
        *,
        plugins_for: PluginsFor | None = None,
        servers_for: PluginsFor | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        super().__init__(is_admin, plugins_for=plugins_for, servers_for=servers_for)
        self.metrics = metrics  # calls by source and outcome (parlour_tool_calls_total)

    async def run(self, ctx: ChatContext, call: ToolCall) -> ToolResult:
        result = await self._run(ctx, call)
        if self.metrics is not None:
            text = result.text if isinstance(result, ToolOutput) else result
            outcome = "error" if text.startswith("Error:") else "ok"
            self.metrics.tool_call(self.source_of(call.name), outcome)
        return result

    async def _run(self, ctx: ChatContext, call: ToolCall) -> ToolResult:
        tool = self.get(call.name)
        if tool is None:
            listed = ", ".join(line.name for line in self.offered(ctx)) or "none"
            return f"Error: there is no tool named {call.name!r}. Available tools: {listed}."
        if not self.allowed(tool, ctx):
            log.warning("tool %s refused chat=%s user=%s", tool.name, ctx.chat_key, ctx.user_id)
            if not self.enabled_here(tool, ctx):
                return f"Error: {tool.name} is not enabled in this chat. Tell the user so."
            who = "admins of this chat" if tool.permission is Permission.ADMINS else "private chats"
            return f"Error: {tool.name} is only available to {who}. Tell the user so."
        try:
            raw = json.loads(call.arguments or "{}")
        except json.JSONDecodeError as exc:
            return f"Error: the arguments are not valid JSON ({exc.msg}). Call {tool.name} again."
        values = tool.arguments(raw)
        if isinstance(values, str):
            return f"Error: invalid arguments for {tool.name}: {values}"
        try:
            result = await asyncio.wait_for(tool.invoke(ctx, values), tool.timeout)
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
