"""Which gateway shards this process runs, how fast it may IDENTIFY them, and what Discord's
shard close codes mean to an operator.

Discord splits a bot's guilds over ``shard_count`` gateway sessions: guild ``g`` is on shard
``(g >> 22) % shard_count`` and DMs are on shard 0. Before connecting, the adapter asks
``GET /gateway/bot`` (:func:`probe_gateway`) for the recommended count and the IDENTIFY
concurrency, then :func:`plan_shards` decides:

* ``discord.shard_count`` unset and one shard recommended: a plain ``discord.Client``
  (IDENTIFY without ``shard``), as before sharding existed.
* unset and more recommended: ``AutoShardedClient`` running all of them in this process.
* set: ``AutoShardedClient`` running ``discord.shard_ids`` (default: all) of ``shard_count``;
  other processes run the rest.

The count is passed to discord.py explicitly, so it connects to ``discord.gateway_url`` (a
proxy, the test kit) rather than to the URL in the ``/gateway/bot`` answer.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

import discord
from discord.http import HTTPClient

from adapters.discord.settings import DiscordSettings
from bot.errors import ConfigError

__all__ = [
    "GatewayInfo",
    "IdentifyPacer",
    "ShardPlan",
    "plan_shards",
    "probe_gateway",
    "shard_close_error",
]

log = logging.getLogger(__name__)

INVALID_SHARD = 4010
SHARDING_REQUIRED = 4011
IDENTIFY_WINDOW = 5.0  # seconds: one IDENTIFY per rate-limit bucket per window (Discord's rule)


@dataclass(frozen=True, slots=True)
class GatewayInfo:
    """What ``GET /gateway/bot`` says: the recommended shard count and how many shards may
    IDENTIFY at once (``session_start_limit.max_concurrency``)."""

    recommended_shards: int
    max_concurrency: int
    remaining_starts: int


@dataclass(frozen=True, slots=True)
class ShardPlan:
    """The shards this process runs: ``shard_count`` None means unsharded (a plain Client)."""

    shard_count: int | None
    shard_ids: tuple[int, ...] | None
    recommended: int

    @property
    def sharded(self) -> bool:
        return self.shard_count is not None

    @property
    def runs(self) -> tuple[int, ...]:
        if self.shard_count is None:
            return (0,)
        return self.shard_ids if self.shard_ids is not None else tuple(range(self.shard_count))

    @property
    def syncs_commands(self) -> bool:
        """Exactly one process runs shard 0, so it alone syncs slash commands (no lock)."""
        return 0 in self.runs

    def describe(self) -> str:
        if self.shard_count is None:
            return "unsharded"
        return f"shards {list(self.runs)} of {self.shard_count}"


async def probe_gateway(token: str) -> GatewayInfo:
    """Ask ``GET /gateway/bot`` with discord.py's own HTTP client (rate limits, errors);
    raises ``discord.LoginFailure`` for a rejected token."""
    http = HTTPClient(asyncio.get_running_loop())
    try:
        await http.static_login(token)
        shards, _url, limit = await http.get_bot_gateway()
    finally:
        await http.close()
    return GatewayInfo(
        recommended_shards=max(1, int(shards)),
        max_concurrency=max(1, int(limit.get("max_concurrency", 1))),
        remaining_starts=int(limit.get("remaining", 0)),
    )


def plan_shards(config: DiscordSettings, info: GatewayInfo) -> ShardPlan:
    """The shards to run (see the module docstring); logs the plan, and warns when the
    configured count is below Discord's recommendation."""
    if config.shard_count is None:
        count = info.recommended_shards if info.recommended_shards > 1 else None
        plan = ShardPlan(count, None, info.recommended_shards)
    else:
        plan = ShardPlan(config.shard_count, config.shard_ids, info.recommended_shards)
        if config.shard_count < info.recommended_shards:
            log.warning(
                "discord: shard_count=%d is below the %d shards GET /gateway/bot recommends",
                config.shard_count,
                info.recommended_shards,
            )
    log.info(
        "discord: running %s (recommended %d, max_concurrency %d, session starts left %d);"
        " slash commands %s",
        plan.describe(),
        info.recommended_shards,
        info.max_concurrency,
        info.remaining_starts,
        "synced here" if plan.syncs_commands else "left to the process running shard 0",
    )
    return plan


class IdentifyPacer:
    """Discord allows one IDENTIFY per ``IDENTIFY_WINDOW`` per bucket, the bucket being
    ``shard_id % max_concurrency``. discord.py's default hook sleeps 5 s before every IDENTIFY
    but the first, whatever the concurrency; this waits only when the bucket is taken."""

    def __init__(self, max_concurrency: int) -> None:
        self.max_concurrency = max(1, max_concurrency)
        self._last: dict[int, float] = {}

    async def wait(self, shard_id: int | None) -> None:
        loop = asyncio.get_running_loop()
        bucket = (shard_id or 0) % self.max_concurrency
        last = self._last.get(bucket)
        if last is not None:
            delay = last + IDENTIFY_WINDOW - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
        self._last[bucket] = loop.time()


def shard_close_error(exc: discord.ConnectionClosed, plan: ShardPlan) -> ConfigError | None:
    """Discord's sharding close codes as an operator's error; None for any other close."""
    if exc.code == INVALID_SHARD:
        return ConfigError(
            f"discord: Discord refused shard {exc.shard_id} of {plan.describe()} (close 4010"
            " Invalid shard): every discord.shard_ids entry must be below discord.shard_count,"
            " and every process must use the same shard_count"
        )
    if exc.code == SHARDING_REQUIRED:
        at_least = max(plan.recommended, (plan.shard_count or 1) + 1)
        return ConfigError(
            f"discord: Discord requires more shards than {plan.describe()} (close 4011"
            f" Sharding required: too many servers per session). Set discord.shard_count to"
            f" at least {at_least} (GET /gateway/bot recommends {plan.recommended}), or leave"
            " it unset to follow the recommendation"
        )
    return None
