"""One gateway websocket and one gateway session of the fake Discord: the ordered send queue
with the transport compression the client asked for (zlib-stream, zstd-stream or none), the
session's intents, shard, sequence and RESUME log, what a session without MESSAGE_CONTENT
sees, and the record of which session got which dispatch."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiohttp import web

from bot.testing.discord.wire import JSONDict

if TYPE_CHECKING:
    from bot.testing.discord.apps import BotApp

__all__ = ["Close", "Connection", "Dispatched", "GatewaySession", "scrubbed", "shard_of"]


def shard_of(guild_id: int | None, shard_count: int) -> int:
    """Discord's rule: a guild's events go to shard ``(guild_id >> 22) % shard_count``; DMs
    and other guild-less events to shard 0."""
    return 0 if guild_id is None else (guild_id >> 22) % shard_count


@dataclass(slots=True)
class Close:
    code: int
    reason: str


class Connection:
    """One websocket: an ordered send queue drained by a writer task (so synchronous test
    controls can dispatch), with the transport compression the client asked for."""

    def __init__(self, ws: web.WebSocketResponse, compress: str | None) -> None:
        self.ws = ws
        self.queue: asyncio.Queue[JSONDict | Close | Callable[[], None]] = asyncio.Queue()
        self.session: GatewaySession | None = None
        self.server_closed = False
        self.compress = compress
        self._zlib = zlib.compressobj() if compress == "zlib-stream" else None
        self._zstd: Any = None
        if compress == "zstd-stream":
            with contextlib.suppress(ImportError):
                self._zstd = importlib.import_module("zstandard").ZstdCompressor().compressobj()

    def send(self, payload: JSONDict | Close | Callable[[], None]) -> None:
        self.queue.put_nowait(payload)

    async def write_loop(self) -> None:
        while True:
            item = await self.queue.get()
            if isinstance(item, Close):
                self.server_closed = True
                await self.ws.close(code=item.code, message=item.reason.encode())
                return
            if callable(item):
                item()
                continue
            data = json.dumps(item, separators=(",", ":")).encode()
            try:
                if self._zlib is not None:
                    await self.ws.send_bytes(
                        self._zlib.compress(data) + self._zlib.flush(zlib.Z_SYNC_FLUSH)
                    )
                elif self._zstd is not None:
                    flush_block = importlib.import_module("zstandard").COMPRESSOBJ_FLUSH_BLOCK
                    await self.ws.send_bytes(
                        self._zstd.compress(data) + self._zstd.flush(flush_block)
                    )
                else:
                    await self.ws.send_str(data.decode())
            except (ConnectionError, RuntimeError):
                return


@dataclass(slots=True)
class GatewaySession:
    """An identified gateway session: its intents, shard (``(id, count)``, None when the
    client identified without one), application, sequence, and the dispatch log replayed on RESUME.
    ``connection`` is None while the client is away (events still accumulate)."""

    id: str
    intents: int
    shard: tuple[int, int] | None
    app: BotApp  # the application whose token identified it
    seq: int = 0
    log: list[JSONDict] = field(default_factory=list)
    connection: Connection | None = None
    ready: bool = False

    def owns(self, guild_id: int | None) -> bool:
        """Whether this session gets the guild's events (``None``: DMs, guild-less events)."""
        if self.shard is None:
            return True
        return shard_of(guild_id, self.shard[1]) == self.shard[0]


@dataclass(frozen=True, slots=True)
class Dispatched:
    """One dispatch as sent on one session: ``object_id`` is the payload's ``id`` (the
    message of a MESSAGE_CREATE, the guild of a GUILD_CREATE), ``guild_id`` its guild."""

    session_id: str
    shard: tuple[int, int] | None
    seq: int
    event: str
    guild_id: int | None
    object_id: int | None


def scrubbed(message: JSONDict) -> JSONDict:
    """A message as a session without MESSAGE_CONTENT sees it: no content, embeds,
    attachments, components or poll."""
    out = dict(message)
    out["content"] = ""
    out["embeds"] = []
    out["attachments"] = []
    out["components"] = []
    out.pop("poll", None)
    return out
