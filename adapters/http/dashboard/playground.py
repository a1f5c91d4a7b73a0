"""The playground: an admin talks to the bot from the dashboard, through the chat endpoint.

The page never holds a token. Its script posts an OpenAI request to
``/playground/chat/completions``, a dashboard route (the session cookie and the CSRF header, as
every state change), which answers it in-process with the chat endpoint's own code
(:func:`adapters.http.openai.api.answer`): the same turn, limits and server-sent events a
client of ``POST /v1/chat/completions`` gets. The conversation is fixed, whatever the request
says: the signed-in admin token calling with ``user: playground``, so the chat key is
``http:<its namespace>:playground`` (:mod:`adapters.http.identity`): a chat token reaches it
only if ``http.namespaces`` puts it in that namespace on purpose. Without JavaScript the form
posts to ``/playground`` and the page shows the answer after the turn.
"""

from __future__ import annotations

import dataclasses
import logging

from aiohttp import web

from adapters.http.admin.chat_ops import UnknownChat, ops_for
from adapters.http.context import CONTEXT, PRINCIPAL, HTTPContext, see_other
from adapters.http.dashboard.pages import chat_url, when
from adapters.http.dashboard.render import render
from adapters.http.identity import chat_context
from adapters.http.openai.api import answer, read_chat_request
from adapters.http.openai.errors import APIError, from_exception
from adapters.http.openai.once import ClientGoneError, gone_response, while_connected
from bot.context import ChatContext

__all__ = ["USER", "add_routes"]

log = logging.getLogger(__name__)

USER = "playground"  # the ``user`` the playground speaks as
SHOWN = 20  # earlier turns the page shows


def add_routes(web_app: web.Application, context: HTTPContext) -> None:
    web_app.router.add_get("/playground", playground_page)
    web_app.router.add_post("/playground", send)
    web_app.router.add_post("/playground/chat/completions", completions)


def _chat(request: web.Request) -> ChatContext:
    return chat_context(request.app[CONTEXT].settings, request[PRINCIPAL], USER)


async def playground_page(request: web.Request) -> web.Response:
    return await _page(request)


async def _page(request: web.Request, *, error: str = "", status: int = 200) -> web.Response:
    chat_key = _chat(request).chat_key
    try:
        page = await ops_for(request).history(chat_key, None, SHOWN)
        turns = list(reversed(page.items))  # oldest first, as a conversation reads
    except UnknownChat:
        turns = []
    return render(
        request,
        "playground.html",
        status=status,
        chat_key=chat_key,
        turns=turns,
        error=error,
        chat_url=chat_url,
        when=when,
    )


async def completions(request: web.Request) -> web.StreamResponse:
    """``POST /v1/chat/completions``'s answer, in the playground's conversation."""
    principal = request[PRINCIPAL]
    try:
        asked = await read_chat_request(request, principal)
    except APIError as exc:
        return exc.response()
    return await answer(request, principal, dataclasses.replace(asked, user=USER))


async def send(request: web.Request) -> web.StreamResponse:
    """The form without JavaScript: the whole answer, then the page again."""
    text = str((await request.post()).get("message", "")).strip()
    if not text:
        return see_other("/playground")
    service = request.app[CONTEXT].platform.conversation
    try:
        await while_connected(request, service.chat(_chat(request), text, burst=False))
    except ClientGoneError:
        return gone_response()
    except Exception as exc:
        refused = from_exception(exc)
        return await _page(request, error=refused.message, status=refused.status)
    log.debug("playground turn caller=%s", request[PRINCIPAL].audit_name)
    return see_other("/playground#latest")
