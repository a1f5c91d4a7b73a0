"""The fake Discord's REST API under ``/api/v10``: routing, auth, rate limits, the handlers.

Every request goes through one pipeline, in Discord's order: route match (404/405),
body decoding (JSON or multipart with ``payload_json``; bad JSON is 50109), ``Authorization:
Bot <token>`` (401 except on the token-authenticated interaction and webhook routes; the
token, or the interaction, says which bot application acts: :mod:`bot.testing.discord.apps`), an
injected failure if a test scripted one, the bucket counter, then the handler. Each answer
has ``Via`` and ``X-RateLimit-*`` headers, and every request is recorded in ``requests``.

Route names (usable in ``rate_limit``/``fail``) follow discord.py's ``HTTPClient`` methods:
``send_message``, ``edit_message``, ``delete_message``, ``create_interaction_response``,
``execute_webhook``, ``bulk_upsert_guild_commands`` ... (see ``ROUTES``).
"""

from __future__ import annotations

import time
from typing import Any

from aiohttp import web

from bot.testing.discord.apps import BotApp, acting
from bot.testing.discord.commands import store_commands, validate_commands
from bot.testing.discord.interactions import DiscordInteractions
from bot.testing.discord.limits import Buckets, Injections
from bot.testing.discord.payloads import as_snowflake, user_json
from bot.testing.discord.permissions import Perm
from bot.testing.discord.routes import ROUTES, Route, compile_route, read_body
from bot.testing.discord.wire import (
    Call,
    DiscordError,
    JSONDict,
    RecordedRequest,
    json_response,
    no_content,
    unknown,
)

__all__ = ["ROUTES", "DiscordRest"]

MISSING_ACCESS = (403, "Missing Access", 50001)
MISSING_PERMISSIONS = (403, "Missing Permissions", 50013)


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
            Route(name, method, template, compile_route(template), getattr(self, attr), auth)
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
        body, files = await read_body(request)
        record.json = body
        app = self._caller(request.headers.get("Authorization"), params)
        if route.auth and app is None:
            raise DiscordError(401, "401: Unauthorized", 0)
        with acting(app):  # the fake's "bot" is this application while the handler runs
            return await self._perform(
                route,
                params,
                record,
                Call(route.method, record.path, params, record.query, body, files),
            )

    def _caller(self, authorization: str | None, params: dict[str, str]) -> BotApp | None:
        """The application a request comes from: its ``Bot`` token's, else (the interaction
        and webhook routes, authenticated by the interaction token) the interaction's."""
        if authorization is not None and authorization.startswith("Bot "):
            found = self._app_by_token(authorization.removeprefix("Bot "))
            if found is not None:
                return found
        app_id = params.get("webhook_id")
        raw = params.get("interaction_id", "")
        interaction = self._interactions.get(int(raw)) if raw.isdigit() else None
        if interaction is not None:
            app_id = str(interaction.payload["application_id"])
        return self._apps.get(int(app_id)) if app_id and app_id.isdigit() else None

    async def _perform(
        self, route: Route, params: dict[str, str], record: RecordedRequest, call: Call
    ) -> web.StreamResponse:
        headers: dict[str, str] = {}
        name = f"{route.method} {route.template}"
        try:
            headers = self.buckets.take(name, route.major(params))
            injected = self.injections.take(route.method, record.path, name, route.name)
            if injected is not None:
                raise injected.error(headers)
            result = await route.handler(call)
        except DiscordError as exc:
            exc.headers = {**headers, **exc.headers}
            raise
        if isinstance(result, web.StreamResponse):
            return result
        return no_content(headers) if result is None else json_response(result, 200, headers)

    def _match(self, method: str, path: str) -> tuple[Route, dict[str, str]]:
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
        limit = {
            "total": 1000,
            "remaining": self.session_starts_remaining,
            "reset_after": 14_400_000,
            "max_concurrency": self.max_concurrency,
        }
        return {
            "url": self.gateway_url,
            "shards": self.recommended_shards,
            "session_start_limit": limit,
        }

    # -------------------------------------------------------------------- commands

    def _command_scope(self, call: Call) -> int | None:
        if call.id("application_id") != self.application_id:
            raise DiscordError(*MISSING_ACCESS)
        if "guild_id" not in call.params:
            return None
        guild_id = call.id("guild_id")
        if (
            guild_id not in self._guilds
            or self.application_id not in self._guilds[guild_id].members
        ):
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
