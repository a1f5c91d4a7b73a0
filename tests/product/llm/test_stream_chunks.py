"""``bot.llm.streaming``: streamed chunks read as the dicts they arrive as, defensively.

The happy path runs through the real SDK against the fake in every streaming test; here, the
chunks an odd server might send (fields missing, null or of the wrong type, a malformed usage)
are assembled without a crash, and what is well formed still comes through.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, cast

import pytest
from openai import AsyncStream

from bot.errors import LLMUnavailableError
from bot.llm.completion import Completion, TextDelta
from bot.llm.streaming import assemble_stream


class Chunks:
    """What ``assemble_stream`` uses of an ``AsyncStream``: ``async with``, ``async for``."""

    def __init__(self, *chunks: object) -> None:
        self.chunks = chunks
        self.closed = False

    async def __aenter__(self) -> Chunks:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.closed = True

    async def __aiter__(self) -> AsyncIterator[object]:
        for chunk in self.chunks:
            yield chunk


async def assemble(*chunks: object) -> tuple[list[str], Completion]:
    stream = cast(AsyncStream[object], Chunks(*chunks))
    deltas: list[str] = []
    final: Completion | None = None
    async for item in assemble_stream(stream, endpoint="fake", model="m", from_fallback=False):
        if isinstance(item, TextDelta):
            deltas.append(item.text)
        else:
            final = item
    assert final is not None
    return deltas, final


def delta(**fields: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": fields, "finish_reason": None}]}


async def test_odd_chunks_are_skipped_and_the_rest_assembled() -> None:
    deltas, final = await assemble(
        "not a dict",
        {"choices": "not a list"},
        {"choices": [None, {"delta": None}]},
        delta(content="Hel"),
        delta(tool_calls="nope"),
        delta(tool_calls=[None, {"index": 0, "id": "c1", "function": None}]),
        delta(tool_calls=[{"index": 0, "function": {"name": "roll", "arguments": '{"n":'}}]),
        delta(tool_calls=[{"index": 0, "function": {"arguments": "2}"}}], content="lo"),
        {"model": "m-2", "choices": [{"delta": {}, "finish_reason": "tool_calls"}]},
        {"choices": [], "usage": {"prompt_tokens": "many"}},  # malformed: counted locally
    )
    assert deltas == ["Hel", "lo"]
    assert final.text == "Hello" and final.model == "m-2"
    assert [(c.id, c.name, c.arguments) for c in final.tool_calls] == [("c1", "roll", '{"n":2}')]
    assert final.finish_reason == "tool_calls"
    assert final.usage is None


async def test_usage_and_cached_tokens_of_the_last_chunk() -> None:
    usage = {
        "prompt_tokens": 2000,
        "completion_tokens": 5,
        "total_tokens": 2005,
        "prompt_tokens_details": {"cached_tokens": 1536},
    }
    _, final = await assemble(
        delta(content="hi"),
        {"choices": [{"delta": {}, "finish_reason": "stop"}]},
        {"choices": [], "usage": usage},
    )
    assert final.usage is not None
    assert (final.usage.prompt_tokens, final.usage.cached_tokens) == (2000, 1536)


async def test_a_stream_that_ends_before_the_answer_is_an_outage() -> None:
    with pytest.raises(LLMUnavailableError, match="ended before the answer"):
        await assemble(delta(content="half an ans"))
