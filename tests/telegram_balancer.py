"""A round-robin load balancer in front of Telegram webhook replicas, for tests and drills."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import aiohttp
from aiohttp import web

PATH = "/hook"


@dataclass
class Forwarded:
    """One POST the balancer passed on: to which replica, and what it answered."""

    update_id: int
    replica: int
    status: int | None  # None: the replica refused the connection
    lost: bool = False  # the answer was dropped on its way back to Telegram


@dataclass
class RoundRobin:
    """A load balancer in front of the replicas' webhook ports.

    Each POST goes to the next replica in turn; one that refuses the connection is skipped
    (nginx's ``proxy_next_upstream``). For an update id in ``lose`` the replica's 200 is dropped
    on the way back (502 to Telegram, as when a connection breaks after the replica answered),
    so Telegram delivers that update again, and the retry reaches the other replica.
    """

    ports: Sequence[int]
    lose: set[int] = field(default_factory=set)
    forwarded: list[Forwarded] = field(default_factory=list)
    port: int = 0
    _turn: itertools.count[int] = field(default_factory=itertools.count)
    _runner: web.AppRunner | None = None
    _client: aiohttp.ClientSession | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{PATH}"

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post(PATH, self._forward)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()
        self.port = int(self._runner.addresses[0][1])
        self._client = aiohttp.ClientSession()

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._client is not None:
            await self._client.close()

    async def _forward(self, request: web.Request) -> web.Response:
        assert self._client is not None
        body = await request.read()
        update_id = int((await request.json())["update_id"])
        headers = {k: v for k, v in request.headers.items() if k.lower().startswith("x-telegram")}
        headers["Content-Type"] = "application/json"
        for _ in self.ports:
            replica = next(self._turn) % len(self.ports)
            url = f"http://127.0.0.1:{self.ports[replica]}{PATH}"
            try:
                async with self._client.post(url, data=body, headers=headers) as answer:
                    status, text = answer.status, await answer.read()
            except aiohttp.ClientConnectionError:
                self.forwarded.append(Forwarded(update_id, replica, None))
                continue
            lost = status == 200 and update_id in self.lose
            self.forwarded.append(Forwarded(update_id, replica, status, lost))
            if lost:
                self.lose.discard(update_id)
                return web.Response(status=502, text="Bad Gateway")
            return web.Response(status=status, body=text, content_type="application/json")
        return web.Response(status=502, text="Bad Gateway")

    def redelivered(self) -> dict[int, list[int]]:
        """Update id -> the replicas that answered it 200, for updates posted more than once."""
        answered: dict[int, list[int]] = {}
        for post in self.forwarded:
            if post.status == 200:
                answered.setdefault(post.update_id, []).append(post.replica)
        return {update: replicas for update, replicas in answered.items() if len(replicas) > 1}


@asynccontextmanager
async def balancer(ports: Sequence[int]) -> AsyncIterator[RoundRobin]:
    lb = RoundRobin(ports)
    await lb.start()
    try:
        yield lb
    finally:
        await lb.stop()
