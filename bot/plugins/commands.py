"""Chat commands as plugins declare them: what a command is (:class:`CommandInfo`), what its
handler returns (:class:`CommandResult`) and what a registry of them must do
(:class:`CommandRegistry`). The conversation's own registry, with the built-in commands and the
admin rules, is :class:`bot.conversation.commands.Commands`; plugins need only this. The two
values live down with the platform seam (:mod:`bot.platform.commands`): adapters show them too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from bot.context import ChatContext
from bot.platform.commands import CommandInfo, CommandResult

__all__ = ["CommandHandler", "CommandInfo", "CommandRegistry", "CommandResult"]

CommandHandler = Callable[[ChatContext, str], Awaitable[CommandResult]]


class CommandRegistry(Protocol):
    """Where a plugin's commands go (the conversation's :class:`~bot.conversation.commands.
    Commands`)."""

    def register(self, info: CommandInfo, handler: CommandHandler | None = None) -> None:
        """Add a command to /help and the platforms' menus (ValueError: a bad or taken name)."""
        ...

    def unregister(self, name: str) -> None:
        """Take back a plugin's command."""
        ...
