"""Chat commands as plugins declare them: what a command is (:class:`CommandInfo`), what its
handler returns (:class:`CommandResult`) and what a registry of them must do
(:class:`CommandRegistry`). The conversation's own registry, with the built-in commands and the
admin rules, is :class:`bot.conversation.commands.Commands`; plugins need only this.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from bot.context import ChatContext

__all__ = ["CommandHandler", "CommandInfo", "CommandRegistry", "CommandResult"]


@dataclass(frozen=True, slots=True)
class CommandResult:
    text: str
    ok: bool = True
    private: bool = False  # adapters show it only to the caller where they can (ephemeral)
    notify: bool = True  # False: nothing to post in the chat (a flood's repeated refusals)


@dataclass(frozen=True, slots=True)
class CommandInfo:
    name: str
    description: str
    admin_only: bool = False  # only the chat's admins may run it
    admin_aware: bool = False  # anyone may; admins get more (see another's data, chat totals)
    plugin: str | None = None  # the plugin module that added it (None: built in)

    @property
    def needs_admin_status(self) -> bool:
        """The adapter must tell the handler whether the caller is a chat admin."""
        return self.admin_only or self.admin_aware


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
