"""OpenAI's wire format: a ``POST /v1/chat/completions`` body read as OpenAI validates it,
and the pieces of the answers (ids, finish reasons, usage).

Only what the bot uses is taken: the newest user message's text (the bot keeps the history
itself, so earlier messages a client resends are ignored), who is speaking, and ``stream``.
Sampling options, ``tools`` and the like are accepted and ignored: the bot's own config
decides them. Each refusal names the offending field in ``param``, as OpenAI's do.
"""

from __future__ import annotations

import json
import secrets
import string
import unicodedata
from dataclasses import dataclass
from typing import Any

from adapters.http.openai.errors import APIError
from bot.platform.seam import Answered

__all__ = [
    "MODEL",
    "USER_HEADER",
    "ChatRequest",
    "completion_id",
    "finish_reason",
    "parse_chat_request",
    "usage",
]

MODEL = "parlour"
USER_HEADER = "X-Parlour-User"
MAX_USER_CHARS = 128
_ALPHABET = string.ascii_letters + string.digits


@dataclass(frozen=True, slots=True)
class ChatRequest:
    text: str  # the newest user message
    user: str  # whose conversation (the ``user`` field, the header, or the token's name)
    stream: bool
    include_usage: bool  # stream_options.include_usage: a usage chunk before [DONE]


def parse_chat_request(raw: bytes, header_user: str | None, token_name: str) -> ChatRequest:
    """The request, or :class:`APIError` (400, or 404 for another model) saying what is wrong."""
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: nested past the interpreter's limit
        raise APIError(
            400,
            "We could not parse the JSON body of your request. The API expects a JSON payload.",
        ) from None
    if not isinstance(body, dict):
        raise APIError(400, "The request body must be a JSON object.", code="invalid_type")
    _check_model(body)
    n = body.get("n", 1)
    if n is not None and (not isinstance(n, int) or isinstance(n, bool) or n != 1):
        raise APIError(
            400, "Invalid 'n': only n=1 is supported.", param="n", code="unsupported_value"
        )
    stream = _flag(body, "stream")
    options = body.get("stream_options")
    if options is not None and not isinstance(options, dict):
        raise APIError(
            400,
            "Invalid type for 'stream_options': expected an object.",
            param="stream_options",
            code="invalid_type",
        )
    include_usage = bool(options and options.get("include_usage") is True)
    return ChatRequest(
        text=_newest_user_text(body.get("messages")),
        user=_user(body.get("user"), header_user, token_name),
        stream=stream,
        include_usage=include_usage,
    )


def _check_model(body: dict[str, Any]) -> None:
    model = body.get("model")
    if model is None:
        raise APIError(
            400,
            "You must provide a model parameter.",
            param="model",
            code="missing_required_parameter",
        )
    if not isinstance(model, str):
        raise APIError(
            400, "Invalid type for 'model': expected a string.", param="model", code="invalid_type"
        )
    if model != MODEL:
        raise APIError(
            404,
            f"The model `{model[:100]}` does not exist or you do not have access to it."
            f" This server offers `{MODEL}`.",
            code="model_not_found",
        )


def _flag(body: dict[str, Any], name: str) -> bool:
    value = body.get(name, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise APIError(
            400, f"Invalid type for '{name}': expected a boolean.", param=name, code="invalid_type"
        )
    return value


def _newest_user_text(messages: Any) -> str:
    if messages is None:
        raise APIError(
            400,
            "Missing required parameter: 'messages'.",
            param="messages",
            code="missing_required_parameter",
        )
    if not isinstance(messages, list):
        raise APIError(
            400,
            "Invalid type for 'messages': expected an array of objects.",
            param="messages",
            code="invalid_type",
        )
    if not messages:
        raise APIError(
            400,
            "Invalid 'messages': empty array. Expected an array with minimum length 1.",
            param="messages",
            code="empty_array",
        )
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise APIError(
                400,
                f"Invalid 'messages[{index}]': expected an object with a 'role'.",
                param=f"messages[{index}]",
                code="invalid_type",
            )
    for index in range(len(messages) - 1, -1, -1):
        if messages[index]["role"] == "user":
            return _text(messages[index].get("content"), f"messages[{index}].content")
    raise APIError(
        400,
        "Invalid 'messages': there is no message with role 'user' to answer.",
        param="messages",
        code="invalid_value",
    )


def _text(content: Any, param: str) -> str:
    if isinstance(content, str):
        text = content
    elif isinstance(content, list) and content:
        pieces = []
        for index, part in enumerate(content):
            if not (
                isinstance(part, dict)
                and part.get("type") == "text"
                and isinstance(part.get("text"), str)
            ):
                raise APIError(
                    400,
                    f"Invalid '{param}[{index}]': only text parts are supported.",
                    param=f"{param}[{index}]",
                    code="invalid_type",
                )
            pieces.append(part["text"])
        text = "\n".join(pieces)
    else:
        raise APIError(
            400,
            f"Invalid '{param}': expected a string or an array of text parts.",
            param=param,
            code="invalid_type",
        )
    if not text.strip():
        raise APIError(
            400,
            f"Invalid '{param}': the newest user message has no text.",
            param=param,
            code="invalid_value",
        )
    return text


def _user(field: Any, header: str | None, token_name: str) -> str:
    """The speaker: a colon would blur the conversation key, a control character a log line."""
    param = "user"
    if field is None or field == "":
        field, param = header, USER_HEADER
    if field is None or field == "":
        return token_name
    if not isinstance(field, str):
        raise APIError(
            400, "Invalid type for 'user': expected a string.", param="user", code="invalid_type"
        )
    user = field.strip()
    if (
        not user
        or len(user) > MAX_USER_CHARS
        or ":" in user
        or any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs") for c in user)
    ):
        raise APIError(
            400,
            f"Invalid '{param}': 1-{MAX_USER_CHARS} printable characters, no ':'.",
            param=param,
            code="invalid_value",
        )
    return user


def completion_id() -> str:
    return "chatcmpl-" + "".join(secrets.choice(_ALPHABET) for _ in range(29))


def finish_reason(reply: Answered) -> str:
    """OpenAI's words: cut at the model's output limit or the bot's reply limit is "length"."""
    return "length" if reply.truncated or reply.capped else "stop"


def usage(reply: Answered) -> dict[str, object]:
    """The turn's tokens (every model call of it, tool rounds included)."""
    spent = reply.usage
    return {
        "prompt_tokens": spent.prompt_tokens,
        "completion_tokens": spent.completion_tokens,
        "total_tokens": spent.prompt_tokens + spent.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": spent.cached_tokens},
    }
