"""What a new user meets first at the command line, each as they met it.

Local plugins load alike under the ``parlour`` script and ``python -m bot``, and a ``plugins/``
folder of one's own does not hide the built-in plugins; the console chat keeps INFO lines out of
the conversation and its /help names /exit; ``history`` alone explains itself; ``check-config``
names typos in a disabled section and unknown plugins; a new database logs one migration line.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

from bot.testing.fake_llm import FakeLLM
from tests.product.app.test_cli import SECRET, env_for, run_cli, run_cli_process, write_config

PARLOUR = Path(sys.executable).with_name("parlour")  # the console script pip installs

LOCAL_PLUGIN = """
from bot.plugins.commands import CommandResult


async def hello(ctx, args):
    return CommandResult("hello from the working directory")


def setup(plugin):
    plugin.add_command("hello", "Say hello (a local plugin)", hello)
"""

OWN_PLUGINS_FOLDER_PLUGIN = """
from bot.plugins.commands import CommandResult


async def weather(ctx, args):
    return CommandResult("sunny")


def setup(plugin):
    plugin.add_command("weather", "The weather (the user's plugins/ folder)", weather)
"""

PLUGINS = (
    "plugins:\n  - my_plugin\n  - plugins.weather\n  - plugins.clock\n  - plugins.calculator\n"
)


def project(tmp_path: Path) -> Path:
    """A user's project: config, a module of their own and a ``plugins/`` folder of their own."""
    write_config(tmp_path, PLUGINS)
    (tmp_path / "my_plugin.py").write_text(LOCAL_PLUGIN, encoding="utf-8")
    own = tmp_path / "plugins"
    own.mkdir()
    (own / "__init__.py").write_text('"""My plugins."""\n', encoding="utf-8")
    (own / "weather.py").write_text(OWN_PLUGINS_FOLDER_PLUGIN, encoding="utf-8")
    return tmp_path


async def launch(
    launcher: str, *args: str, env: dict[str, str], cwd: Path, stdin: str = ""
) -> tuple[int, str, str]:
    """A real process under either launcher: what is importable from where is the point."""
    program = "" if launcher == "python -m bot" else str(PARLOUR)
    return await run_cli_process(*args, env=env, stdin=stdin, cwd=cwd, program=program)


LAUNCHERS = ["python -m bot", "parlour"]


@pytest.mark.skipif(not PARLOUR.exists(), reason="the parlour console script is not installed")
@pytest.mark.parametrize("launcher", LAUNCHERS)
async def test_local_and_builtin_plugins_load_under_both_launchers(
    launcher: str, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    cwd = project(tmp_path)
    env = env_for(tmp_path, OPENAI_BASE_URL=fake_llm.base_url, OPENAI_API_KEY=SECRET)
    code, out, err = await launch(launcher, "check-config", env=env, cwd=cwd)
    assert code == 0, err
    assert "warning" not in err and "config OK" in out
    code, out, err = await launch(
        launcher, "chat", env=env, cwd=cwd, stdin="/hello\n/weather\nwhat time is it?\n"
    )
    assert code == 0, err
    assert "hello from the working directory" in out and "sunny" in out
    assert "plugin" not in err  # nothing failed to load
    tools = {tool["function"]["name"] for tool in fake_llm.chat_requests[-1].json["tools"]}
    assert {"current_time", "calculate"} <= tools  # the built-ins, despite ./plugins/


async def test_console_chat_logs_no_info_lines_and_help_names_exit(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    write_config(tmp_path)  # config.yaml's default logging.level is INFO
    env = env_for(tmp_path, OPENAI_BASE_URL=fake_llm.base_url, OPENAI_API_KEY=SECRET)
    code, out, err = await run_cli("chat", env=env, stdin="hi\n/help\n/exit\n")
    assert code == 0, err
    assert "echo: hi" in out
    assert "/exit" in out.split("Talk to me", 1)[1]
    assert " INFO " not in err, err


async def test_history_without_a_subcommand_shows_its_help(tmp_path: Path) -> None:
    code, _out, err = await run_cli("history", env=env_for(tmp_path))
    assert code == 2
    assert "required: history_command" not in err
    assert "list" in err and "export" in err and "usage:" in err
    assert "say which" in err


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (
            "telegram:\n  enabeld: true\n",
            "telegram is disabled, so `run` ignores this: unknown key telegram.enabeld",
        ),
        ("discord:\n  enabeld: true\n", "unknown key discord.enabeld"),
        (
            "plugins:\n  - plugins.no_such_plugin\n",
            "plugin plugins.no_such_plugin cannot be imported",
        ),
        (
            "plugins:\n  - module: plugins.calculator\n    settings: {precision: 3}\n",
            "takes no settings, got ['precision']",
        ),
    ],
)
async def test_check_config_warns_about_what_run_would_silently_skip(
    tmp_path: Path, text: str, words: str
) -> None:
    write_config(tmp_path, text)
    code, _out, err = await run_cli("check-config", env=env_for(tmp_path, OPENAI_API_KEY=SECRET))
    assert code == 0, err  # a disabled section and an optional plugin: warnings, not errors
    [warning] = [line for line in err.splitlines() if line.startswith("warning: ")]
    assert words in warning


async def test_a_new_database_logs_one_schema_migration_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from bot.storage.sqlite import SQLiteStore
    from bot.storage.sqlite.migrations import SCHEMA_VERSION

    caplog.set_level(logging.INFO, logger="bot.storage.sqlite.connection")
    for _ in range(2):  # the second open finds the schema current: nothing to say
        async with SQLiteStore(tmp_path / "fresh.db"):
            pass
    migrated = [r.getMessage() for r in caplog.records if "schema migrated" in r.getMessage()]
    assert len(migrated) == 1
    assert migrated[0].startswith(f"history schema migrated from v0 to v{SCHEMA_VERSION} ")
