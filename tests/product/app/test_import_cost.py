"""The public face is light: importing it loads no database, LLM, scheduler or platform library.

Each check runs a fresh interpreter, so what other tests imported cannot hide a regression.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import bot
import bot.plugins

HEAVY = ("aiosqlite", "openai", "apscheduler", "sqlalchemy", "aiohttp", "aiogram", "discord")


def _loaded_after(statement: str) -> list[str]:
    probe = (
        f"{statement}\n"
        "import json, sys\n"
        f"heavy = {HEAVY!r}\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & set(heavy))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], check=True, capture_output=True, text=True, timeout=60
    )
    loaded: list[str] = json.loads(out.stdout)
    return loaded


@pytest.mark.parametrize(
    "statement",
    [
        "import bot",
        "from bot.plugins import tool",
        "from bot.plugins import Permission, ToolSpec, ToolDefinitionError, tool",
        "from bot.plugins import Plugin, PluginStore, ToolContext, ToolRegistry",
        "from bot import ChatContext, ParlourError, Scope, UserFacingError, trim_history",
    ],
)
def test_public_face_imports_no_heavy_library(statement: str) -> None:
    assert _loaded_after(statement) == []


def test_a_heavy_name_still_loads_on_first_use() -> None:
    assert "openai" in _loaded_after("import bot; bot.ChatService")


@pytest.mark.parametrize("module", [bot, bot.plugins])
def test_every_lazy_export_resolves_to_its_defining_module(module: object) -> None:
    exports: dict[str, str] = getattr(module, "_EXPORTS")  # noqa: B009
    public = set(getattr(module, "__all__"))  # noqa: B009
    assert public <= set(exports)  # beyond __all__: names older code still imports (bot.plugins)
    for name, home in exports.items():
        value = getattr(module, name)
        assert getattr(sys.modules[home], name) is value
        assert name in dir(module)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = bot.no_such_name  # type: ignore[attr-defined]
    with pytest.raises(ImportError, match="no_such_name"):
        from bot.plugins import no_such_name  # type: ignore[attr-defined]  # noqa: F401
