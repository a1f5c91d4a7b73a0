"""Discord sharding: the real discord.py (``Client`` / ``AutoShardedClient``) on the fake gateway,
which opens one session per shard and sends a guild's events only to shard
``(guild_id >> 22) % count`` (DMs to shard 0), as Discord does.

What crosses the wire: which session got each MESSAGE_CREATE, who answered, and which process
called the bulk-overwrite commands route.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from adapters.discord import check_settings
from adapters.discord.adapter import DiscordAdapter
from adapters.discord.endpoints import reset_endpoints
from adapters.discord.settings import DiscordSettings
from adapters.discord.sharding import GatewayInfo, plan_shards
from bot.errors import ConfigError
from bot.testing.fake_discord import FakeDiscord
from bot.testing.fake_llm import FakeLLM
from tests import postgres_support
from tests.conftest import AppFactory, make_settings
from tests.discord_harness import GENERAL, GUILD, discord_section, running_discord, world
from tests.product.discord.test_discord import answered

GUILD_B = (1 << 22) | 200  # shard 1 of 2; GUILD (100) is on shard 0
CHANNEL_B = 210
CAROL = 9
BOTH = [(0, 2), (1, 2)]


def second_guild(dc: FakeDiscord) -> dict[str, Any]:
    guild = dc.guild(GUILD_B, "Second server", owner_id=1)
    channel = dc.channel(guild, CHANNEL_B, "lobby")
    dc.member(guild, dc.user(CAROL, "carol", "Carol"))
    return channel


def command_syncs(dc: FakeDiscord) -> list[str]:
    """The bulk-overwrite calls (``PUT .../commands``) the fake received, by path."""
    return [r.path for r in dc.requests if r.method == "PUT" and r.path.endswith("/commands")]


def ready_shards(dc: FakeDiscord) -> list[tuple[int, int] | None]:
    """The shard of each session the fake sent READY, in the order they identified."""
    return [d.shard for d in dc.dispatched if d.event == "READY"]


def shards_that_got(dc: FakeDiscord, message: dict[str, Any]) -> list[tuple[int, int] | None]:
    return [d.shard for d in dc.events_for("MESSAGE_CREATE", int(message["id"]))]


async def answered_once(dc: FakeDiscord, channel_id: int) -> dict[str, Any]:
    await dc.wait_for_message(channel_id)
    await dc.wait_idle(quiet=0.4)
    [answer] = dc.messages(channel_id)
    return answer


async def test_one_process_runs_every_recommended_shard(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    dc.recommended_shards, dc.max_concurrency = 2, 2
    w = world(dc)
    lobby = second_guild(dc)
    guilds = {"guild_ids": [GUILD, GUILD_B]}
    async with running_discord(make_app, dc, discord=guilds, shards=BOTH):
        assert ready_shards(dc) == BOTH
        asked_a = dc.message(w.general, w.member, f"<@{dc.application_id}> hello A")
        asked_b = dc.message(lobby, w.member, f"<@{dc.application_id}> hello B")
        dm = dc.dm(w.member)
        asked_dm = dc.message(dm, w.member, "hello DM")
        for channel in (GENERAL, CHANNEL_B, int(dm["id"])):
            await answered_once(dc, channel)
    assert shards_that_got(dc, asked_a) == [(0, 2)]
    assert shards_that_got(dc, asked_b) == [(1, 2)]
    assert shards_that_got(dc, asked_dm) == [(0, 2)]  # DMs are shard 0's
    assert [r.route for r in dc.requests].count("GET /gateway/bot") == 1
    assert sorted(command_syncs(dc)) == sorted(
        f"/applications/{dc.application_id}/guilds/{g}/commands" for g in (GUILD, GUILD_B)
    )


def own_storage(tmp_path: Path, name: str) -> dict[str, Any]:
    """A store of its own per process (on PostgreSQL every app gets a fresh schema anyway)."""
    return {} if postgres_support.e2e_on_postgres() else {"path": str(tmp_path / f"{name}.db")}


async def test_two_processes_each_answer_their_own_shard_and_only_shard_0_syncs(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord, tmp_path: Path
) -> None:
    dc = fake_discord
    dc.recommended_shards = 2
    w = world(dc)
    lobby = second_guild(dc)
    common = {"guild_ids": [GUILD, GUILD_B], "shard_count": 2}
    shard_1 = {**common, "shard_ids": [1]}
    shard_0 = {**common, "shard_ids": [0]}
    # The shard-1 process starts first: it must not touch the commands.
    storage_1 = own_storage(tmp_path, "shard1")
    first = running_discord(
        make_app, dc, discord=shard_1, shards=[(1, 2)], synced=False, storage=storage_1
    )
    async with first as (_, process_1):
        await dc.wait_idle(quiet=0.3)
        assert command_syncs(dc) == []
        second = running_discord(make_app, dc, discord=shard_0, shards=[(0, 2)])
        async with second as (_, process_0):
            assert len(command_syncs(dc)) == 2  # one bulk overwrite per configured server
            asked_a = dc.message(w.general, w.member, f"<@{dc.application_id}> hello A")
            asked_b = dc.message(lobby, w.member, f"<@{dc.application_id}> hello B")
            dm = dc.dm(w.member)
            asked_dm = dc.message(dm, w.member, "hello DM")
            answers = [await answered_once(dc, c) for c in (GENERAL, CHANNEL_B, int(dm["id"]))]
            assert all(answer["content"] for answer in answers)
            # A slash command on shard 1: the process that did not sync still answers it.
            asked_slash = dc.slash(lobby, dc.users[CAROL], "ask", {"prompt": "slash on B"})
            assert (await answered(dc, asked_slash))["content"]
            # What each discord.py client learnt is what its sessions were sent.
            assert process_0.client is not None and process_1.client is not None
            assert process_0.client.get_guild(GUILD) is not None
            assert process_0.client.get_guild(GUILD_B) is None
            assert process_1.client.get_guild(GUILD_B) is not None
            assert process_1.client.get_guild(GUILD) is None
    assert shards_that_got(dc, asked_a) == [(0, 2)]
    assert shards_that_got(dc, asked_b) == [(1, 2)]
    assert shards_that_got(dc, asked_dm) == [(0, 2)]
    interactions = dc.events_for("INTERACTION_CREATE", int(asked_slash["id"]))
    assert [d.shard for d in interactions] == [(1, 2)]
    assert len(command_syncs(dc)) == 2
    assert ready_shards(dc) == [(1, 2), (0, 2)]


@pytest.mark.parametrize(
    ("shards", "message"),
    [
        ({"shard_ids": [0]}, "shard_ids needs shard_count"),
        ({"shard_count": 2, "shard_ids": [2]}, "out of range"),
        ({"shard_count": 2, "shard_ids": [-1]}, "out of range"),
        ({"shard_count": 2, "shard_ids": []}, "shard_ids is empty"),
        ({"shard_count": 2, "shard_ids": [1, 1]}, "shard_ids lists a shard twice"),
        ({"shard_count": 0}, "discord.shard_count"),
    ],
)
def test_shard_config_is_refused_at_load(
    fake_llm: FakeLLM, tmp_path: Path, shards: dict[str, Any], message: str
) -> None:
    section = {"enabled": True, "token": "t.o.k", **shards}
    settings = make_settings(fake_llm, tmp_path, discord=section)
    with pytest.raises(ConfigError, match=message) as refused:
        check_settings(settings)
    assert "discord" in str(refused.value)


def test_the_plan_follows_the_recommendation_unless_configured() -> None:
    one, three = GatewayInfo(1, 1, 999), GatewayInfo(3, 1, 999)
    unset = DiscordSettings()
    assert plan_shards(unset, one).shard_count is None  # a plain Client, as before sharding
    assert plan_shards(unset, three).runs == (0, 1, 2)
    mine = DiscordSettings(shard_count=4, shard_ids=(2, 3))
    assert plan_shards(mine, one).runs == (2, 3)
    assert not plan_shards(mine, one).syncs_commands
    assert plan_shards(DiscordSettings(shard_count=4, shard_ids=(3, 0)), one).syncs_commands
    assert plan_shards(DiscordSettings(shard_count=4), three).syncs_commands


async def test_sharding_required_is_a_clear_error_and_sharding_fixes_it(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    dc.guilds_per_shard = 1  # Discord: 2500; here two servers are too many for one session
    world(dc)
    second_guild(dc)
    async with make_app(discord=discord_section(dc)) as app:
        adapter = DiscordAdapter(app.platform)
        try:
            with pytest.raises(ConfigError) as refused:
                await asyncio.wait_for(adapter.run(), 15)
        finally:
            reset_endpoints()
    text = str(refused.value)
    assert "4011" in text and "discord.shard_count" in text and "at least 2" in text
    assert dc.token not in text
    assert not [s for s in dc.sessions.values() if s.connection is not None]
    async with running_discord(make_app, dc, discord={"shard_count": 2}, shards=BOTH):
        assert len(dc.shard_sessions((0, 2))) == len(dc.shard_sessions((1, 2))) == 1


async def test_invalid_shard_close_is_a_clear_error(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    world(dc)
    async with make_app(discord=discord_section(dc, shard_count=1)) as app:
        adapter = DiscordAdapter(app.platform)
        task = asyncio.ensure_future(adapter.run())
        try:
            await dc.wait_ready(timeout=10, shards=[(0, 1)])
            dc.drop_connections(4010, "Invalid shard.")
            with pytest.raises(ConfigError) as refused:
                await asyncio.wait_for(task, 15)
        finally:
            await adapter.stop()
            reset_endpoints()
    text = str(refused.value)
    assert "4010" in text and "shards [0] of 1" in text and "discord.shard_count" in text


@pytest.mark.parametrize("shard", [[2, 2], [0, 0], [-1, 2], ["0", 2], [0], "0,2"])
async def test_fake_gateway_closes_an_invalid_shard_with_4010(
    fake_discord: FakeDiscord, shard: Any
) -> None:
    dc = fake_discord
    identify = {"token": dc.token, "intents": 1, "properties": {}, "shard": shard}
    async with aiohttp.ClientSession() as http, http.ws_connect(f"{dc.gateway_url}?v=10") as ws:
        hello = json.loads((await ws.receive()).data)
        assert hello["op"] == 10
        await ws.send_str(json.dumps({"op": 2, "d": identify}))
        closed = await ws.receive()
        assert closed.type == aiohttp.WSMsgType.CLOSE
        assert (ws.close_code, closed.extra) == (4010, "Invalid shard.")
    assert dc.sessions == {}


async def test_fake_gateway_answers_the_configured_recommendation(
    fake_discord: FakeDiscord,
) -> None:
    dc = fake_discord
    dc.recommended_shards, dc.max_concurrency = 3, 16
    async with aiohttp.ClientSession() as http:
        auth = {"Authorization": f"Bot {dc.token}"}
        async with http.get(f"{dc.api_base}/gateway/bot", headers=auth) as response:
            assert response.status == 200
            body = await response.json()
        async with http.get(f"{dc.api_base}/gateway/bot") as response:
            assert response.status == 401
    assert body["shards"] == 3 and body["url"] == dc.gateway_url
    assert body["session_start_limit"]["max_concurrency"] == 16
    assert set(body["session_start_limit"]) == {
        "total",
        "remaining",
        "reset_after",
        "max_concurrency",
    }
