"""The public face is deliberate: everything exported exists, and nothing private leaks."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import bot


def test_exported_members_exist_and_are_public() -> None:
    for name in bot.__all__:
        assert not name.startswith("_")
        assert getattr(bot, name) is not None
    assert sorted(bot.__all__) == bot.__all__


def test_core_never_imports_adapters_or_plugins() -> None:
    import ast
    from pathlib import Path

    root = Path(bot.__file__).parent
    for path in root.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            for name in names:
                assert not name.startswith(("adapters", "plugins")), f"{path}: imports {name}"


async def test_tool_context_calls_a_plugin_tool_directly() -> None:
    from bot.testing import MemoryKV, tool_context
    from plugins.calculator import calculate

    ctx = tool_context("calculator")
    assert await calculate(ctx, "2**10 * 3") == "2**10 * 3 = 3072"
    await ctx.store.set("k", 1)
    assert await ctx.store.get("k") == 1
    kv = MemoryKV()
    assert [await kv.kv_increment("p", "n") for _ in range(2)] == [1, 2]


# The faces are pinned, as httpx pins its own (tests/test_exported_members.py): a name added
# or dropped is a decision made here, in review, never a side effect of a refactor.
PINNED = {
    "bot": [
        "Adapter",
        "App",
        "ChatContext",
        "ChatEvent",
        "ChatService",
        "ChatType",
        "CommandResult",
        "Commands",
        "ConfigError",
        "ContextTooLongError",
        "Done",
        "LLMAuthError",
        "LLMBusyError",
        "LLMError",
        "LLMQuotaError",
        "LLMUnavailableError",
        "MemoryProvider",
        "ParlourError",
        "Reply",
        "Scope",
        "Settings",
        "TextDelta",
        "ToolCall",
        "ToolFinished",
        "ToolRunner",
        "ToolStarted",
        "UserFacingError",
        "load_settings",
        "settings_from_mapping",
        "trim_history",
    ],
    "bot.plugins": [
        "REMINDERS_KIND",
        "ChatContext",
        "ChatType",
        "CommandResult",
        "Memory",
        "MemoryStore",
        "Permission",
        "Plugin",
        "PluginError",
        "PluginStore",
        "Scheduler",
        "Scope",
        "ToolContext",
        "ToolDefinitionError",
        "ToolSpec",
        "UserFacingError",
        "display_name",
        "one_line_json",
        "tool",
    ],
    "bot.testing": [
        "FakeDiscord",
        "FakeLLM",
        "FakeTelegram",
        "MemoryKV",
        "RecordedRequest",
        "Script",
        "delay",
        "error",
        "hang",
        "held",
        "offline_settings",
        "quota_exhausted",
        "rate_limited",
        "reply",
        "run_command",
        "tool_calls",
        "tool_context",
    ],
}


@pytest.mark.parametrize("package", sorted(PINNED))
def test_public_faces_are_pinned_and_every_name_loads(package: str) -> None:
    module = importlib.import_module(package)
    assert module.__all__ == PINNED[package]  # in ruff's order (RUF022)
    for name in module.__all__:
        assert getattr(module, name) is not None, f"{package}.{name}"


def test_names_older_plugins_import_from_bot_plugins_still_load() -> None:
    import bot.plugins
    from bot.plugins.loader import ENTRY_POINT_GROUP, PluginManager
    from bot.plugins.registry import ToolRegistry

    assert bot.plugins.PluginManager is PluginManager
    assert bot.plugins.ToolRegistry is ToolRegistry
    assert bot.plugins.ENTRY_POINT_GROUP == ENTRY_POINT_GROUP


def test_built_in_plugins_import_only_what_a_third_party_plugin_may() -> None:
    """A built-in plugin is an example: it reaches the bot through ``bot`` and ``bot.plugins``
    alone, so anything it does a plugin author can do too."""
    allowed = {"bot", "bot.plugins"}
    root = Path(bot.__file__).parent.parent / "plugins"
    for path in sorted(root.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            for name in names:
                if name == "bot" or name.startswith("bot."):
                    assert name in allowed, (
                        f"{path.name} imports {name}: export it from bot.plugins"
                    )
