"""Old home of the delivery records, kept importable: see :mod:`bot.storage.deliveries`."""

from bot.storage.deliveries import MAX_SHOWN_CHARS, DeliveryLog
from bot.storage.values import Delivery

__all__ = ["MAX_SHOWN_CHARS", "Delivery", "DeliveryLog"]
