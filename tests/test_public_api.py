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
