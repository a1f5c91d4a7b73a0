"""Messages the bot starts itself (a reminder firing, a plugin's notice): the outbound seam.

Replies to a message go back through the adapter that received it. A scheduled job has no
incoming message, so each running adapter registers itself here as the sender for its
platform, and plugins post through :class:`Outbound` by platform and chat id.

It is also where a platform's refusals are counted (:meth:`Outbound.failed`): adapters report
their replies' send failures here, so ``parlour_platform_errors_total`` has one source.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from bot.metrics import Metrics

log = logging.getLogger(__name__)


class Sender(Protocol):
    async def send_text(self, chat_id: str, thread_id: str | None, text: str) -> None:
        """Post ``text`` (Markdown) in the chat (and thread/topic), never pinging anyone."""
        ...


class Outbound:
    def __init__(self, metrics: Metrics | None = None) -> None:
        self._senders: dict[str, Sender] = {}
        self._metrics = metrics
        self._pull_only: set[str] = set()  # platforms that can only answer, never post later

    def failed(self, platform: str, exc: BaseException) -> None:
        """A message ``platform`` did not take (a reply or a post): counted by error class."""
        if self._metrics is not None:
            self._metrics.platform_error(platform, exc)

    def register(self, platform: str, sender: Sender) -> None:
        self._senders[platform] = sender

    def unregister(self, platform: str, sender: Sender) -> None:
        if self._senders.get(platform) is sender:
            del self._senders[platform]

    def can_send(self, platform: str) -> bool:
        return platform in self._senders

    def declare_pull_only(self, platform: str) -> None:
        """``platform`` answers requests but can never post on its own (the HTTP API): a
        plugin must not promise a later message there (a reminder would never arrive)."""
        self._pull_only.add(platform)

    def can_post_later(self, platform: str) -> bool:
        """Whether a message scheduled for ``platform`` can ever be delivered (it may still
        wait for the platform's adapter to run)."""
        return platform not in self._pull_only

    async def send(self, platform: str, chat_id: str, thread_id: str | None, text: str) -> bool:
        """False (and a log line) when no adapter for ``platform`` is running or it failed."""
        sender = self._senders.get(platform)
        if sender is None:
            log.warning("no running adapter can post to platform=%s chat=%s", platform, chat_id)
            return False
        try:
            await sender.send_text(chat_id, thread_id, text)
        except Exception as exc:
            log.exception("posting failed platform=%s chat=%s", platform, chat_id)
            self.failed(platform, exc)
            return False
        return True
