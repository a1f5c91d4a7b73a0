"""Doctor: each configured LLM endpoint lists its models and answers one tiny completion.

The same SDK client the bot uses (:class:`bot.llm.endpoint.Endpoint`), without the retry layer:
one attempt each, bounded by ``seconds``, so a hanging server is a row, not a wait.
The answers are named as an operator needs them: a rejected key (401), a model the server
does not have (404), a timeout (with the base URL, never the key).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import openai
from openai.types.chat import ChatCompletion

from bot.config import EndpointSettings, Settings, safe_url
from bot.doctor import Check, fail, passed, warn
from bot.llm.endpoint import Endpoint

__all__ = ["check_llm"]

TIMEOUT = 5.0  # seconds for each request: a healthy endpoint answers one token much faster
_PING = [{"role": "user", "content": "ping"}]


async def check_llm(settings: Settings, seconds: float = TIMEOUT) -> list[Check]:
    """Two rows per endpoint: the primary's (``llm ...``), then each fallback's."""
    rows: list[Check] = []
    endpoints: list[tuple[str, EndpointSettings]] = [("llm", settings.llm)]
    endpoints += [(f"llm fallback {i + 1}", f) for i, f in enumerate(settings.llm.fallbacks)]
    for label, endpoint_settings in endpoints:
        endpoint = Endpoint(endpoint_settings, timeout=seconds)
        try:
            rows.append(await _models(label, endpoint, seconds))
            rows.append(await _completion(label, endpoint, seconds))
        finally:
            await endpoint.close()
    return rows


async def _models(label: str, endpoint: Endpoint, seconds: float) -> Check:
    name = f"{label} models"
    where = safe_url(endpoint.base_url)
    try:
        async with asyncio.timeout(seconds):
            page = await endpoint.client.models.list()
    except openai.NotFoundError:
        return warn(  # some compatible servers have no /models: the completion row decides
            name,
            f"{where} has no /models list (404)",
            "nothing if the completion row is ok; else check llm.base_url (it usually ends in /v1)",
        )
    except Exception as exc:  # a diagnosis: every failure becomes the row
        return _failure(name, endpoint, exc, seconds)
    ids = [model.id for model in page.data]
    if endpoint.model in ids:
        return passed(name, f"{where}: {len(ids)} models, {endpoint.model} among them")
    shown = ", ".join(ids[:8]) + (", ..." if len(ids) > 8 else "")
    return warn(
        name,
        f"{where}: {len(ids)} models, {endpoint.model} not listed ({shown or 'none'})",
        "nothing if the completion row is ok (some servers list only some); else set the model "
        "to one listed",
    )


async def _completion(label: str, endpoint: Endpoint, seconds: float) -> Check:
    name = f"{label} completion"
    body: dict[str, Any] = endpoint.body(
        _PING, max_tokens=1, temperature=None, tools=None, stream=False
    )
    started = time.monotonic()
    try:
        async with asyncio.timeout(seconds):
            result = await endpoint.post("/chat/completions", body, cast_to=ChatCompletion)
    except Exception as exc:
        return _failure(name, endpoint, exc, seconds)
    took = time.monotonic() - started
    if not isinstance(result, ChatCompletion) or not result.choices:
        return fail(
            name,
            f"{safe_url(endpoint.base_url)} answered without a choice for {endpoint.model}",
            "check that llm.base_url is an OpenAI-compatible /v1 endpoint",
        )
    return passed(name, f"{endpoint.model} answered one token in {took:.2f}s")


def _failure(name: str, endpoint: Endpoint, exc: BaseException, seconds: float) -> Check:
    where = safe_url(endpoint.base_url)
    if isinstance(exc, TimeoutError | openai.APITimeoutError):
        return fail(
            name,
            f"no answer from {where} within {seconds:g}s",
            "check that the server at llm.base_url is up and reachable from here",
        )
    if isinstance(exc, openai.AuthenticationError):
        return fail(
            name,
            f"the API key was rejected by {where} (401)",
            "set a valid key: llm.api_key, or OPENAI_API_KEY in the environment "
            "(a fallback needs its own api_key)",
        )
    if isinstance(exc, openai.PermissionDeniedError):
        return fail(
            name,
            f"{where} refused this key (403): {_message(exc)}",
            "give the key access to this model/project, or use another key",
        )
    if isinstance(exc, openai.NotFoundError):
        return fail(
            name,
            f"model {endpoint.model} not found at {where} (404): {_message(exc)}",
            "set the model (llm.model) to one the server offers (see the models row), or "
            "correct llm.base_url",
        )
    if isinstance(exc, openai.RateLimitError):
        if "quota" in _message(exc).lower():
            return fail(name, f"{where}: the quota is exhausted (429)", "check the billing")
        return warn(
            name,
            f"{where} is rate limiting right now (429)",
            "nothing if it passes; the bot retries 429s",
        )
    if isinstance(exc, openai.APIStatusError):
        return fail(
            name,
            f"{where} answered {exc.status_code}: {_message(exc)}",
            "check llm.base_url and llm.model",
        )
    if isinstance(exc, openai.APIConnectionError):
        return fail(
            name,
            f"cannot connect to {where}: {exc.__cause__ or exc}",
            "check llm.base_url, and that the server is up and reachable from here",
        )
    return fail(name, f"{where}: {type(exc).__name__}: {exc}", "check llm.base_url")


def _message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])
    return exc.message
