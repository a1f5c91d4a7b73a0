"""The checks of a chat request's ``messages`` the real API makes: roles, names, content
parts, tool calls, and that each tool answer directly follows the assistant turn that asked."""

from __future__ import annotations

from typing import Any

from bot.testing.llm.errors import (
    Invalid,
    Path,
    bad_value,
    check_name,
    empty,
    fail,
    missing,
    wrong_type,
)
from bot.testing.llm.images import check_image_url

_ROLES = ("system", "assistant", "user", "function", "tool", "developer")
_PART_TYPES = {
    "system": ("text",),
    "developer": ("text",),
    "user": ("text", "image_url", "input_audio", "file"),
    "assistant": ("text", "refusal"),
    "tool": ("text",),
}
ORPHAN_TOOL = (
    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
    "with 'tool_calls'."
)
UNANSWERED_TOOL_CALLS = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to "
    "each 'tool_call_id'. The following tool_call_ids did not have response messages: "
)


def check_messages(messages: list[Any]) -> None:
    """Raise :class:`Invalid` for the first problem in ``messages`` (a non-empty list)."""
    for index, message in enumerate(messages):
        _check_message(("messages", index), message)


def _check_message(path: Path, message: object) -> None:
    if not isinstance(message, dict):
        raise wrong_type(path, "an object", message)
    if "role" not in message:
        raise missing((*path, "role"))
    role = message["role"]
    if not isinstance(role, str):
        raise wrong_type((*path, "role"), "a string", role)
    if role not in _ROLES:
        raise bad_value((*path, "role"), role, _ROLES)
    if message.get("name") is not None:
        check_name((*path, "name"), message["name"])
    elif role == "function":
        raise missing((*path, "name"))
    if role == "assistant" and message.get("tool_calls") is not None:
        _check_tool_calls((*path, "tool_calls"), message["tool_calls"])
    # content may be absent or null only where something else carries the turn
    may_omit = role == "function" or (
        role == "assistant"
        and any(message.get(k) is not None for k in ("tool_calls", "function_call", "refusal"))
    )
    content = message.get("content")
    if content is None and not may_omit:
        if "content" not in message:
            raise missing((*path, "content"))
        raise fail(
            "Invalid value for 'content': expected a string, got null.", (*path, "content"), None
        )
    if content is not None:
        _check_content(path, role, content)
    if role == "tool":
        if "tool_call_id" not in message:
            raise missing((*path, "tool_call_id"))
        if not isinstance(message["tool_call_id"], str):
            raise wrong_type((*path, "tool_call_id"), "a string", message["tool_call_id"])


def _check_content(path: Path, role: str, content: object) -> None:
    cpath = (*path, "content")
    if isinstance(content, str):
        return
    if role == "function" or not isinstance(content, list):
        raise wrong_type(cpath, "one of a string or array of objects", content)
    if not content:
        raise empty(cpath)
    allowed = _PART_TYPES[role]
    for index, part in enumerate(content):
        ppath = (*cpath, index)
        if not isinstance(part, dict):
            raise wrong_type(ppath, "an object", part)
        if "type" not in part:
            raise missing((*ppath, "type"))
        kind = part["type"]
        if kind not in allowed:
            raise bad_value((*ppath, "type"), kind, allowed)
        if kind in ("text", "refusal"):
            field = str(kind)
            if field not in part:
                raise missing((*ppath, field))
            if not isinstance(part[field], str):
                raise wrong_type((*ppath, field), "a string", part[field])
        elif kind == "image_url":
            if "image_url" not in part:
                raise missing((*ppath, "image_url"))
            check_image_url((*ppath, "image_url"), part["image_url"])


def _check_tool_calls(path: Path, calls: object) -> None:
    if not isinstance(calls, list):
        raise wrong_type(path, "an array of objects", calls)
    if not calls:
        raise empty(path)
    for index, call in enumerate(calls):
        cpath = (*path, index)
        if not isinstance(call, dict):
            raise wrong_type(cpath, "an object", call)
        for key in ("id", "type"):
            if key not in call:
                raise missing((*cpath, key))
            if not isinstance(call[key], str):
                raise wrong_type((*cpath, key), "a string", call[key])
        if call["type"] not in ("function", "custom"):
            raise bad_value((*cpath, "type"), call["type"], ("function", "custom"))
        kind = call["type"]
        fields = ("name", "arguments") if kind == "function" else ("name", "input")
        inner = call.get(kind)
        if inner is None:
            raise missing((*cpath, kind))
        if not isinstance(inner, dict):
            raise wrong_type((*cpath, kind), "an object", inner)
        for key in fields:
            if key not in inner:
                raise missing((*cpath, kind, key))
            if not isinstance(inner[key], str):
                raise wrong_type((*cpath, kind, key), "a string", inner[key])


def check_tool_sequence(messages: list[Any]) -> None:
    """Tool answers must directly follow the assistant turn that asked, one per call id."""
    pending: dict[str, None] = {}  # ordered set of unanswered ids
    asked: set[str] = set()
    asker = -1
    in_block = False
    for index, message in enumerate(messages):
        role = message["role"]
        if role == "tool":
            call_id = message["tool_call_id"]
            if not in_block or call_id not in asked:
                raise fail(ORPHAN_TOOL, ("messages", index, "role"), None)
            pending.pop(call_id, None)
            continue
        if pending:
            raise _unanswered(asker, pending)
        in_block = False
        if role == "assistant" and message.get("tool_calls"):
            ids = [call["id"] for call in message["tool_calls"]]
            pending = dict.fromkeys(ids)
            asked = set(ids)
            asker = index
            in_block = True
    if pending:
        raise _unanswered(asker, pending)


def _unanswered(index: int, pending: dict[str, None]) -> Invalid:
    return fail(UNANSWERED_TOOL_CALLS + ", ".join(pending), ("messages", index, "role"), None)
