"""What a command is (:class:`CommandInfo`) and what running one gives back
(:class:`CommandResult`): values that cross the platform seam, since adapters list commands in
their menus and show the results. Plugins declare them through :mod:`bot.plugins.commands`.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CommandInfo", "CommandResult"]


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
    groups_only: bool = False  # means nothing in a private chat: the handler says so there
    plugin: str | None = None  # the plugin module that added it (None: built in)

    @property
    def needs_admin_status(self) -> bool:
        """The adapter must tell the handler whether the caller is a chat admin."""
        return self.admin_only or self.admin_aware
