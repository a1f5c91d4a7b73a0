"""``doctor``'s HTTP rows: the ``http:`` section is valid, and its address can be bound.

A port another program holds is the usual reason the dashboard "does not come up"; binding it
for a moment (and letting go) says so before the bot is started. Tokens are only counted.
"""

from __future__ import annotations

import socket

from adapters.http.settings import http_settings
from bot.config import Settings
from bot.doctor import Check, fail, passed
from bot.errors import ConfigError

__all__ = ["diagnose"]


async def diagnose(settings: Settings) -> list[Check]:
    try:
        http = http_settings(settings)
    except ConfigError as exc:
        return [fail("http settings", str(exc), "correct the http: section")]
    tokens = f"{len(http.admin_tokens)} admin and {len(http.chat_tokens)} chat tokens"
    rows = [passed("http settings", tokens)]
    where = f"{http.listen_host}:{http.listen_port}"
    try:
        with socket.socket(_family(http.listen_host), socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((http.listen_host, http.listen_port))
    except OSError as exc:
        rows.append(
            fail(
                "http listen",
                f"cannot bind {where}: {exc.strerror or exc}",
                "stop what holds the port (a bot already running?) or set http.listen_port",
            )
        )
    else:
        rows.append(passed("http listen", f"{where} is free"))
    return rows


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET
