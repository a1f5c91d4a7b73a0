"""A non-streamed answer is stored as what the client was given.

aiohttp does not cancel a handler whose client hung up (``handler_cancellation`` is off by
default since 3.9), and a response returned to a closed connection is dropped without a word.
So the turn is watched: while it runs, the connection is looked at every
:data:`POLL_SECONDS`; a client gone before its answer stops the turn (cancelled: the service
marks it *unanswered*, the user's message kept and no answer, as a stream abandoned before its
first chunk). The answer is then written before the handler returns; a write that fails (the
client left while the answer was being stored) marks the stored turn *undelivered*, as a
platform that never took a reply does. Either way no turn is counted answered whose answer
the client never got.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any, TypeVar

from aiohttp import web

from bot.storage.turns import Turns

__all__ = [
    "POLL_SECONDS",
    "ClientGoneError",
    "client_gone",
    "deliver",
    "gone_response",
    "while_connected",
]

log = logging.getLogger(__name__)

POLL_SECONDS = 0.1  # how soon a hang-up stops the turn; one timer per waiting request
GONE_STATUS = 499  # "client closed request" (nginx's code): the access log's word for it

T = TypeVar("T")


class ClientGoneError(Exception):
    """The client closed the connection before its answer was ready."""


def client_gone(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


async def while_connected(request: web.Request, work: Coroutine[Any, Any, T]) -> T:
    """``work``'s result; if the client hangs up first, ``work`` is cancelled (and awaited:
    the turn is marked before this returns) and :class:`ClientGoneError` is raised. The
    handler cancelled (the server stopping) cancels ``work`` the same way."""
    task = asyncio.ensure_future(work)
    try:
        while True:
            done, _ = await asyncio.wait((task,), timeout=POLL_SECONDS)
            if done:
                return task.result()
            if client_gone(request):
                raise ClientGoneError
    finally:
        if not task.done():
            task.cancel()
            await asyncio.wait((task,))
            if not task.cancelled():
                task.exception()  # retrieved: it was not asked for


def gone_response() -> web.Response:
    """What the handler returns for a client that left: nobody reads it."""
    return web.Response(status=GONE_STATUS)


async def deliver(
    request: web.Request, response: web.StreamResponse, turns: Turns, turn_id: int
) -> web.StreamResponse:
    """Write ``response`` now; if the client is gone, the stored turn becomes undelivered."""
    try:
        await response.prepare(request)
        await response.write_eof()
    except ConnectionError as exc:
        log.info("chat completion client went away before its answer; turn %d undelivered", turn_id)
        try:
            await turns.mark_undelivered(turn_id, f"{type(exc).__name__}: client disconnected")
        except Exception as error:
            log.warning("turn %d not marked undelivered: %s", turn_id, error)
    return response
