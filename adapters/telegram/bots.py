"""Several Telegram bots in one deployment (``telegram.bots``), and what they tell each other.

Each bot account runs its own :class:`~adapters.telegram.adapter.TelegramAdapter` under a
platform name of its own: ``telegram`` for ``telegram.token``, ``telegram.NAME`` for each entry
of ``telegram.bots``. So each has its own chats (``telegram.helper:-100``), history, usage and
buckets, and ``chats:`` presets matching ``telegram.helper:*`` give it its own persona, model,
plugins and knowledge bases; access lists and bot admins written for ``telegram`` cover it too
(:func:`bot.context.platform_family`).

Telegram never delivers a bot's messages to another bot. So when one of our bots answers in a
group, the others are *told* (:mod:`bot.platform.siblings`): the answer is kept as
overheard context in each sibling's conversation of that chat, under the answering bot's name,
through the shared database. Every replica configures the same bots, so this works whichever
process runs which bot. Nothing told is ever answered: it arrives as context, never as a
message, and a message from a bot is never answered (``Incoming.from_bot``), so two bots
cannot loop.
"""

from __future__ import annotations

from adapters.telegram.adapter import TelegramAdapter
from adapters.telegram.normalise import PLATFORM
from adapters.telegram.settings import TelegramSettings
from bot.platform.seam import Platform
from bot.platform.siblings import SiblingAdapters, accounts

__all__ = ["TelegramBots", "adapters_for"]


def adapters_for(platform: Platform, config: TelegramSettings) -> list[TelegramAdapter]:
    """One adapter per bot account: ``telegram.token``'s, then each of ``telegram.bots``."""
    return [
        TelegramAdapter(platform, settings=one.settings, name=one.name, siblings=one.siblings)
        for one in accounts(PLATFORM, config, config.bots, config.for_bot)
    ]


class TelegramBots(SiblingAdapters[TelegramAdapter]):
    """Several bot accounts run as one adapter (:class:`bot.platform.siblings.SiblingAdapters`)."""

    def __init__(self, adapters: list[TelegramAdapter]) -> None:
        super().__init__(PLATFORM, adapters)
