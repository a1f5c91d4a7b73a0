"""``FakeTelegram``: the fake Bot API's HTTP server, long polling and its control API.

The guide (what it speaks, acting as users, reading back, failures) is
:mod:`bot.testing.fake_telegram`, the public path; the pieces live beside this module:
``state`` (the world and test controls), ``chats`` (one chat, how a message is born),
``methods`` (Bot API methods), ``delivery`` (polling and webhooks), ``parse_html`` (Telegram's
HTML parse mode), ``payloads`` (Bot API JSON builders) and ``wire``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import Sequence

import aiohttp
from aiohttp import web

from bot.testing.service import WatchedFake, run_cli, serve
from bot.testing.telegram.delivery import UpdateDelivery, WebhookDelivery
from bot.testing.telegram.state import ChatAction
from bot.testing.telegram.wire import (
    ApiCall,
    ApiError,
    JSONDict,
    bad_request,
    error_response,
    ok_response,
    read_params,
)

__all__ = ["ApiCall", "ChatAction", "FakeTelegram", "WebhookDelivery", "main"]


class FakeTelegram(UpdateDelivery, WatchedFake):
    """The fake server (see the module docstring). Start with ``async with`` or ``start()``.

    Every constructor argument is also an attribute; ``bot_id`` is the token's numeric prefix
    and ``bot_user`` the bot's User object. Waits raise ``AssertionError`` on timeout with a
    summary of what the bot did.
    """

    def __init__(
        self,
        token: str = "123456:TEST-fake-token",
        bot_username: str = "parlour_bot",
        bot_name: str = "Parlour",
        privacy_mode: bool = True,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        super().__init__(token, bot_username, bot_name, privacy_mode)
        self.host = host
        self.port = port
        self._runner: web.AppRunner | None = None
        self._api_server: str | None = None

    # ----------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        """Listen on ``host:port`` (port 0 picks a free one); ``api_server`` is valid after."""
        if self._runner is not None:
            raise RuntimeError("FakeTelegram is already running")
        self._stopping = asyncio.Event()
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/bot{token}/{method}", self._handle_api)
        app.router.add_get("/file/bot{token}/{path:.+}", self._serve_file)
        app.router.add_post("/_fake/send", self._control_send)
        app.router.add_get("/_fake/sent", self._control_sent)
        app.router.add_get("/_fake/calls", self._control_calls)
        app.router.add_route("*", "/{tail:.*}", self._not_found)
        self._runner, self.port, shown = await serve(
            app, self.host, self.port, shutdown_timeout=2.0
        )
        self._api_server = f"http://{shown}:{self.port}"
        self._client = aiohttp.ClientSession()

    async def stop(self) -> None:
        """Stop serving: long polls return empty, the webhook worker ends, sockets close."""
        runner, self._runner = self._runner, None
        if runner is None:
            return
        self._stopping.set()
        self._bump()
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await worker
        await runner.cleanup()
        if self._client is not None:
            await self._client.close()
            self._client = None

    @property
    def api_server(self) -> str:
        """``http://127.0.0.1:<port>``: give it to ``TelegramAPIServer.from_base``."""
        if self._api_server is None:
            raise RuntimeError("FakeTelegram is not started; call start() or use 'async with'")
        return self._api_server

    # ------------------------------------------------------------------- waiting

    async def wait_for_message(
        self,
        chat_id: int,
        *,
        count: int = 1,
        timeout: float = 5.0,  # noqa: ASYNC109
        thread_id: int | None = None,
    ) -> list[JSONDict]:
        """Wait until the bot has at least ``count`` messages in the chat; returns them all."""
        await self.wait_until(
            lambda: len(self.messages(chat_id, thread_id)) >= count,
            timeout,
            what=f"{count} bot message(s) in chat {chat_id}",
        )
        return self.messages(chat_id, thread_id)

    def _last_request_at(self) -> float:
        """``getUpdates`` is the bot waiting, not working."""
        return max((c.at for c in self.calls if c.method != "getUpdates"), default=0.0)

    def summary(self, last: int = 10) -> str:
        """A readable digest of what the bot did, for assertion messages."""
        lines = [f"bot messages ({len(self.sent)}):"]
        for m in self.sent[-last:]:
            lines.append(f"  chat {m['chat']['id']} #{m['message_id']}: {m.get('text', '')[:80]!r}")
        lines.append(f"last calls ({len(self.calls)} total):")
        for c in [c for c in self.calls if c.method != "getUpdates"][-last:]:
            lines.append(f"  {c.method} {'ok' if c.ok else 'FAILED: ' + str(c.error)}")
        return "\n".join(lines)

    # ------------------------------------------------------------------- routing

    async def _handle_api(self, request: web.Request) -> web.Response:
        failure: ApiError | None = None
        try:
            params = await read_params(request)
        except ApiError as exc:
            params, failure = {}, exc
        if request.match_info["token"] != self.token:
            failure = ApiError(401, "Unauthorized")
        return await self._invoke(request.match_info["method"], params, failure)

    async def _not_found(self, request: web.Request) -> web.Response:
        return error_response(ApiError(404, "Not Found"))

    # -------------------------------------------------------------- HTTP control

    async def _control_send(self, request: web.Request) -> web.Response:
        try:
            body = await request.json()
            user_id, chat_id, text = int(body["user_id"]), int(body["chat_id"]), str(body["text"])
        except (ValueError, KeyError, TypeError) as exc:
            return error_response(bad_request(f"expected JSON with chat_id, user_id, text: {exc}"))
        user = self.users.get(user_id)
        if user is None or body.get("first_name") or body.get("username"):
            first = body.get("first_name") or (user or {}).get("first_name") or f"User {user_id}"
            user = self.user(user_id, first, body.get("username") or (user or {}).get("username"))
        if chat_id in self._chats:
            chat = self._chats[chat_id].chat
        elif body.get("chat_type", "private" if chat_id == user_id else "group") == "private":
            chat = self.private_chat(user)
        else:
            kind = body.get("chat_type", "group")
            chat = self.group(chat_id, body.get("title") or f"Group {chat_id}", kind != "group")
        reply_id = body.get("reply_to_message_id")
        reply = self._chats[chat_id].messages.get(int(reply_id)) if reply_id else None
        if reply_id and reply is None:
            return error_response(bad_request("message to be replied not found"))
        try:
            thread = body.get("thread_id")
            thread_id = int(thread) if thread is not None else None
            message = self.send(chat, user, text, reply_to=reply, thread_id=thread_id)
        except ValueError as exc:
            return error_response(bad_request(str(exc)))
        return ok_response(message)

    async def _control_sent(self, request: web.Request) -> web.Response:
        return web.json_response(self.sent)

    async def _control_calls(self, request: web.Request) -> web.Response:
        return web.json_response([c.as_json() for c in self.calls])


# ------------------------------------------------------------------------- CLI


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bot.testing.fake_telegram``: serve until Ctrl-C or SIGTERM."""
    parser = argparse.ArgumentParser(
        prog="python -m bot.testing.fake_telegram",
        description="Fake Telegram Bot API server (see the module docstring for /_fake/*).",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8081)
    parser.add_argument("--token", default="123456:TEST-fake-token")
    parser.add_argument("--username", default="parlour_bot", help="the bot's username")
    args = parser.parse_args(argv)
    fake = FakeTelegram(args.token, args.username, host=args.host, port=args.port)
    return run_cli(_serve(fake), "fake_telegram", args.host, args.port)


async def _serve(fake: FakeTelegram) -> None:
    done = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, done.set)
    await fake.start()
    try:
        sys.stdout.write(f"TELEGRAM_API_SERVER={fake.api_server}\n")
        sys.stdout.flush()
        await done.wait()
    finally:
        await fake.stop()


if __name__ == "__main__":
    raise SystemExit(main())
