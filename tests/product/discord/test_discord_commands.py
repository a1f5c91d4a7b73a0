"""Discord's slash commands come from the command declarations, and the tree never sees the adapter.

``admin_only`` decides ``default_member_permissions`` for built-in and plugin commands alike, so
Discord hides admin commands from members the same way Telegram's admin menu does.
"""

from __future__ import annotations

import ast
from pathlib import Path

import discord

from adapters.discord import commands as slash
from adapters.discord.normalise import ADMIN_PERMISSIONS, is_chat_admin
from bot.conversation.commands import BUILTIN_COMMANDS
from bot.plugins.commands import CommandInfo
from bot.testing.fake_discord import FakeDiscord
from bot.testing.fake_llm import FakeLLM
from tests.conftest import AppFactory
from tests.discord_harness import GUILD, running_discord, world
from tests.product.discord.test_discord import answered

MANAGE_MESSAGES = str(1 << 13)
PACKAGE = Path(slash.__file__).parent


async def test_registered_commands_follow_the_declarations(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    w = world(dc)
    plugins = ["tests.sample_plugins.moderation"]
    async with running_discord(make_app, dc, plugins=plugins) as (app, _):
        infos = app.commands.infos
        anyone = dc.slash(w.general, w.member, "rules")
        assert (await answered(dc, anyone))["content"] == "be kind"
        done = dc.slash(w.general, w.admin, "purge", {"text": "links"})
        assert (await answered(dc, done))["content"] == "purged links"
    registered = {c["name"]: c for c in dc.commands(GUILD)}
    assert set(registered) == {"ask", *(info.name for info in infos)}
    assert {"purge", "rules", "usage"} <= set(registered)
    for info in infos:
        command = registered[info.name]
        assert command["description"] == info.description
        expected = MANAGE_MESSAGES if info.admin_only else None
        assert command["default_member_permissions"] == expected, info.name
    assert registered["ask"]["default_member_permissions"] is None


async def test_members_cannot_invoke_an_admin_only_plugin_command(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    w = world(dc)
    async with running_discord(make_app, dc, plugins=["tests.sample_plugins.moderation"]):
        try:
            dc.slash(w.general, w.member, "purge")
        except ValueError as exc:
            assert "default_member_permissions" in str(exc)
        else:
            raise AssertionError("Discord let a member see /purge")
        dc.allow_command(w.guild, "purge")  # a server admin opened it: the policy still refuses
        answer = await answered(dc, dc.slash(w.general, w.member, "purge"))
        assert "admins" in answer["content"]


def test_the_tree_is_built_from_plain_callables() -> None:
    calls: list[tuple[str, ...]] = []

    async def ask(interaction: discord.Interaction, prompt: str) -> None:
        calls.append(("ask", prompt))

    async def run(interaction: discord.Interaction, name: str, args: str) -> None:
        calls.append((name, args))

    extra = CommandInfo("purge", "Remove spam", admin_only=True)
    built = slash.slash_commands([*BUILTIN_COMMANDS, extra], ask=ask, run=run)
    by_name = {command.name: command for command in built}
    assert list(by_name) == ["ask", *(info.name for info in BUILTIN_COMMANDS), "purge"]
    assert [p.name for p in by_name["ask"].parameters] == ["prompt"]
    assert [p.name for p in by_name["scope"].parameters] == ["scope"]
    assert [p.name for p in by_name["purge"].parameters] == ["text"]
    assert by_name["reset"].parameters == []
    for name in ("clear", "scope", "purge"):
        assert by_name[name].default_permissions == ADMIN_PERMISSIONS
    assert by_name["help"].default_permissions is None


def test_admin_is_manage_messages_or_administrator() -> None:
    assert is_chat_admin(discord.Permissions(manage_messages=True, send_messages=True))
    assert is_chat_admin(discord.Permissions(administrator=True))
    assert not is_chat_admin(discord.Permissions(send_messages=True, manage_channels=True))


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports, wherever the import stands (``TYPE_CHECKING`` too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def test_discord_package_has_no_import_cycle() -> None:
    modules = {
        f"adapters.discord.{p.stem}": p for p in PACKAGE.glob("*.py") if p.stem != "__init__"
    }
    graph = {name: _imports(path) & set(modules) for name, path in modules.items()}
    assert "adapters.discord.adapter" not in graph["adapters.discord.commands"]

    def visit(name: str, trail: tuple[str, ...]) -> None:
        assert name not in trail, " -> ".join((*trail, name))
        for imported in graph[name]:
            visit(imported, (*trail, name))

    for name in graph:
        visit(name, ())
