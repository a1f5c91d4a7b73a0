"""The chat endpoint's errors in OpenAI's shape, so OpenAI clients raise the usual exceptions.

``{"error": {"message", "type", "param", "code"}}`` with OpenAI's status codes: the SDK turns a
429 into ``RateLimitError``, a 400 into ``BadRequestError`` and so on. The bot's refusals map
onto the nearest OpenAI error; the message is always the error's ``chat_text`` (written for
users), never ``str(exc)`` (ids and internals, for logs).
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass

from aiohttp import web

from bot.errors import (
    ContextTooLongError,
    LLMBadRequestError,
    LLMBusyError,
    LLMContextLengthError,
    LLMError,
    LLMUnavailableError,
    UserFacingError,
)
from bot.guardrails.access import AccessDeniedError
from bot.guardrails.budgets import BudgetSpentError
from bot.guardrails.rate_limit import RateLimitedError, StillAnsweringError
from bot.platform.media import MediaRefusedError

__all__ = ["APIError", "from_exception"]

log = logging.getLogger(__name__)

INTERNAL = "The server could not answer this request; please try again later."


@dataclass(eq=False)
class APIError(Exception):
    """One error answer: raised by validation, or made from a bot error. (Not frozen:
    ``raise`` and ``contextlib`` set attributes on exceptions.)"""

    status: int
    message: str
    type: str = "invalid_request_error"
    param: str | None = None
    code: str | None = None
    retry_after: float | None = None

    def body(self) -> dict[str, object]:
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.code,
            }
        }

    def sse(self) -> bytes:
        """The error as a stream event (after the first chunk the status is already sent)."""
        return f"data: {json.dumps(self.body())}\n\n".encode()

    def response(self) -> web.Response:
        response = web.json_response(self.body(), status=self.status)
        if self.retry_after is not None and self.retry_after > 0:
            response.headers["Retry-After"] = str(max(1, math.ceil(self.retry_after)))
        return response


def from_exception(exc: BaseException) -> APIError:
    """The OpenAI-shaped answer to a failed turn (anything not the bot's own is a 500)."""
    if isinstance(exc, APIError):
        return exc
    if not isinstance(exc, UserFacingError):
        log.error("chat completion failed", exc_info=exc)
        return APIError(500, INTERNAL, "server_error", code="internal_error")
    text = exc.chat_text
    if isinstance(exc, RateLimitedError):
        return APIError(
            429, text, "requests", code="rate_limit_exceeded", retry_after=exc.retry_after
        )
    if isinstance(exc, StillAnsweringError):
        return APIError(429, text, "requests", code="rate_limit_exceeded")
    if isinstance(exc, BudgetSpentError):
        return APIError(429, text, "insufficient_quota", code="insufficient_quota")
    if isinstance(exc, AccessDeniedError):
        return APIError(403, text, code="access_denied")
    if isinstance(exc, ContextTooLongError | LLMContextLengthError):
        return APIError(400, text, param="messages", code="context_length_exceeded")
    if isinstance(exc, MediaRefusedError):
        return APIError(400, text, param="messages", code="media_refused")
    if isinstance(exc, LLMBusyError | LLMUnavailableError):
        return APIError(
            503, text, "server_error", code="model_unavailable", retry_after=exc.retry_after
        )
    if isinstance(exc, LLMBadRequestError):
        return APIError(502, text, "server_error", code="upstream_rejected")
    if isinstance(exc, LLMError):  # quota, key: the operator's problem, not the caller's
        return APIError(502, text, "server_error", code="upstream_error")
    return APIError(400, text, code="refused")
