"""The fakes of section 13 (:mod:`bench.burst`), each in its own process, driven over stdin.

``python -m bench.burst_child llm --latency 1`` serves the kit's ``FakeLLM``; ``python -m
bench.burst_child telegram`` serves the kit's ``FakeTelegram``, with a round-robin balancer for
webhook replicas. Each prints one JSON line (its address), then answers one JSON command per
line (``{"op": ...}``) with one JSON line. Their CPU time is then neither side's: the bot and the
bare loop are measured against the same two processes, as against a real model and a real Bot API.

Times are ``time.monotonic()``, one clock for every process on the machine (``CLOCK_MONOTONIC``),
so the parent compares a model request's arrival with the moment the burst was pushed.

Webhooks: the kit's fake posts one update at a time, in order (what its tests need). Telegram
posts up to ``max_connections`` (40 unless ``setWebhook`` says otherwise) at once, one update of
a chat at a time; :class:`BurstTelegram` does that, so replicas get a burst as fast as they would
from Telegram.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
from aiohttp import web

from bot.testing.fake_llm import FakeLLM
from bot.testing.fake_telegram import FakeTelegram
from bot.testing.service import serve
from bot.testing.telegram.wire import ApiError, JSONDict

Command = dict[str, Any]
Handler = Callable[[Command], Awaitable[JSONDict]]

FIRST_USER = 700_000  # chat n of a burst is the private chat of user FIRST_USER + first + n
HOOK_PATH = "/hook"
ANSWERED = ("sendMessage", "editMessageText")
_ANSWERED = {method.lower() for method in ANSWERED}


def text_of(n: int) -> str:
    """What chat ``n`` writes; the fake model answers ``echo: `` and the same text."""
    return f"burst message {n}"


class BurstTelegram(FakeTelegram):
    """The kit's fake Bot API, delivering webhooks as Telegram does (see the module docstring),
    and noting the chats each answer touched (so a burst's end is found without rescanning
    every chat: that would cost this process more the longer a side takes)."""

    def __init__(self) -> None:
        super().__init__()
        self.touched: set[int] = set()

    async def _invoke(
        self, name: str, params: JSONDict, failure: ApiError | None = None
    ) -> web.Response:
        response = await super()._invoke(name, params, failure)
        chat = params.get("chat_id")
        if name.lower() in _ANSWERED and chat is not None:
            self.touched.add(int(chat))
        return response

    async def _webhook_worker(self) -> None:
        flying: dict[int, asyncio.Task[None]] = {}
        lanes: dict[int, object] = {}  # update id -> its chat, while it is being posted

        async def post(hook: Any, update: JSONDict) -> None:
            update_id = int(update["update_id"])
            try:
                if await self._deliver(hook, update) and update in self._updates:
                    self._updates.remove(update)
            finally:
                flying.pop(update_id, None)
                lanes.pop(update_id, None)
                self._bump()

        try:
            while not self._stopping.is_set() and self._webhook is not None:
                hook = self._webhook
                busy = set(lanes.values())
                for update in self._deliverable():
                    update_id = int(update["update_id"])
                    lane = _lane(update)
                    if update_id in flying or lane in busy:
                        busy.add(lane)  # a chat's later updates wait for its earlier one
                        continue
                    if len(flying) >= hook.max_connections:
                        break
                    busy.add(lane)
                    lanes[update_id] = lane
                    flying[update_id] = asyncio.create_task(post(hook, update))
                await self._wait_change(None)
        finally:
            for task in list(flying.values()):
                task.cancel()


def _lane(update: JSONDict) -> object:
    body = update.get("message") or update.get("edited_message") or {}
    return body.get("chat", {}).get("id")


class Burst:
    """The chats of the last push, and what the bot did to them since."""

    def __init__(self, tg: BurstTelegram, chats: int, first: int = 0) -> None:
        self.tg = tg
        self.chats = chats
        self.first_call = len(tg.calls)
        self.first_delivery = len(tg.webhook_deliveries)
        tg.touched.clear()
        users = [tg.user(FIRST_USER + first + n, f"User {n}") for n in range(chats)]
        rooms = [tg.private_chat(user) for user in users]
        self.pending = {int(room["id"]): n for n, room in enumerate(rooms)}
        self.expected = {int(room["id"]): f"echo: {text_of(n)}" for n, room in enumerate(rooms)}
        for n, (user, room) in enumerate(zip(users, rooms, strict=True)):
            tg.send(room, user, text_of(n))
        self.pushed_at = time.monotonic()  # all updates visible at once: nothing ran meanwhile
        self.cpu = time.process_time()

    def _answered(self, chat_id: int) -> bool:
        shown = self.tg.messages(chat_id)
        return bool(shown) and shown[-1].get("text") == self.expected[chat_id]

    async def settle(self, timeout: float) -> JSONDict:  # noqa: ASYNC109
        """Wait until every chat shows its answer (or ``timeout``); what happened."""
        deadline = time.monotonic() + timeout
        while self.pending and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
            touched, self.tg.touched = self.tg.touched, set()
            for chat_id in touched:
                if chat_id in self.pending and self._answered(chat_id):
                    del self.pending[chat_id]
        cpu = time.process_time() - self.cpu
        calls = self.tg.calls[self.first_call :]
        finals: dict[int, float] = {}
        typing: list[float] = []
        for call in calls:
            chat = call.params.get("chat_id")
            if call.ok and call.method in ANSWERED and chat is not None:
                finals[int(chat)] = call.at
            elif call.method == "sendChatAction":
                typing.append(call.at - self.pushed_at)
        acked = [d.at for d in self.tg.webhook_deliveries[self.first_delivery :] if d.status == 200]
        right = wrong = 0
        for chat_id, expected in self.expected.items():
            shown = [m.get("text") for m in self.tg.messages(chat_id)]
            right += shown == [expected]
            wrong += bool(shown) and shown != [expected]
        done = [finals[c] for c in self.expected if c in finals]
        return {
            "wall": (max(done) if done else time.monotonic()) - self.pushed_at,
            "pushed_at": self.pushed_at,
            "right": right,
            "wrong": wrong,
            "missing": self.chats - right - wrong,
            "typing": typing,
            "calls": dict(Counter(c.method for c in calls if c.method != "getUpdates")),
            "failed": dict(Counter(f"{c.method}: {c.error}" for c in calls if not c.ok)),
            "cpu": cpu,  # this process's CPU seconds from the push to the end
            "acked": max(acked) - self.pushed_at if acked else None,  # webhooks: the last 200
        }


class Balancer:
    """Round robin over the replicas' webhook ports, as a load balancer in front of them."""

    def __init__(self, ports: Sequence[int]) -> None:
        self.ports = list(ports)
        self.turn = itertools.count()
        self.client: aiohttp.ClientSession | None = None
        self.runner: web.AppRunner | None = None
        self.url = ""

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post(HOOK_PATH, self._forward)
        self.runner, port, host = await serve(app, "127.0.0.1", 0, shutdown_timeout=1.0)
        self.url = f"http://{host}:{port}{HOOK_PATH}"
        self.client = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
        if self.client is not None:
            await self.client.close()

    async def _forward(self, request: web.Request) -> web.Response:
        assert self.client is not None
        port = self.ports[next(self.turn) % len(self.ports)]
        headers = {k: v for k, v in request.headers.items() if k.lower().startswith("x-telegram")}
        headers["Content-Type"] = "application/json"
        url = f"http://127.0.0.1:{port}{HOOK_PATH}"
        async with self.client.post(url, data=await request.read(), headers=headers) as answer:
            body = await answer.read()
            return web.Response(status=answer.status, body=body, content_type="application/json")


async def _telegram(stack: contextlib.AsyncExitStack) -> tuple[JSONDict, dict[str, Handler]]:
    tg = await stack.enter_async_context(BurstTelegram())
    tg.webhook_timeout = 60.0  # a loaded replica stores slowly; never a retry for that here
    state: dict[str, Burst] = {}

    async def balance(command: Command) -> JSONDict:
        lb = Balancer(command["ports"])
        await lb.start()
        stack.push_async_callback(lb.stop)
        return {"url": lb.url}

    async def ready(command: Command) -> JSONDict:
        """Polling: a ``getUpdates`` is waiting; webhook: ``setWebhook`` was called."""
        method = "setWebhook" if command.get("webhook") else "getUpdates"
        await tg.wait_until(lambda: any(c.method == method for c in tg.calls), 120)
        return {}

    async def push(command: Command) -> JSONDict:
        state["burst"] = Burst(tg, int(command["chats"]), int(command.get("first", 0)))
        return {"pushed_at": state["burst"].pushed_at}

    async def settle(command: Command) -> JSONDict:
        return await state["burst"].settle(float(command["timeout"]))

    handlers: dict[str, Handler] = {
        "balance": balance,
        "ready": ready,
        "push": push,
        "settle": settle,
    }
    return {"api_server": tg.api_server, "token": tg.token}, handlers


async def _llm(
    stack: contextlib.AsyncExitStack, latency: float
) -> tuple[JSONDict, dict[str, Handler]]:
    llm = await stack.enter_async_context(FakeLLM(latency=latency))

    cpu = [time.process_time()]

    async def starts(command: Command) -> JSONDict:
        """Arrival times of the chat requests since the last call, forgotten after, and the CPU
        seconds this process spent meanwhile."""
        chat = [r.received_at for r in llm.chat_requests]
        llm.requests.clear()
        now = time.process_time()
        spent, cpu[0] = now - cpu[0], now
        return {"starts": chat, "cpu": spent}

    return {"base_url": llm.base_url}, {"starts": starts}


def _exit_if_orphaned(loop: asyncio.AbstractEventLoop, parent: int) -> None:
    """A bench killed outright leaves no fake behind: exit once the parent is gone."""
    if os.getppid() != parent:
        os._exit(1)
    loop.call_later(1.0, _exit_if_orphaned, loop, parent)


async def _serve(kind: str, latency: float) -> None:
    loop = asyncio.get_running_loop()
    _exit_if_orphaned(loop, os.getppid())
    reader = asyncio.StreamReader(limit=2**20)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    async with contextlib.AsyncExitStack() as stack:
        hello, handlers = await (_telegram(stack) if kind == "telegram" else _llm(stack, latency))
        _say(hello)
        while line := await reader.readline():
            command = json.loads(line)
            _say(await handlers[command["op"]](command))


def _say(answer: JSONDict) -> None:
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()


class Child:
    """The parent's end: one fake in its own process, asked one command at a time."""

    def __init__(self, proc: asyncio.subprocess.Process, hello: JSONDict) -> None:
        self.proc = proc
        self.hello = hello

    async def ask(self, op: str, **params: Any) -> JSONDict:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"op": op, **params}).encode() + b"\n")
        await self.proc.stdin.drain()
        line = await self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the {op!r} of a bench.burst_child went unanswered (it exited)")
        answer: JSONDict = json.loads(line)
        return answer


@asynccontextmanager
async def child(kind: str, latency: float = 0.0) -> AsyncIterator[Child]:
    """``python -m bench.burst_child <kind>``, stopped on exit."""
    from bench.common import PROJECT

    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.burst_child",
        kind,
        "--latency",
        str(latency),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        cwd=PROJECT,
        limit=2**24,
    )
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), timeout=120)
        if not line:
            raise RuntimeError(f"bench.burst_child {kind} did not start")
        yield Child(proc, json.loads(line))
    finally:
        if proc.stdin is not None:
            proc.stdin.close()  # end of commands: the child stops its fake and exits
        try:
            await asyncio.wait_for(proc.wait(), timeout=10)
        except TimeoutError:
            proc.kill()
            await proc.wait()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.burst_child", description=__doc__)
    parser.add_argument("kind", choices=("llm", "telegram"))
    parser.add_argument("--latency", type=float, default=0.0, help="the model's seconds (llm)")
    args = parser.parse_args(argv)
    asyncio.run(_serve(args.kind, args.latency))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
