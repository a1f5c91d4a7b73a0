"""What a model answers, as values: a completion, its tool calls, and streamed text deltas."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bot.values import Usage

__all__ = ["Completion", "StreamItem", "TextDelta", "ToolCall"]


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # raw JSON text, as the model wrote it

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass(frozen=True, slots=True)
class Completion:
    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str = "stop"
    usage: Usage | None = None
    model: str = ""
    # A fallback answered: its usage says nothing about the primary's tokenizer (and its prompt
    # may have been re-trimmed to its own window).
    from_fallback: bool = False

    def assistant_message(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": self.text or None}
        if self.tool_calls:
            message["tool_calls"] = [call.as_dict() for call in self.tool_calls]
        elif message["content"] is None:
            message["content"] = ""
        return message


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


StreamItem = TextDelta | Completion
