"""The Telegram adapter: aiogram 3 in, ChatService in the middle, formatted replies out.

Lifecycle: ``run`` checks the token with ``getMe``, logs what ``doctor`` would flag (privacy
mode, admin rights in the configured groups, webhook errors: :mod:`adapters.telegram.doctor`)
at WARNING, registers the command menus, then long-polls (after ``deleteWebhook``, holding
the one poller's lease) or serves a webhook until ``stop``. Our entry point owns signals
(``handle_signals=False``); on ``stop`` no new updates are taken and the replies already being
written finish before ``run`` returns. An update that aiogram cannot parse is logged and
skipped, in both modes (:mod:`adapters.telegram.updates`).

Webhook mode is the scale-out mode (:mod:`adapters.telegram.webhook_mode`): each POST is stored
in the inbox before it is acknowledged, and the inbox worker (:mod:`bot.scheduling.inbox`) runs
it on whichever replica claims its chat's lane, one update of a chat at a time, in
``update_id`` order (:mod:`adapters.telegram.lanes`); ``setWebhook`` is called by one replica only
(:mod:`adapters.telegram.replicas`).

Arrival order (polling): per-update handler tasks reach ``ChatService`` without awaiting
anything first, so the conversation lock is queued for in the order Telegram delivered them.

Delivery: the service stores the answer before it is sent. A reply Telegram refuses past the
retry layer (``flood.py``, bounded by ``delivery_deadline``) is recorded undelivered; each reply
is tracked in ``deliveries`` while it is written, so the next start repairs what a crash left on
screen (``recovery.py``).

This module routes each update; one answer is written by ``reply.py``, commands and admin
lookups run in ``commands.py``, documents captioned ``/knowledge add BASE`` in ``uploads.py``,
edits and channel posts are decided in ``edits.py``, and a chat's migration or admin lookup
holds its later messages back through ``barrier.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import replace
from typing import Any

from aiogram import Bot, Dispatcher, Router
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiogram.exceptions import AiogramError, TelegramUnauthorizedError
from aiogram.types import Message, Update, User

from adapters.telegram.admins import AdminCache
from adapters.telegram.barrier import ChatBarriers
from adapters.telegram.commands import TelegramCommands
from adapters.telegram.doctor import configured_chats, platform_checks
from adapters.telegram.edits import (
    ALLOWED_UPDATES,
    EditRouting,
    drop_channel_post,
    is_channel,
)
from adapters.telegram.flood import FloodRetry, Sleep
from adapters.telegram.media import TelegramMedia
from adapters.telegram.menu import ASK, register_menus
from adapters.telegram.normalise import PLATFORM, Incoming, chat_key, normalise
from adapters.telegram.output import Outbox, Target
from adapters.telegram.recovery import inbox_reruns, recover
from adapters.telegram.replicas import PollerLease
from adapters.telegram.reply import TelegramReplies
from adapters.telegram.response_models import KeepResponseModels
from adapters.telegram.settings import TelegramSettings, telegram_settings
from adapters.telegram.triggers import Action, decide
from adapters.telegram.updates import SkipUnparsableUpdates
from adapters.telegram.uploads import TelegramUploads, upload_base
from adapters.telegram.webhook import WebhookServer
from adapters.telegram.webhook_mode import WebhookMode
from bot.context import ChatContext
from bot.conversation.preview import EditThrottle
from bot.conversation.triggers import with_quote
from bot.errors import ConfigError
from bot.platform.delivery_log import DeliveryLog
from bot.platform.seam import Platform
from bot.scheduling.inbox import InboxWorker
from bot.storage import owners

log = logging.getLogger(__name__)

_PRIVACY_NOTE = (
    "Privacy mode is on: in groups I only see commands, @mentions of me and replies to my "
    "messages, so keyword triggers and background context do not work. Turn it off with "
    "BotFather's /setprivacy (then re-add me to the group), or make me a group admin."
)
_STARTUP_RETRY_MAX = 30.0
_DIAGNOSE_WAIT = 30.0  # seconds the start-up diagnostics may take before the bot starts anyway


class TelegramAdapter:
    name = "telegram"

    def __init__(
        self,
        platform: Platform,
        *,
        settings: TelegramSettings | None = None,
        flood_sleep: Sleep = asyncio.sleep,
        name: str = PLATFORM,
        siblings: tuple[str, ...] = (),
    ) -> None:
        """``name``: the platform its chats are keyed under (``telegram``, or
        ``telegram.NAME`` for one of ``telegram.bots``); ``siblings``: the other bots' names,
        told what this one says in groups (:mod:`adapters.telegram.bots`)."""
        self.platform = platform
        self.name = name
        self.config = settings or telegram_settings(platform.settings)
        if not self.config.enabled:
            raise ConfigError("telegram.enabled is false")
        session = AiohttpSession(api=TelegramAPIServer.from_base(self.config.api_server))
        self.retry = FloodRetry(
            self.config.flood_retries,
            self.config.flood_max_wait,
            flood_sleep,
            deadline=self.config.delivery_deadline,
        )
        session.middleware(self.retry)
        session.middleware(SkipUnparsableUpdates())  # one bad update must not stop polling
        session.middleware(KeepResponseModels())  # built once, not ~30 times a burst
        self.bot = Bot(self.config.bot_token, session=session)
        self.dispatcher = Dispatcher(disable_fsm=True)  # Parlour keeps no FSM states
        router = Router(name="parlour")
        router.message.register(self._on_message)
        router.edited_message.register(self._on_message)  # edits.py decides what an edit does
        router.channel_post.register(drop_channel_post)  # not subscribed: dropped if they come
        router.edited_channel_post.register(drop_channel_post)
        self.dispatcher.include_router(router)
        self.admins = AdminCache(self.bot, self.config.admin_cache_seconds)
        self.throttle = EditThrottle(
            self.config.edit_interval_private, self.config.edit_interval_group
        )
        self.me: User | None = None
        self.webhook: WebhookServer | None = None
        self.worker: InboxWorker | None = None
        self.owner = owners.new_owner()  # this replica, in the inbox and the leases
        self._stopped = asyncio.Event()
        self.ready = asyncio.Event()  # taking updates: polling, or webhook served and set
        self._inflight: set[asyncio.Task[Any]] = set()
        self.barriers = ChatBarriers()
        self.deliveries = DeliveryLog(platform.store)
        self.command_handler = TelegramCommands(platform, self.bot, self.admins, self.barriers)
        self.edits = EditRouting(self)
        self.replies = TelegramReplies(
            platform, self.bot, self.config, self.retry, self.throttle, self.deliveries,
            siblings=siblings,
        )  # fmt: skip
        self.media = TelegramMedia(self.bot, platform.settings.llm)  # photos, voice: on demand
        self.uploads = (  # documents captioned /knowledge add BASE (knowledge bases declared)
            TelegramUploads(platform.knowledge, self.bot, self.admins, self.barriers)
            if platform.knowledge is not None
            else None
        )

    # -- lifecycle ---------------------------------------------------------------------------

    async def send_text(self, chat_id: str, thread_id: str | None, text: str) -> None:
        """Messages the bot starts itself (reminders): rendered like any reply."""
        target = Target(int(chat_id), int(thread_id) if thread_id else None)
        await Outbox(self.bot, target).send_markdown(text)

    async def run(self) -> None:
        self.platform.outbound.register(self.name, self)
        owners.register(self.owner)  # alive: nobody in this process takes its leases over
        try:
            if not await self._start():
                return
            if self.config.mode == "webhook":
                await self._serve_webhook()
            else:
                await self._poll()
        finally:
            if self._inflight:  # replies being written finish, even if polling crashed
                await asyncio.gather(*self._inflight, return_exceptions=True)
            self.platform.outbound.unregister(self.name, self)
            owners.unregister(self.owner)
            await self.bot.session.close()

    async def stop(self) -> None:
        self._stopped.set()

    async def _start(self) -> bool:
        """getMe (retried while Telegram is unreachable), diagnostics, command menus."""
        delay = 1.0
        while self.me is None:
            try:
                self.me = await self.bot.me()  # cached: aiogram's polling asks for it again
                self.replies.me = self.me
            except TelegramUnauthorizedError:
                which = (  # telegram.bots: the entry whose token it is
                    "telegram.token"
                    if self.name == PLATFORM
                    else f"the token of telegram.bots {self.name.partition('.')[2]!r}"
                )
                raise ConfigError(
                    f"{which} was rejected by Telegram (401 Unauthorized): "
                    "check the token BotFather gave you"
                ) from None
            except AiogramError as exc:
                log.warning("telegram getMe failed, retrying in %.0fs: %s", delay, exc)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopped.wait(), delay)
                if self._stopped.is_set():
                    return False
                delay = min(delay * 2, _STARTUP_RETRY_MAX)
        await self._diagnose(self.me)
        commands = self.platform.commands
        if not commands.knows(ASK.name) and ASK.name not in {i.name for i in commands.infos}:
            commands.register(ASK)
        commands.add_help_note(self._help_note)
        await register_menus(self.bot, commands.infos)
        # After the store closed the dead process's pending turns; before new messages.
        with self.retry.window():
            await recover(
                self.bot,
                self.deliveries,
                self.config.delivery_deadline,
                platform=self.name,
                runs_again=(  # webhook mode: a cut-off question still in the inbox runs again
                    inbox_reruns(self.platform.store, self.inbox_source)
                    if self.config.mode == "webhook"
                    else None
                ),
            )
        return True

    async def _diagnose(self, me: User) -> None:
        """Who we are at INFO; what ``doctor`` would flag (privacy mode, admin rights in the
        configured chats, webhook errors) at WARNING. Never stops the start."""
        log.info(
            "telegram bot @%s id=%s mode=%s api_server=%s",
            me.username,
            me.id,
            self.config.mode,
            self.config.api_server,
        )
        try:
            chats = configured_chats(self.platform.settings)
            async with asyncio.timeout(_DIAGNOSE_WAIT):
                rows = await platform_checks(self.bot, me, self.config, chats)
        except Exception:
            log.warning("telegram: start-up diagnostics failed", exc_info=True)
            return
        for row in rows:
            if not row.ok:
                log.warning("telegram: %s: %s (fix: %s)", row.name, row.detail, row.fix)

    @property
    def privacy_mode(self) -> bool:
        return self.me is not None and not self.me.can_read_all_group_messages

    def _help_note(self, ctx: ChatContext, admin: bool) -> str | None:
        if ctx.platform != self.name or ctx.is_private or not admin or not self.privacy_mode:
            return None
        return _PRIVACY_NOTE

    async def _poll(self) -> None:
        assert self.me is not None, "polling starts after getMe"
        lease = PollerLease(
            self.platform.store, self.me.id, self.owner, self.config.poller_lease_seconds
        )
        await lease.acquire()  # a second poller of this token stops here, saying who polls
        keeping = asyncio.ensure_future(lease.keep(self._stopped.set))
        self.ready.set()
        try:
            await self._poll_updates()
        finally:
            keeping.cancel()
            await asyncio.gather(keeping, return_exceptions=True)
            await lease.release()
        if lease.lost is not None:
            raise lease.lost

    async def _poll_updates(self) -> None:
        try:
            await self.bot.delete_webhook(drop_pending_updates=False)
        except AiogramError as exc:  # polling still works if no webhook was ever set
            log.warning("telegram deleteWebhook failed, polling anyway: %s", exc)
        polling = asyncio.ensure_future(
            self.dispatcher.start_polling(
                self.bot,
                handle_signals=False,
                close_bot_session=False,
                polling_timeout=self.config.polling_timeout,
                allowed_updates=ALLOWED_UPDATES,
            )
        )
        stopped = asyncio.ensure_future(self._stopped.wait())
        try:
            await asyncio.wait({polling, stopped}, return_when=asyncio.FIRST_COMPLETED)
            if not polling.done():
                await self.dispatcher.stop_polling()
            await polling
        finally:
            stopped.cancel()
            if not polling.done():
                polling.cancel()

    async def _serve_webhook(self) -> None:
        """Updates are stored before 200 and run by the inbox worker, on whichever replica
        claims their chat's lane (:mod:`adapters.telegram.webhook_mode`)."""
        assert self.me is not None, "after getMe"
        mode = WebhookMode(
            self.platform.store,
            self.bot,
            self.dispatcher,
            self.config,
            owner=self.owner,
            source=self.inbox_source,
        )
        self.worker, self.webhook = mode.worker, mode.server
        await mode.serve(bot_id=self.me.id, stopped=self._stopped, ready=self.ready)

    @property
    def inbox_source(self) -> str:
        """Per bot: two bots sharing one database never mix their update ids."""
        assert self.me is not None, "after getMe"
        return f"telegram:{self.me.id}"

    # -- one message -------------------------------------------------------------------------

    async def _on_message(self, message: Message, event_update: Update) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._inflight.add(task)
        try:
            if event_update.edited_message is not None:
                await self.edits.handle(message, event_update.update_id)
            elif is_channel(message):
                await drop_channel_post(message, event_update)
            else:
                await self.handle(message)
        except Exception:
            log.exception(
                "telegram message failed chat=%s message=%s", message.chat.id, message.message_id
            )
        finally:
            if task is not None:
                self._inflight.discard(task)

    async def handle(self, message: Message) -> None:
        if message.migrate_to_chat_id is not None:
            await self._migrate(message.chat.id, message.migrate_to_chat_id)
            return
        if message.migrate_from_chat_id is not None:
            await self._migrate(message.migrate_from_chat_id, message.chat.id)
            return
        # A migration or an admin command of this chat comes first.
        await self.barriers.wait(message.chat.id)
        assert self.me is not None, "handlers run after getMe"
        incoming = normalise(message, self.me, self.name)
        names = {info.name for info in self.platform.commands.infos}
        decision = decide(incoming, self.config.trigger_for(message.chat.id), names)
        log.debug(
            "telegram update chat=%s message=%s action=%s",
            message.chat.id,
            message.message_id,
            decision.action,
        )
        if decision.unaddressed and await self._ambient(message, incoming):
            await self._answer(message, incoming, _with_quote(incoming))
        elif decision.action is Action.ANSWER:
            await self._answer(message, incoming, decision.text)
        elif decision.action is Action.COMMAND:
            base = upload_base(message, decision) if self.uploads is not None else None
            if self.uploads is not None and base is not None:
                await self.uploads.run(message, incoming, base)
            else:
                await self.command_handler.run(message, incoming, decision)
        elif decision.action is Action.OVERHEAR:
            await self.platform.conversation.overhear(
                incoming.ctx, decision.text, follow_up=not incoming.to_others
            )

    async def _ambient(self, message: Message, incoming: Incoming) -> bool:
        """Ambient mode: answer this unaddressed message? The chat's later messages wait
        while the core decides (it may ask a model), so they keep their order."""
        assert self.me is not None, "handlers run after getMe"
        names = (self.me.first_name, self.me.username or "")  # said without an @
        conversation = self.platform.conversation
        async with self.barriers.hold(message.chat.id):
            return await conversation.ambient(incoming.ctx, incoming.text, names=names)

    async def _answer(self, message: Message, incoming: Incoming, text: str) -> None:
        if self.platform.has_admin_tools():
            ctx = await self.command_handler.with_admin_rights(message, incoming.ctx)
            incoming = replace(incoming, ctx=ctx)
        await self.replies.answer(message, incoming, text, self.media.source(message))

    async def _migrate(self, old_id: int, new_id: int) -> None:
        """Move history, settings, scheduled posts and reminders; the new chat's messages wait
        until it is done.

        Telegram sends two service messages for one migration: the second moves nothing.
        """
        async with self.barriers.hold(new_id):
            moved = await self.platform.migrate_chat(  # scheduled posts and reminders too
                chat_key(old_id, self.name), chat_key(new_id, self.name)
            )
            self.admins.forget_chat(old_id)
        if moved:
            log.info(
                "telegram group %s is now supergroup %s: %d turns moved", old_id, new_id, moved
            )


def _with_quote(incoming: Incoming) -> str:
    return with_quote(incoming.text, incoming.quoted, incoming.quoted_author)
