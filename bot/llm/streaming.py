"""A streamed answer: SSE chunks in, text deltas out as they come, then one Completion.

The chunks stay the JSON dicts they arrive as: the SDK's typed chunk models cost about 600
Python calls per chunk, two thirds of a streamed turn's own time (bench/floor.py). So every
field is read defensively: a server's odd chunk is skipped, never a crash mid-answer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import openai
import pydantic
from openai import AsyncStream
from openai.types import CompletionUsage

from bot.errors import LLMUnavailableError
from bot.llm.cache_hints import usage_of
from bot.llm.completion import Completion, StreamItem, TextDelta, ToolCall
from bot.llm.retry import classify
from bot.values import Usage

__all__ = ["assemble_stream"]


@dataclass
class _ToolCallParts:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


async def assemble_stream(
    chunks: AsyncStream[object], *, endpoint: str, model: str, from_fallback: bool
) -> AsyncIterator[StreamItem]:
    """Turn SSE chunks (JSON dicts) into text deltas and a final Completion with whole tool
    calls."""
    text: list[str] = []
    calls: dict[int, _ToolCallParts] = {}
    finish_reason: str | None = None
    usage: Usage | None = None
    try:
        async with chunks:
            async for chunk in chunks:
                if not isinstance(chunk, dict):
                    continue
                model = chunk.get("model") or model
                reported = chunk.get("usage")
                if isinstance(reported, dict):  # once, in the last chunk: the SDK's model then
                    usage = _streamed_usage(reported) or usage
                choice = _first_dict(chunk.get("choices"))
                if choice is not None:
                    delta = choice.get("delta")
                    delta = delta if isinstance(delta, dict) else {}
                    content = delta.get("content")
                    if content:
                        text.append(content)
                        yield TextDelta(content)
                    for part in _dicts(delta.get("tool_calls")):
                        parts = calls.setdefault(int(part.get("index") or 0), _ToolCallParts())
                        if part.get("id"):
                            parts.id = part["id"]
                        function = part.get("function")
                        function = function if isinstance(function, dict) else {}
                        if function.get("name"):
                            parts.name += function["name"]
                        if function.get("arguments"):
                            parts.arguments.append(function["arguments"])
                    if choice.get("finish_reason"):
                        finish_reason = choice["finish_reason"]
    except openai.APIError as exc:
        error, _ = classify(exc, endpoint=endpoint)
        raise error from exc
    if finish_reason is None:  # the connection closed before the model said it was done
        raise LLMUnavailableError(f"{endpoint}: the stream ended before the answer did")
    yield Completion(
        text="".join(text),
        tool_calls=tuple(
            ToolCall(id=p.id, name=p.name, arguments="".join(p.arguments))
            for _, p in sorted(calls.items())
        ),
        finish_reason=finish_reason,
        usage=usage,
        model=model,
        from_fallback=from_fallback,
    )


def _streamed_usage(reported: dict[str, Any]) -> Usage | None:
    """A streamed answer's usage (the last chunk's), or None when a server sent a malformed
    one: the turn is then counted locally rather than failed."""
    try:
        return usage_of(CompletionUsage.model_validate(reported))
    except pydantic.ValidationError:
        return None


def _dicts(value: object) -> list[dict[str, Any]]:
    if not value or not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, dict)]


def _first_dict(value: object) -> dict[str, Any] | None:
    """The first choice: the first dict of a list (a server's odd entries skipped)."""
    if isinstance(value, list):
        for item in value:
            if isinstance(item, dict):
                return item
    return None
