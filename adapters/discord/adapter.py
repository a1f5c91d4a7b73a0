"""The Discord adapter: discord.py 2 in, ChatService in the middle, split replies out.

Lifecycle: ``run`` points discord.py at ``discord.api_base`` / ``discord.gateway_url``, then
``client.start()`` (never ``run()``: our entry point owns signals). It first asks ``GET
/gateway/bot`` and runs the shards ``sharding.py`` plans (one plain client, or an
``AutoShardedClient`` for this process's ``discord.shard_ids``). Slash commands are synced in
``setup_hook`` by the process running shard 0 only, per guild (instant) when
``discord.guild_ids`` is set, else globally; before that, what ``doctor`` would flag (the
Message Content intent, permissions in the configured servers: :mod:`adapters.discord.doctor`)
is logged at WARNING, once. If Discord refuses the privileged message-content
intent, the adapter says what still works and reconnects without it. ``stop`` stops taking
events, lets in-flight replies finish, then closes the client.

Arrival order: discord.py dispatches each event as a task; a message reaches ``ChatService``
without awaiting anything first, so its conversation lock is queued for in arrival order.

This module routes each event; one answer (a message's or ``/ask``'s) is written by
``reply.py``, the slash command tree is built by ``commands.py`` and its commands run by
``interactions.py``, documents for knowledge bases are added by ``uploads.py``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import Any

import discord
from discord import app_commands

from adapters.discord.client import make_client
from adapters.discord.commands import build_tree
from adapters.discord.doctor import configured_guilds, platform_checks
from adapters.discord.endpoints import use_endpoints
from adapters.discord.interactions import Interactions
from adapters.discord.media import MediaPolicy, fetch_media, media_source, with_references
from adapters.discord.normalise import PLATFORM, Incoming, bot_names, decide, normalise
from adapters.discord.output import ChannelReply, ReplyMessages, deliver, typing_indicator
from adapters.discord.reply import DiscordReplies
from adapters.discord.settings import DiscordSettings, discord_settings
from adapters.discord.sharding import (
    IdentifyPacer,
    ShardPlan,
    plan_shards,
    probe_gateway,
    shard_close_error,
)
from adapters.discord.uploads import DiscordUploads
from bot.context import ChatContext
from bot.conversation.preview import EditThrottle, Repeating
from bot.conversation.triggers import Action, with_quote
from bot.errors import ConfigError
from bot.platform.media import Attachments
from bot.platform.seam import Platform

log = logging.getLogger(__name__)

_DIAGNOSE_WAIT = 30.0  # seconds the start-up diagnostics may take before the bot goes on
_CHAT_MESSAGES = frozenset({discord.MessageType.default, discord.MessageType.reply})
_REJECTED_TOKEN = (
    "{field} was rejected by Discord (401 Unauthorized): check the bot token in the "
    "Developer Portal"
)
_NO_CONTENT_INTENT = (
    "%s: the Message Content intent is not enabled for this bot (Developer Portal -> Bot ->"
    " Privileged Gateway Intents). Still working: slash commands (/ask, /reset, /clear, "
    "/history, /scope), @mentions, replies to the bot and DMs. Not working: keeping other "
    "messages as conversation context. Reconnecting without it."
)


class DiscordAdapter:
    name = PLATFORM

    def __init__(
        self,
        platform: Platform,
        *,
        settings: DiscordSettings | None = None,
        name: str = PLATFORM,
        siblings: tuple[str, ...] = (),
    ) -> None:
        """``name``: the platform its chats are keyed under (``discord``, or
        ``discord.NAME`` for one of ``discord.bots``); ``siblings``: the other bots' names,
        told what this one answers in servers (:mod:`adapters.discord.bots`)."""
        self.platform = platform
        self.name = name
        self.config = settings or discord_settings(platform.settings)
        if not self.config.enabled:
            raise ConfigError("discord.enabled is false")
        self.throttle = EditThrottle(self.config.edit_interval, self.config.edit_interval)
        self.replies = DiscordReplies(  # one answer: reply.py
            platform, self.config, self.throttle, name=name, siblings=siblings
        )
        self.message_content = self.config.wants_message_content
        self.media = MediaPolicy.of(platform.settings.llm)
        knowledge = platform.knowledge  # documents for knowledge bases: uploads.py
        self.uploads = None if knowledge is None else DiscordUploads(knowledge)
        self.client: discord.Client | None = None
        self.plan = ShardPlan(None, None, 1)
        self._pacer = IdentifyPacer(1)
        self.tree: app_commands.CommandTree[discord.Client] | None = None
        self._stopping = asyncio.Event()
        self._inflight: set[asyncio.Task[Any]] = set()
        self._diagnosed = False
        self.interactions = Interactions(  # what each slash command does: interactions.py
            platform,
            name=name,
            answer=self.answer,
            uploads=self.uploads,
            stopping=self._stopping,
            tracked=self._tracked,
        )

    # -- lifecycle ---------------------------------------------------------------------------

    async def send_text(self, chat_id: str, thread_id: str | None, text: str) -> None:
        """Messages the bot starts itself (reminders); a thread is its own channel here."""
        client = self.client
        if client is None or client.is_closed():
            raise RuntimeError("the Discord client is not connected")
        channel = client.get_channel(int(chat_id)) or await client.fetch_channel(int(chat_id))
        if not isinstance(channel, discord.abc.Messageable):
            raise RuntimeError(f"channel {chat_id} cannot take messages")
        await deliver(ChannelReply(channel), text)

    async def run(self) -> None:
        use_endpoints(self.config.api_base, self.config.gateway_url)
        self.platform.outbound.register(self.name, self)
        try:
            await self._plan()
            while not self._stopping.is_set():
                client = self._make_client()
                try:
                    await client.start(self.config.bot_token)
                    return
                except discord.PrivilegedIntentsRequired:
                    if not self.message_content:
                        raise
                    log.warning(_NO_CONTENT_INTENT, self.name)
                    self.message_content = False
                except discord.LoginFailure:
                    raise self._rejected() from None
                except discord.ConnectionClosed as exc:
                    refused = shard_close_error(exc, self.plan)
                    if refused is not None:
                        raise refused from None
                    if self._stopping.is_set():
                        return
                    raise
                except Exception:
                    if self._stopping.is_set():
                        return  # stopped while connecting: not an error
                    raise
                finally:
                    if not client.is_closed():
                        await client.close()
        except asyncio.CancelledError:
            for task in self._inflight:  # forced stop: replies in flight are abandoned
                task.cancel()
            raise
        finally:
            await self._drain()
            self.platform.outbound.unregister(self.name, self)

    async def _plan(self) -> None:
        """Ask ``GET /gateway/bot`` which shards to run and how fast they may IDENTIFY."""
        try:
            info = await probe_gateway(self.config.bot_token)
        except discord.LoginFailure:
            raise self._rejected() from None
        self.plan = plan_shards(self.config, info)
        self._pacer = IdentifyPacer(info.max_concurrency)

    def _rejected(self) -> ConfigError:
        field = "discord.token" if self.name == PLATFORM else f"{self.name}'s token (discord.bots)"
        return ConfigError(_REJECTED_TOKEN.format(field=field))

    async def stop(self) -> None:
        """No new events; in-flight replies finish (the entry point bounds the wait)."""
        self._stopping.set()
        await self._drain()
        if self.client is not None:
            await self.client.close()

    async def _drain(self) -> None:
        while self._inflight:  # a reply may start another task (a followup) while we wait
            await asyncio.gather(*list(self._inflight), return_exceptions=True)

    def _make_client(self) -> discord.Client:
        intents = discord.Intents.none()
        intents.guilds = True
        intents.guild_messages = True
        intents.dm_messages = True
        intents.message_content = self.message_content
        client = make_client(self, intents, self.plan, self._pacer)
        self.client = client
        slash = self.interactions
        upload = slash.upload if self.uploads is not None else None  # /knowledge's file
        infos = self.platform.commands.infos
        self.tree = build_tree(client, infos, ask=slash.ask, run=slash.command, upload=upload)
        return client

    async def on_setup(self) -> None:
        """Logged in: say who we are, then sync slash commands (per guild: instant) if this
        process runs shard 0; the others leave them to it."""
        assert self.tree is not None and self.client is not None
        user = self.client.user
        self.replies.me = user
        log.info(
            "%s bot %s id=%s message_content=%s api_base=%s",
            self.name,
            user,
            user.id if user else "?",
            self.message_content,
            self.config.api_base,
        )
        if user is not None and not self._diagnosed:  # once, not again after a reconnect
            self._diagnosed = True
            await self._diagnose(user.id)
        if not self.plan.syncs_commands:
            return
        if not self.config.guild_ids:
            await self._sync(None)
        for guild_id in self.config.guild_ids:  # one server refusing must not stop the others
            await self._sync(guild_id)

    async def _diagnose(self, bot_id: int) -> None:
        """What ``doctor`` would flag (intents, permissions in the configured servers), logged
        at WARNING. Never stops the start."""
        assert self.client is not None
        main = self.name == PLATFORM  # servers are checked for the main bot, as by doctor
        guilds = configured_guilds(self.platform.settings) if main else []
        try:
            async with asyncio.timeout(_DIAGNOSE_WAIT):
                rows = await platform_checks(self.client.http, bot_id, self.config, guilds)
        except Exception:
            log.warning("%s: start-up diagnostics failed", self.name, exc_info=True)
            return
        for row in rows:
            if not row.ok:
                log.warning("%s: %s: %s (fix: %s)", self.name, row.name, row.detail, row.fix)

    async def _sync(self, guild_id: int | None) -> None:
        assert self.tree is not None
        where = f"guild {guild_id}" if guild_id is not None else "globally"
        try:
            if guild_id is None:
                synced = await self.tree.sync()
            else:
                guild = discord.Object(id=guild_id)
                self.tree.copy_global_to(guild=guild)
                synced = await self.tree.sync(guild=guild)
        except discord.HTTPException as exc:
            log.error(
                "%s: slash commands not synced %s (is the bot in that server, invited "
                "with the applications.commands scope?): %s",
                self.name,
                where,
                exc,
            )
            return
        log.info("%s: %d slash commands synced %s", self.name, len(synced), where)

    def on_ready(self, client: discord.Client) -> None:
        log.info("%s ready: %d servers", self.name, len(client.guilds))

    # -- messages ----------------------------------------------------------------------------

    def on_message(self, message: discord.Message) -> None:
        """Runs in discord.py's event task; the reply runs as a tracked task."""
        if self._stopping.is_set() or self.client is None or self.client.user is None:
            return
        if message.type not in _CHAT_MESSAGES:
            return  # joins, pins, thread creations: not something anyone said
        incoming = normalise(message, self.client.user, self.name)
        base = self.uploads.requested(message, incoming) if self.uploads is not None else None
        if self.uploads is not None and base is not None:  # "/knowledge add NAME" + a document
            self._track(self.uploads.message(message, incoming.ctx, base))
            return
        decision = decide(
            incoming,
            mention_trigger=self.config.mention_trigger,
            keep_context=self.config.keep_context and self.message_content,
        )
        if decision.unaddressed:  # ambient mode may answer it, else as decided
            self._track(self._unaddressed(message, incoming, decision.action))
        elif decision.action is Action.ANSWER:
            media = media_source(message, self.client.user.id)
            self._track(self._answer_message(message, media, incoming, decision.text))
        elif decision.action is Action.OVERHEAR:
            text = with_references(decision.text, message)
            follow_up = not incoming.to_others
            self._track(
                self.platform.conversation.overhear(incoming.ctx, text, follow_up=follow_up)
            )

    async def _unaddressed(
        self, message: discord.Message, incoming: Incoming, kept: Action
    ) -> None:
        """Answered as if addressed when ambient mode says so; else overheard (if kept)."""
        me = self.client.user if self.client is not None else None
        if me is None:
            return
        conversation = self.platform.conversation
        if await conversation.ambient(incoming.ctx, incoming.text, names=bot_names(message, me)):
            text = with_quote(incoming.text, incoming.quoted, incoming.quoted_author)
            media = media_source(message, me.id)
            await self._answer_message(message, media, incoming, text)
        elif kept is Action.OVERHEAR:
            text = with_references(incoming.text, message)
            await conversation.overhear(incoming.ctx, text, follow_up=not incoming.to_others)

    def _track(self, work: Any) -> None:
        # ensure_future runs the coroutine's first step in this loop iteration's order, so
        # tasks created here reach the service lock in the order events arrived.
        task = asyncio.ensure_future(self._guard(work))
        self._inflight.add(task)
        task.add_done_callback(self._inflight.discard)

    async def _guard(self, work: Any) -> None:
        try:
            await work
        except Exception:
            log.exception("%s event failed", self.name)

    async def _answer_message(
        self,
        message: discord.Message,
        media: discord.Message | None,
        incoming: Incoming,
        text: str,
    ) -> None:
        """``media``: the message whose images or voice message go with this one (media.py);
        the core downloads them once the message is admitted, in its place in line."""
        # The trigger may be gone by the time we answer (deleted, or reposted by PluralKit):
        # then Discord sends a plain message instead of failing the reply.
        reference = message.to_reference(fail_if_not_exists=False)
        reply = ChannelReply(message.channel, reference=reference)
        attachments: Attachments = ()
        if media is not None:
            attachments = functools.partial(fetch_media, media, self.media)
        indicator = typing_indicator(message.channel)  # started once the message is admitted
        await self.answer(incoming.ctx, text, reply, indicator, message.channel.id, attachments)

    async def answer(
        self,
        ctx: ChatContext,
        text: str,
        messages: ReplyMessages,
        indicator: Repeating | None,
        channel_id: int,
        attachments: Attachments = (),
    ) -> None:
        """Stream the model's answer into ``messages``; errors become a short notice
        (:mod:`adapters.discord.reply`)."""
        await self.replies.answer(ctx, text, messages, indicator, channel_id, attachments)

    # -- slash commands (interactions.py answers them) ---------------------------------------

    async def _tracked(self, work: Any) -> None:
        """Run an interaction's work as a tracked task, so shutdown waits for it."""
        task = asyncio.ensure_future(self._guard(work))
        self._inflight.add(task)
        task.add_done_callback(self._inflight.discard)
        await asyncio.shield(task)
