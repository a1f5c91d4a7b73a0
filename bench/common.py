"""What every section shares: the table row, settings for an App on the fake, timing helpers."""

from __future__ import annotations

import asyncio
import os
import resource
import statistics
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.config import Settings, settings_from_mapping
from bot.context import ChatContext, ChatType

API_KEY = "sk-bench-parlour-0123456789abcdef"
MODEL = "gpt-4o-mini"


@dataclass(frozen=True, slots=True)
class Row:
    """One line of the result table; ``ok`` is None for figures that have no target."""

    section: str
    case: str
    figure: str
    target: str = ""
    ok: bool | None = None

    @property
    def verdict(self) -> str:
        if self.ok is None:
            return ""
        return "pass" if self.ok else "**FAIL**"


def make_settings(base_url: str, db_path: Path | str, **sections: dict[str, Any]) -> Settings:
    """Default settings (history max_turns 50 etc.) pointed at the fake and a database: a
    SQLite file (a ``Path``) or a ``storage.url`` (a ``str``: ``postgresql://...``)."""
    storage = {"url": db_path} if isinstance(db_path, str) else {"path": str(db_path)}
    raw: dict[str, Any] = {
        "llm": {"base_url": base_url, "api_key": API_KEY, "model": MODEL},
        "storage": storage,
        "plugins": [],  # the per-turn figures compare like with like: no tool definitions
        "memory": {"enabled": False},  # nor recall: section 6 measures memory on its own
        # No burst window: it is a deliberate wait before each answer (chat.burst_window, 2 s
        # by default); section 16 measures what it costs and saves.
        "chat": {"burst_window": 0},
        # One simulated user sends many messages back to back: no per-user rate limit here.
        # Budgets are checked as in a default deployment, just never reached.
        "limits": {
            "messages_per_minute": None,
            "one_in_flight": False,
            "daily_tokens_per_user": 10**15,
            "daily_tokens_per_chat": 10**15,
            "daily_tokens_total": 10**15,
        },
    }
    for name, values in sections.items():
        raw[name] = {**raw.get(name, {}), **values}
    return settings_from_mapping(raw)


def private(user_id: str, name: str = "") -> ChatContext:
    """A private chat with ``user_id``: its conversation key is ``telegram:<id>:u:<id>``."""
    return ChatContext("telegram", user_id, ChatType.PRIVATE, user_id, name or f"user{user_id}")


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def fmt_ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def fmt_us(seconds: float) -> str:
    return f"{seconds * 1_000_000:.0f} µs"


def fmt_count(n: int) -> str:
    """10^k for exact powers of ten, else the number with thousands separators."""
    k = len(str(n)) - 1
    return f"10^{k}" if n == 10**k and k >= 3 else f"{n:,}"


PROJECT = Path(__file__).resolve().parent.parent  # bench/ is not installed; children run here


@asynccontextmanager
async def fake_in_child(latency: float, *, prompt_cache: bool = True) -> AsyncIterator[str]:
    """The test kit's fake LLM in its own process (``python -m bot.testing.fake_llm``; without
    its prompt-cache emulation ``python -m bench.fake_child --no-prompt-cache``).

    Yields its base URL. Like a real model server, its CPU time is then not the bot's.
    """
    if prompt_cache:
        command = ["-m", "bot.testing.fake_llm", "--host", "127.0.0.1", "--port", "0"]
    else:
        command = ["-m", "bench.fake_child", "--no-prompt-cache"]
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        *command,
        "--latency",
        str(latency),
        stdout=asyncio.subprocess.PIPE,
        cwd=PROJECT,
    )
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), timeout=60)
        name, _, url = line.decode().strip().partition("=")
        if name != "OPENAI_BASE_URL" or not url:
            raise RuntimeError(f"the fake LLM did not start: {line!r}")
        yield url
    finally:
        if proc.returncode is None:
            proc.terminate()
        await proc.wait()


def current_rss_kib() -> int:
    """This process's resident set now (not its peak), from ``/proc/self/statm``."""
    with open("/proc/self/statm") as statm:
        resident_pages = int(statm.read().split()[1])
    return resident_pages * os.sysconf("SC_PAGE_SIZE") // 1024


def raise_fd_limit(wanted: int = 8192) -> None:
    """A 1,000-connection burst with the fake in this process needs >2,000 descriptors (children
    started after this inherit the limit)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
