"""How a turn's answer is kept in a row, the same on every backend: a JSON array of the
OpenAI-format messages, with only the fields the API accepts back (so a copy between backends,
or a window read on either, returns the same messages)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from bot.values import ToolStep

__all__ = ["answer_json", "api_messages", "final_text", "tool_steps", "turn_messages"]

_KEPT = ("role", "content", "tool_calls", "tool_call_id", "name")


def _api_fields(message: Mapping[str, Any]) -> dict[str, Any]:
    """Only the fields the API accepts back; drops None-valued extras."""
    return {k: message[k] for k in _KEPT if k in message and (k == "content" or message[k])}


def api_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """An answer's messages as stored (and as a window returns them)."""
    return [_api_fields(m) for m in messages]


def answer_json(messages: Sequence[Mapping[str, Any]]) -> str:
    """The ``answer`` column's text for an answer's messages."""
    return json.dumps(api_messages(messages), ensure_ascii=False)


def turn_messages(user_text: str, answer: str | None) -> tuple[dict[str, Any], ...]:
    """A stored turn's messages: the user's, then the answer's."""
    user: dict[str, Any] = {"role": "user", "content": user_text}
    if not answer:
        return (user,)
    return (user, *json.loads(answer))


def final_text(answer: str | None) -> str:
    """The answer's last assistant text ("" while pending, unanswered or only tool calls)."""
    if not answer:
        return ""
    for message in reversed(json.loads(answer)):
        content = message.get("content") if isinstance(message, dict) else None
        if message.get("role") == "assistant" and isinstance(content, str) and content:
            return content
    return ""


def tool_steps(answer: str | None) -> tuple[ToolStep, ...]:
    """The answer's tool calls in the order the model made them, each with the result stored
    for its call id ("" when none was: an interrupted turn)."""
    if not answer:
        return ()
    messages = [m for m in json.loads(answer) if isinstance(m, dict)]
    results = {
        str(m.get("tool_call_id")): _text_of(m.get("content"))
        for m in messages
        if m.get("role") == "tool"
    }
    steps: list[ToolStep] = []
    for message in messages:
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        for call in calls if isinstance(calls, list) else ():
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict):
                continue
            arguments = function.get("arguments")
            steps.append(
                ToolStep(
                    name=str(function.get("name") or ""),
                    arguments=arguments if isinstance(arguments, str) else _text_of(arguments),
                    result=results.get(str(call.get("id")), ""),
                )
            )
    return tuple(steps)


def _text_of(content: object) -> str:
    """A stored message's content as text (ours are strings; anything else shown as JSON)."""
    if content is None or isinstance(content, str):
        return content or ""
    return json.dumps(content, ensure_ascii=False)
