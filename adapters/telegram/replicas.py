"""What Telegram replicas agree on through the database: who calls ``setWebhook``, who polls.

``setWebhook`` is called once, not by every replica racing: each replica reads
``getWebhookInfo`` and leaves the webhook alone when its URL and allowed updates already match
(and the secret is the one set last, as a fingerprint kept in the store: Telegram never shows
it); otherwise only the holder of ``telegram:set-webhook:<bot id>`` checks again and sets it.
Replicas never call ``deleteWebhook``.

Long polling has one consumer per bot token (Telegram ends a second ``getUpdates`` with 409,
and the two then steal updates from each other): the poller holds ``telegram:poller:<bot
id>``, renewed every third of its length; a second process refuses to start, saying who polls,
and a poller that loses its lease stops. A holder that is certainly dead (same host, its pid
gone: :func:`bot.storage.owners.is_dead`) is not waited for.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from aiogram import Bot

from bot.errors import ConfigError
from bot.storage import Storage, owners

__all__ = ["PollerLease", "ensure_webhook"]

log = logging.getLogger(__name__)

_KV_NAMESPACE = "telegram"
_SET_WEBHOOK_LEASE_SECONDS = 60.0


def _fingerprint(secret: str) -> str:
    return hashlib.sha256(b"parlour webhook secret:" + secret.encode()).hexdigest()[:16]


async def ensure_webhook(
    bot: Bot,
    store: Storage,
    *,
    bot_id: int,
    owner: str,
    url: str,
    secret: str,
    allowed_updates: Sequence[str],
    drop_pending_updates: bool,
    max_connections: int = 40,
) -> bool:
    """Make Telegram post to ``url`` (up to ``max_connections`` at once); True when this replica
    called ``setWebhook``."""
    wanted = _Wanted(url, secret, tuple(allowed_updates), max_connections)
    if await _webhook_matches(bot, store, bot_id, wanted):
        log.info("telegram webhook already set to this URL: setWebhook not called")
        return False
    name = f"telegram:set-webhook:{bot_id}"
    if not await store.acquire_lease(name, owner, _SET_WEBHOOK_LEASE_SECONDS):
        log.info("telegram webhook is being set by %s", _process(await store.lease_holder(name)))
        return False
    # Checked again under the lease: a replica that set it meanwhile released the lease.
    try:
        if await _webhook_matches(bot, store, bot_id, wanted):
            return False
        await bot.set_webhook(
            url=url,
            secret_token=secret,
            allowed_updates=list(allowed_updates),
            drop_pending_updates=drop_pending_updates,
            max_connections=max_connections,
        )
        await store.kv_set(_KV_NAMESPACE, f"webhook-secret:{bot_id}", _fingerprint(secret))
        log.info("telegram setWebhook called (this replica holds %s)", name)
        return True
    finally:
        await store.release_lease(name, owner)


@dataclass(frozen=True)
class _Wanted:
    url: str
    secret: str
    allowed: tuple[str, ...]
    max_connections: int


async def _webhook_matches(bot: Bot, store: Storage, bot_id: int, wanted: _Wanted) -> bool:
    info = await bot.get_webhook_info()
    if info.url != wanted.url or set(info.allowed_updates or ()) != set(wanted.allowed):
        return False
    if (info.max_connections or 40) != wanted.max_connections:  # Telegram's default: 40
        return False
    known = await store.kv_get(_KV_NAMESPACE, f"webhook-secret:{bot_id}")
    return bool(known == _fingerprint(wanted.secret))


def _process(owner: str | None) -> str:
    """``host:pid`` of an owner (``host:pid:random``), for messages."""
    if owner is None:
        return "another process"
    return owner.rsplit(":", 1)[0]


class PollerLease:
    """``telegram:poller:<bot id>``, held while this process long-polls."""

    def __init__(self, store: Storage, bot_id: int, owner: str, seconds: float) -> None:
        self.store = store
        self.name = f"telegram:poller:{bot_id}"
        self.owner = owner
        self.seconds = seconds
        self.lost: ConfigError | None = None

    async def acquire(self) -> None:
        """Hold the lease, or raise :class:`ConfigError` naming the process that holds it."""
        if await self.store.acquire_lease(self.name, self.owner, self.seconds):
            return
        holder = await self.store.lease_holder(self.name)
        if holder is not None and owners.is_dead(holder):
            # Killed a moment ago on this host (kill -9, a container restart): no need to wait
            # for its lease to run out.
            await self.store.release_lease(self.name, holder)
            if await self.store.acquire_lease(self.name, self.owner, self.seconds):
                log.info("telegram: poller lease of %s (gone) taken over", _process(holder))
                return
            holder = await self.store.lease_holder(self.name)
        raise ConfigError(
            f"another process ({_process(holder)}) is already long-polling this bot token; run one "
            "poller, or use webhook mode for several replicas (telegram.mode: webhook)"
        )

    async def keep(self, on_lost: Callable[[], object]) -> None:
        """Renew every third of the lease until cancelled; call ``on_lost`` if it goes."""
        while True:
            await asyncio.sleep(self.seconds / 3)
            try:
                held = await self.store.acquire_lease(self.name, self.owner, self.seconds)
            except Exception:
                log.exception("telegram: poller lease not renewed; retrying")
                continue
            if not held:
                holder = _process(await self.store.lease_holder(self.name))
                self.lost = ConfigError(
                    f"telegram: the poller lease went to another process ({holder}); "
                    "polling stopped so that two pollers never share this bot token"
                )
                log.error("%s", self.lost)
                on_lost()
                return

    async def release(self) -> None:
        try:
            await self.store.release_lease(self.name, self.owner)
        except Exception:
            log.exception("telegram: poller lease not released (it expires on its own)")
