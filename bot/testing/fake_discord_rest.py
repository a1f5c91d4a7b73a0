"""The fake Discord's REST API under ``/api/v10``: routing, auth, rate limits, the handlers.

Every request goes through one pipeline, in Discord's order: route match (404/405),
body decoding (JSON or multipart with ``payload_json``; bad JSON is 50109), ``Authorization:
Bot <token>`` (401 except on the token-authenticated interaction and webhook routes), an
injected failure if a test scripted one, the bucket counter, then the handler. Each answer
has ``Via`` and ``X-RateLimit-*`` headers, and every request is recorded in ``requests``.

Route names (usable in ``rate_limit``/``fail``) follow discord.py's ``HTTPClient`` methods:
``send_message``, ``edit_message``, ``delete_message``, ``create_interaction_response``,
``execute_webhook``, ``bulk_upsert_guild_commands`` ... (see ``ROUTES``).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp import web

from bot.testing.fake_discord_commands import store_commands, validate_commands
from bot.testing.fake_discord_interactions import DiscordInteractions
from bot.testing.fake_discord_limits import Buckets, Injections
from bot.testing.fake_discord_payloads import as_snowflake, user_json
from bot.testing.fake_discord_permissions import Perm
from bot.testing.fake_discord_wire import (
    Call,
    DiscordError,
    JSONDict,
    RecordedRequest,
    json_response,
    no_content,
    unknown,
)

__all__ = ["ROUTES", "DiscordRest"]

Handler = Callable[[Call], Awaitable[Any]]
MISSING_ACCESS = (403, "Missing Access", 50001)
MISSING_PERMISSIONS = (403, "Missing Permissions", 50013)

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
class _Route:
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


def _compile(template: str) -> re.Pattern[str]:
    parts = re.split(r"(\{\w+\})", template)
    regex = "".join(f"(?P<{p[1:-1]}>[^/]+)" if p.startswith("{") else re.escape(p) for p in parts)
    return re.compile(f"{regex}/?")


class DiscordRest(DiscordInteractions):
    """The REST pipeline and the non-interaction handlers (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.buckets = Buckets()
        self.injections = Injections()
        self.closed_dms: set[int] = set()
        self._nonces: dict[tuple[int, str], tuple[int, float]] = {}
        self._in_flight = 0
        self._routes = [
            _Route(name, method, template, _compile(template), getattr(self, attr), auth)
            for name, method, template, attr, auth in ROUTES
        ]

    # -------------------------------------------------------------------- pipeline

    async def _handle_rest(self, request: web.Request) -> web.StreamResponse:
        self._in_flight += 1
        path = "/" + request.match_info["tail"]
        record = RecordedRequest(request.method, path, None, None, dict(request.query))
        self.requests.append(record)
        try:
            try:
                response = await self._serve(request, record)
            except DiscordError as exc:
                response = exc.response()
                record.error = exc.code
            record.status = response.status
            return response
        finally:
            self._in_flight -= 1
            self._bump()

    async def _serve(self, request: web.Request, record: RecordedRequest) -> web.StreamResponse:
        if request.match_info["version"] not in ("9", "10"):
            raise DiscordError(404, "404: Not Found", 0)
        route, params = self._match(request.method, record.path)
        record.route = f"{route.method} {route.template}"
        body, files = await _read_body(request)
        record.json = body
        if route.auth and request.headers.get("Authorization") != f"Bot {self.token}":
            raise DiscordError(401, "401: Unauthorized", 0)
        headers: dict[str, str] = {}
        try:
            headers = self.buckets.take(record.route, route.major(params))
            injected = self.injections.take(route.method, record.path, record.route, route.name)
            if injected is not None:
                raise injected.error(headers)
            result = await route.handler(
                Call(route.method, record.path, params, record.query, body, files)
            )
        except DiscordError as exc:
            exc.headers = {**headers, **exc.headers}
            raise
        if isinstance(result, web.StreamResponse):
            return result
        return no_content(headers) if result is None else json_response(result, 200, headers)

    def _match(self, method: str, path: str) -> tuple[_Route, dict[str, str]]:
        allowed = False
        for route in self._routes:
            found = route.pattern.fullmatch(path)
            if found is not None:
                if route.method == method:
                    return route, found.groupdict()
                allowed = True
        if allowed:
            raise DiscordError(405, "405: Method Not Allowed", 0)
        raise DiscordError(404, "404: Not Found", 0)

    # --------------------------------------------------------------- users, app, gateway

    async def _get_me(self, call: Call) -> Any:
        return self.bot_user

    async def _get_user(self, call: Call) -> Any:
        user = self.users.get(call.id("user_id"))
        if user is None:
            raise unknown("User")
        return user

    async def _create_dm(self, call: Call) -> Any:
        recipient = call.object().get("recipient_id")
        user = self.users.get(as_snowflake(recipient)) if str(recipient or "").isdigit() else None
        if user is None:
            raise unknown("User")
        return self.dm(user)

    async def _app_info(self, call: Call) -> Any:
        return {
            "id": str(self.application_id),
            "name": self.bot_name,
            "icon": None,
            "description": "",
            "summary": "",
            "type": None,
            "bot_public": True,
            "bot_require_code_grant": False,
            "verify_key": "0" * 64,
            "flags": self._application_flags(),
            "owner": user_json(self.application_id - 1, f"{self.bot_name.lower()}-owner"),
            "team": None,
            "bot": self.bot_user,
            "redirect_uris": [],
            "interactions_endpoint_url": None,
            "tags": [],
            "approximate_guild_count": len(self._guilds),
            "integration_types_config": {"0": {}},
        }

    async def _get_gateway(self, call: Call) -> Any:
        return {"url": self.gateway_url}

    async def _get_bot_gateway(self, call: Call) -> Any:
        limit = {"total": 1000, "remaining": 999, "reset_after": 14_400_000, "max_concurrency": 1}
        return {"url": self.gateway_url, "shards": 1, "session_start_limit": limit}

    # -------------------------------------------------------------------- commands

    def _command_scope(self, call: Call) -> int | None:
        if call.id("application_id") != self.application_id:
            raise DiscordError(*MISSING_ACCESS)
        if "guild_id" not in call.params:
            return None
        guild_id = call.id("guild_id")
        if guild_id not in self._guilds:
            raise DiscordError(*MISSING_ACCESS)
        return guild_id

    async def _get_commands(self, call: Call) -> Any:
        return self._commands.get(self._command_scope(call), [])

    async def _put_commands(self, call: Call) -> Any:
        scope = self._command_scope(call)
        validate_commands(call.body)
        previous = self._commands.get(scope, [])
        stored = store_commands(call.body, previous, scope, self.application_id, self._ids.next)
        self._commands[scope] = stored
        self._bump()
        return stored

    # -------------------------------------------------------------------- channels

    def _visible_channel(self, call: Call) -> JSONDict:
        channel = self._channels.get(call.id("channel_id"))
        if channel is None:
            raise unknown("Channel")
        if channel["type"] != 1 and not self._bot_can(channel, Perm.VIEW_CHANNEL):
            raise DiscordError(*MISSING_ACCESS)
        return channel

    def _bot_can(self, channel: JSONDict, permission: int) -> bool:
        if channel["type"] == 1:
            return True
        return (
            self.permissions_in(int(channel["id"]), self.application_id) & permission == permission
        )

    async def _get_channel(self, call: Call) -> Any:
        return self._visible_channel(call)

    async def _history(self, call: Call) -> Any:
        channel = self._visible_channel(call)
        if not self._bot_can(channel, Perm.READ_MESSAGE_HISTORY):
            return []
        limit = min(max(int(call.query.get("limit", "50") or 50), 1), 100)
        found = sorted(
            (
                m
                for m in self._messages.values()
                if m["channel_id"] == channel["id"] and not int(m["flags"]) & 64
            ),
            key=lambda m: int(m["id"]),
            reverse=True,
        )
        if "before" in call.query:
            found = [m for m in found if int(m["id"]) < int(call.query["before"])]
        if "after" in call.query:
            found = [m for m in found if int(m["id"]) > int(call.query["after"])][-limit:]
        return [self._wire(m) for m in found[:limit]]

    async def _send_message(self, call: Call) -> Any:
        channel = self._visible_channel(call)
        needed = (
            Perm.SEND_MESSAGES_IN_THREADS if channel["type"] in (10, 11, 12) else Perm.SEND_MESSAGES
        )
        body = call.object()
        if body.get("message_reference"):
            needed |= Perm.READ_MESSAGE_HISTORY
        if call.files:
            needed |= Perm.ATTACH_FILES
        if not self._bot_can(channel, needed):
            raise DiscordError(*MISSING_PERMISSIONS)
        if channel["type"] == 1 and int(channel["recipients"][0]["id"]) in self.closed_dms:
            raise DiscordError(403, "Cannot send messages to this user", 50007)
        # enforce_nonce: a retried send with the same nonce gets the message created before.
        nonce = (int(channel["id"]), str(body.get("nonce")))
        earlier = self._nonces.get(nonce) if body.get("enforce_nonce") else None
        if (
            earlier is not None
            and earlier[0] in self._messages
            and time.monotonic() - earlier[1] < 120
        ):
            return self._wire(self._messages[earlier[0]])
        message = self._create_bot_message(channel, body, files=call.files)
        if body.get("nonce") is not None:
            self._nonces[nonce] = (int(message["id"]), time.monotonic())
        return self._wire(message)

    async def _get_message(self, call: Call) -> Any:
        channel = self._visible_channel(call)
        if not self._bot_can(channel, Perm.READ_MESSAGE_HISTORY):
            raise DiscordError(*MISSING_PERMISSIONS)
        return self._wire(self._channel_message(int(channel["id"]), call.id("message_id")))

    async def _edit_message(self, call: Call) -> Any:
        channel = self._visible_channel(call)
        message = self._channel_message(int(channel["id"]), call.id("message_id"))
        return self._wire(self._edit_bot_message(message, call.object(), files=call.files))

    async def _delete(self, call: Call) -> Any:
        channel = self._visible_channel(call)
        message = self._channel_message(int(channel["id"]), call.id("message_id"))
        if int(message["author"]["id"]) != self.application_id:
            if channel["type"] == 1:
                raise DiscordError(403, "Cannot execute action on a DM channel", 50003)
            if not self._bot_can(channel, Perm.MANAGE_MESSAGES):
                raise DiscordError(*MISSING_PERMISSIONS)
        self._delete_message(message)
        return None

    async def _typing(self, call: Call) -> Any:
        channel = self._visible_channel(call)
        if not self._bot_can(channel, Perm.SEND_MESSAGES):
            raise DiscordError(*MISSING_PERMISSIONS)
        self.typing.append((int(channel["id"]), time.monotonic()))
        self._bump()
        return None

    async def _react(self, call: Call) -> Any:
        channel = self._visible_channel(call)
        message = self._channel_message(int(channel["id"]), call.id("message_id"))
        if not self._bot_can(channel, Perm.ADD_REACTIONS | Perm.READ_MESSAGE_HISTORY):
            raise DiscordError(*MISSING_PERMISSIONS)
        self.reactions.append((int(channel["id"]), int(message["id"]), call.params["emoji"]))
        self._bump()
        return None

    async def _unreact(self, call: Call) -> Any:
        channel = self._visible_channel(call)
        key = (int(channel["id"]), call.id("message_id"), call.params["emoji"])
        if key in self.reactions:
            self.reactions.remove(key)
        self._bump()
        return None

    # ---------------------------------------------------------------------- guilds

    def _known_guild(self, call: Call) -> Any:
        state = self._guilds.get(call.id("guild_id"))
        if state is None:
            raise unknown("Guild")
        return state

    async def _get_guild(self, call: Call) -> Any:
        state = self._known_guild(call)
        guild = {**state.guild, "roles": list(state.roles.values())}
        if call.flag("with_counts"):
            guild["approximate_member_count"] = len(state.members)
            guild["approximate_presence_count"] = 0
        return guild

    async def _guild_channels(self, call: Call) -> Any:
        state = self._known_guild(call)
        return [
            self._channels[c]
            for c in state.channels
            if self._channels[c]["type"] not in (10, 11, 12)
        ]

    async def _get_roles(self, call: Call) -> Any:
        return list(self._known_guild(call).roles.values())

    async def _get_member(self, call: Call) -> Any:
        member = self._known_guild(call).members.get(call.id("user_id"))
        if member is None:
            raise unknown("Member")
        return member


async def _read_body(request: web.Request) -> tuple[Any, list[tuple[str, int]]]:
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
