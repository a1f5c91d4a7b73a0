"""Request validation for the fake server, mirroring the real API's 400 answers.

Bots must learn about a malformed history (orphan tool messages, unanswered tool calls,
bad ``name`` fields) in tests, not in production, so the texts, ``param`` paths and codes
follow what api.openai.com returns. ``param`` uses the API's ``messages.[3].role`` form.
"""

from __future__ import annotations

from typing import Any

from bot.testing.llm.errors import (
    Invalid,
    Path,
    bad_value,
    check_name,
    empty,
    fail,
    kind,
    missing,
    text_path,
    wrong_type,
)
from bot.testing.llm.message_checks import (
    ORPHAN_TOOL,
    UNANSWERED_TOOL_CALLS,
    check_messages,
    check_tool_sequence,
)
from bot.testing.llm.wire import ApiError

__all__ = [
    "INVALID_JSON",
    "MAX_CACHE_KEY",
    "NOT_AT_TOP",
    "ORPHAN_TOOL",
    "UNANSWERED_TOOL_CALLS",
    "invalid_json",
    "validate_chat_request",
]

INVALID_JSON = (
    "We could not parse the JSON body of your request. (HINT: This likely means you aren't "
    "using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was "
    "sent was not valid JSON. If you have trouble figuring out how to fix this, please contact "
    "us through our help center at help.openai.com.)"
)


MAX_CACHE_KEY = 64  # characters of a prompt_cache_key the API accepts
NOT_AT_TOP = ("oneOf", "anyOf", "allOf", "enum", "not")  # refused at a function schema's top


def invalid_json() -> ApiError:
    """The body was not JSON at all."""
    return ApiError(400, INVALID_JSON)


def validate_chat_request(body: object) -> ApiError | None:
    """The first problem the real API would report for this chat request, or None."""
    try:
        _check_request(body)
    except Invalid as exc:
        return exc.error
    return None


def _check_request(body: object) -> None:
    if not isinstance(body, dict):
        raise fail(
            f"Invalid type for request body: expected an object, but got {kind(body)} instead.",
            None,
            "invalid_type",
        )
    model = body.get("model")
    if model is None or model == "":
        raise fail("you must provide a model parameter", None, None)
    if not isinstance(model, str):
        raise wrong_type(("model",), "a string", model)
    if "messages" not in body:
        raise missing(("messages",))
    messages = body["messages"]
    if not isinstance(messages, list):
        raise wrong_type(("messages",), "an array of objects", messages)
    if not messages:
        raise empty(("messages",))
    check_messages(messages)
    _check_options(body)
    _check_tools(body)
    check_tool_sequence(messages)


def _check_int(body: dict[str, Any], key: str, low: int, high: int | None = None) -> None:
    value = body.get(key)
    if value is None:
        return
    if not isinstance(value, int) or isinstance(value, bool):
        raise wrong_type((key,), "an integer", value)
    if value < low:
        raise fail(
            f"Invalid '{key}': integer below minimum value. Expected a value >= {low}, but got "
            f"{value} instead.",
            (key,),
            "integer_below_min_value",
        )
    if high is not None and value > high:
        raise fail(
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
        raise wrong_type((key,), "a decimal", value)
    if value < low:
        raise fail(
            f"Invalid '{key}': decimal below minimum value. Expected a value >= {low:g}, but got "
            f"{value:g} instead.",
            (key,),
            "decimal_below_min_value",
        )
    if value > high:
        raise fail(
            f"Invalid '{key}': decimal above maximum value. Expected a value <= {high:g}, but got "
            f"{value:g} instead.",
            (key,),
            "decimal_above_max_value",
        )


def _check_bool(body: dict[str, Any], key: str) -> None:
    value = body.get(key)
    if value is not None and not isinstance(value, bool):
        raise wrong_type((key,), "a boolean", value)


def _check_options(body: dict[str, Any]) -> None:
    _check_int(body, "max_tokens", 1)
    _check_int(body, "max_completion_tokens", 1)
    _check_int(body, "n", 1, 128)
    _check_number(body, "temperature", 0, 2)
    _check_number(body, "top_p", 0, 1)
    _check_number(body, "presence_penalty", -2, 2)
    _check_number(body, "frequency_penalty", -2, 2)
    _check_bool(body, "stream")
    _check_cache_key(body)
    options = body.get("stream_options")
    if options is not None:
        if body.get("stream") is not True:
            raise fail(
                "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
                ("stream_options",),
                None,
            )
        if not isinstance(options, dict):
            raise wrong_type(("stream_options",), "an object", options)
        if options.get("include_usage") is not None and not isinstance(
            options["include_usage"], bool
        ):
            raise wrong_type(
                ("stream_options", "include_usage"), "a boolean", options["include_usage"]
            )
    stop = body.get("stop")
    if stop is not None and not isinstance(stop, str):
        if not isinstance(stop, list) or not all(isinstance(s, str) for s in stop):
            raise wrong_type(("stop",), "one of a string or array of strings", stop)
        if len(stop) > 4:
            raise fail(
                f"Invalid 'stop': array too long. Expected an array with maximum length 4, but "
                f"got an array with length {len(stop)} instead.",
                ("stop",),
                "array_above_max_length",
            )


def _check_cache_key(body: dict[str, Any]) -> None:
    """OpenAI's ``prompt_cache_key``: a string of at most 64 characters."""
    key = body.get("prompt_cache_key")
    if key is None:
        return
    if not isinstance(key, str):
        raise wrong_type(("prompt_cache_key",), "a string", key)
    if len(key) > MAX_CACHE_KEY:
        raise fail(
            "Invalid 'prompt_cache_key': string too long. Expected a string with maximum length "
            f"{MAX_CACHE_KEY}, but got a string with length {len(key)} instead.",
            ("prompt_cache_key",),
            "string_above_max_length",
        )


def _check_tools(body: dict[str, Any]) -> None:
    tools = body.get("tools")
    if tools is None:
        for key in ("tool_choice", "parallel_tool_calls"):
            if body.get(key) is not None:
                raise fail(
                    f"Invalid value for '{key}': '{key}' is only allowed when 'tools' are "
                    "specified.",
                    (key,),
                    None,
                )
        return
    if not isinstance(tools, list):
        raise wrong_type(("tools",), "an array of objects", tools)
    if not tools:
        raise empty(("tools",))
    for index, tool in enumerate(tools):
        _check_tool(("tools", index), tool)
    _check_bool(body, "parallel_tool_calls")
    choice = body.get("tool_choice")
    if choice is None or choice in ("none", "auto", "required"):
        return
    if isinstance(choice, str):
        raise bad_value(("tool_choice",), choice, ("none", "auto", "required"))
    if not isinstance(choice, dict):
        raise wrong_type(("tool_choice",), "one of a string or object", choice)
    if "type" not in choice:
        raise missing(("tool_choice", "type"))
    if choice["type"] == "function":
        function = choice.get("function")
        if not isinstance(function, dict) or "name" not in function:
            raise missing(("tool_choice", "function", "name"))
        check_name(("tool_choice", "function", "name"), function["name"])


def _check_tool(path: Path, tool: object) -> None:
    if not isinstance(tool, dict):
        raise wrong_type(path, "an object", tool)
    if "type" not in tool:
        raise missing((*path, "type"))
    kind = tool["type"]
    if kind not in ("function", "custom"):
        raise bad_value((*path, "type"), kind, ("function", "custom"))
    if kind not in tool:
        raise missing((*path, str(kind)))
    spec = tool[kind]
    if not isinstance(spec, dict):
        raise wrong_type((*path, kind), "an object", spec)
    if "name" not in spec:
        raise missing((*path, kind, "name"))
    check_name((*path, kind, "name"), spec["name"])
    description = spec.get("description")
    if description is not None and not isinstance(description, str):
        raise wrong_type((*path, kind, "description"), "a string", description)
    if kind != "function" or spec.get("parameters") is None:
        return
    parameters = spec["parameters"]
    if not isinstance(parameters, dict):
        raise wrong_type((*path, kind, "parameters"), "an object", parameters)
    _check_parameters((*path, kind, "parameters"), spec["name"], parameters)


def _check_parameters(path: Path, name: str, parameters: dict[str, Any]) -> None:
    """What the API checks of a function's ``parameters`` before it looks at the messages:
    an object schema, none of the combinators at its top, ``properties`` an object."""
    schema_type = parameters.get("type", "object")
    if schema_type != "object":
        raise _bad_schema(
            path,
            name,
            f"schema must be a JSON Schema of 'type: \"object\"', got 'type: \"{schema_type}\"'.",
        )
    if any(key in parameters for key in NOT_AT_TOP):
        raise _bad_schema(
            path,
            name,
            "schema must have type 'object' and not have "
            + "/".join(f"'{key}'" for key in NOT_AT_TOP)
            + " at the top level.",
        )
    properties = parameters.get("properties")
    if properties is not None and not isinstance(properties, dict):
        raise _bad_schema(path, name, f"{properties!r} is not of type 'object'.")


def _bad_schema(path: Path, name: str, detail: str) -> Invalid:
    """The API names a schema's ``param`` as ``tools[0].function.parameters`` (no dot before
    the index, unlike the messages' paths)."""
    return Invalid(
        ApiError(
            400,
            f"Invalid schema for function '{name}': {detail}",
            param=text_path(path),
            code="invalid_function_parameters",
        )
    )
