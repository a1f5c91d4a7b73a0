"""Per-chat preferences set by admins (the conversation scope, a system prompt override,
ambient mode on or off).

They override a ``chats:`` preset and the ``chat:`` defaults (:mod:`bot.conversation.presets`).

Kept in memory, loaded once at start: the conversation key of a message must be known without
awaiting, so that messages keep their arrival order up to the conversation's lock. Every change
is written through to the store before it is used. Only chats with an override are held (a
chat set back to the defaults is dropped), so memory follows the chats an admin configured, not
the chats that talk: it cannot be an LRU, since a forgotten override would silently change a
chat's conversation key.
"""

from __future__ import annotations

from dataclasses import replace

from bot.config import ChatSettings
from bot.context import Scope
from bot.storage.chat_settings import ChatSettingsStore
from bot.values import ChatPreferences

__all__ = ["Preferences"]

_NONE = ChatPreferences()  # no override: the configured defaults apply


class Preferences:
    def __init__(self, store: ChatSettingsStore, defaults: ChatSettings) -> None:
        self.store = store
        self.defaults = defaults
        self._prefs: dict[str, ChatPreferences] = {}

    def __len__(self) -> int:
        return len(self._prefs)

    async def load(self) -> None:
        loaded = await self.store.load_preferences()
        self._prefs = {key: prefs for key, prefs in loaded.items() if prefs != _NONE}

    def scope(self, chat_key: str) -> Scope:
        return self.scope_override(chat_key) or self.defaults.default_scope

    def system_prompt(self, chat_key: str) -> str:
        return self.system_prompt_override(chat_key) or self.defaults.system_prompt

    def scope_override(self, chat_key: str) -> Scope | None:
        """The scope an admin set in this chat (None: the preset's or the default applies)."""
        prefs = self._prefs.get(chat_key)
        return prefs.scope if prefs else None

    def system_prompt_override(self, chat_key: str) -> str | None:
        """The system prompt set with /persona (None: the preset's or the default applies)."""
        prefs = self._prefs.get(chat_key)
        return prefs.system_prompt if prefs else None

    def ambient_override(self, chat_key: str) -> bool | None:
        """Ambient mode as an admin set it here (None: the preset decides)."""
        prefs = self._prefs.get(chat_key)
        return prefs.ambient if prefs else None

    async def set_ambient(self, chat_key: str, on: bool | None) -> None:
        await self._save(chat_key, replace(self._current(chat_key), ambient=on))

    async def set_scope(self, chat_key: str, scope: Scope) -> None:
        await self._save(chat_key, replace(self._current(chat_key), scope=scope))

    async def set_system_prompt(self, chat_key: str, prompt: str | None) -> None:
        await self._save(chat_key, replace(self._current(chat_key), system_prompt=prompt or None))

    def moved(self, old_chat_key: str, new_chat_key: str) -> None:
        """The chat changed its id (the store has moved its rows): its preferences follow,
        unless the new id has its own already."""
        prefs = self._prefs.pop(old_chat_key, None)
        if prefs is not None:
            self._prefs.setdefault(new_chat_key, prefs)

    def _current(self, chat_key: str) -> ChatPreferences:
        return self._prefs.get(chat_key, ChatPreferences())

    async def _save(self, chat_key: str, prefs: ChatPreferences) -> None:
        await self.store.save_preferences(chat_key, prefs)
        if prefs == _NONE:
            self._prefs.pop(chat_key, None)
        else:
            self._prefs[chat_key] = prefs
