"""The discord.py client the adapter runs: a plain ``Client`` or an ``AutoShardedClient``
(see ``sharding.py``), both handing their events to the adapter's three hooks and pacing
IDENTIFYs by Discord's ``max_concurrency`` instead of discord.py's fixed 5 s."""

from __future__ import annotations

import logging
from typing import Any, Protocol

import discord

from adapters.discord.output import NO_PINGS
from adapters.discord.sharding import IdentifyPacer, ShardPlan

__all__ = ["Hooks", "make_client"]

log = logging.getLogger(__name__)


class Hooks(Protocol):
    """What the adapter does when discord.py logs in, is ready, and sees a message."""

    async def on_setup(self) -> None: ...

    def on_ready(self, client: discord.Client) -> None: ...

    def on_message(self, message: discord.Message) -> None: ...


def make_client(
    hooks: Hooks, intents: discord.Intents, plan: ShardPlan, pacer: IdentifyPacer
) -> discord.Client:
    if plan.shard_count is None:
        return _Client(hooks, pacer, intents=intents, allowed_mentions=NO_PINGS)
    return _ShardedClient(
        hooks,
        pacer,
        intents=intents,
        allowed_mentions=NO_PINGS,
        shard_count=plan.shard_count,
        shard_ids=None if plan.shard_ids is None else list(plan.shard_ids),
    )


class _Client(discord.Client):
    def __init__(
        self,
        hooks: Hooks,
        pacer: IdentifyPacer,
        *,
        intents: discord.Intents,
        allowed_mentions: discord.AllowedMentions,
    ) -> None:
        super().__init__(intents=intents, allowed_mentions=allowed_mentions)
        self.hooks = hooks
        self.pacer = pacer

    async def before_identify_hook(self, shard_id: int | None, *, initial: bool = False) -> None:
        await self.pacer.wait(shard_id)

    async def setup_hook(self) -> None:
        await self.hooks.on_setup()

    def dispatch(self, event: str, /, *args: Any, **kwargs: Any) -> None:
        """No events once closing (the adapter takes no new ones on stop anyway).

        discord.py's own ``ready`` comes up to ``guild_ready_timeout`` (2 s) after the last
        GUILD_CREATE, from a task ``close`` leaves running; a plain ``Client`` has dropped
        its loop by then, so that late dispatch would fail ("coroutine
        'Client._run_event' was never awaited").
        """
        if not self.is_closed():
            super().dispatch(event, *args, **kwargs)

    async def on_ready(self) -> None:
        self.hooks.on_ready(self)

    async def on_message(self, message: discord.Message) -> None:
        self.hooks.on_message(message)


class _ShardedClient(discord.AutoShardedClient):
    def __init__(
        self,
        hooks: Hooks,
        pacer: IdentifyPacer,
        *,
        intents: discord.Intents,
        allowed_mentions: discord.AllowedMentions,
        shard_count: int,
        shard_ids: list[int] | None,
    ) -> None:
        if shard_ids is None:  # discord.py's stubs take a list or nothing, not None
            super().__init__(
                intents=intents, allowed_mentions=allowed_mentions, shard_count=shard_count
            )
        else:
            super().__init__(
                intents=intents,
                allowed_mentions=allowed_mentions,
                shard_count=shard_count,
                shard_ids=shard_ids,
            )
        self.hooks = hooks
        self.pacer = pacer

    async def before_identify_hook(self, shard_id: int | None, *, initial: bool = False) -> None:
        await self.pacer.wait(shard_id)

    async def setup_hook(self) -> None:
        await self.hooks.on_setup()

    async def on_shard_ready(self, shard_id: int) -> None:
        log.info("discord shard %s of %s ready", shard_id, self.shard_count)

    async def on_ready(self) -> None:
        self.hooks.on_ready(self)

    async def on_message(self, message: discord.Message) -> None:
        self.hooks.on_message(message)
