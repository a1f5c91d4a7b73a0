"""Webhook mode, the scale-out mode: updates stored before they are acknowledged, run by the inbox.

``webhook.py``'s server takes each POST; it is stored in the inbox (``edits.store_update``)
before Telegram gets its 200, and the inbox worker (:mod:`bot.scheduling.inbox`) runs it on
whichever replica claims its chat's lane, one update of a chat at a time, in ``update_id`` order
(:mod:`adapters.telegram.lanes`). ``setWebhook`` is called by one replica only
(:mod:`adapters.telegram.replicas`). On ``stop`` the listener closes first, then the worker lets
what runs finish and leaves the rest to the other replicas.
"""

from __future__ import annotations

import asyncio
import json
import logging

from aiogram import Bot, Dispatcher
from aiogram.types import Update

from adapters.telegram.edits import ALLOWED_UPDATES, store_update
from adapters.telegram.held import RUNNING
from adapters.telegram.replicas import ensure_webhook
from adapters.telegram.settings import TelegramSettings
from adapters.telegram.webhook import WebhookServer
from bot.scheduling.inbox import InboxWorker
from bot.storage import Storage
from bot.values import InboxItem

__all__ = ["WebhookMode"]

log = logging.getLogger(__name__)


class WebhookMode:
    def __init__(
        self,
        store: Storage,
        bot: Bot,
        dispatcher: Dispatcher,
        config: TelegramSettings,
        *,
        owner: str,
        source: str,
    ) -> None:
        hook = config.webhook
        assert hook.url is not None, "validated: webhook mode has a url"
        self.store = store
        self.bot = bot
        self.dispatcher = dispatcher
        self.config = config
        self.owner = owner
        self.source = source  # per bot: two bots sharing one database never mix update ids
        self.worker = InboxWorker(
            store,
            source,
            self._run_update,
            lease_seconds=hook.lease_seconds,
            concurrency=hook.max_running,
            owner=owner,
        )
        self.secret = config.webhook_secret()
        self.server = WebhookServer(
            self._accept,
            secret=self.secret,
            path=hook.path,
            host=hook.listen_host,
            port=hook.listen_port,
            health=self._health,
        )

    async def serve(self, *, bot_id: int, stopped: asyncio.Event, ready: asyncio.Event) -> None:
        """Listen, make sure Telegram posts here, set ``ready``, and run until ``stopped``."""
        hook = self.config.webhook
        assert hook.url is not None, "validated: webhook mode has a url"
        await self.worker.start()
        try:
            await self.server.start()
            try:
                await ensure_webhook(
                    self.bot,
                    self.store,
                    bot_id=bot_id,
                    owner=self.owner,
                    url=hook.url,
                    secret=self.secret,
                    allowed_updates=ALLOWED_UPDATES,
                    drop_pending_updates=hook.drop_pending_updates,
                    max_connections=hook.max_connections,
                )
                ready.set()
                await stopped.wait()
            finally:
                await self.server.stop()
        finally:
            await self.worker.stop()  # what runs finishes; the rest goes to other replicas

    async def _accept(self, update_id: int, raw: dict[str, object], text: str) -> bool:
        """Store a posted update (before Telegram gets its 200); False for a redelivery."""
        stored = await store_update(self.store, self.source, update_id, raw, text)
        if stored:
            self.worker.wake()
        return stored

    async def _health(self) -> dict[str, object]:
        """For the load balancer: the backlog all replicas share, and this one's share."""
        pending = await self.store.inbox_pending(self.source)
        return {"pending": pending, "running": self.worker.running}

    async def _run_update(self, item: InboxItem) -> None:
        """One update from the inbox, to the end: returns once the answer is delivered (the
        handlers await the whole reply), so the worker may mark it done."""
        try:
            update = Update.model_validate(json.loads(item.payload), context={"bot": self.bot})
        except ValueError as exc:
            log.error("telegram webhook: update %s does not parse: %s", item.update_id, exc)
            return
        running = RUNNING.set(item)  # a burst's later messages wait behind it: held.py
        try:
            await self.dispatcher.feed_update(self.bot, update)
        finally:
            RUNNING.reset(running)
