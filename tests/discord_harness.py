"""Run the real Discord adapter (discord.py on the fake gateway + REST) in a test."""

from __future__ import annotations

import asyncio
import struct
import zlib
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from adapters.discord.adapter import DiscordAdapter
from adapters.discord.endpoints import reset_endpoints
from bot.app import App
from bot.testing.fake_discord import FakeDiscord
from tests.conftest import AppFactory

GUILD, GENERAL, RANDOM, THREAD = 100, 110, 120, 130
OGG = b"OggS\x00\x02" + bytes(22) + b"OpusHead"  # the start of an Ogg Opus file
_running = [0]  # adapters running in this test: endpoints are reset when the last one stops


@dataclass
class World:
    """A server with two channels and a thread, an admin, a member and a DM."""

    guild: dict[str, Any]
    general: dict[str, Any]
    random: dict[str, Any]
    thread: dict[str, Any]
    admin: dict[str, Any]
    member: dict[str, Any]


def world(dc: FakeDiscord) -> World:
    guild = dc.guild(GUILD, "Parlour HQ", owner_id=1)
    general = dc.channel(guild, GENERAL, "general")
    random = dc.channel(guild, RANDOM, "random")
    thread = dc.thread(general, THREAD, "ideas")
    mods = dc.role(guild, 900, "Mods", permissions=1 << 13)  # MANAGE_MESSAGES
    admin = dc.user(7, "alice", "Alice")
    member = dc.user(8, "bob", "Bob")
    dc.member(guild, admin, roles=[int(mods["id"])])
    dc.member(guild, member, nick="Bobby")
    return World(guild, general, random, thread, admin, member)


def discord_section(dc: FakeDiscord, **overrides: Any) -> dict[str, Any]:
    return {
        "enabled": True,
        "token": dc.token,
        "api_base": dc.api_base,
        "gateway_url": dc.gateway_url,
        "guild_ids": [GUILD],
        "edit_interval": 0.2,
        **overrides,
    }


@asynccontextmanager
async def running_discord(
    make_app: AppFactory,
    dc: FakeDiscord,
    *,
    discord: dict[str, Any] | None = None,
    shards: Sequence[tuple[int, int]] = (),
    synced: bool = True,
    **sections: Any,
) -> AsyncIterator[tuple[App, DiscordAdapter]]:
    """Run an adapter until the block ends. ``shards``: wait for these ``(id, count)``
    sessions; ``synced`` False: this process leaves the slash commands to another."""
    async with make_app(discord=discord_section(dc, **(discord or {})), **sections) as app:
        adapter = DiscordAdapter(app.platform)
        task = asyncio.ensure_future(adapter.run())
        _running[0] += 1
        try:
            await dc.wait_until(
                lambda: (
                    task.done()
                    or ((not synced or bool(dc.commands(GUILD))) and dc.identify is not None)
                ),
                timeout=10,
            )
            if task.done():
                task.result()
            await dc.wait_ready(timeout=10, shards=shards)
            yield app, adapter
        finally:
            await adapter.stop()
            await asyncio.wait_for(task, 15)
            _running[0] -= 1
            if not _running[0]:
                reset_endpoints()


def png(width: int, height: int, *, padding: int = 0) -> bytes:
    """A valid PNG of ``width`` x ``height`` grey pixels; ``padding`` bytes of a private
    ancillary chunk make it bigger without changing the picture."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    extra = chunk(b"prVt", bytes(padding)) if padding else b""
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + extra
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )
