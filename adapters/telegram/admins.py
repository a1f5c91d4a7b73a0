"""Who is a Telegram chat admin: ``getChatMember``, trusted for a short while.

Telegram's half of ``bot.guardrails.admins``: for the commands that declare they need it
(admin_only or
admin_aware: ``/clear``, ``/scope``, ``/help``, ``/usage``, ``/memory``) and turns that may be
offered admin-only tools, the adapter asks here and sets ``ChatContext.is_admin`` from the
platform's own answer: the chat's creator or an administrator. The answer is cached briefly so a
burst of commands costs one request, yet a demoted admin loses the right within ``ttl`` seconds.
At most ``MAX_ENTRIES`` answers are kept (expired ones first out, then the least recently
used), so memory follows the admins asked about lately, not every member ever seen.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from aiogram import Bot
from aiogram.exceptions import AiogramError
from cachetools import TTLCache

log = logging.getLogger(__name__)

ADMIN_STATUSES = frozenset({"creator", "administrator"})
MAX_ENTRIES = 10_000  # (chat, user) answers kept


class AdminCache:
    def __init__(
        self, bot: Bot, ttl: float = 60.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.bot = bot
        self.ttl = ttl
        self.clock = clock
        self._known: TTLCache[tuple[int, int], bool] = TTLCache(MAX_ENTRIES, ttl, timer=clock)

    def __len__(self) -> int:
        return len(self._known)

    async def is_admin(self, chat_id: int, user_id: int) -> bool:
        key = (chat_id, user_id)
        hit = self._known.get(key)
        if hit is not None:
            return hit
        try:
            member = await self.bot.get_chat_member(chat_id=chat_id, user_id=user_id)
        except AiogramError as exc:
            log.warning("getChatMember failed chat=%s user=%s: %s", chat_id, user_id, exc)
            return False  # unknown is not admin: refusing is the safe answer
        admin = member.status in ADMIN_STATUSES
        if self.ttl > 0:
            self._known[key] = admin
        return admin

    def forget_chat(self, chat_id: int) -> None:
        for key in [k for k in self._known if k[0] == chat_id]:
            self._known.pop(key, None)
