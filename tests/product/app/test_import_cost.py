"""The public face is light: importing it loads no database, LLM, scheduler or platform library.
The command line is light too: ``--help``, ``check-config`` and ``history list`` load only what
they use (issue 27: ``--help`` took 2 s, importing the app and the OpenAI SDK first). And a
Telegram-only bot, once it polls, has loaded no library it does not use (issue 31: it idled with
SQLAlchemy, the Prometheus client, tiktoken and a 75 MiB encoding loaded).

Each check runs a fresh interpreter, so what other tests imported cannot hide a regression.
What is checked is which modules are loaded, never how long it took.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import bot
import bot.plugins
from bot.cli.collector import THRESHOLDS
from bot.config import settings_from_mapping
from bot.storage import open_storage
from bot.testing.fake_llm import FakeLLM
from bot.testing.fake_telegram import FakeTelegram
from tests.waits import EXIT, STARTUP

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


# -- a Telegram-only bot, polling ----------------------------------------------------------

UNUSED_BY_TELEGRAM = (  # what a Telegram-only bot with the default plugins never needs
    "discord",
    "mcp",
    "sqlalchemy",  # the scheduler's SQLite file is read with the standard library
    "prometheus_client",  # only a /metrics scrape renders the figures (the HTTP adapter)
    "aiohttp_jinja2",
    "jinja2",
    "psycopg",
    "asyncpg",
)
UNTIL_FIRST_REPLY = ("tiktoken", "markdown_it")  # the token counter, the reply renderer

# ``python -m bot run`` through runpy, as ``-m`` runs it; SIGUSR1 writes what it has loaded and
# how its garbage collector is set.
LOADED_ON_SIGNAL = """\
import gc, json, runpy, signal, sys
listing = sys.argv.pop(1)
def dump(signum, frame):
    state = {"modules": sorted(sys.modules), "gc": gc.isenabled(), "frozen": gc.get_freeze_count(),
             "thresholds": gc.get_threshold()}
    with open(listing + ".part", "w") as out:
        json.dump(state, out)
    import os
    os.replace(listing + ".part", listing)
signal.signal(signal.SIGUSR1, dump)
sys.argv = ["bot", *sys.argv[1:]]
runpy.run_module("bot", run_name="__main__", alter_sys=True)
"""


@pytest.mark.slow
async def test_a_telegram_only_bot_polls_without_the_libraries_it_does_not_use(
    fake_llm: FakeLLM, fake_telegram: FakeTelegram, tmp_path: Path
) -> None:
    tg = fake_telegram
    (tmp_path / "config.yaml").write_text(
        f"llm:\n  base_url: {fake_llm.base_url}\n"
        "storage:\n  path: bot.db\n"
        f"telegram:\n  enabled: true\n  token: {tg.token}\n  api_server: {tg.api_server}\n",
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PARLOUR_"))}
    env["PARLOUR_CONFIG"] = str(tmp_path / "config.yaml")
    listing = tmp_path / "loaded.json"
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        LOADED_ON_SIGNAL,
        str(listing),
        "run",
        cwd=tmp_path,
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        await tg.wait_until(
            lambda: any(c.method == "getUpdates" for c in tg.calls), timeout=STARTUP, what="a poll"
        )
        proc.send_signal(signal.SIGUSR1)
        await tg.wait_until(listing.exists, timeout=EXIT, what="the list of loaded modules")
        proc.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(proc.communicate(), timeout=EXIT)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, err.decode()[-2000:]
    state = json.loads(listing.read_text())
    loaded = set(state["modules"])
    assert {"bot.app", "adapters.telegram.adapter", "aiogram", "openai"} <= loaded  # it serves
    assert _among(loaded, UNUSED_BY_TELEGRAM + UNTIL_FIRST_REPLY) == []
    # The collector, paused while the start imported (bot.cli.collector), is on again, and what
    # the imports made is kept out of its walks, and it walks the young less often.
    assert state["gc"] is True
    assert state["frozen"] > 0
    assert tuple(state["thresholds"]) == THRESHOLDS


@pytest.mark.parametrize(
    "statement",
    [
        "from bot.metrics import Metrics\n"
        "m = Metrics()\n"
        "m.turn('telegram', 'answered'); m.llm_call('gpt-4o-mini', 0.4); m.queue_wait('llm', 0.1)",
        "from bot.llm.tokens import get_counter\nget_counter('gpt-4o-mini')",
    ],
)
def test_recording_metrics_and_making_a_counter_load_no_library_yet(statement: str) -> None:
    """Counting loads the Prometheus client only for a scrape, a counter its encoding only when
    it counts."""
    probe = f"{statement}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))\n"
    out = subprocess.run(
        [sys.executable, "-c", probe], check=True, capture_output=True, text=True, timeout=60
    )
    loaded = set(json.loads(out.stdout))
    assert _among(loaded, ("prometheus_client", "tiktoken")) == []


async def test_main_called_in_a_test_process_leaves_its_collector_alone(tmp_path: Path) -> None:
    """Only a process of its own pauses the collector and freezes its objects at start; a
    caller's objects (a test runner's) stay collectable."""
    import gc

    from tests.cli_harness import run_main

    (tmp_path / "config.yaml").write_text(f"storage:\n  path: {tmp_path / 'bot.db'}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PARLOUR_"))}
    env.update(PARLOUR_CONFIG=str(tmp_path / "config.yaml"), OPENAI_API_KEY="sk-test-0123456789")
    frozen = gc.get_freeze_count()
    code, _out, err = await run_main("chat", env=env, stdin="")  # serves the console, input ends
    assert code == 0, err
    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen
    assert gc.get_threshold() != THRESHOLDS
