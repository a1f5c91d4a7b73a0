"""The adapter's route modules, in the order their routes are added to the server."""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web

from adapters.http.admin import api as admin_api
from adapters.http.admin import catchup as admin_catchup
from adapters.http.admin import chats as admin_chats
from adapters.http.admin import knowledge as admin_knowledge
from adapters.http.admin import openapi
from adapters.http.admin import schedules as admin_schedules
from adapters.http.context import HTTPContext
from adapters.http.dashboard import knowledge, login, playground, schedules, status
from adapters.http.dashboard import pages as dashboard
from adapters.http.openai import api as openai_api

__all__ = ["ROUTES", "RouteAdder"]

RouteAdder = Callable[[web.Application, HTTPContext], None]

ROUTES: tuple[RouteAdder, ...] = (
    login.add_routes,
    dashboard.add_routes,
    playground.add_routes,
    status.add_routes,
    knowledge.add_routes,
    schedules.add_routes,
    openai_api.add_routes,
    admin_api.add_routes,
    admin_chats.add_routes,
    admin_catchup.add_routes,
    admin_knowledge.add_routes,
    admin_schedules.add_routes,
    openapi.add_routes,
)
