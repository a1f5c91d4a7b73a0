"""``FakeDiscord``: the fake Discord's HTTP server, its test controls and control API.

The guide (what it speaks, how discord.py is pointed at it, the rules enforced, tips) is
:mod:`bot.testing.fake_discord`, the public path; the layers live beside this module, each
building on the one before: ``state`` (the world), ``messages``, ``gateway``,
``interactions``, ``rest``; with ``records``, ``sessions``, ``routes``, ``message_checks``,
``commands``, ``limits``, ``permissions``, ``payloads`` and ``wire``.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import binascii
import signal
import sys
from collections.abc import Callable, Collection, Sequence
from typing import Any

from aiohttp import web

from bot.testing.discord.apps import BotApp, acting
from bot.testing.discord.cdn import Upload
from bot.testing.discord.limits import RATE_LIMITED, Injection
from bot.testing.discord.rest import ROUTES, DiscordRest
from bot.testing.discord.state import GuildState
from bot.testing.discord.wire import DiscordError, JSONDict, RecordedRequest, json_response
from bot.testing.service import WatchedFake, run_cli, serve

__all__ = ["ROUTES", "FakeDiscord", "RecordedRequest", "main"]


class FakeDiscord(DiscordRest, WatchedFake):
    """The fake Discord (see the module docstring). Start with ``async with`` or ``start()``.

    ``app_id`` is both the application id and the bot user's id (as for modern bots).
    ``privileged_intents``: True allows all privileged intents, False none, an int only those
    bits (e.g. ``1 << 15`` for MESSAGE_CONTENT). ``heartbeat_interval`` is in seconds.
    ``bucket_limit`` requests per ``bucket_window`` seconds per route and channel/guild are
    allowed before a real 429. Waits raise ``AssertionError`` with a summary on timeout.
    """

    def __init__(
        self,
        token: str = "fake-discord-token.abc.def",
        app_id: int = 1_200_000_000_000_000_001,
        bot_name: str = "Parlour",
        privileged_intents: bool | int = True,
        heartbeat_interval: float = 41.25,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        bucket_limit: int = 50,
        bucket_window: float = 1.0,
    ) -> None:
        super().__init__(token, app_id, bot_name, privileged_intents, heartbeat_interval)
        self.host = host
        self.port = port
        self.buckets.limit = bucket_limit
        self.buckets.window = bucket_window
        self._runner: web.AppRunner | None = None
        self._base: str | None = None

    # ----------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        """Listen on ``host:port`` (0: a free port); ``api_base``/``gateway_url`` valid after."""
        if self._runner is not None:
            raise RuntimeError("FakeDiscord is already running")
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_get("/gateway", self._handle_gateway)
        app.router.add_post("/_fake/message", self._control_message)
        app.router.add_post("/_fake/slash", self._control_slash)
        app.router.add_get("/_fake/sent", self._control_list("sent"))
        app.router.add_get("/_fake/requests", self._control_list("requests"))
        app.router.add_get("/_fake/callbacks", self._control_list("callbacks"))
        app.router.add_route("*", r"/api/v{version:\d+}/{tail:.*}", self._handle_rest)
        app.router.add_get("/attachments/{tail:.*}", self.cdn.handle)
        app.router.add_get("/media/attachments/{tail:.*}", self.cdn.handle)
        app.router.add_route("*", "/{tail:.*}", self._not_found)
        self._runner, self.port, shown = await serve(
            app, self.host, self.port, shutdown_timeout=1.0
        )
        self._base = f"{shown}:{self.port}"
        self.cdn.base = f"http://{self._base}"
        self._gateway_url = f"ws://{self._base}/gateway"

    async def stop(self) -> None:
        """Close the gateway sockets (1001) and stop serving."""
        runner, self._runner = self._runner, None
        if runner is None:
            return
        await self._close_gateway()
        await runner.cleanup()

    @property
    def api_base(self) -> str:
        """``http://127.0.0.1:<port>/api/v10``: give it to ``use_endpoints``."""
        if self._base is None:
            raise RuntimeError("FakeDiscord is not started; call start() or use 'async with'")
        return f"http://{self._base}/api/v10"

    # -------------------------------------------------------------------- failures

    def rate_limit(
        self, route: str, retry_after: float = 0.3, times: int = 1, global_: bool = False
    ) -> None:
        """The next ``times`` requests matching ``route`` get a 429 as Discord sends it
        (``retry_after`` in the body and headers, ``Via``, scope ``user`` or ``global``).

        ``route``: a route name (``send_message``, see ``ROUTES``), ``"POST
        /channels/{channel_id}/messages"`` (template), ``"POST /channels/10/messages"`` or a
        glob like ``"/webhooks/*"`` (any method).
        """
        self.injections.add(
            Injection(route, "rate_limit", 429, RATE_LIMITED, 0, retry_after, global_, times)
        )

    def fail(self, route: str, status: int, code: int, message: str, times: int = 1) -> None:
        """The next ``times`` requests matching ``route`` (as in ``rate_limit``) get
        ``status`` with ``{"message": message, "code": code}`` instead of being performed."""
        self.injections.add(Injection(route, "fail", status, message, code, times=times))

    def close_dms(self, user: JSONDict) -> None:
        """The user stops accepting DMs from the bot: sends to their DM get 403 50007."""
        self.closed_dms.add(int(user["id"]))

    # --------------------------------------------------------------------- waiting

    async def wait_ready(
        self,
        timeout: float = 5.0,  # noqa: ASYNC109
        *,
        shards: Collection[tuple[int, int]] = (),
    ) -> None:
        """Wait until a client identified and READY plus every GUILD_CREATE were sent; with
        ``shards`` (``(id, count)`` pairs), until each of those shards has such a session."""

        def ready(shard: tuple[int, int] | None) -> bool:
            return any(
                s.ready and s.connection and (shard is None or s.shard == shard)
                for s in self.sessions.values()
            )

        await self.wait_until(
            lambda: all(ready(shard) for shard in shards) if shards else ready(None),
            timeout,
            what=f"the bot to connect (IDENTIFY, READY, GUILD_CREATE) shards={list(shards)}",
        )

    async def wait_for_message(
        self,
        channel_id: int,
        count: int = 1,
        timeout: float = 5.0,  # noqa: ASYNC109
    ) -> list[JSONDict]:
        """Wait until the bot has ``count`` messages in the channel; returns them all."""
        await self.wait_until(
            lambda: len(self.messages(channel_id)) >= count,
            timeout,
            what=f"{count} bot message(s) in channel {channel_id}",
        )
        return self.messages(channel_id)

    def _last_request_at(self) -> float:
        return max((r.at for r in self.requests), default=0.0)

    def summary(self, last: int = 10) -> str:
        """A readable digest of what the bot did, for assertion messages."""
        live = [s for s in self.sessions.values() if s.connection is not None]
        lines = [
            f"gateway: {len(live)} connected session(s) shards={[s.shard for s in live]},"
            f" identify={self.identify is not None}"
        ]
        lines.append(f"bot messages ({len(self.sent)}):")
        for m in self.sent[-last:]:
            lines.append(f"  channel {m['channel_id']} #{m['id']}: {m['content'][:80]!r}")
        lines.append(f"interaction callbacks: {[c['type'] for c in self.callbacks[-last:]]}")
        lines.append(f"last requests ({len(self.requests)} total):")
        for r in self.requests[-last:]:
            failed = f" code {r.error}" if r.error is not None else ""
            lines.append(f"  {r.method} {r.path} -> {r.status}{failed}")
        return "\n".join(lines)

    # ------------------------------------------------------------------ HTTP control

    async def _not_found(self, request: web.Request) -> web.Response:
        return json_response({"message": "404: Not Found", "code": 0}, 404)

    def _control_list(self, name: str) -> Callable[[web.Request], Any]:
        async def handler(request: web.Request) -> web.Response:
            bot = self._control_bot(request.query.get("bot"))
            if isinstance(bot, web.Response):
                return bot
            with acting(bot):
                items = getattr(self, name)
                return json_response(
                    [i.as_json() if isinstance(i, RecordedRequest) else i for i in items]
                )

        return handler

    def _control_bot(self, named: object) -> BotApp | web.Response | None:
        """The bot application a control request names (``bot``: its name or id; None: the
        first), or the 400 that says no such bot runs here."""
        if named is None or named == "":
            return None
        for app in self._apps.values():
            if str(named) in (app.name, str(app.application_id)):
                return app
        known = ", ".join(app.name for app in self._apps.values())
        return _bad_request(f"no bot named {named!r} here (bots: {known})")

    def _new_guild(self, guild_id: int) -> JSONDict:
        """A guild a control request names first: every bot application is a member (the
        first is a member of every guild; the others are invited)."""
        guild = self.guild(guild_id, f"Guild {guild_id}")
        for bot in self.bots[1:]:
            bot.join(guild)
        return guild

    async def _control_message(self, request: web.Request) -> web.Response:
        try:
            body = await request.json()
            channel_id, user_id = int(body["channel_id"]), int(body["user_id"])
            content = str(body.get("content", "") if "voice_message" in body else body["content"])
            guild_id = int(body["guild_id"]) if body.get("guild_id") is not None else None
            user = self._control_user(user_id, body.get("username"))
            channel = self._channels.get(channel_id)
            if channel is None and guild_id is not None:
                state = self._guilds.get(guild_id)
                guild = state.guild if state else self._new_guild(guild_id)
                channel = self.channel(guild, channel_id, f"channel-{channel_id}")
            elif channel is None:
                channel = self.dm(user, channel_id)
                if int(channel["id"]) != channel_id:  # one DM channel per user and bot
                    raise ValueError(
                        f"user {user_id}'s DM channel is {channel['id']}, not {channel_id}"
                        " (give guild_id for a server channel)"
                    )
            uploads = [_upload(item) for item in body.get("attachments") or []]
            voice = body.get("voice_message")
            if voice is not None:
                audio = base64.b64decode(voice["data"], validate=True)
                duration = float(voice.get("duration_secs", 3.0))
                message = self.voice_message(channel, user, audio, duration_secs=duration)
            else:
                message = self.message(channel, user, content, attachments=uploads)
            return json_response(self._wire(message))
        except (ValueError, KeyError, TypeError, binascii.Error) as exc:
            return _bad_request(f"expected JSON with channel_id, user_id, content: {exc}")

    async def _control_slash(self, request: web.Request) -> web.Response:
        try:
            body = await request.json()
            bot = self._control_bot(body.get("bot"))
            if isinstance(bot, web.Response):
                return bot
            channel = self._known_channel(int(body["channel_id"]))
            user = self._control_user(int(body["user_id"]), body.get("username"))
            with acting(bot):  # the application whose command it is
                interaction = self.slash(channel, user, str(body["name"]), body.get("options"))
            return json_response(interaction)
        except KeyError as exc:
            return _bad_request(f"expected JSON with channel_id, user_id, name: no {exc}")
        except (ValueError, TypeError) as exc:
            return _bad_request(str(exc))

    def _control_user(self, user_id: int, username: Any) -> JSONDict:
        user = self.users.get(user_id)
        if user is None or username:
            user = self.user(user_id, str(username or f"user{user_id}"))
        return user

    def guild_state(self, guild_id: int) -> GuildState:
        """The fake's record of a guild (roles, members, channel ids, overrides)."""
        return self._guild_state_by_id(guild_id)


def _upload(item: Any) -> Upload:
    """An ``attachments`` entry of ``POST /_fake/message``: ``{filename, data (base64),
    content_type?, width?, height?}``."""
    return Upload(
        str(item["filename"]),
        base64.b64decode(item["data"], validate=True),
        item.get("content_type"),
        width=None if item.get("width") is None else int(item["width"]),
        height=None if item.get("height") is None else int(item["height"]),
    )


def _bad_request(message: str) -> web.Response:
    return DiscordError(400, message, 0).response()


# ------------------------------------------------------------------------- CLI


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bot.testing.fake_discord``: serve until Ctrl-C or SIGTERM."""
    parser = argparse.ArgumentParser(
        prog="python -m bot.testing.fake_discord",
        description="Fake Discord REST API + gateway (see the module docstring for /_fake/*).",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8090)
    parser.add_argument("--token", default="fake-discord-token.abc.def")
    parser.add_argument("--app-id", type=int, default=1_200_000_000_000_000_001)
    parser.add_argument("--bot-name", default="Parlour")
    parser.add_argument(
        "--no-privileged-intents", action="store_true", help="refuse privileged intents (4014)"
    )
    parser.add_argument(
        "--bot",
        action="append",
        default=[],
        metavar="NAME=TOKEN",
        help="one more bot application (repeatable; ids follow --app-id): discord.bots",
    )
    args = parser.parse_args(argv)
    fake = FakeDiscord(
        args.token,
        args.app_id,
        args.bot_name,
        privileged_intents=not args.no_privileged_intents,
        host=args.host,
        port=args.port,
    )
    names = {args.bot_name}
    for number, spec in enumerate(args.bot, start=1):
        name, _, token = spec.partition("=")
        if not name or not token:
            parser.error(f"--bot {spec!r}: expected NAME=TOKEN")
        if name in names:
            parser.error(f"--bot {name}: that name is taken (control requests name the bot)")
        names.add(name)
        try:
            fake.add_bot(token, args.app_id + number, name)
        except ValueError as exc:
            parser.error(f"--bot {name}: {exc}")
    return run_cli(_serve(fake), "fake_discord", args.host, args.port)


async def _serve(fake: FakeDiscord) -> None:
    done = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, done.set)
    await fake.start()
    try:
        sys.stdout.write(
            f"DISCORD_API_BASE={fake.api_base}\nDISCORD_GATEWAY_URL={fake.gateway_url}\n"
        )
        sys.stdout.flush()
        await done.wait()
    finally:
        await fake.stop()


if __name__ == "__main__":
    raise SystemExit(main())
