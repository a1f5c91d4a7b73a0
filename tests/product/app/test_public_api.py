"""The public face is deliberate: everything exported exists, and nothing private leaks."""

from __future__ import annotations

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
