"""The fake Discord's REST routes: the table of discord.py route names, methods, path
templates and handlers, a compiled route with its rate-limit bucket key, and reading a
request's body (JSON, or multipart with ``payload_json`` and files)."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp import web

from bot.testing.discord.wire import Call, DiscordError

__all__ = ["ROUTES", "Handler", "Route", "compile_route", "read_body"]

Handler = Callable[[Call], Awaitable[Any]]

_APP = "/applications/{application_id}"
_GUILD_CMDS = _APP + "/guilds/{guild_id}/commands"
_CHANNEL = "/channels/{channel_id}"
_MESSAGE = "/channels/{channel_id}/messages/{message_id}"
_REACTION = _MESSAGE + "/reactions/{emoji}/@me"
_HOOK = "/webhooks/{webhook_id}/{webhook_token}"
_HOOK_MSG = _HOOK + "/messages/{message_id}"
_CALLBACK = "/interactions/{interaction_id}/{interaction_token}/callback"

# (name, method, template, handler attribute, needs the bot token)
ROUTES: list[tuple[str, str, str, str, bool]] = [
    ("get_me", "GET", "/users/@me", "_get_me", True),
    ("start_private_message", "POST", "/users/@me/channels", "_create_dm", True),
    ("get_user", "GET", "/users/{user_id}", "_get_user", True),
    ("application_info", "GET", "/oauth2/applications/@me", "_app_info", True),
    ("application_info", "GET", "/applications/@me", "_app_info", True),
    ("get_gateway", "GET", "/gateway", "_get_gateway", False),
    ("get_bot_gateway", "GET", "/gateway/bot", "_get_bot_gateway", True),
    ("get_global_commands", "GET", _APP + "/commands", "_get_commands", True),
    ("bulk_upsert_global_commands", "PUT", _APP + "/commands", "_put_commands", True),
    ("get_guild_commands", "GET", _GUILD_CMDS, "_get_commands", True),
    ("bulk_upsert_guild_commands", "PUT", _GUILD_CMDS, "_put_commands", True),
    ("get_channel", "GET", _CHANNEL, "_get_channel", True),
    ("logs_from", "GET", _CHANNEL + "/messages", "_history", True),
    ("send_message", "POST", _CHANNEL + "/messages", "_send_message", True),
    ("get_message", "GET", _MESSAGE, "_get_message", True),
    ("edit_message", "PATCH", _MESSAGE, "_edit_message", True),
    ("delete_message", "DELETE", _MESSAGE, "_delete", True),
    ("send_typing", "POST", _CHANNEL + "/typing", "_typing", True),
    ("add_reaction", "PUT", _REACTION, "_react", True),
    ("remove_own_reaction", "DELETE", _REACTION, "_unreact", True),
    ("get_guild", "GET", "/guilds/{guild_id}", "_get_guild", True),
    ("get_all_guild_channels", "GET", "/guilds/{guild_id}/channels", "_guild_channels", True),
    ("get_roles", "GET", "/guilds/{guild_id}/roles", "_get_roles", True),
    ("get_member", "GET", "/guilds/{guild_id}/members/{user_id}", "_get_member", True),
    ("create_interaction_response", "POST", _CALLBACK, "_interaction_callback", False),
    ("execute_webhook", "POST", _HOOK, "_followup", False),
    ("get_webhook_message", "GET", _HOOK_MSG, "_get_webhook_message", False),
    ("edit_webhook_message", "PATCH", _HOOK_MSG, "_edit_webhook_message", False),
    ("delete_webhook_message", "DELETE", _HOOK_MSG, "_delete_webhook_message", False),
]


@dataclass(frozen=True, slots=True)
class Route:
    name: str
    method: str
    template: str
    pattern: re.Pattern[str]
    handler: Handler
    auth: bool

    def major(self, params: dict[str, str]) -> str:
        """Discord's major parameters: a bucket is per channel, guild or webhook."""
        for key in ("channel_id", "guild_id", "interaction_id", "webhook_id"):
            if key in params:
                token = params.get("webhook_token") or params.get("interaction_token") or ""
                return f"{key}={params[key]}:{token[:16]}"
        return ""


def compile_route(template: str) -> re.Pattern[str]:
    parts = re.split(r"(\{\w+\})", template)
    regex = "".join(f"(?P<{p[1:-1]}>[^/]+)" if p.startswith("{") else re.escape(p) for p in parts)
    return re.compile(f"{regex}/?")


async def read_body(request: web.Request) -> tuple[Any, list[tuple[str, int]]]:
    """The JSON body (``payload_json`` of a multipart request) and uploaded (name, size)s."""
    if not request.can_read_body:
        return None, []
    files: list[tuple[str, int]] = []
    if request.content_type.startswith("multipart/"):
        body: Any = None
        reader = await request.multipart()
        while (part := await reader.next()) is not None:
            if not isinstance(part, aiohttp.BodyPartReader):
                continue
            data = await part.read()
            if part.name == "payload_json":
                body = _parse_json(data)
            elif part.filename is not None:
                files.append((part.filename, len(data)))
        return body, files
    raw = await request.read()
    if not raw:
        return None, []
    return _parse_json(raw), []


def _parse_json(raw: bytes | bytearray) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        raise DiscordError(400, "The request body contains invalid JSON.", 50109) from None
