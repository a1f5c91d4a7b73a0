"""The slash commands: ``/ask prompt:``, ``/reset``, ``/clear``, ``/history``, ``/scope``,
``/help``, and any command a plugin registered (with one optional ``text`` argument).

``/clear`` and ``/scope`` carry ``default_member_permissions`` of Manage Messages so Discord
hides them from members, but server admins can change that, so the adapter checks the
caller's permissions again when the command runs (``Commands`` refuses non-admins).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import discord
from discord import app_commands

if TYPE_CHECKING:
    from adapters.discord.adapter import DiscordAdapter

_BUILTIN = frozenset({"ask", "reset", "clear", "history", "scope", "help"})
_SCOPES = [app_commands.Choice(name=s, value=s) for s in ("chat", "user", "thread")]


def build_tree(
    client: discord.Client, adapter: DiscordAdapter
) -> app_commands.CommandTree[discord.Client]:
    tree: app_commands.CommandTree[discord.Client] = app_commands.CommandTree(client)

    @tree.command(name="ask", description="Ask me something")
    @app_commands.describe(prompt="Your question or request")
    async def ask(
        interaction: discord.Interaction, prompt: app_commands.Range[str, 1, 4000]
    ) -> None:
        await adapter.ask(interaction, prompt)

    @tree.command(name="reset", description="Start a fresh conversation (the old one is kept)")
    async def reset(interaction: discord.Interaction) -> None:
        await adapter.command(interaction, "reset")

    @tree.command(name="clear", description="Delete this channel's whole history (admins)")
    @app_commands.default_permissions(manage_messages=True)
    async def clear(interaction: discord.Interaction) -> None:
        await adapter.command(interaction, "clear")

    @tree.command(name="history", description="How much I remember here, and my token budget")
    async def history(interaction: discord.Interaction) -> None:
        await adapter.command(interaction, "history")

    @tree.command(name="scope", description="Share history per channel, per user or per thread")
    @app_commands.describe(scope="chat: everyone together; user: one history per person")
    @app_commands.choices(scope=_SCOPES)
    @app_commands.default_permissions(manage_messages=True)
    async def scope(
        interaction: discord.Interaction, scope: app_commands.Choice[str] | None = None
    ) -> None:
        await adapter.command(interaction, "scope", scope.value if scope else "")

    @tree.command(name="help", description="Show what I can do")
    async def help_(interaction: discord.Interaction) -> None:
        await adapter.command(interaction, "help")

    for info in adapter.app.commands.infos:
        if info.name not in _BUILTIN:
            tree.add_command(_plugin_command(adapter, info.name, info.description, info.admin_only))
    return tree


def _plugin_command(
    adapter: DiscordAdapter, name: str, description: str, admin_only: bool
) -> app_commands.Command[Any, ..., None]:
    async def run(interaction: discord.Interaction, text: str = "") -> None:
        await adapter.command(interaction, name, text)

    command: app_commands.Command[Any, ..., None] = app_commands.Command(
        name=name, description=description[:100] or name, callback=run
    )
    if admin_only:
        command.default_permissions = discord.Permissions(manage_messages=True)
    return command
