"""The retry layer's rules, table-driven, with the SDK's real exception classes."""

from __future__ import annotations

import httpx2
import openai
import pytest

from bot.errors import (
    LLMAuthError,
    LLMBadRequestError,
    LLMBusyError,
    LLMContextLengthError,
    LLMQuotaError,
    LLMUnavailableError,
)
from bot.llm.retry import RetryPolicy, call_with_retry, classify, retry_after_seconds

REQUEST = httpx2.Request("POST", "http://127.0.0.1/v1/chat/completions")


def status_error(status: int, code: str | None = None, headers: dict[str, str] | None = None):
    body = {"error": {"message": "m", "type": code or "x", "param": None, "code": code}}
    response = httpx2.Response(status, headers=headers or {}, json=body, request=REQUEST)
    return openai.AsyncOpenAI(api_key="k", base_url="http://127.0.0.1/v1")._make_status_error(
        "m", body=body["error"], response=response
    )


@pytest.mark.parametrize(
    ("status", "code", "kind", "retryable"),
    [
        (429, "rate_limit_exceeded", LLMBusyError, True),
        (429, "insufficient_quota", LLMQuotaError, False),
        (401, "invalid_api_key", LLMAuthError, False),
        (403, None, LLMAuthError, False),
        (404, "model_not_found", LLMUnavailableError, False),
        (400, "context_length_exceeded", LLMContextLengthError, False),
        (400, None, LLMBadRequestError, False),
        (422, None, LLMBadRequestError, False),
        (408, None, LLMUnavailableError, True),
        (409, None, LLMUnavailableError, True),
        (500, None, LLMUnavailableError, True),
        (503, None, LLMUnavailableError, True),
    ],
)
def test_classification(status: int, code: str | None, kind: type, retryable: bool) -> None:
    error, should_retry = classify(status_error(status, code), endpoint="e")
    assert type(error) is kind
    assert should_retry is retryable


def test_connection_errors_and_timeouts_are_retried() -> None:
    for exc in (openai.APIConnectionError(request=REQUEST), openai.APITimeoutError(REQUEST)):
        error, retryable = classify(exc, endpoint="e")
        assert isinstance(error, LLMUnavailableError)
        assert retryable


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after": "2"}, 2.0),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, 0.0),
        ({}, None),
        ({"retry-after": "soon"}, None),
    ],
)
def test_retry_after_headers(headers: dict[str, str], expected: float | None) -> None:
    assert retry_after_seconds(httpx2.Headers(headers)) == expected


async def test_gives_up_when_the_server_asks_for_too_long_a_wait() -> None:
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    async def call() -> str:
        raise status_error(429, "rate_limit_exceeded", {"retry-after": "120"})

    with pytest.raises(LLMBusyError) as info:
        await call_with_retry(call, RetryPolicy(max_total_wait=30), endpoint="e", sleep=sleep)
    assert sleeps == []
    assert info.value.retry_after == 120


async def test_backoff_is_bounded_and_jittered() -> None:
    sleeps: list[float] = []
    attempts = 0

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    async def call() -> str:
        nonlocal attempts
        attempts += 1
        raise status_error(503)

    policy = RetryPolicy(max_attempts=5, base_delay=1.0, max_delay=3.0, max_total_wait=100)
    with pytest.raises(LLMUnavailableError):
        await call_with_retry(call, policy, endpoint="e", sleep=sleep)
    assert attempts == 5
    assert len(sleeps) == 4
    assert all(0 < s <= 3.0 for s in sleeps)
    assert 0.5 <= sleeps[0] <= 1.0
