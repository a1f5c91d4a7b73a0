"""Per-chat settings set by admins: the conversation scope, the system prompt (persona),
ambient mode on or off."""

from __future__ import annotations

from typing import Protocol

from bot.values import ChatPreferences

__all__ = ["ChatSettingsStore"]


class ChatSettingsStore(Protocol):
    """A small table kept in memory by the service.

    A backend must provide: ``save_preferences`` replaces the chat's whole row (fields left
    None mean "the default"), atomically; ``load_preferences`` returns every saved row; a
    migrated chat's row moves to its new key unless the new key already has one
    (:mod:`bot.storage.maintenance`). A clear keeps them: they are settings, not history.
    """

    async def load_preferences(self) -> dict[str, ChatPreferences]:
        """All per-chat overrides (a small table, kept in memory by the service)."""
        ...

    async def save_preferences(self, chat_key: str, prefs: ChatPreferences) -> None: ...
