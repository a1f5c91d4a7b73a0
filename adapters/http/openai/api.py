"""The OpenAI-compatible chat endpoint: ``POST /v1/chat/completions`` and ``GET /v1/models``.

Any OpenAI client (the official SDK included) talks to the bot itself: each request is one
message to the bot's engine, from the person named by the ``user`` field (else the
``X-Parlour-User`` header, else the token's name), as a private chat on platform ``http`` in
the calling token's namespace (:mod:`adapters.http.identity`).
The bot keeps the history, so only the newest user message of ``messages`` is read; access,
limits, budgets, memory and tools apply exactly as on any other platform. ``stream: true``
answers in server-sent events (:mod:`adapters.http.openai.stream`), else the turn is watched and
stored as what the client got (:mod:`adapters.http.openai.once`); refusals come in OpenAI's
error shape (:mod:`adapters.http.openai.errors`). The guard in :mod:`adapters.http.server`
has already checked the chat or admin token.
"""

from __future__ import annotations

import logging
import time

from aiohttp import web

from adapters.http.auth import Principal
from adapters.http.context import CONTEXT, PRINCIPAL, HTTPContext
from adapters.http.identity import PLATFORM, chat_context
from adapters.http.openai.errors import APIError, from_exception
from adapters.http.openai.once import ClientGoneError, deliver, gone_response, while_connected
from adapters.http.openai.stream import stream_answer
from adapters.http.openai.wire import (
    MODEL,
    USER_HEADER,
    ChatRequest,
    completion_id,
    finish_reason,
    parse_chat_request,
    usage,
)
from bot.errors import UserFacingError

__all__ = ["PLATFORM", "add_routes", "answer", "read_chat_request"]

log = logging.getLogger(__name__)
_STARTED = int(time.time())  # the model's "created": when this process started


def add_routes(web_app: web.Application, context: HTTPContext) -> None:
    web_app.router.add_get("/v1/models", list_models)
    web_app.router.add_get("/v1/models/{model}", get_model)
    web_app.router.add_post("/v1/chat/completions", chat_completions)


def _model() -> dict[str, object]:
    return {"id": MODEL, "object": "model", "created": _STARTED, "owned_by": "parlour"}


async def list_models(request: web.Request) -> web.Response:
    return web.json_response({"object": "list", "data": [_model()]})


async def get_model(request: web.Request) -> web.Response:
    name = request.match_info["model"]
    if name != MODEL:
        return APIError(
            404,
            f"The model `{name[:100]}` does not exist or you do not have access to it.",
            param="model",
            code="model_not_found",
        ).response()
    return web.json_response(_model())


async def chat_completions(request: web.Request) -> web.StreamResponse:
    principal = request[PRINCIPAL]
    try:
        asked = await read_chat_request(request, principal)
    except APIError as exc:
        return exc.response()
    return await answer(request, principal, asked)


async def read_chat_request(request: web.Request, principal: Principal) -> ChatRequest:
    """The request's body read as OpenAI's; :class:`APIError` says what is wrong with it."""
    try:
        raw = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise APIError(413, "The request body is too large.", code="request_too_large") from None
    return parse_chat_request(raw, request.headers.get(USER_HEADER), principal.name)


async def answer(
    request: web.Request, principal: Principal, asked: ChatRequest
) -> web.StreamResponse:
    """One turn in ``principal``'s namespace, streamed or whole (the dashboard's playground
    answers through here too)."""
    context = request.app[CONTEXT]
    ctx = chat_context(context.settings, principal, asked.user)
    service = context.platform.conversation
    log.debug(
        "chat completion caller=%s chat=%s stream=%s",
        principal.audit_name,
        ctx.chat_key,
        asked.stream,
    )
    if asked.stream:
        return await stream_answer(
            request, service.stream(ctx, asked.text, burst=False), asked.include_usage
        )
    try:
        reply = await while_connected(request, service.chat(ctx, asked.text, burst=False))
    except ClientGoneError:  # the turn was stopped: stored unanswered, as nothing was given
        return gone_response()
    except Exception as exc:
        return _refused(exc).response()
    response = web.json_response(
        {
            "id": completion_id(),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": MODEL,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply.text},
                    "finish_reason": finish_reason(reply),
                }
            ],
            "usage": usage(reply),
        }
    )
    return await deliver(request, response, context.platform.store, reply.turn_id)


def _refused(exc: Exception) -> APIError:
    if isinstance(exc, UserFacingError):
        log.info("chat completion refused: %s", exc)
    return from_exception(exc)
