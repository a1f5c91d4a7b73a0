"""The fake server's "model": context-window check, the newest user text, output budgeting.

Counting uses the same ``bot.llm.tokens`` counter the bot uses for its own budget, so a history
the bot trims to fit is accepted here and one it fails to trim is rejected like OpenAI does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from bot.testing.llm.script import ScriptedToolCall
from bot.testing.llm.wire import ApiError, Generation, JSONDict

if TYPE_CHECKING:
    from bot.llm.tokens import TokenCounter


def context_failure(window: int, prompt_tokens: int, limit: int | None) -> ApiError | None:
    """OpenAI's ``context_length_exceeded`` if prompt plus requested output exceed the window."""
    wanted = prompt_tokens + (limit or 0)
    if wanted <= window:
        return None
    if limit:
        message = (
            f"This model's maximum context length is {window} tokens. However, you requested "
            f"{wanted} tokens ({prompt_tokens} in the messages, {limit} in the completion). "
            "Please reduce the length of the messages or completion."
        )
    else:
        message = (
            f"This model's maximum context length is {window} tokens. However, your messages "
            f"resulted in {prompt_tokens} tokens. Please reduce the length of the messages."
        )
    return ApiError(400, message, param="messages", code="context_length_exceeded")


def last_user_text(messages: Sequence[Any]) -> str:
    """The newest user message's text (text parts joined by spaces), or "" if none."""
    for message in reversed(messages):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        return " ".join(p["text"] for p in content if p.get("type") == "text")
    return ""


def generate(
    counter: TokenCounter,
    text: str | None,
    calls: Sequence[ScriptedToolCall],
    limit: int | None,
    next_call_id: Callable[[], str],
) -> Generation:
    """Spend the output budget on text, then tool calls; cut what is over like a model would.

    A cut answer has finish_reason "length" and reports exactly ``limit`` completion tokens.
    """
    used = 0
    if text:
        used = counter.count_text(text)
        if limit is not None and used > limit:
            return Generation(truncate(text, limit, counter), [], "length", limit)
    wire: list[JSONDict] = []
    for call in calls:
        arguments = call.arguments
        cost = counter.count_text(call.name) + counter.count_text(arguments)
        over = limit is not None and used + cost > limit
        if limit is not None and over:
            room = max(0, limit - used - counter.count_text(call.name))
            arguments = truncate(arguments, room, counter)
        function = {"name": call.name, "arguments": arguments}
        wire.append({"id": next_call_id(), "type": "function", "function": function})
        if limit is not None and over:
            return Generation(text, wire, "length", limit)
        used += cost
    return Generation(text, wire, "tool_calls" if wire else "stop", used)


def truncate(text: str, limit: int, counter: TokenCounter) -> str:
    """The longest prefix of ``text`` that fits in ``limit`` tokens (binary search)."""
    low, high = 0, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if counter.count_text(text[:middle]) <= limit:
            low = middle
        else:
            high = middle - 1
    return text[:low]
