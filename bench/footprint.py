"""Section 12's idle footprint (issue 31): what a Telegram-only bot holds once it polls, beside
an interpreter that imports only the libraries such a bot must use.

A bot run here is ``python -m bot run`` through a small wrapper (``PROBE``, ``runpy`` as ``-m``
does) that writes its ``sys.modules`` to a file on SIGUSR1. The wrapper is timed from the
process's start to the first ``getUpdates`` the fake Bot API sees, and the CPU time it had used
by then is read from ``/proc/PID/stat`` (a figure that load on the machine moves far less than
wall time). ``IDLE`` seconds later (the bot long-polls an empty queue meanwhile) its ``VmRSS``
is read from ``/proc/PID/status``, its modules are dumped, and it is stopped with SIGTERM. The
libraries-only process imports ``LIBRARIES`` in one interpreter and reports its own ``VmRSS``,
CPU time and modules. The difference of the two RSS figures is Parlour's own; the third-party
packages the bot has loaded beyond the libraries' own imports are listed, so one that it need
not load shows by name.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from bot.testing.fake_telegram import FakeTelegram

LIBRARIES = ("pydantic", "yaml", "aiosqlite", "openai", "aiogram")
IDLE = 3.0  # seconds the bot idles after its first poll before its RSS is read
FIRST_POLL_LIMIT = 120.0  # seconds; a run that does not poll by then is a failure, not a figure
# Packages a Telegram-only bot with the default plugins does not use while it idles (issue 31
# names them; markdown_it and tiktoken load with the first reply). apscheduler is not among
# them: the bot's own housekeeping jobs and the reminders plugin run on it.
UNNEEDED = (
    "discord",
    "mcp",
    "sqlalchemy",
    "prometheus_client",
    "jinja2",
    "markdown_it",
    "tiktoken",
    "starlette",
    "uvicorn",
    "sse_starlette",
    "jsonschema",
    "asyncpg",
    "psycopg",
    "numpy",
)

PROBE = """\
import os, runpy, signal, sys
def _dump(signum, frame):
    import json
    with open(os.environ["PARLOUR_BENCH_MODULES"], "w") as out:
        json.dump(sorted(sys.modules), out)
signal.signal(signal.SIGUSR1, _dump)
sys.argv = ["bot", *sys.argv[1:]]
runpy.run_module("bot", run_name="__main__", alter_sys=True)
"""

LIBRARIES_PROBE = f"""\
import os
import {", ".join(LIBRARIES)}
cpu = sum(os.times()[:2])
import json, sys
with open("/proc/self/status") as status:
    rss = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
print(json.dumps({{"rss_kib": rss, "cpu": cpu, "modules": sorted(sys.modules)}}))
"""


@dataclass(frozen=True, slots=True)
class BotRun:
    first_poll: float  # seconds from the process's start to its first getUpdates
    cpu: float  # CPU seconds (user + system) it had used by then
    rss_kib: int  # VmRSS after IDLE seconds of polling
    modules: frozenset[str]


@dataclass(frozen=True, slots=True)
class LibrariesRun:
    rss_kib: int
    cpu: float  # CPU seconds (user + system) to import the libraries
    modules: frozenset[str]


def rss_of(pid: int) -> int:
    """``VmRSS`` of process ``pid`` now, in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for process {pid}")


def cpu_of(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def packages(modules: Iterable[str]) -> set[str]:
    """Top-level third-party packages among ``modules`` (the standard library and Parlour's own
    packages left out)."""
    own = {"bot", "adapters", "plugins", "__main__", "__mp_main__"}
    tops = {name.partition(".")[0] for name in modules}
    return {t for t in tops if t not in sys.stdlib_module_names and t not in own and t[0] != "_"}


def libraries_run(env: dict[str, str], cwd: Path) -> LibrariesRun:
    done = subprocess.run(
        [sys.executable, "-c", LIBRARIES_PROBE],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    found = json.loads(done.stdout)
    return LibrariesRun(int(found["rss_kib"]), float(found["cpu"]), frozenset(found["modules"]))


async def bot_run(tg: FakeTelegram, env: dict[str, str], cwd: Path, *, idle: float) -> BotRun:
    """One ``run`` of the bot in ``cwd`` (its config.yaml) until its first poll; with ``idle``
    it then polls that long before its RSS and modules are read."""
    listing = cwd / "modules.json"
    listing.unlink(missing_ok=True)
    polled = len([c for c in tg.calls if c.method == "getUpdates"])
    began = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        PROBE,
        "run",
        env={**env, "PARLOUR_BENCH_MODULES": str(listing)},
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
        cpu = cpu_of(proc.pid)
        if not idle:
            return BotRun(polls[0] - began, cpu, 0, frozenset())
        await asyncio.sleep(idle)
        rss = rss_of(proc.pid)
        proc.send_signal(signal.SIGUSR1)
        for _ in range(1000):
            if listing.exists() and listing.stat().st_size:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)  # the dump is one write; let it finish
        modules = frozenset(json.loads(listing.read_text()))
        return BotRun(polls[0] - began, cpu, rss, modules)
    finally:
        if proc.returncode is None:
            proc.terminate()
        await proc.wait()
