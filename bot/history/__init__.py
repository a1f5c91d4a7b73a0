"""Conversation history: the pure trimming function. The durable store is :mod:`bot.storage`."""

from bot.history.trim import trim_history

__all__ = ["trim_history"]
