"""The status page: what is wrong with the running bot, without a shell.

It shows the adapters this process runs (running, stopped, failed and why:
:mod:`bot.platform.adapter_runs`), the MCP servers' live state and the plugins that failed to
load, ``doctor``'s rows, and the last warnings and errors logged (:mod:`bot.guardrails.recent_log`,
masked when they were recorded). ``doctor`` runs when asked (**Run the checks**, a POST with
the CSRF field): its LLM rows spend one token per endpoint, so a page view costs nothing. The
checks are the running bot's (:func:`bot.doctor.live.diagnose_running`): nothing is started a
second time and only the services the config names are contacted; the HTTP rows are this
server's own. Every text that can hold an error message goes through the config's redactor.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

from aiohttp import web

from adapters.http.admin import ops as admin_ops
from adapters.http.context import CONTEXT, PRINCIPAL, HTTPContext, see_other
from adapters.http.dashboard.render import render
from adapters.http.identity import PLATFORM
from bot.config import secret_values
from bot.doctor import Check, passed
from bot.doctor.live import diagnose_running
from bot.guardrails.redact import Redactor

__all__ = ["add_routes"]

log = logging.getLogger(__name__)


@dataclass
class Checked:
    """The last run of the checks in this process (a page view never runs them)."""

    redactor: Redactor
    rows: list[Check] | None = None
    at: float = 0.0
    took: float = 0.0
    running: asyncio.Lock = field(default_factory=asyncio.Lock)


CHECKED = web.AppKey("parlour_status_checked", Checked)


def add_routes(web_app: web.Application, context: HTTPContext) -> None:
    web_app[CHECKED] = Checked(Redactor(secret_values(context.platform.settings)))
    web_app.router.add_get("/status", status_page)
    web_app.router.add_post("/status/doctor", run_checks)


def at(seconds: float) -> str:
    """A time to the second (UTC): log lines come in bursts."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


async def status_page(request: web.Request) -> web.Response:
    platform = request.app[CONTEXT].platform
    checked = request.app[CHECKED]
    operator = platform.operator
    return render(
        request,
        "status.html",
        adapters=operator.adapters.runs(),
        mcp=admin_ops.mcp_servers(platform).servers,
        failed_plugins=admin_ops.plugins(platform).failed,
        checked=checked,
        lines=operator.recent_log.lines(),
        redact=checked.redactor,
        at=at,
    )


async def run_checks(request: web.Request) -> web.Response:
    checked = request.app[CHECKED]
    async with checked.running:  # two clicks run them once after the other, not twice at once
        started = time.monotonic()
        settings = request.app[CONTEXT].platform.settings
        rows = await diagnose_running(settings, skip=(PLATFORM,))
        checked.rows = [*rows, _serving(request)]
        checked.at, checked.took = time.time(), time.monotonic() - started
    failed = sum(row.status == "FAIL" for row in checked.rows)
    log.info("status checks run caller=%s failed=%d", request[PRINCIPAL].audit_name, failed)
    return see_other("/status#doctor")


def _serving(request: web.Request) -> Check:
    """``doctor``'s HTTP rows would try to bind the port this server holds: say what is true."""
    settings = request.app[CONTEXT].settings
    address = request.transport.get_extra_info("sockname") if request.transport else None
    where = f"{address[0]}:{address[1]}" if isinstance(address, tuple) else "this address"
    tokens = f"{len(settings.admin_tokens)} admin and {len(settings.chat_tokens)} chat tokens"
    return passed("http", f"serving this page on {where}; {tokens}")
