"""What a tool call gives back: text for the tool message, and images the model may look at.

The chat API takes only text in a ``tool`` message, so an image a tool returns (an MCP server's
screenshot, a chart) travels beside it: the tool message holds a reference line (as a user's
photo does in the history, :func:`bot.platform.media.reference`) and the tool loop shows the
picture to the model in a user message that follows the round's tool messages. Only the text is
stored.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.platform.media import Attachment

__all__ = ["ToolOutput", "ToolResult", "text_of"]


@dataclass(frozen=True, slots=True)
class ToolOutput:
    text: str
    images: tuple[Attachment, ...] = ()


ToolResult = str | ToolOutput
"""What a :class:`bot.conversation.tool_runner.ToolRunner` returns for one call."""


def text_of(result: ToolResult) -> str:
    return result if isinstance(result, str) else result.text
