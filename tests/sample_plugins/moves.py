"""Keeps a note of every chat move it is told of (``plugin.on_chat_moved``), then fails: the
plugins after it must be told all the same."""

from __future__ import annotations

from bot.plugins import Plugin


def setup(plugin: Plugin) -> None:
    async def moved(old_chat_key: str, new_chat_key: str) -> None:
        await plugin.store.set(f"moved:{old_chat_key}", new_chat_key)
        raise RuntimeError("the moves plugin trips over its own records")

    plugin.on_chat_moved(moved)
