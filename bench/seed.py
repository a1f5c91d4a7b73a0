"""Fill a history database fast: the real store creates the schema, stdlib sqlite3 writes rows.

Rows are written as the store itself would write answered turns (a ``turns`` row plus a user and
an assistant ``messages`` row), in big ``executemany`` transactions. Every second turn belongs to
the measured conversation, so its history is long; the others are spread over other private
chats, interleaved with it, so the ``(conv_key, id)`` index really has to skip past them.

Run as ``python -m bench.seed PATH MESSAGES`` (the benchmark does, in a child process, so the
seeder's page cache does not count towards the bot process's peak RSS).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from bot.storage.sqlite import SQLiteStore

MEASURED_USER = "1"
MEASURED_CHAT_KEY = f"telegram:{MEASURED_USER}"
MEASURED_KEY = f"{MEASURED_CHAT_KEY}:u:{MEASURED_USER}"  # private chat: always per user
OTHER_CONVERSATIONS = 1000
MODEL = "gpt-4o-mini"
_CHUNK_TURNS = 100_000
_BASE_TIME = 1_700_000_000.0

_TurnRow = tuple[int, str, str, str, str, str, str, str, str, int, int, float, float]


def _conversation(turn_id: int) -> tuple[str, str, str]:
    """(conv_key, chat_key, user_id) of a seeded turn: odd ids are the measured conversation."""
    if turn_id % 2 == 1:
        return MEASURED_KEY, MEASURED_CHAT_KEY, MEASURED_USER
    user = str(10_000 + (turn_id // 2) % OTHER_CONVERSATIONS)
    chat_key = f"telegram:{user}"
    return f"{chat_key}:u:{user}", chat_key, user


def _user_text(turn_id: int) -> str:
    return f"seeded turn {turn_id}: what do you think about topic {turn_id % 97} today?"


def _turn_rows(first: int, last: int) -> Iterator[_TurnRow]:
    """One row per turn, as the store writes it: the user's text and the answer's messages."""
    for turn_id in range(first, last + 1):
        conv_key, chat_key, user = _conversation(turn_id)
        at = _BASE_TIME + turn_id
        text = _user_text(turn_id)
        answer = json.dumps([{"role": "assistant", "content": f"echo: {text}"}])
        yield (
            turn_id, conv_key, chat_key, user, f"user{user}", text, answer,
            "answered", MODEL, 20, 20, at, at,
        )  # fmt: skip


async def _create_schema(path: Path) -> None:
    store = SQLiteStore(path)
    await store.open()
    await store.close()


def seed(path: Path, messages: int) -> None:
    """Create ``path`` with the real schema and ``messages`` stored messages (2 per turn)."""
    asyncio.run(_create_schema(path))
    turns = messages // 2
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=OFF")
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute("PRAGMA cache_size=-65536")  # 64 MiB, only in the seeding process
        for first in range(1, turns + 1, _CHUNK_TURNS):
            last = min(turns, first + _CHUNK_TURNS - 1)
            conn.execute("BEGIN")
            conn.executemany(
                "INSERT INTO turns (id, conv_key, chat_key, user_id, user_name, user_text,"
                " answer, status, model, prompt_tokens, completion_tokens, created_at,"
                " completed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                _turn_rows(first, last),
            )
            conn.execute("COMMIT")
        conn.execute("PRAGMA journal_mode=WAL")
    finally:
        conn.close()


def seed_in_child(path: Path, messages: int) -> float:
    """Seed in a child process; returns the seconds it took."""
    started = time.perf_counter()
    project = Path(__file__).resolve().parent.parent  # bench/ is not installed; run from here
    subprocess.run(
        [sys.executable, "-m", "bench.seed", str(path), str(messages)], check=True, cwd=project
    )
    return time.perf_counter() - started


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        sys.stderr.write("usage: python -m bench.seed PATH MESSAGES\n")
        return 2
    seed(Path(argv[0]), int(argv[1]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
