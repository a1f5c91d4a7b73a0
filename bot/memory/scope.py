"""Which remembered facts a conversation may recall: :class:`Audience`, the isolation rule of
long-term memory. It lives in :mod:`bot.storage.audience`, where the backends apply it."""

from bot.storage.audience import Audience
from bot.values import MemoryScope

__all__ = ["Audience", "MemoryScope"]
