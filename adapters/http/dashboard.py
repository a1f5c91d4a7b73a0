"""The dashboard's pages (server-rendered; :mod:`adapters.http.pages`)."""

from __future__ import annotations

from aiohttp import web

from adapters.http.pages import render
from adapters.http.server import CONTEXT, HTTPContext

__all__ = ["add_routes"]


def add_routes(web_app: web.Application, context: HTTPContext) -> None:
    web_app.router.add_get("/", chats_page)


async def chats_page(request: web.Request) -> web.Response:
    store = request.app[CONTEXT].app.store
    conversations = await store.conversations()
    return render(request, "chats.html", conversations=conversations)
