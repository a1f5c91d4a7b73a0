"""The tool seam: what the service's tool loop needs from a plugin registry.

The service sends ``definitions(ctx)`` with each request, runs every tool call of one reply in
parallel through ``run``, and sends the results back. A runner must never raise for a bad call:
unknown tools, invalid arguments and failures come back as text for the model to read.
"""

from __future__ import annotations

from typing import Any, Protocol

from bot.context import ChatContext
from bot.llm.client import ToolCall
from bot.plugins.output import ToolResult


class ToolRunner(Protocol):
    def definitions(self, ctx: ChatContext) -> list[dict[str, Any]]:
        """OpenAI ``tools`` entries this caller may use (empty: no tools for this chat)."""
        ...

    async def run(self, ctx: ChatContext, call: ToolCall) -> ToolResult:
        """The tool's result (or an error description): the tool message's text, and maybe
        images for the model to look at (:mod:`bot.plugins.output`)."""
        ...
