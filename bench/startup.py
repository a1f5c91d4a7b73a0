"""Section 12: start-up (issues 27 and 31): how long a command takes to answer, the bot to poll,
and what a polling bot holds.

Each figure is the wall time of fresh ``python -m bot`` processes, the median of ``RUNS``:
``--help``; ``check-config``, ``history list`` and ``usage`` on a small config (the default
plugins, an ``http:`` section with its admin token from the environment) and its database;
and ``run`` with Telegram on (Telegram only: no HTTP, Discord or MCP), from the process's start
until the fake Bot API in this process sees its first ``getUpdates`` (one untimed run first
creates the database; each run is stopped with SIGTERM before the next). Interleaved with those
runs: an interpreter that imports the libraries such a bot must use, all together (``python -c
"import pydantic, yaml, aiosqlite, openai, aiogram"``), and the CPU time of both (which load on
the machine moves less than wall time). Issue 31's targets: start to first poll at most
``POLL_OVER_IMPORTS`` over that import; the polling bot's idle RSS at most ``OWN_RSS_MIB`` over
an interpreter that imports just those libraries, and no package it does not use loaded
(:mod:`bench.footprint`). For comparison too: an interpreter that imports nothing, and one per
library (``python -c "import X"``).

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
from bench.footprint import (
    IDLE,
    LIBRARIES,
    UNNEEDED,
    BotRun,
    LibrariesRun,
    bot_run,
    libraries_run,
    packages,
)
from bench.table import render
from bot.config import settings_from_mapping
from bot.storage import open_storage
from bot.testing.fake_llm import FakeLLM
from bot.testing.fake_telegram import FakeTelegram

S12 = "12. Start-up"
RUNS = 5
ADMIN_TOKEN = "bench-admin-token-0123456789abcdef"
COMMANDS = (("--help",), ("check-config",), ("history", "list"), ("usage",))
POLL_OVER_IMPORTS = 0.7  # seconds: start to first poll at most this over importing LIBRARIES
OWN_RSS_MIB = 50  # a Telegram-only bot's idle RSS over the libraries-only interpreter's


@dataclass(frozen=True, slots=True)
class StartupFigures:
    bare: float  # python -c pass
    libraries: dict[str, float]  # python -c "import X"
    commands: dict[str, float]  # "check-config": median wall seconds
    first_poll: float
    together: float  # python -c "import pydantic, yaml, aiosqlite, openai, aiogram"
    cpu_to_poll: float  # CPU seconds the bot used to its first poll, median of RUNS
    libraries_cpu: float  # CPU seconds of importing the libraries together, median of RUNS
    idle_rss_kib: int  # the polling bot's VmRSS, median of RUNS
    libraries_rss_kib: int  # the libraries-only interpreter's
    bot_modules: frozenset[str]
    libraries_modules: frozenset[str]


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PARLOUR_"))}
    bot_path = env.get("PYTHONPATH") or str(PROJECT)  # the tree to time (bench/ is not installed)
    env.update(PYTHONPATH=bot_path, PARLOUR_CONFIG=str(home / "config.yaml"), **extra)
    return env


def _wall(argv: list[str], env: dict[str, str], cwd: Path, runs: int = RUNS) -> float:
    """The median wall time of ``runs`` runs of ``argv``, each of which must exit 0."""
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, check=False)
        times.append(time.perf_counter() - began)
        if done.returncode != 0:
            raise RuntimeError(f"{argv} exited {done.returncode}: {done.stderr.decode()[-500:]}")
    return median(times)


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
    imports = f"import {', '.join(LIBRARIES)}"
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
        await bot_run(tg, env, home, idle=0)  # untimed: the first run after a config change
        together: list[float] = []
        runs: list[BotRun] = []
        alone: list[LibrariesRun] = []
        for _ in range(RUNS):  # interleaved: load on the machine weighs on both alike
            together.append(
                await asyncio.to_thread(_wall, [sys.executable, "-c", imports], env, home, 1)
            )
            runs.append(await bot_run(tg, env, home, idle=IDLE))
            alone.append(await asyncio.to_thread(libraries_run, env, home))
    return StartupFigures(
        bare,
        libraries,
        commands,
        first_poll=median([r.first_poll for r in runs]),
        together=median(together),
        cpu_to_poll=median([r.cpu for r in runs]),
        libraries_cpu=median([r.cpu for r in alone]),
        idle_rss_kib=int(median([r.rss_kib for r in runs])),
        libraries_rss_kib=int(median([r.rss_kib for r in alone])),
        bot_modules=runs[-1].modules,
        libraries_modules=alone[-1].modules,
    )


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
    over = f.first_poll - f.together
    rows += [
        Row(
            S12,
            f"`python -m bot run` (Telegram only, polling): process start to its first"
            f" `getUpdates`, median of {RUNS}",
            fmt_ms(f.first_poll),
        ),
        Row(
            S12,
            f'... `python -c "import {", ".join(LIBRARIES)}"`: what it must import,'
            " interleaved with those runs",
            fmt_ms(f.together),
        ),
        Row(
            S12,
            "... start to first poll over importing the required libraries",
            f"{over:+.2f} s",
            f"<= {POLL_OVER_IMPORTS} s",
            over <= POLL_OVER_IMPORTS,
        ),
    ]
    rows.append(
        Row(
            S12,
            "... the same in CPU time (user + system; load moves it less): to the first poll,"
            " importing the libraries, the difference",
            f"{f.cpu_to_poll:.2f} s, {f.libraries_cpu:.2f} s:"
            f" {f.cpu_to_poll - f.libraries_cpu:+.2f} s",
        )
    )
    rows += footprint_rows(f)
    rows.append(Row(S12, "for comparison: `python -c pass`", fmt_ms(f.bare)))
    for name, seconds in f.libraries.items():
        rows.append(Row(S12, f'... `python -c "import {name}"`', fmt_ms(seconds)))
    return rows


def _mib(kib: int) -> str:
    return f"{kib / 1024:.0f} MiB"


def footprint_rows(f: StartupFigures) -> list[Row]:
    """What the idle bot holds beyond the libraries it must use, and which packages it loaded
    that those libraries do not."""
    own = (f.idle_rss_kib - f.libraries_rss_kib) / 1024
    extra = sorted(packages(f.bot_modules) - packages(f.libraries_modules))
    unneeded = sorted(packages(f.bot_modules) & set(UNNEEDED))
    return [
        Row(
            S12,
            f"idle RSS of that bot, {IDLE:.0f} s after its first poll (VmRSS, median of {RUNS})",
            _mib(f.idle_rss_kib),
        ),
        Row(
            S12,
            "... RSS of an interpreter that imports only the required libraries",
            _mib(f.libraries_rss_kib),
        ),
        Row(
            S12,
            "... Parlour's own: the difference",
            f"{own:.0f} MiB",
            f"<= {OWN_RSS_MIB} MiB",
            own <= OWN_RSS_MIB,
        ),
        Row(
            S12,
            "... third-party packages the idle bot loaded beyond the libraries' own",
            ", ".join(extra) or "none",
        ),
        Row(
            S12,
            "... of which a Telegram-only bot needs none (" + ", ".join(UNNEEDED[:4]) + ", ...)",
            ", ".join(unneeded) or "none",
            "none",
            not unneeded,
        ),
    ]


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="parlour-bench-startup-") as tmp:
        figures = asyncio.run(measure_startup(Path(tmp)))
    print(render(startup_rows(figures)))


if __name__ == "__main__":
    main()
