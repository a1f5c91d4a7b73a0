"""What every route module shares: the running bot and auth (``request.app[CONTEXT]``), the
caller (``request[PRINCIPAL]``), and the two response shapes (a redirect, a JSON error)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from aiohttp import web

from adapters.http.auth import Auth, Principal
from adapters.http.settings import HTTPSettings

if TYPE_CHECKING:
    from bot.platform.seam import Platform

__all__ = ["CONTEXT", "PRINCIPAL", "HTTPContext", "client_address", "json_error", "see_other"]


@dataclass(frozen=True, slots=True)
class HTTPContext:
    """What every route module gets: the running bot, this section, and the auth."""

    platform: Platform
    settings: HTTPSettings
    auth: Auth


CONTEXT = web.AppKey("parlour_context", HTTPContext)
PRINCIPAL = web.RequestKey("parlour_principal", Principal)
"""``request[PRINCIPAL]``: the caller (absent on public routes)."""


def client_address(request: web.Request) -> str:
    """The address wrong tokens are counted against (the TCP peer; behind a proxy, its own)."""
    return request.remote or "unknown"


def see_other(location: str) -> web.Response:
    """303 to ``location`` (a response, so cookies can be set on it)."""
    return web.Response(status=303, headers={"Location": location})


def json_error(status: int, message: str, code: str, *, chat: bool = False) -> web.Response:
    """Errors as the caller's kind of client reads them (OpenAI's shape on ``/v1``)."""
    if chat:
        kind = "invalid_request_error" if status < 500 else "server_error"
        body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    else:
        body = {"error": {"message": message, "code": code}}
    return web.json_response(body, status=status)
