"""Telegram on aiogram 3: groups, supergroups with forum topics, and private chats.

The entry point finds this package by name (``adapters.telegram``) and calls
:func:`create_adapter`; configuration lives under ``telegram:`` (see ``settings.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from adapters.telegram.adapter import TelegramAdapter
    from bot.app import App

__all__ = ["create_adapter"]


def create_adapter(app: App) -> TelegramAdapter:
    from adapters.telegram.adapter import TelegramAdapter

    return TelegramAdapter(app)
