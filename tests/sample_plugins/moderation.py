"""A plugin with an admin-only command and one for everyone (the platforms' menus follow them)."""

from __future__ import annotations

from bot.context import ChatContext
from bot.plugins import CommandResult, Plugin


async def purge(ctx: ChatContext, args: str) -> CommandResult:
    return CommandResult(f"purged {args or 'nothing'}")


async def rules(ctx: ChatContext, args: str) -> CommandResult:
    return CommandResult("be kind")


def setup(plugin: Plugin) -> None:
    plugin.add_command("purge", "Remove spam from this chat", purge, admin_only=True)
    plugin.add_command("rules", "This chat's rules", rules)
