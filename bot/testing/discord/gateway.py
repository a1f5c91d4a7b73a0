"""The fake Discord gateway: an aiohttp websocket speaking Discord's gateway protocol (v10,
JSON encoding) to the real discord.py client.

discord.py 2.7 always connects with ``?v=10&encoding=json&compress=zlib-stream`` (or
``zstd-stream`` when the ``zstandard`` module is importable) and no Client option turns
transport compression off, so the fake implements zlib-stream: one zlib context per
connection, each payload flushed with Z_SYNC_FLUSH (the ``00 00 ff ff`` suffix the client
waits for). zstd-stream is served when ``zstandard`` is installed, else as plain text frames,
which discord.py also accepts.

Handled: HELLO, heartbeats (ACK), IDENTIFY (token, intents, privileged intents -> close 4014
"Disallowed intent(s)."), READY with ``resume_gateway_url``, GUILD_CREATE per
guild, RESUME (missed dispatches replayed, then RESUMED; unknown sessions get op 9),
REQUEST_GUILD_MEMBERS (one GUILD_MEMBERS_CHUNK), PRESENCE_UPDATE (recorded). Tests can ask
the client to reconnect (op 7), invalidate its session (op 9) or drop the socket.

Sharding as Discord does it: an IDENTIFY with ``shard: [id, count]`` opens the session of that
shard, which gets only its guilds (``(guild_id >> 22) % count``) in READY, GUILD_CREATE and
every later guild event; DMs and other guild-less events go to shard 0 only. A shard that is
not ``0 <= id < count`` closes 4010 "Invalid shard."; a session that would hold more than
``guilds_per_shard`` guilds (Discord: 2500) closes 4011 "Sharding required.". ``GET
/gateway/bot`` answers ``recommended_shards`` and ``max_concurrency``; each IDENTIFY uses one
of ``session_starts_remaining``. ``dispatched`` records which session got which event.
READY and GUILD_MEMBERS_CHUNK, the payloads it writes itself, are ``gateway_payloads.py``'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
from typing import Any

import aiohttp
from aiohttp import web

from bot.testing.discord.apps import BotApp, acting
from bot.testing.discord.gateway_payloads import application_flags, members_chunk, ready_payload
from bot.testing.discord.messages import DiscordMessages
from bot.testing.discord.sessions import Close, Connection, Dispatched, GatewaySession, scrubbed
from bot.testing.discord.state import PRIVILEGED, Intents
from bot.testing.discord.wire import JSONDict

__all__ = ["DiscordGateway", "Dispatched", "GatewaySession"]

log = logging.getLogger("bot.testing.fake_discord")

_ALL_INTENTS = (1 << 26) - 1
_LOG_LIMIT = 1000  # dispatches kept per session for RESUME
_RECORD_LIMIT = 10_000  # entries kept in ``dispatched``
_DISPATCH, _HEARTBEAT, _IDENTIFY, _PRESENCE, _VOICE, _RESUME = 0, 1, 2, 3, 4, 6
_RECONNECT, _REQUEST_MEMBERS, _INVALID_SESSION, _HELLO, _ACK = 7, 8, 9, 10, 11


class DiscordGateway(DiscordMessages):
    """Gateway sessions on top of the world; ``_dispatch`` reaches every session of the
    event's shard (all sessions of a client that did not shard)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sessions: dict[str, GatewaySession] = {}
        self._connections: set[Connection] = set()
        self._gateway_url: str | None = None
        self.recommended_shards = 1  # GET /gateway/bot "shards" (Discord: ~1 per 1000 guilds)
        self.max_concurrency = 1  # session_start_limit.max_concurrency (large bots: 16+)
        self.session_starts_remaining = 1000  # session_start_limit.remaining, one per IDENTIFY
        self.guilds_per_shard = 2500  # more guilds on one session: close 4011
        self.dispatched: list[Dispatched] = []

    @property
    def gateway_url(self) -> str:
        """``ws://127.0.0.1:<port>/gateway``: what ``use_endpoints`` points discord.py at."""
        if self._gateway_url is None:
            raise RuntimeError("FakeDiscord is not started; call start() or use 'async with'")
        return self._gateway_url

    # ---------------------------------------------------------------- test controls

    def dispatch(self, event: str, data: JSONDict, intent: int = 0) -> int:
        """Push a raw dispatch (``t=event``) to every session having ``intent`` whose shard owns
        ``data["guild_id"]`` (none: shard 0); returns how many sessions got it."""
        return self._dispatch(event, data, intent)

    def shard_sessions(self, shard: tuple[int, int] | None) -> list[GatewaySession]:
        """The sessions identified as ``shard`` (``(id, count)``; None: unsharded)."""
        return [s for s in self.sessions.values() if s.shard == shard]

    def events_for(self, event: str, object_id: int) -> list[Dispatched]:
        """Every session that got ``event`` about ``object_id`` (a message, a guild)."""
        return [d for d in self.dispatched if d.event == event and d.object_id == object_id]

    def request_reconnect(self) -> None:
        """Send op 7 RECONNECT: discord.py closes and RESUMEs on ``resume_gateway_url``."""
        for connection in list(self._connections):
            connection.send({"op": _RECONNECT, "d": None})

    def invalidate_session(self, resumable: bool = False) -> None:
        """Send op 9 INVALID_SESSION; not resumable makes the client identify again."""
        for connection in list(self._connections):
            if connection.session is not None and not resumable:
                self.sessions.pop(connection.session.id, None)
            connection.send({"op": _INVALID_SESSION, "d": resumable})

    def drop_connections(self, code: int = 4000, reason: str = "Unknown error.") -> None:
        """Close every gateway socket with ``code`` (4000: discord.py resumes; 4004 etc. are
        fatal for it)."""
        for connection in list(self._connections):
            connection.send(Close(code, reason))

    # ------------------------------------------------------------------- dispatching

    def _is_connected(self) -> bool:
        return bool(self.sessions)

    def _dispatch(
        self,
        event: str,
        data: JSONDict,
        intent: int = 0,
        *,
        scrub: bool = False,
        unscrubbed: frozenset[int] = frozenset(),
        to_app: int | None = None,
    ) -> int:
        """``scrub``: the content is hidden from sessions without MESSAGE_CONTENT, except those
        of the applications in ``unscrubbed`` (mentioned, or the author); ``to_app``: only
        that application's sessions."""
        guild_id = data.get("guild_id") or (data.get("id") if event == "GUILD_CREATE" else None)
        guild = None if guild_id is None else int(guild_id)
        if event == "INTERACTION_CREATE" and to_app is None:
            to_app = int(data["application_id"])
        reached = 0
        for session in list(self.sessions.values()):
            if intent and not session.intents & intent:
                continue
            if not session.owns(guild):
                continue
            if not self._sees(session.app, guild, data.get("channel_id"), to_app):
                continue
            payload = data
            if (
                scrub
                and session.app.application_id not in unscrubbed
                and not session.intents & Intents.MESSAGE_CONTENT
            ):
                payload = scrubbed(data)
            self._send_dispatch(session, event, payload)
            reached += 1
        self._bump()
        return reached

    def _sees(self, app: BotApp, guild_id: int | None, channel_id: Any, to_app: int | None) -> bool:
        """Whether ``app``'s sessions get an event: a guild's if it is a member there, a DM's
        if the DM is with it, anything else always (each only its own with ``to_app``)."""
        if to_app is not None and app.application_id != to_app:
            return False
        if guild_id is not None:
            state = self._guilds.get(guild_id)
            return state is None or app.application_id in state.members
        owner = self._dm_owner.get(int(channel_id)) if str(channel_id or "").isdigit() else None
        return owner is None or owner == app.application_id

    def _send_dispatch(self, session: GatewaySession, event: str, data: JSONDict) -> None:
        session.seq += 1
        payload = {"op": _DISPATCH, "t": event, "s": session.seq, "d": data}
        session.log.append(payload)
        del session.log[:-_LOG_LIMIT]
        guild_id = data.get("guild_id") or (data.get("id") if event == "GUILD_CREATE" else None)
        record = Dispatched(
            session.id,
            session.shard,
            session.seq,
            event,
            _snowflake(guild_id),
            _snowflake(data.get("id")),
        )
        self.dispatched.append(record)
        del self.dispatched[:-_RECORD_LIMIT]
        if session.connection is not None:
            session.connection.send(payload)

    # -------------------------------------------------------------------- websocket

    async def _handle_gateway(self, request: web.Request) -> web.StreamResponse:
        ws = web.WebSocketResponse(max_msg_size=0, autoping=True)
        await ws.prepare(request)
        version = request.query.get("v", "10")
        encoding = request.query.get("encoding", "json")
        connection = Connection(ws, request.query.get("compress"))
        self._connections.add(connection)
        writer = asyncio.create_task(connection.write_loop())
        try:
            if version not in ("9", "10"):
                connection.send(Close(4012, "Invalid API version."))
            elif encoding != "json":
                connection.send(Close(4002, "Error while decoding payload."))
            else:
                interval = int(self.heartbeat_interval * 1000)
                connection.send(
                    {
                        "op": _HELLO,
                        "d": {"heartbeat_interval": interval, "_trace": ["fake-discord"]},
                    }
                )
            async for message in ws:
                if message.type not in (aiohttp.WSMsgType.TEXT, aiohttp.WSMsgType.BINARY):
                    break
                self._receive(connection, message.data)
        finally:
            self._connections.discard(connection)
            if connection.server_closed and not writer.done():  # let the writer's close finish
                await asyncio.wait({writer}, timeout=0.5)
            writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await writer
            self._detach(connection)
        return ws

    def _detach(self, connection: Connection) -> None:
        session = connection.session
        if session is not None and session.connection is connection:
            session.connection = None
            # A client's clean close (1000/1001) ends its session; anything else may RESUME.
            if not connection.server_closed and connection.ws.close_code in (1000, 1001):
                self.sessions.pop(session.id, None)
        self._bump()

    def _receive(self, connection: Connection, raw: str | bytes) -> None:
        try:
            payload = json.loads(raw)
            op = payload["op"]
        except (ValueError, KeyError, TypeError):
            connection.send(Close(4002, "Error while decoding payload."))
            return
        data = payload.get("d")
        if op == _HEARTBEAT:
            connection.send({"op": _ACK})
        elif op == _IDENTIFY:
            self._identify(connection, data if isinstance(data, dict) else {})
        elif op == _RESUME:
            self._resume(connection, data if isinstance(data, dict) else {})
        elif connection.session is None:
            connection.send(Close(4003, "Not authenticated."))
        elif op == _PRESENCE:
            self.presence = data
            self._bump()
        elif op == _REQUEST_MEMBERS:
            self._members_chunk(connection.session, data if isinstance(data, dict) else {})
        elif op != _VOICE:
            connection.send(Close(4001, "Unknown opcode."))

    def _token_app(self, token: Any) -> BotApp | None:
        """The application a gateway token (``Bot `` prefix or not) belongs to."""
        return self._app_by_token(token.removeprefix("Bot ")) if isinstance(token, str) else None

    def _identify(self, connection: Connection, data: JSONDict) -> None:
        if connection.session is not None:
            connection.send(Close(4005, "Already authenticated."))
            return
        app = self._token_app(data.get("token"))
        if app is None:
            connection.send(Close(4004, "Authentication failed."))
            return
        with acting(app):
            self._identify_as(app, connection, data)

    def _identify_as(self, app: BotApp, connection: Connection, data: JSONDict) -> None:
        intents = data.get("intents")
        if (
            not isinstance(intents, int)
            or isinstance(intents, bool)
            or not 0 <= intents <= _ALL_INTENTS
        ):
            connection.send(Close(4013, "Invalid intent(s)."))
            return
        if intents & PRIVILEGED & ~self.allowed_intents:
            connection.send(Close(4014, "Disallowed intent(s)."))
            return
        shard = data.get("shard")
        parsed: tuple[int, int] | None = None
        if shard is not None:
            parsed = _valid_shard(shard)
            if parsed is None:
                connection.send(Close(4010, "Invalid shard."))
                return
        session = GatewaySession(secrets.token_hex(16), intents, parsed, app, connection=connection)
        guild_ids = [g for g in self._guilds if session.owns(g) and self._sees(app, g, None, None)]
        if len(guild_ids) > self.guilds_per_shard:
            connection.send(Close(4011, "Sharding required."))
            return
        self.identify = app.identify = data
        self.session_starts_remaining = max(0, self.session_starts_remaining - 1)
        connection.session = session
        self.sessions[session.id] = session
        ready = ready_payload(
            session,
            self.bot_user,
            guild_ids,
            resume_url=self.gateway_url,
            application_id=self.application_id,
            flags=self._application_flags(),
        )
        self._send_dispatch(session, "READY", ready)
        for guild_id in guild_ids:
            self._send_dispatch(session, "GUILD_CREATE", self.guild_create(guild_id))
        connection.send(lambda: self._mark_ready(session))
        self._bump()

    def _mark_ready(self, session: GatewaySession) -> None:
        session.ready = True
        self._bump()

    def _resume(self, connection: Connection, data: JSONDict) -> None:
        app = self._token_app(data.get("token"))
        if app is None:
            connection.send(Close(4004, "Authentication failed."))
            return
        session = self.sessions.get(str(data.get("session_id")))
        if session is not None and session.app is not app:
            session = None  # another application's session: unknown to this token
        if session is None or (session.connection is not None and not session.connection.ws.closed):
            connection.send({"op": _INVALID_SESSION, "d": False})
            return
        seq = data.get("seq") or 0
        if session.log and int(session.log[0]["s"]) > int(seq) + 1:
            connection.send({"op": _INVALID_SESSION, "d": False})  # the gap is gone for good
            return
        session.connection = connection
        connection.session = session
        for payload in session.log:
            if int(payload["s"]) > int(seq):
                connection.send(payload)
        self._send_dispatch(session, "RESUMED", {"_trace": ["fake-discord"]})
        connection.send(lambda: self._mark_ready(session))
        self._bump()

    def _members_chunk(self, session: GatewaySession, data: JSONDict) -> None:
        try:
            state = self._guilds[int(data["guild_id"])]
        except (KeyError, TypeError, ValueError):
            return
        self._send_dispatch(session, "GUILD_MEMBERS_CHUNK", members_chunk(state, data))

    def _application_flags(self) -> int:
        return application_flags(self.allowed_intents)

    async def _close_gateway(self) -> None:
        """Close every socket (1001 going away) when the server stops."""
        for connection in list(self._connections):
            connection.send(Close(1001, "Fake Discord is stopping."))
        for _ in range(50):
            if not self._connections:
                return
            await asyncio.sleep(0.01)


def _valid_shard(shard: Any) -> tuple[int, int] | None:
    """``[shard_id, shard_count]`` with ``0 <= shard_id < shard_count``, else None (4010)."""
    if not (isinstance(shard, list) and len(shard) == 2):
        return None
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in shard):
        return None
    shard_id, count = shard
    return (shard_id, count) if 0 <= shard_id < count else None


def _snowflake(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, str)) and str(value).isdigit() else None
