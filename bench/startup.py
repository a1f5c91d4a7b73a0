"""Section 12: start-up (issue 27): how long a command takes to answer, and the bot to poll.

Each figure is the wall time of fresh ``python -m bot`` processes, the median of ``RUNS``:
``--help``; ``check-config``, ``history list`` and ``usage`` on a small config (the default
plugins, an ``http:`` section with its admin token from the environment) and its database;
and ``run`` with Telegram on, from the process's start until the fake Bot API in this process
sees its first ``getUpdates`` (one untimed run first creates the database; each run is stopped
with SIGTERM before the next). For comparison: an interpreter that imports nothing, and one
that imports each library a polling bot needs (``python -c "import X"``).

``python -m bench.startup`` runs this section alone and prints its rows; the commands import
``bot`` from ``PYTHONPATH`` when it is set, so one tree can be timed against another.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.common import PROJECT, Row, fmt_ms, median
from bench.table import render
from bot.config import settings_from_mapping
from bot.storage import open_storage
from bot.testing.fake_llm import FakeLLM
from bot.testing.fake_telegram import FakeTelegram

S12 = "12. Start-up"
RUNS = 5
LIBRARIES = ("pydantic", "yaml", "aiosqlite", "openai", "aiogram")
ADMIN_TOKEN = "bench-admin-token-0123456789abcdef"
COMMANDS = (("--help",), ("check-config",), ("history", "list"), ("usage",))
FIRST_POLL_LIMIT = 120.0  # seconds; a run that does not poll by then is a failure, not a figure


@dataclass(frozen=True, slots=True)
class StartupFigures:
    bare: float  # python -c pass
    libraries: dict[str, float]  # python -c "import X"
    commands: dict[str, float]  # "check-config": median wall seconds
    first_poll: float


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PARLOUR_"))}
    bot_path = env.get("PYTHONPATH") or str(PROJECT)  # the tree to time (bench/ is not installed)
    env.update(PYTHONPATH=bot_path, PARLOUR_CONFIG=str(home / "config.yaml"), **extra)
    return env


def _wall(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    """The median wall time of ``RUNS`` runs of ``argv``, each of which must exit 0."""
    times = []
    for _ in range(RUNS):
        began = time.perf_counter()
        done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, check=False)
        times.append(time.perf_counter() - began)
        if done.returncode != 0:
            raise RuntimeError(f"{argv} exited {done.returncode}: {done.stderr.decode()[-500:]}")
    return median(times)


async def _until_first_poll(tg: FakeTelegram, env: dict[str, str], cwd: Path) -> float:
    polled = len([c for c in tg.calls if c.method == "getUpdates"])
    began = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        "run",
        env=env,
        cwd=cwd,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        polls: list[float] = []
        deadline = began + FIRST_POLL_LIMIT
        while not polls and proc.returncode is None and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
            polls = [c.at for c in tg.calls if c.method == "getUpdates"][polled:]
        if not polls:
            raise RuntimeError(f"the bot did not poll (exit status {proc.returncode})")
        return polls[0] - began
    finally:
        if proc.returncode is None:
            proc.terminate()
        await proc.wait()


def _write_config(home: Path, llm_url: str, tg: FakeTelegram | None = None) -> None:
    text = (
        f"llm:\n  base_url: {llm_url}\n"
        "storage:\n  path: parlour.db\n"
        'http:\n  admin_tokens: ["${PARLOUR_ADMIN_TOKEN}"]\n'
    )
    if tg is not None:
        text += f"telegram:\n  enabled: true\n  token: {tg.token}\n  api_server: {tg.api_server}\n"
    (home / "config.yaml").write_text(text, encoding="utf-8")


async def measure_startup(root: Path) -> StartupFigures:
    home = root / "startup"
    home.mkdir()
    bare = _wall([sys.executable, "-c", "pass"], _env(home), home)
    libraries = {
        name: _wall([sys.executable, "-c", f"import {name}"], _env(home), home)
        for name in LIBRARIES
    }
    async with FakeLLM() as llm, FakeTelegram() as tg:
        settings = settings_from_mapping({"storage": {"path": str(home / "parlour.db")}})
        async with open_storage(settings):  # the database a deployment that has run has
            pass
        _write_config(home, llm.base_url)
        env = _env(home, PARLOUR_ADMIN_TOKEN=ADMIN_TOKEN)
        commands = {
            " ".join(args): await asyncio.to_thread(
                _wall, [sys.executable, "-m", "bot", *args], env, home
            )
            for args in COMMANDS
        }
        _write_config(home, llm.base_url, tg)
        await _until_first_poll(tg, env, home)  # untimed: the first run after a config change
        first_poll = median([await _until_first_poll(tg, env, home) for _ in range(RUNS)])
    return StartupFigures(bare, libraries, commands, first_poll)


def startup_rows(f: StartupFigures) -> list[Row]:
    """Targets hold on a loaded machine too: ``--help`` reads no config, and the config and
    storage commands cost less than importing the LLM SDK alone (which they no longer do)."""
    sdk = f.libraries["openai"]
    rows = [
        Row(
            S12,
            f"`python -m bot --help`: wall time, median of {RUNS} processes",
            fmt_ms(f.commands["--help"]),
            "< 0.5 s",
            f.commands["--help"] < 0.5,
        ),
    ]
    for name in ("check-config", "history list", "usage"):
        rows.append(
            Row(
                S12,
                f"`python -m bot {name}` on a small config (default plugins, `http:` tokens)",
                fmt_ms(f.commands[name]),
                "< `import openai` alone",
                f.commands[name] < sdk,
            )
        )
    rows.append(
        Row(
            S12,
            "`python -m bot run` (Telegram, polling): process start to its first `getUpdates`",
            fmt_ms(f.first_poll),
        )
    )
    rows.append(Row(S12, "for comparison: `python -c pass`", fmt_ms(f.bare)))
    for name, seconds in f.libraries.items():
        rows.append(Row(S12, f'... `python -c "import {name}"`', fmt_ms(seconds)))
    return rows


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="parlour-bench-startup-") as tmp:
        figures = asyncio.run(measure_startup(Path(tmp)))
    print(render(startup_rows(figures)))


if __name__ == "__main__":
    main()
