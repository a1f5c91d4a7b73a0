"""Scripted answers for the fake server: replies, tool calls, errors, hangs, delays.

A test queues ``Script`` values with ``FakeLLM.script(...)``; each chat request that passes
validation takes the next one. The helpers build them with OpenAI's real texts and headers, so
a bot's error handling is exercised exactly as production would exercise it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

from bot.testing.llm.wire import ApiError

QUOTA_MESSAGE = (
    "You exceeded your current quota, please check your plan and billing details. For more "
    "information on this error, read the docs: "
    "https://platform.openai.com/docs/guides/error-codes/api-errors."
)

_DEFAULT_ERRORS: dict[int, tuple[str, str]] = {
    400: ("Invalid request.", "invalid_request_error"),
    401: ("Incorrect API key provided.", "invalid_request_error"),
    403: ("You are not allowed to sample from this model.", "invalid_request_error"),
    404: ("The model does not exist or you do not have access to it.", "invalid_request_error"),
    409: ("The request conflicted with another request.", "invalid_request_error"),
    422: ("The request could not be processed.", "invalid_request_error"),
    429: ("Rate limit reached. Please try again later.", "requests"),
    500: (
        "The server had an error while processing your request. Sorry about that!",
        "server_error",
    ),
    502: ("Bad gateway.", "server_error"),
    503: ("The engine is currently overloaded, please try again later.", "server_error"),
    504: ("Gateway timeout.", "server_error"),
}


@dataclass(frozen=True, slots=True)
class ScriptedToolCall:
    """One tool call the fake model makes; ``arguments`` is sent verbatim (may be bad JSON)."""

    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Script:
    """One scripted answer. Build it with ``reply``/``tool_calls``/``error``/… rather than here.

    ``delay`` is waited before answering (on top of ``FakeLLM.latency`` for completions);
    ``usage`` overrides counted usage numbers (``prompt_tokens``, ``completion_tokens``,
    ``total_tokens``, ``cached_tokens``) in the answer; other keys are sent as extra fields of
    the usage object (``{"prompt_cache_hit_tokens": 900}`` answers like DeepSeek); ``gate``,
    when given, is waited for before answering (after ``delay``).
    """

    text: str | None = None
    tool_calls: tuple[ScriptedToolCall, ...] = ()
    error: ApiError | None = None
    hang: bool = False
    delay: float = 0.0
    usage: Mapping[str, int] | None = field(default=None)
    gate: asyncio.Event | None = None  # answered only once it is set (see ``held``)


def reply(text: str, *, delay: float = 0.0, usage: Mapping[str, int] | None = None) -> Script:
    """A plain assistant text answer (finish_reason "stop", or "length" if cut by max tokens)."""
    return Script(text=text, delay=delay, usage=usage)


def tool_calls(
    *calls: tuple[str, Mapping[str, Any] | str],
    text: str | None = None,
    delay: float = 0.0,
    usage: Mapping[str, int] | None = None,
) -> Script:
    """An answer calling tools; ids are ``call_<n>``, numbered per server in serving order.

    A mapping is sent as compact JSON; a string is sent as-is, so tests can feed a bot the
    invalid JSON real models sometimes produce.
    """
    if not calls:
        raise ValueError("tool_calls() needs at least one (name, arguments) pair")
    built = tuple(
        ScriptedToolCall(
            name,
            args
            if isinstance(args, str)
            else json.dumps(args, separators=(",", ":"), ensure_ascii=False),
        )
        for name, args in calls
    )
    return Script(text=text, tool_calls=built, delay=delay, usage=usage)


def error(
    status: int,
    *,
    code: str | None = None,
    message: str | None = None,
    type: str | None = None,
    param: str | None = None,
    headers: Mapping[str, str] | None = None,
    should_retry: bool | None = None,
    delay: float = 0.0,
) -> Script:
    """An OpenAI-style error answer; message and type default to what OpenAI sends for the status.

    ``should_retry`` adds the ``x-should-retry`` header the SDK obeys; without it no such
    header is sent.
    """
    default_message, default_type = _DEFAULT_ERRORS.get(
        status,
        (_reason(status), "server_error" if status >= 500 else "invalid_request_error"),
    )
    extra = dict(headers or {})
    if should_retry is not None:
        extra["x-should-retry"] = "true" if should_retry else "false"
    failure = ApiError(
        status,
        default_message if message is None else message,
        type=default_type if type is None else type,
        param=param,
        code=code,
        headers=extra,
    )
    return Script(error=failure, delay=delay)


def rate_limited(retry_after: float | None = None, *, retry_after_ms: int | None = None) -> Script:
    """A 429 ``rate_limit_exceeded`` with ``retry-after``/``retry-after-ms`` when given."""
    headers = {
        "x-ratelimit-limit-requests": "60",
        "x-ratelimit-remaining-requests": "0",
    }
    wait = 1.0
    if retry_after is not None:
        headers["retry-after"] = _seconds(retry_after)
        wait = retry_after
    if retry_after_ms is not None:
        headers["retry-after-ms"] = str(retry_after_ms)
        wait = retry_after_ms / 1000
    headers["x-ratelimit-reset-requests"] = f"{_seconds(wait)}s"
    message = (
        "Rate limit reached for requests per min (RPM) in organization org-parlour-fake: "
        f"Limit 60, Used 60, Requested 1. Please try again in {_seconds(wait)}s. Visit "
        "https://platform.openai.com/account/rate-limits to learn more."
    )
    return error(429, code="rate_limit_exceeded", message=message, headers=headers)


def quota_exhausted() -> Script:
    """A 429 that is not a rate limit: billing quota is gone (type and code insufficient_quota)."""
    return error(429, code="insufficient_quota", type="insufficient_quota", message=QUOTA_MESSAGE)


def hang() -> Script:
    """Never answer: the request waits until the client gives up or the server stops."""
    return Script(hang=True)


def delay(seconds: float, then: Script) -> Script:
    """``then``, answered ``seconds`` later."""
    return dataclasses.replace(then, delay=then.delay + seconds)


def held(gate: asyncio.Event, then: Script) -> Script:
    """``then``, answered once the test sets ``gate``: the model is busy for exactly as long
    as a test needs (to send more messages meanwhile), with no timing involved."""
    return dataclasses.replace(then, gate=gate)


def _seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase + "."
    except ValueError:
        return f"HTTP {status}."
