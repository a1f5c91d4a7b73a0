"""What the fake "model" answers to markers in the user's message, so an offline demo (``make
fake-llm`` with ``make chat``) can show what a bot does with memory and tools.

* ``[[tool:NAME {"arg": ...}]]`` calls tool NAME with those arguments, as ``tool_calls(("NAME",
  {...}))`` scripts it (several markers: several calls in one answer). The name must be one of
  the request's ``tools``; else the answer is a text naming the tools that were offered. Once
  the results come back (the request ends with ``tool`` messages), the answer is a short text
  quoting each result.
* ``[[context]]`` (or ``FakeLLM.reveal``, ``--reveal``) answers with a readable summary of the
  request: the system prompt's head, the history, the recalled-memory block, the tools offered.

The message is the newest user message; a message without a marker is echoed as before.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from bot.testing.llm.model import last_user_text
from bot.testing.llm.script import ScriptedToolCall

__all__ = ["CONTEXT_MARKER", "reveal_text", "tool_markers", "unscripted_answer"]

CONTEXT_MARKER = "[[context]]"
_TOOL_MARKER = re.compile(r"\[\[tool:\s*([A-Za-z0-9_.-]+)", re.IGNORECASE)
_CLOSE = re.compile(r"\s*\]\]")
_DECODER = json.JSONDecoder()
_SHOWN_MESSAGES = 4  # the last few history messages the reveal quotes
_SHOWN_ITEMS = 10  # recalled items quoted at most
_RESULT_CHARS = 500  # a tool result quoted at most this long


def tool_markers(text: str) -> list[ScriptedToolCall]:
    """Each ``[[tool:NAME ARGS]]`` in ``text``, in order. ARGS that are a JSON object are sent
    as compact JSON, nothing as ``{}``, anything else verbatim (a model's broken JSON)."""
    found: list[ScriptedToolCall] = []
    position = 0
    while (match := _TOOL_MARKER.search(text, position)) is not None:
        start = match.end()
        arguments, end = _arguments(text, start)
        if end < 0:  # never closed: not a marker
            position = start
            continue
        found.append(ScriptedToolCall(match.group(1), arguments))
        position = end
    return found


def unscripted_answer(
    body: Mapping[str, Any], prompt_tokens: int, *, reveal: bool = False
) -> tuple[str | None, tuple[ScriptedToolCall, ...]]:
    """What the newest user message's markers ask for (a text, or tool calls and no text);
    without a marker, ``echo: <the message>``."""
    messages: Sequence[Any] = body["messages"]
    asked = last_user_text(messages)
    calls = tool_markers(asked)
    results = _tool_results(messages)
    text: str | None = None
    if calls and results:  # the round is over: report what the tools said
        text = "\n".join(_result_line(name, result) for name, result in results)
    elif calls:
        refused = _refusal(body, calls)
        if refused is None:
            return None, tuple(calls)
        text = refused
    if reveal or CONTEXT_MARKER in asked.lower():
        summary = reveal_text(body, prompt_tokens)
        text = summary if text is None else f"{text}\n\n{summary}"
    return (f"echo: {asked}" if text is None else text), ()


def offered_tools(body: Mapping[str, Any]) -> list[str]:
    """The function names in the request's ``tools``, in their order."""
    return [
        str(tool["function"]["name"])
        for tool in body.get("tools") or []
        if tool.get("type") == "function"
    ]


def reveal_text(body: Mapping[str, Any], prompt_tokens: int) -> str:
    """What the model was sent, as a newcomer would want to read it."""
    messages: Sequence[Any] = body["messages"]
    last = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    systems = [_text(m) for m in messages if m.get("role") in ("system", "developer")]
    recalled = [m for m in messages[:last] if _is_recalled(m)]
    passages = [m for m in messages[:last] if _is_passages(m)]
    history = [
        m
        for m in messages[: max(last, 0)]
        if m.get("role") not in ("system", "developer")
        and not _is_recalled(m)
        and not _is_passages(m)
    ]
    turns = sum(1 for m in history if m.get("role") == "user")
    lines = [
        f"What the model was sent ({body['model']}, {len(messages)} messages, "
        f"{prompt_tokens} prompt tokens):",
        _system_line(systems),
        f"History: {_count(turns, 'earlier user message')}, "
        f"{_count(len(history), 'message')} in all"
        + (f"; the last {min(len(history), _SHOWN_MESSAGES)}:" if history else "."),
        *(f"  {_message_line(m)}" for m in history[-_SHOWN_MESSAGES:]),
        *_recalled_lines(recalled),
        *_block_lines("From the knowledge bases", passages),
        _tools_line(offered_tools(body)),
        f"This message: {_short(_text(messages[last]), 200) if last >= 0 else '(none)'}",
    ]
    return "\n".join(lines)


def _arguments(text: str, start: int) -> tuple[str, int]:
    """The marker's arguments and where it ends (-1: no closing ``]]``)."""
    body_start = len(text) - len(text[start:].lstrip())
    try:
        value, end = _DECODER.raw_decode(text, body_start)
    except ValueError:
        value, end = None, -1
    if end >= 0 and isinstance(value, dict):
        closed = _CLOSE.match(text, end)
        if closed is not None:
            compact = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
            return compact, closed.end()
    close = text.find("]]", start)
    if close < 0:
        return "", -1
    raw = text[start:close].strip()
    return raw or "{}", close + 2


def _refusal(body: Mapping[str, Any], calls: Sequence[ScriptedToolCall]) -> str | None:
    """Why these calls cannot be made in this request (None: they can)."""
    offered = offered_tools(body)
    unknown = [call.name for call in calls if call.name not in offered]
    if unknown:
        wanted = ", ".join(unknown)
        if not offered:
            return f"Cannot call {wanted}: this request offered no tools."
        return f"Cannot call {wanted}: not offered. Tools offered: {', '.join(offered)}."
    if body.get("tool_choice") == "none":
        return 'Cannot call tools: this request says tool_choice "none".'
    return None


def _tool_results(messages: Sequence[Any]) -> list[tuple[str, str]]:
    """The trailing ``tool`` messages as (tool name, result); empty unless the request ends
    with them (the answer to this message's tool calls)."""
    end = len(messages)
    start = end
    while start > 0 and messages[start - 1].get("role") == "tool":
        start -= 1
    if start == end or start == 0:
        return []
    names = {
        call.get("id"): call.get("function", {}).get("name", "?")
        for call in messages[start - 1].get("tool_calls") or []
    }
    return [(str(names.get(m.get("tool_call_id"), "?")), _text(m)) for m in messages[start:]]


def _result_line(name: str, result: str) -> str:
    cut = result if len(result) <= _RESULT_CHARS else result[:_RESULT_CHARS] + " …"
    return f"Tool {name} returned: {cut}"


def _system_line(systems: Sequence[str]) -> str:
    if not systems:
        return "System prompt: none."
    head = f"System prompt ({len(systems[0])} characters): {_short(systems[0], 160)}"
    if len(systems) > 1:
        more = _count(len(systems) - 1, "more system message")
        head += f"\n  and {more}: {_short(systems[1], 120)}"
    return head


def _recalled_lines(recalled: Sequence[Any]) -> list[str]:
    return _block_lines("Recalled from memory", recalled, "item") or [
        "Recalled from memory: nothing."
    ]


def _block_lines(title: str, blocks: Sequence[Any], noun: str = "passage") -> list[str]:
    """A quoted block's items, one a line (none: no line at all)."""
    items = [line for m in blocks for line in _text(m).splitlines()[1:] if line.strip()]
    if not items:
        return []
    lines = [f"{title} ({_count(len(items), noun)}):"]
    lines += [f"  {_short(item, 160)}" for item in items[:_SHOWN_ITEMS]]
    if len(items) > _SHOWN_ITEMS:
        lines.append(f"  … and {len(items) - _SHOWN_ITEMS} more")
    return lines


def _tools_line(names: Sequence[str]) -> str:
    if not names:
        return "Tools offered: none."
    return f"Tools offered ({len(names)}): {', '.join(names)}"


def _message_line(message: Mapping[str, Any]) -> str:
    role = str(message.get("role"))
    calls = message.get("tool_calls") or []
    if calls:
        called = ", ".join(
            f"{c['function']['name']}({_short(c['function']['arguments'], 80)})" for c in calls
        )
        return f"{role}: calls {called}"
    return f"{role}: {_short(_text(message), 100)}"


def _is_recalled(message: Mapping[str, Any]) -> bool:
    from bot.prompt.safety import RECALLED_HEADER  # lazy: the kit must import without the core

    return message.get("role") == "user" and _text(message).startswith(RECALLED_HEADER)


def _is_passages(message: Mapping[str, Any]) -> bool:
    from bot.prompt.passages import PASSAGES_HEADER  # lazy, as above

    return message.get("role") == "user" and _text(message).startswith(PASSAGES_HEADER)


def _text(message: Mapping[str, Any]) -> str:
    """A message's text; other content parts shown by their type."""
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return " ".join(
        str(part.get("text", "")) if part.get("type") == "text" else f"[{part.get('type')}]"
        for part in content
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _short(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
