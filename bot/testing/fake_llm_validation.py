"""Request validation for the fake server, mirroring the real API's 400 answers.

Bots must learn about a malformed history (orphan tool messages, unanswered tool calls,
bad ``name`` fields) in tests, not in production, so the texts, ``param`` paths and codes
follow what api.openai.com returns. ``param`` uses the API's ``messages.[3].role`` form.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from bot.testing.fake_llm_wire import ApiError

_ROLES = ("system", "assistant", "user", "function", "tool", "developer")
_PART_TYPES = {
    "system": ("text",),
    "developer": ("text",),
    "user": ("text", "image_url", "input_audio", "file"),
    "assistant": ("text", "refusal"),
    "tool": ("text",),
}
_NAME_RE = re.compile(r"[a-zA-Z0-9_-]+")
_MAX_NAME = 64

INVALID_JSON = (
    "We could not parse the JSON body of your request. (HINT: This likely means you aren't "
    "using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was "
    "sent was not valid JSON. If you have trouble figuring out how to fix this, please contact "
    "us through our help center at help.openai.com.)"
)
ORPHAN_TOOL = (
    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
    "with 'tool_calls'."
)
UNANSWERED_TOOL_CALLS = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to "
    "each 'tool_call_id'. The following tool_call_ids did not have response messages: "
)

Path = tuple[str | int, ...]


class _Invalid(Exception):
    def __init__(self, error: ApiError) -> None:
        super().__init__(error.message)
        self.error = error


def invalid_json() -> ApiError:
    """The body was not JSON at all."""
    return ApiError(400, INVALID_JSON)


def validate_chat_request(body: object) -> ApiError | None:
    """The first problem the real API would report for this chat request, or None."""
    try:
        _check_request(body)
    except _Invalid as exc:
        return exc.error
    return None


def _text_path(path: Path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def _param(path: Path) -> str:
    out = ""
    for part in path:
        piece = f"[{part}]" if isinstance(part, int) else part
        out = f"{out}.{piece}" if out else piece
    return out


def _fail(message: str, path: Path | None, code: str | None) -> _Invalid:
    return _Invalid(ApiError(400, message, param=None if path is None else _param(path), code=code))


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a decimal"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _wrong_type(path: Path, expected: str, value: object) -> _Invalid:
    return _fail(
        f"Invalid type for '{_text_path(path)}': expected {expected}, but got {_kind(value)} "
        "instead.",
        path,
        "invalid_type",
    )


def _missing(path: Path) -> _Invalid:
    return _fail(
        f"Missing required parameter: '{_text_path(path)}'.", path, "missing_required_parameter"
    )


def _empty(path: Path) -> _Invalid:
    return _fail(
        f"Invalid '{_text_path(path)}': empty array. Expected an array with minimum length 1, "
        "but got an empty array instead.",
        path,
        "empty_array",
    )


def _bad_value(path: Path, value: object, allowed: Sequence[str]) -> _Invalid:
    quoted = [f"'{a}'" for a in allowed]
    if len(quoted) <= 2:
        listed = " and ".join(quoted)
    else:
        listed = ", ".join(quoted[:-1]) + f", and {quoted[-1]}"
    return _fail(
        f"Invalid value: '{value}'. Supported values are: {listed}.", path, "invalid_value"
    )


def _check_name(path: Path, value: object) -> None:
    if not isinstance(value, str):
        raise _wrong_type(path, "a string", value)
    if len(value) > _MAX_NAME:
        raise _fail(
            f"Invalid '{_text_path(path)}': string too long. Expected a string with maximum "
            f"length {_MAX_NAME}, but got a string with length {len(value)} instead.",
            path,
            "string_above_max_length",
        )
    if not _NAME_RE.fullmatch(value):
        raise _fail(
            f"Invalid '{_text_path(path)}': string does not match pattern. Expected a string "
            "that matches the pattern '^[a-zA-Z0-9_-]+$'.",
            path,
            "invalid_value",
        )


def _check_request(body: object) -> None:
    if not isinstance(body, dict):
        raise _fail(
            f"Invalid type for request body: expected an object, but got {_kind(body)} instead.",
            None,
            "invalid_type",
        )
    model = body.get("model")
    if model is None or model == "":
        raise _fail("you must provide a model parameter", None, None)
    if not isinstance(model, str):
        raise _wrong_type(("model",), "a string", model)
    if "messages" not in body:
        raise _missing(("messages",))
    messages = body["messages"]
    if not isinstance(messages, list):
        raise _wrong_type(("messages",), "an array of objects", messages)
    if not messages:
        raise _empty(("messages",))
    for index, message in enumerate(messages):
        _check_message(("messages", index), message)
    _check_options(body)
    _check_tools(body)
    _check_tool_sequence(messages)


def _check_message(path: Path, message: object) -> None:
    if not isinstance(message, dict):
        raise _wrong_type(path, "an object", message)
    if "role" not in message:
        raise _missing((*path, "role"))
    role = message["role"]
    if not isinstance(role, str):
        raise _wrong_type((*path, "role"), "a string", role)
    if role not in _ROLES:
        raise _bad_value((*path, "role"), role, _ROLES)
    if message.get("name") is not None:
        _check_name((*path, "name"), message["name"])
    elif role == "function":
        raise _missing((*path, "name"))
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
            raise _missing((*path, "content"))
        raise _fail(
            "Invalid value for 'content': expected a string, got null.", (*path, "content"), None
        )
    if content is not None:
        _check_content(path, role, content)
    if role == "tool":
        if "tool_call_id" not in message:
            raise _missing((*path, "tool_call_id"))
        if not isinstance(message["tool_call_id"], str):
            raise _wrong_type((*path, "tool_call_id"), "a string", message["tool_call_id"])


def _check_content(path: Path, role: str, content: object) -> None:
    cpath = (*path, "content")
    if isinstance(content, str):
        return
    if role == "function" or not isinstance(content, list):
        raise _wrong_type(cpath, "one of a string or array of objects", content)
    if not content:
        raise _empty(cpath)
    allowed = _PART_TYPES[role]
    for index, part in enumerate(content):
        ppath = (*cpath, index)
        if not isinstance(part, dict):
            raise _wrong_type(ppath, "an object", part)
        if "type" not in part:
            raise _missing((*ppath, "type"))
        kind = part["type"]
        if kind not in allowed:
            raise _bad_value((*ppath, "type"), kind, allowed)
        if kind in ("text", "refusal"):
            field = str(kind)
            if field not in part:
                raise _missing((*ppath, field))
            if not isinstance(part[field], str):
                raise _wrong_type((*ppath, field), "a string", part[field])
        elif kind == "image_url":
            image = part.get("image_url")
            if not isinstance(image, dict):
                raise _wrong_type((*ppath, "image_url"), "an object", image)
            if not isinstance(image.get("url"), str):
                raise _missing((*ppath, "image_url", "url"))


def _check_tool_calls(path: Path, calls: object) -> None:
    if not isinstance(calls, list):
        raise _wrong_type(path, "an array of objects", calls)
    if not calls:
        raise _empty(path)
    for index, call in enumerate(calls):
        cpath = (*path, index)
        if not isinstance(call, dict):
            raise _wrong_type(cpath, "an object", call)
        for key in ("id", "type"):
            if key not in call:
                raise _missing((*cpath, key))
            if not isinstance(call[key], str):
                raise _wrong_type((*cpath, key), "a string", call[key])
        if call["type"] not in ("function", "custom"):
            raise _bad_value((*cpath, "type"), call["type"], ("function", "custom"))
        kind = call["type"]
        fields = ("name", "arguments") if kind == "function" else ("name", "input")
        inner = call.get(kind)
        if inner is None:
            raise _missing((*cpath, kind))
        if not isinstance(inner, dict):
            raise _wrong_type((*cpath, kind), "an object", inner)
        for key in fields:
            if key not in inner:
                raise _missing((*cpath, kind, key))
            if not isinstance(inner[key], str):
                raise _wrong_type((*cpath, kind, key), "a string", inner[key])


def _check_tool_sequence(messages: list[Any]) -> None:
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
                raise _fail(ORPHAN_TOOL, ("messages", index, "role"), None)
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


def _unanswered(index: int, pending: dict[str, None]) -> _Invalid:
    return _fail(UNANSWERED_TOOL_CALLS + ", ".join(pending), ("messages", index, "role"), None)


def _check_int(body: dict[str, Any], key: str, low: int, high: int | None = None) -> None:
    value = body.get(key)
    if value is None:
        return
    if not isinstance(value, int) or isinstance(value, bool):
        raise _wrong_type((key,), "an integer", value)
    if value < low:
        raise _fail(
            f"Invalid '{key}': integer below minimum value. Expected a value >= {low}, but got "
            f"{value} instead.",
            (key,),
            "integer_below_min_value",
        )
    if high is not None and value > high:
        raise _fail(
            f"Invalid '{key}': integer above maximum value. Expected a value <= {high}, but got "
            f"{value} instead.",
            (key,),
            "integer_above_max_value",
        )


def _check_number(body: dict[str, Any], key: str, low: float, high: float) -> None:
    value = body.get(key)
    if value is None:
        return
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise _wrong_type((key,), "a decimal", value)
    if value < low:
        raise _fail(
            f"Invalid '{key}': decimal below minimum value. Expected a value >= {low:g}, but got "
            f"{value:g} instead.",
            (key,),
            "decimal_below_min_value",
        )
    if value > high:
        raise _fail(
            f"Invalid '{key}': decimal above maximum value. Expected a value <= {high:g}, but got "
            f"{value:g} instead.",
            (key,),
            "decimal_above_max_value",
        )


def _check_bool(body: dict[str, Any], key: str) -> None:
    value = body.get(key)
    if value is not None and not isinstance(value, bool):
        raise _wrong_type((key,), "a boolean", value)


def _check_options(body: dict[str, Any]) -> None:
    _check_int(body, "max_tokens", 1)
    _check_int(body, "max_completion_tokens", 1)
    _check_int(body, "n", 1, 128)
    _check_number(body, "temperature", 0, 2)
    _check_number(body, "top_p", 0, 1)
    _check_number(body, "presence_penalty", -2, 2)
    _check_number(body, "frequency_penalty", -2, 2)
    _check_bool(body, "stream")
    options = body.get("stream_options")
    if options is not None:
        if body.get("stream") is not True:
            raise _fail(
                "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
                ("stream_options",),
                None,
            )
        if not isinstance(options, dict):
            raise _wrong_type(("stream_options",), "an object", options)
        if options.get("include_usage") is not None and not isinstance(
            options["include_usage"], bool
        ):
            raise _wrong_type(
                ("stream_options", "include_usage"), "a boolean", options["include_usage"]
            )
    stop = body.get("stop")
    if stop is not None and not isinstance(stop, str):
        if not isinstance(stop, list) or not all(isinstance(s, str) for s in stop):
            raise _wrong_type(("stop",), "one of a string or array of strings", stop)
        if len(stop) > 4:
            raise _fail(
                f"Invalid 'stop': array too long. Expected an array with maximum length 4, but "
                f"got an array with length {len(stop)} instead.",
                ("stop",),
                "array_above_max_length",
            )


def _check_tools(body: dict[str, Any]) -> None:
    tools = body.get("tools")
    if tools is None:
        for key in ("tool_choice", "parallel_tool_calls"):
            if body.get(key) is not None:
                raise _fail(
                    f"Invalid value for '{key}': '{key}' is only allowed when 'tools' are "
                    "specified.",
                    (key,),
                    None,
                )
        return
    if not isinstance(tools, list):
        raise _wrong_type(("tools",), "an array of objects", tools)
    if not tools:
        raise _empty(("tools",))
    for index, tool in enumerate(tools):
        _check_tool(("tools", index), tool)
    _check_bool(body, "parallel_tool_calls")
    choice = body.get("tool_choice")
    if choice is None or choice in ("none", "auto", "required"):
        return
    if isinstance(choice, str):
        raise _bad_value(("tool_choice",), choice, ("none", "auto", "required"))
    if not isinstance(choice, dict):
        raise _wrong_type(("tool_choice",), "one of a string or object", choice)
    if "type" not in choice:
        raise _missing(("tool_choice", "type"))
    if choice["type"] == "function":
        function = choice.get("function")
        if not isinstance(function, dict) or "name" not in function:
            raise _missing(("tool_choice", "function", "name"))
        _check_name(("tool_choice", "function", "name"), function["name"])


def _check_tool(path: Path, tool: object) -> None:
    if not isinstance(tool, dict):
        raise _wrong_type(path, "an object", tool)
    if "type" not in tool:
        raise _missing((*path, "type"))
    kind = tool["type"]
    if kind not in ("function", "custom"):
        raise _bad_value((*path, "type"), kind, ("function", "custom"))
    if kind not in tool:
        raise _missing((*path, str(kind)))
    spec = tool[kind]
    if not isinstance(spec, dict):
        raise _wrong_type((*path, kind), "an object", spec)
    if "name" not in spec:
        raise _missing((*path, kind, "name"))
    _check_name((*path, kind, "name"), spec["name"])
    description = spec.get("description")
    if description is not None and not isinstance(description, str):
        raise _wrong_type((*path, kind, "description"), "a string", description)
    if kind != "function" or spec.get("parameters") is None:
        return
    parameters = spec["parameters"]
    if not isinstance(parameters, dict):
        raise _wrong_type((*path, kind, "parameters"), "an object", parameters)
    schema_type = parameters.get("type", "object")
    if schema_type != "object":
        raise _fail(
            f"Invalid schema for function '{spec['name']}': schema must be a JSON Schema of "
            f"'type: \"object\"', got 'type: \"{schema_type}\"'.",
            (*path, kind, "parameters"),
            "invalid_function_parameters",
        )
