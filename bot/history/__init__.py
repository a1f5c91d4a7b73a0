"""Conversation history: the pure trimming function and the durable store."""

from bot.history.trim import trim_history

__all__ = ["trim_history"]
