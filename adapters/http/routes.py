"""The adapter's route modules, in the order their routes are added to the server."""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web

from adapters.http import admin_api, admin_chats, dashboard, login, openai_api, openapi
from adapters.http.context import HTTPContext

__all__ = ["ROUTES", "RouteAdder"]

RouteAdder = Callable[[web.Application, HTTPContext], None]

ROUTES: tuple[RouteAdder, ...] = (
    login.add_routes,
    dashboard.add_routes,
    openai_api.add_routes,
    admin_api.add_routes,
    admin_chats.add_routes,
    openapi.add_routes,
)
