"""The slash command tree, built from the command declarations and two plain callables.

Every command the core declares (``platform.commands.infos``: the built-ins and whatever plugins
registered) becomes a slash command with its declared name and description, plus ``/ask
prompt:``, which the adapter answers itself with a streamed reply. ``/scope`` offers its three
choices; ``/reset``, ``/clear``, ``/history`` and ``/help`` take no argument; every other
command takes one optional ``text`` (``/persona text:`` sets the persona, without it shows it).
``/knowledge`` also takes an optional ``file`` (an attachment): ``text: add NAME`` with a
document adds it to that knowledge base (``adapters.discord.uploads``). ``/catchup``'s ``text``
is its span (``2h``, ``50``; empty: since the caller's last message).

A command declared ``admin_only`` carries ``default_member_permissions`` of Manage Messages
(:data:`adapters.discord.normalise.ADMIN_PERMISSIONS`, the permission that makes a member a
chat admin here), so Discord hides it from members. Server admins can change that, so
``Commands`` still refuses non-admins when the command runs. Discord applies no member
permissions in DMs: there a user runs ``/persona`` for their own private chat, as the rules of
``Commands`` allow.

This module knows nothing of the adapter: it is given ``ask(interaction, prompt)``,
``run(interaction, name, args)`` and ``upload(interaction, args, file)`` and calls them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any

import discord
from discord import app_commands

from adapters.discord.normalise import ADMIN_PERMISSIONS
from bot.conversation.catchup import CATCHUP_COMMAND
from bot.plugins.commands import CommandInfo

Ask = Callable[[discord.Interaction, str], Awaitable[None]]
"""Answer ``/ask prompt:`` (the adapter streams the reply)."""
Run = Callable[[discord.Interaction, str, str], Awaitable[None]]
"""Run the declared command ``name`` with ``args`` (the adapter asks ``Commands``)."""
Upload = Callable[[discord.Interaction, str, discord.Attachment | None], Awaitable[None]]
"""Add ``/knowledge text: add NAME file:`` to a knowledge base (the adapter's uploads)."""

ASK = CommandInfo("ask", "Ask me something")
_NO_ARGUMENT = frozenset({"reset", "clear", "history", "help"})
KNOWLEDGE = "knowledge"  # with knowledge bases declared it also takes a file (an upload)
_SCOPES = [app_commands.Choice(name=s, value=s) for s in ("chat", "user", "thread")]
_DESCRIPTION_LIMIT = 100  # Discord's limit for a command's description

SlashCommand = app_commands.Command[Any, ..., None]
Callback = Callable[..., Coroutine[Any, Any, None]]


def build_tree(
    client: discord.Client,
    infos: Sequence[CommandInfo],
    *,
    ask: Ask,
    run: Run,
    upload: Upload | None = None,
) -> app_commands.CommandTree[discord.Client]:
    tree: app_commands.CommandTree[discord.Client] = app_commands.CommandTree(client)
    for command in slash_commands(infos, ask=ask, run=run, upload=upload):
        tree.add_command(command)
    return tree


def slash_commands(
    infos: Sequence[CommandInfo], *, ask: Ask, run: Run, upload: Upload | None = None
) -> list[SlashCommand]:
    """``/ask`` first, then one slash command per declaration, in declaration order.
    ``upload`` given (knowledge bases declared): ``/knowledge`` also takes a ``file``."""
    commands = [_ask(ask)]
    commands += [_declared(info, run, upload) for info in infos if info.name != ASK.name]
    return commands


def _ask(ask: Ask) -> SlashCommand:
    @app_commands.describe(prompt="Your question or request")
    async def callback(
        interaction: discord.Interaction, prompt: app_commands.Range[str, 1, 4000]
    ) -> None:
        await ask(interaction, prompt)

    return _command(ASK, callback)


def _declared(info: CommandInfo, run: Run, upload: Upload | None) -> SlashCommand:
    name = info.name
    callback: Callback
    if name == KNOWLEDGE and upload is not None:
        callback = _knowledge(run, upload)
    elif name == CATCHUP_COMMAND.name:

        @app_commands.describe(
            text="2h: the last two hours; 50: the last 50 messages; empty: since your last message"
        )
        async def span(interaction: discord.Interaction, text: str = "") -> None:
            await run(interaction, name, text)

        callback = span
    elif name in _NO_ARGUMENT:

        async def bare(interaction: discord.Interaction) -> None:
            await run(interaction, name, "")

        callback = bare
    elif name == "scope":

        @app_commands.describe(scope="chat: everyone together; user: one history per person")
        @app_commands.choices(scope=_SCOPES)
        async def choose(
            interaction: discord.Interaction, scope: app_commands.Choice[str] | None = None
        ) -> None:
            await run(interaction, name, scope.value if scope else "")

        callback = choose
    else:

        async def with_text(interaction: discord.Interaction, text: str = "") -> None:
            await run(interaction, name, text)

        callback = with_text
    return _command(info, callback)


def _knowledge(run: Run, upload: Upload) -> Callback:
    """``/knowledge text: [file:]``: a file (or ``add NAME``) is an upload, the rest is the
    declared command."""

    @app_commands.describe(
        text="bind NAME, unbind NAME, or add NAME with a file",
        file="a document to add to the base (with text: add NAME)",
    )
    async def knowledge(
        interaction: discord.Interaction, text: str = "", file: discord.Attachment | None = None
    ) -> None:
        if file is not None or text.lower().split()[:1] == ["add"]:
            await upload(interaction, text, file)
        else:
            await run(interaction, KNOWLEDGE, text)

    return knowledge


def _command(info: CommandInfo, callback: Callback) -> SlashCommand:
    command: SlashCommand = app_commands.Command(
        name=info.name,
        description=info.description[:_DESCRIPTION_LIMIT] or info.name,
        callback=callback,
    )
    if info.admin_only:
        command.default_permissions = discord.Permissions(ADMIN_PERMISSIONS.value)
    return command
