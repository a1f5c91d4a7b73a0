"""The public face is light: importing it loads no database, LLM, scheduler or platform library.
The command line is light too: ``--help``, ``check-config`` and ``history list`` load only what
they use (issue 27: ``--help`` took 2 s, importing the app and the OpenAI SDK first).

Each check runs a fresh interpreter, so what other tests imported cannot hide a regression.
What is checked is which modules are loaded, never how long it took.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import bot
import bot.plugins
from bot.config import settings_from_mapping
from bot.storage import open_storage

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


# -- the command line --------------------------------------------------------------------------

SERVING = (  # what only `run` / `chat` (or `doctor`'s LLM rows) need
    "bot.app",
    "bot.conversation.service",
    "bot.llm.client",
    "bot.scheduling.scheduler",
    "bot.mcp",
    "openai",
    "tiktoken",
    "apscheduler",
    "sqlalchemy",
    "aiohttp",
    "aiogram",
    "discord",
    "mcp",
)
CONFIG = (  # and what `--help` needs none of: it reads no config
    "bot.config",
    "bot.storage",
    "pydantic",
    "yaml",
    "aiosqlite",
    "asyncio",
)


def _loaded_by_cli(tmp_path: Path, *args: str) -> tuple[int, set[str]]:
    """Run ``python -m bot ARGS`` in ``tmp_path``: its exit status and every module it loaded."""
    listing = tmp_path / "modules.json"
    probe = (
        "import json, runpy, sys\n"
        "listing, *args = sys.argv[1:]\n"
        "sys.argv = ['bot', *args]\n"
        "status = None\n"
        "try:\n"
        "    runpy.run_module('bot', run_name='__main__', alter_sys=True)\n"
        "except SystemExit as exc:\n"
        "    status = exc.code\n"
        "with open(listing, 'w') as out:\n"
        "    json.dump({'status': status, 'modules': sorted(sys.modules)}, out)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PARLOUR_"))}
    env["PARLOUR_ADMIN_TOKEN"] = "an-admin-token-long-enough-0123"
    env["OPENAI_BASE_URL"] = "http://127.0.0.1:9/v1"  # never asked: no command here calls it
    subprocess.run(
        [sys.executable, "-c", probe, str(listing), *args],
        check=False,
        capture_output=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
    )
    found = json.loads(listing.read_text())
    return found["status"], set(found["modules"])


def _among(loaded: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(n for n in names if any(m == n or m.startswith(f"{n}.") for m in loaded))


@pytest.fixture
def deployment(tmp_path: Path) -> Path:
    """A small config (the default plugins, an HTTP section whose token comes from the
    environment) and its database, created as `run` would."""
    (tmp_path / "config.yaml").write_text(
        "storage:\n  path: parlour.db\n"
        'http:\n  enabled: true\n  admin_tokens: ["${PARLOUR_ADMIN_TOKEN}"]\n',
        encoding="utf-8",
    )

    async def create() -> None:
        async with open_storage(
            settings_from_mapping({"storage": {"path": str(tmp_path / "parlour.db")}})
        ):
            pass

    asyncio.run(create())
    return tmp_path


def test_help_loads_neither_the_config_nor_the_app(tmp_path: Path) -> None:
    status, loaded = _loaded_by_cli(tmp_path, "--help")
    assert status == 0
    assert _among(loaded, SERVING + CONFIG) == []


@pytest.mark.parametrize("command", [["check-config"], ["history", "list"], ["usage"]])
def test_config_and_storage_commands_load_no_app_llm_or_platform_library(
    deployment: Path, command: list[str]
) -> None:
    status, loaded = _loaded_by_cli(deployment, *command)
    assert status == 0
    assert "bot.config" in loaded  # it did read the config
    assert _among(loaded, SERVING) == []
