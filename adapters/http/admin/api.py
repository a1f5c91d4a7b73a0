"""The admin API's usage, plugins, MCP, reminders and metrics routes (JSON; admin token or the
dashboard's session, decided by path in :mod:`adapters.http.server`).

Handlers parse and check the query, ask :mod:`adapters.http.admin.ops` (which the dashboard's
pages share) and serialise its models. Bad input is a 400 in the API's error shape; nothing is
written by a refused request.
"""

from __future__ import annotations

import logging

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from adapters.http.admin import ops as admin_ops
from adapters.http.admin.params import is_key
from adapters.http.admin.schemas import Body
from adapters.http.context import CONTEXT, PRINCIPAL, HTTPContext, json_error

__all__ = ["add_routes"]

log = logging.getLogger(__name__)


def add_routes(web_app: web.Application, context: HTTPContext) -> None:
    router = web_app.router
    router.add_get("/api/usage", usage)
    router.add_get("/api/plugins", plugins)
    router.add_get("/api/mcp", mcp)
    router.add_get("/api/reminders", reminders)
    router.add_delete("/api/reminders/{id}", cancel_reminder)
    router.add_get("/metrics", metrics)


def _json(body: Body) -> web.Response:
    response = web.json_response(body.model_dump(mode="json"))
    response.headers["Cache-Control"] = "no-store"
    return response


async def usage(request: web.Request) -> web.Response:
    days_text = request.query.get("days", "30")
    try:
        days = int(days_text)
    except ValueError:
        return json_error(400, "days must be a whole number", "invalid_parameter")
    if not 1 <= days <= admin_ops.MAX_DAYS:
        return json_error(400, f"days must be 1-{admin_ops.MAX_DAYS}", "invalid_parameter")
    chat = request.query.get("chat", "").strip() or None
    user = request.query.get("user", "").strip() or None
    if chat is not None and (":" not in chat or not is_key(chat)):
        return json_error(400, "chat is a chat key like telegram:-100123", "invalid_parameter")
    platform = request.app[CONTEXT].platform
    return _json(await admin_ops.usage(platform, days, chat, user))


async def plugins(request: web.Request) -> web.Response:
    return _json(admin_ops.plugins(request.app[CONTEXT].platform))


async def mcp(request: web.Request) -> web.Response:
    return _json(admin_ops.mcp_servers(request.app[CONTEXT].platform))


async def reminders(request: web.Request) -> web.Response:
    chat = request.query.get("chat", "").strip() or None
    return _json(admin_ops.reminders(request.app[CONTEXT].platform, chat))


async def cancel_reminder(request: web.Request) -> web.Response:
    job_id = request.match_info["id"]
    platform = request.app[CONTEXT].platform
    if not await admin_ops.cancel_reminder(platform, job_id):
        return json_error(404, "no pending reminder with that id", "not_found")
    log.info("reminder %s cancelled by %s", job_id, request[PRINCIPAL].audit_name)
    return web.Response(status=204)


async def metrics(request: web.Request) -> web.Response:
    """The Prometheus text format of this process's figures (MCP gauge refreshed now)."""
    operator = request.app[CONTEXT].platform.operator
    mcp = operator.mcp
    states = [s.state.value for s in mcp.statuses()] if mcp is not None else []
    operator.metrics.mcp_states(states)
    response = web.Response(body=operator.metrics.exposition())
    response.headers["Content-Type"] = CONTENT_TYPE_LATEST
    return response
