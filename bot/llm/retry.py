"""The one retry layer around LLM calls, and the map from SDK errors to Parlour's error tree.

The openai SDK's own retries are switched off (``max_retries=0``) so that waits never stack.
Retried: 408, 409, 429 (unless the quota is spent), 5xx, connection errors and timeouts. Never
retried: 400, 401, 403, 404, 422, a 429 whose code is ``insufficient_quota``, and a request the
SDK could not encode (it was never sent). Waits honour ``retry-after-ms`` / ``retry-after`` and
otherwise back off exponentially with full jitter; the sum of all waits of one call is capped.
A 429 gets more attempts than other failures: under a storm, retries that wait the same
Retry-After come back together and fail in waves, and the server has said it will have room
again, not that it is broken.

A failed connection says why (:func:`connection_problem`): the SDK's aiohttp transport reports
every connect failure as a timeout, so the cause chain is read for the refused port, the
unknown host or the TLS failure underneath.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import random
import socket
import ssl
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import openai

from bot.errors import (
    LLMAuthError,
    LLMBadRequestError,
    LLMBusyError,
    LLMContextLengthError,
    LLMError,
    LLMQuotaError,
    LLMUnavailableError,
)

log = logging.getLogger(__name__)
T = TypeVar("T")
Sleep = Callable[[float], Awaitable[None]]

_RETRY_STATUSES = frozenset({408, 409, 429})
_QUOTA_CODES = frozenset({"insufficient_quota", "billing_hard_limit_reached", "quota_exceeded"})


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_attempts: int = 4
    max_rate_limited_attempts: int = 10  # a 429 says "later", not "broken": more patience
    base_delay: float = 0.5
    max_delay: float = 8.0
    max_total_wait: float = 30.0

    def backoff(self, attempt: int) -> float:
        """Full-jitter exponential backoff for the ``attempt``-th retry (1-based)."""
        ceiling = min(self.max_delay, self.base_delay * (2 ** (attempt - 1)))
        return random.uniform(ceiling / 2, ceiling)


def retry_after_seconds(headers: Any) -> float | None:
    """Seconds the server asked us to wait, from ``retry-after-ms`` or ``retry-after``."""
    if headers is None:
        return None
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        parsed = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, parsed.timestamp() - time.time())


def _error_code(exc: openai.APIStatusError) -> str:
    code = getattr(exc, "code", None) or ""
    body = exc.body if isinstance(exc.body, dict) else {}
    inner = body.get("error", body) if isinstance(body.get("error", body), dict) else {}
    return str(code or inner.get("code") or inner.get("type") or "")


def _causes(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain and len(chain) < 16:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def connection_problem(exc: BaseException) -> str | None:
    """What went wrong underneath a connection error, in words; None when nothing says.

    The most telling cause anywhere in the chain wins, the deepest first: aiohttp's own
    connector error is an ``OSError`` too, and wraps the ``ConnectionRefusedError`` that names
    the problem.
    """
    causes = _causes(exc)[::-1]
    for kind, words in _PROBLEMS:
        found = next((cause for cause in causes if isinstance(cause, kind)), None)
        if found is not None:
            reason = getattr(found, "strerror", None) or type(found).__name__
            return words.format(name=type(found).__name__, reason=reason)
    return None


_PROBLEMS: tuple[tuple[type[BaseException] | tuple[type[BaseException], ...], str], ...] = (
    (ConnectionRefusedError, "connection refused (is the server running on that port?)"),
    (socket.gaierror, "host not found (DNS lookup failed)"),
    ((ssl.SSLError, ssl.CertificateError), "TLS handshake failed ({name})"),
    (TimeoutError, "request timed out"),
    (ConnectionError, "connection lost ({name})"),
    (OSError, "unreachable ({reason})"),
)


def classify(exc: BaseException, *, endpoint: str) -> tuple[LLMError, bool]:
    """Map an SDK exception to (Parlour error, retryable?). Messages carry no secrets."""
    if isinstance(exc, openai.APIConnectionError):  # APITimeoutError is one, too
        fallback = "request timed out" if isinstance(exc, openai.APITimeoutError) else None
        problem = connection_problem(exc) or fallback or "connection failed"
        return LLMUnavailableError(f"{endpoint}: {problem}"), True
    if isinstance(exc, TimeoutError):
        return LLMUnavailableError(f"{endpoint}: request timed out"), True
    if isinstance(exc, UnicodeEncodeError | TypeError):
        return _unsendable(exc, endpoint), False
    if not isinstance(exc, openai.APIStatusError):
        return LLMUnavailableError(f"{endpoint}: {type(exc).__name__}"), False
    status, code = exc.status_code, _error_code(exc)
    detail = f"{endpoint}: HTTP {status}" + (f" ({code})" if code else "")
    wait = retry_after_seconds(exc.response.headers)
    if status == 429 and code in _QUOTA_CODES:
        return LLMQuotaError(detail, status=status), False
    if status == 429:
        return LLMBusyError(detail, status=status, retry_after=wait), True
    if status in (401, 403):
        return LLMAuthError(detail, status=status), False
    if status == 400 and code == "context_length_exceeded":
        return LLMContextLengthError(detail, status=status), False
    if status in (400, 413, 422):
        return LLMBadRequestError(detail, status=status), False
    if status == 404:
        return LLMUnavailableError(f"{detail}: model or endpoint not found", status=status), False
    if status in _RETRY_STATUSES or status >= 500:
        return LLMUnavailableError(detail, status=status, retry_after=wait), True
    return LLMUnavailableError(detail, status=status), False


def _unsendable(exc: Exception, endpoint: str) -> LLMBadRequestError:
    """Raised while the SDK built the request (text with no UTF-8 form, a value JSON cannot
    carry): nothing was sent, so it is this request's fault and says nothing of the endpoint."""
    error = LLMBadRequestError(
        f"{endpoint}: the request could not be encoded ({type(exc).__name__})"
    )
    error.chat_text = "That message could not be sent to the AI model."
    return error


async def call_with_retry(
    call: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    endpoint: str,
    sleep: Sleep = asyncio.sleep,
) -> T:
    """Run ``call`` until it succeeds, a non-retryable error occurs, or the policy gives up."""
    waited = 0.0
    for attempt in range(1, max(policy.max_attempts, policy.max_rate_limited_attempts) + 1):
        try:
            return await call()
        except Exception as exc:  # the SDK's errors, and anything its transport lets through
            error, retryable = classify(exc, endpoint=endpoint)
            busy = isinstance(error, LLMBusyError)
            limit = policy.max_rate_limited_attempts if busy else policy.max_attempts
            if not retryable or attempt >= limit:
                raise error from exc
            wait = error.retry_after if error.retry_after is not None else policy.backoff(attempt)
            if waited + wait > policy.max_total_wait:
                log.warning("giving up on %s: retry wait %.2fs exceeds the cap", error, wait)
                raise error from exc
            log.info("retrying after %s attempt=%d wait=%.2fs", error, attempt, wait)
            waited += wait
            await sleep(wait)
    raise AssertionError("unreachable")  # pragma: no cover
