"""The vectors backfill: every memory and every conversation's old messages embedded in one pass
with progress (what the bot runs at start, and ``python -m bot memory embed``), against the
fake ``/v1/embeddings`` through the real SDK."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.config import EmbeddingSettings, LLMSettings
from bot.errors import LLMBadRequestError
from bot.llm.embeddings import Embedder
from bot.memory.backfill import backfill
from bot.memory.store import MemoryStore
from bot.storage.sqlite import SQLiteStore
from bot.testing.fake_llm import FakeLLM, error
from bot.testing.llm.script import Script
from bot.values import NewTurn
from tests.conftest import TEST_KEY, AppFactory, private
from tests.product.app.test_cli import SECRET, env_for, run_cli, write_config

MODEL = "text-embedding-3-small"
CONVERSATIONS = {"telegram:-1": 70, "telegram:-2": 3, "discord:9:u:4": 1}


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, int]] = []

    def start(self, table: str, total: int) -> None:
        self.events.append((table, total))

    def advance(self, rows: int) -> None:
        self.events.append(("+", rows))

    def finish(self) -> None:
        self.events.append(("done", 0))

    def advanced(self) -> int:
        return sum(n for what, n in self.events if what == "+")


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    async with SQLiteStore(tmp_path / "m.db") as opened:
        yield opened


@pytest.fixture
async def memories(fake_llm: FakeLLM, store: SQLiteStore) -> AsyncIterator[MemoryStore]:
    """Memories and messages stored before embeddings were on, and a store that embeds."""
    await stored_before_embeddings(store)
    embedder = Embedder(
        EmbeddingSettings(model=MODEL), LLMSettings(base_url=fake_llm.base_url, api_key=TEST_KEY)
    )
    made = MemoryStore(store, embedder)
    try:
        yield made
    finally:
        await made.aclose()
        await embedder.close()


async def stored_before_embeddings(store: SQLiteStore) -> None:
    for key, count in CONVERSATIONS.items():
        chat = key.rsplit(":u:", 1)[0]
        for i in range(count):
            await store.begin_turn(NewTurn(key, chat, "5", "Mei", f"message {i} of {key}"))
    await MemoryStore(store).add(private("5", "Mei"), "Mei is allergic to peanuts")


async def vector_counts(store: SQLiteStore) -> dict[str, int]:
    counts = {}
    for key in CONVERSATIONS:
        found = await store.turn_vectors(key, MODEL, 256, before_turn_id=10**9, limit=10**4)
        counts[key] = len(found)
    return counts


async def test_backfill_embeds_everything_once_with_progress(
    fake_llm: FakeLLM, store: SQLiteStore, memories: MemoryStore
) -> None:
    progress = Recorder()
    counts = await backfill(memories, await store.conversations(), progress)
    assert (counts.memories, counts.messages, counts.conversations) == (1, 74, 3)
    assert progress.events[0] == ("old messages", 74) and progress.events[-1] == ("done", 0)
    assert progress.advanced() == 74
    assert await vector_counts(store) == CONVERSATIONS
    embedded = [t for r in fake_llm.embedding_requests for t in r.json["input"]]
    assert len(embedded) == 75 and len(set(embedded)) == 75  # nothing embedded twice

    again = Recorder()
    counts = await backfill(
        MemoryStore(store, memories.embedder), await store.conversations(), again
    )
    assert (counts.memories, counts.messages) == (0, 0) and again.advanced() == 74
    # the memory; 64 + 6 of the first chat; one each for the others; then nothing more
    assert len(fake_llm.embedding_requests) == 5


async def test_backfill_stops_on_a_failing_endpoint_and_keeps_what_it_filled(
    fake_llm: FakeLLM, store: SQLiteStore, memories: MemoryStore
) -> None:
    # the memory, the discord chat's message, 64 of telegram:-1's, then a 400 (keys in order)
    fake_llm.script_embeddings(Script(), Script(), Script(), error(400))
    progress = Recorder()
    with pytest.raises(LLMBadRequestError):
        await backfill(memories, await store.conversations(), progress)
    assert progress.events[-1] == ("done", 0)  # the bar ends its line even on failure
    assert sum((await vector_counts(store)).values()) == 65  # what was filled stays
    counts = await backfill(memories, await store.conversations(), Recorder())
    assert counts.messages == 9 and await vector_counts(store) == CONVERSATIONS


async def test_the_bot_backfills_in_the_background_at_start(
    make_app: AppFactory, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    async with make_app() as app:  # history from before embeddings were on
        await app.service.chat(private("5", "Mei"), "my bike is green")
    async with make_app(memory={"embeddings": {"model": MODEL}}) as app:
        await app.wait_for_backfill()
    embedded = [t for r in fake_llm.embedding_requests for t in r.json["input"]]
    assert "my bike is green" in embedded


async def test_memory_embed_command(fake_llm: FakeLLM, tmp_path: Path) -> None:
    env = env_for(tmp_path, OPENAI_BASE_URL=fake_llm.base_url, OPENAI_API_KEY=SECRET)
    write_config(tmp_path)
    await run_cli("chat", env=env, stdin="my bike is green\n")
    code, _out, err = await run_cli("memory", "embed", env=env)
    assert code == 2 and "memory.embeddings" in err and "local: true" in err
    write_config(tmp_path, f"memory:\n  embeddings:\n    model: {MODEL}\n")
    code, out, err = await run_cli("memory", "embed", env=env)
    assert code == 0, err
    assert out == f"0 memories and 1 old message in 1 conversation embedded with {MODEL}\n"
    assert [r.json["input"] for r in fake_llm.embedding_requests] == [["my bike is green"]]
    code, out, _ = await run_cli("memory", "embed", env=env)
    assert code == 0 and out.startswith("0 memories and 0 old messages")
    code, _out, err = await run_cli("memory", env=env)
    assert code == 2 and "memory embed" in err
