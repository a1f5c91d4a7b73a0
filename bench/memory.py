"""Section 6: long-term memory. Does a fact said long ago reach the prompt, at what prompt cost,
and how fast is a memory search in a big database?

* **Fact retention**: one private conversation on the latency-0 fake in this process, through
  ``App`` and ``ChatService.chat`` with a 2,000-token history budget: 50 facts in the first 50
  turns, 200 turns of chit-chat that never mention them, then one natural question per fact in
  the same conversation. A question counts when the request the fake received carries the
  fact's distinctive word (the question itself never does).
* **Prompt size**: ``usage.prompt_tokens`` of every turn of that run, and the history part of
  each request (everything between the system messages and the new user message).
* **Recall of facts trimmed by the token budget**: facts said first, then long turns, so that
  ``history.max_tokens`` (not ``history.max_turns``: every turn stays loaded) pushes the facts
  out of the prompt; then a question per fact. It counts when the fact is in the recalled
  block (questions whose fact was still in the history sent are counted apart). Recall only
  reaches turns older than the prompt's oldest: this needs the service to pass the first turn
  *sent*, not the first loaded (issue 15, item 3).
* **Search at 10^5 memories**: memories spread over 1,000 private chats, written by the real
  ``MemoryStore.add`` (one transaction each, as the bot writes them) in a child process that
  runs while the conversation above is measured; then timed ``MemoryStore.search`` calls.

Run ``python -m bench.memory seed PATH MEMORIES CHATS`` to seed a database alone.
"""

from __future__ import annotations

import asyncio
import random
import re
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.common import make_settings, private
from bench.memory_texts import FACTS, filler, long_filler, memory_text, query_text
from bot.app import App
from bot.config import MemorySettings
from bot.context import Scope
from bot.llm.tokens import get_counter
from bot.memory.store import MemoryStore
from bot.prompt.safety import RECALLED_HEADER
from bot.storage.sqlite import SQLiteStore
from bot.testing.fake_llm import FakeLLM

HISTORY_BUDGET = 2000  # history.max_tokens of the retention run
FILLER_TURNS = 200
SAMPLE_TURNS = (10, 50, 100, 200, 250)
SEARCH_MEMORIES = 100_000
SEARCH_CHATS = 1000
SEARCH_CALLS = 500
SEARCH_WARMUP = 20
RETENTION_USER = "4242"
TRIMMED_TURNS = 30  # long turns after the facts in the budget-trimmed run
TRIMMED_BUDGET = 1500  # history.max_tokens of that run: about six long turns
TRIMMED_MAX_TURNS = 150  # history.max_turns of that run: every one of its 130 turns loaded
PROJECT = Path(__file__).resolve().parent.parent  # bench/ is not installed; children run here


@dataclass(slots=True)
class RetentionFigures:
    questions: int = 0
    carried: int = 0
    missed: list[str] = field(default_factory=list)  # the distinctive text of each miss
    prompt_tokens: list[int] = field(default_factory=list)  # usage, one per turn, turn 1 first
    history_tokens: list[int] = field(default_factory=list)  # history part of each request
    embedding_requests: int = 0  # /embeddings calls the fake received

    @property
    def share(self) -> float:
        return self.carried / self.questions if self.questions else float("nan")


@dataclass(slots=True)
class TrimmedFigures:
    """Facts the token budget (not the turn count) pushed out of the prompt, asked about."""

    questions: int = 0
    recalled: int = 0  # the fact came back in the recalled block
    still_sent: int = 0  # the fact was still in the history sent: not a trimmed case
    missed: list[str] = field(default_factory=list)
    loaded_turns: int = 0  # turns stored when the last question was asked (<= max_turns)
    max_turns: int = 0

    @property
    def share(self) -> float:
        trimmed = self.questions - self.still_sent
        return self.recalled / trimmed if trimmed else float("nan")


@dataclass(frozen=True, slots=True)
class SearchFigures:
    memories: int
    chats: int
    seed_s: float
    calls: int
    p50_s: float
    p95_s: float
    hit_share: float  # searches that returned at least one memory


@dataclass(frozen=True, slots=True)
class EmbeddingFailure:
    error: str  # the embeddings run raised: the section still prints the rest


@dataclass(frozen=True, slots=True)
class MemoryFigures:
    retention: RetentionFigures
    search: SearchFigures
    with_embeddings: RetentionFigures | EmbeddingFailure | None = None
    trimmed: TrimmedFigures | None = None


def embeddings_configurable() -> bool:
    """Whether this version of the bot has ``memory.embeddings.model`` to set."""
    field_info = MemorySettings.model_fields.get("embeddings")
    settings_type = field_info.annotation if field_info is not None else None
    return isinstance(settings_type, type) and "model" in getattr(settings_type, "model_fields", {})


def _carries(text: str, needle: str) -> bool:
    return re.search(rf"\b{re.escape(needle)}\b", text, re.IGNORECASE) is not None


def _history_tokens(messages: list[dict[str, object]]) -> int:
    counter = get_counter("gpt-4o-mini")
    lead = 0
    while lead < len(messages) and messages[lead].get("role") == "system":
        lead += 1
    return counter.count_messages(messages) - counter.count_messages(
        [*messages[:lead], messages[-1]]
    )


async def measure_retention(
    db_path: Path, *, memory: dict[str, object] | None = None
) -> RetentionFigures:
    """Facts, filler, then a question per fact, all in one private conversation."""
    # The bench's own data must not give answers away: no question or filler names a fact.
    said = [question for _, question, _ in FACTS] + [filler(n) for n in range(FILLER_TURNS)]
    for text in said:
        if any(_carries(text, needle) for _, _, needle in FACTS):
            raise ValueError(f"{text!r} names a fact")
    figures = RetentionFigures()
    async with FakeLLM() as fake:
        settings = make_settings(
            fake.base_url,
            db_path,
            history={"max_tokens": HISTORY_BUDGET},
            memory={"enabled": True, **(memory or {})},
        )
        ctx = private(RETENTION_USER, "Sam")
        async with App(settings) as app:

            async def turn(text: str) -> list[dict[str, object]]:
                reply = await app.service.chat(ctx, text)
                figures.prompt_tokens.append(reply.usage.prompt_tokens)
                messages: list[dict[str, object]] = fake.chat_requests[-1].json["messages"]
                figures.history_tokens.append(_history_tokens(messages))
                figures.embedding_requests += len(fake.embedding_requests)
                fake.requests.clear()
                return messages

            for fact, _, _ in FACTS:
                await turn(fact)
            for n in range(FILLER_TURNS):
                await turn(filler(n))
            for _, question, needle in FACTS:
                messages = await turn(question)
                prompt = "\n".join(str(m.get("content", "")) for m in messages)
                figures.questions += 1
                if _carries(prompt, needle):
                    figures.carried += 1
                else:
                    figures.missed.append(needle)
    return figures


async def measure_trimmed_recall(db_path: Path) -> TrimmedFigures:
    """Facts, long turns the token budget trims while ``max_turns`` still loads them, then a
    question per fact: is the fact recalled once the prompt no longer holds it?"""
    facts = FACTS
    said = [question for _, question, _ in facts]
    said += [long_filler(n) for n in range(TRIMMED_TURNS)]
    for text in said:
        if any(_carries(text, needle) for _, _, needle in facts):
            raise ValueError(f"{text!r} names a fact")
    figures = TrimmedFigures()
    async with FakeLLM() as fake:
        settings = make_settings(
            fake.base_url,
            db_path,
            history={"max_tokens": TRIMMED_BUDGET, "max_turns": TRIMMED_MAX_TURNS},
            memory={"enabled": True},
        )
        figures.max_turns = settings.history.max_turns
        if 2 * len(facts) + TRIMMED_TURNS > figures.max_turns:
            raise ValueError("the run must stay within history.max_turns")
        ctx = private(RETENTION_USER, "Sam")
        async with App(settings) as app:
            for fact, _, _ in facts:
                await app.service.chat(ctx, fact)
            for n in range(TRIMMED_TURNS):
                await app.service.chat(ctx, long_filler(n))
            for _, question, needle in facts:
                await app.service.chat(ctx, question)
                messages: list[dict[str, object]] = fake.chat_requests[-1].json["messages"]
                fake.requests.clear()
                recalled = [
                    str(m.get("content", ""))
                    for m in messages
                    if str(m.get("content", "")).startswith(RECALLED_HEADER)
                ]
                sent = [str(m.get("content", "")) for m in messages[:-1]]
                figures.questions += 1
                if any(_carries(text, needle) for text in sent if text not in recalled):
                    figures.still_sent += 1
                elif any(_carries(text, needle) for text in recalled):
                    figures.recalled += 1
                else:
                    figures.missed.append(needle)
            figures.loaded_turns = 2 * len(facts) + TRIMMED_TURNS
    return figures


# -- 10^5 memories ---------------------------------------------------------------------------


async def seed_memories(path: Path, memories: int, chats: int) -> None:
    """``memories`` memories over ``chats`` private chats, each written by ``MemoryStore.add``."""
    rng = random.Random(6)
    store = SQLiteStore(path)
    await store.open()
    try:
        memory_store = MemoryStore(store)
        contexts = [private(str(10_000 + n)) for n in range(chats)]
        for n in range(memories):
            await memory_store.add(contexts[n % chats], memory_text(rng))
    finally:
        await store.close()


async def seed_in_child(path: Path, memories: int, chats: int) -> asyncio.subprocess.Process:
    """Start the seeder in its own process (its own core) and return it, running."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.memory",
        "seed",
        str(path),
        str(memories),
        str(chats),
        cwd=PROJECT,
    )


async def measure_search(
    path: Path, memories: int, chats: int, seed_s: float, calls: int = SEARCH_CALLS
) -> SearchFigures:
    rng = random.Random(7)
    store = SQLiteStore(path)
    await store.open()
    try:
        memory_store = MemoryStore(store)
        times: list[float] = []
        hits = 0
        for n in range(SEARCH_WARMUP + calls):
            asker = private(str(10_000 + rng.randrange(chats)))
            audience = memory_store.audience(asker, asker.conversation_key(Scope.CHAT))
            query = query_text(rng)
            started = time.perf_counter()
            found = await memory_store.search(audience, query)
            elapsed = time.perf_counter() - started
            if n >= SEARCH_WARMUP:
                times.append(elapsed)
                hits += bool(found)
    finally:
        await store.close()
    cuts = statistics.quantiles(times, n=100, method="inclusive")
    return SearchFigures(
        memories, chats, seed_s, calls, statistics.median(times), cuts[94], hits / calls
    )


async def measure_memory(root: Path, *, embeddings_model: str | None = None) -> MemoryFigures:
    """The whole section; the 10^5-memory seeder runs beside the conversation runs."""
    search_db = root / "memories.db"
    started = time.perf_counter()
    seeder = await seed_in_child(search_db, SEARCH_MEMORIES, SEARCH_CHATS)
    try:
        retention = await measure_retention(root / "retention.db")
        trimmed = await measure_trimmed_recall(root / "trimmed.db")
        with_embeddings: RetentionFigures | EmbeddingFailure | None = None
        if embeddings_model is not None:
            try:
                with_embeddings = await measure_retention(
                    root / "retention-embeddings.db",
                    memory={"embeddings": {"model": embeddings_model}},
                )
            except Exception as exc:  # a feature still being built must not sink the table
                with_embeddings = EmbeddingFailure(f"failed: {exc!r}"[:200])
        if await seeder.wait() != 0:
            raise RuntimeError(f"the memory seeder failed with exit code {seeder.returncode}")
    finally:
        if seeder.returncode is None:
            seeder.terminate()
            await seeder.wait()
    seed_s = time.perf_counter() - started
    search = await measure_search(search_db, SEARCH_MEMORIES, SEARCH_CHATS, seed_s)
    return MemoryFigures(retention, search, with_embeddings, trimmed)


def main(argv: list[str]) -> int:
    if len(argv) != 4 or argv[0] != "seed":
        sys.stderr.write("usage: python -m bench.memory seed PATH MEMORIES CHATS\n")
        return 2
    asyncio.run(seed_memories(Path(argv[1]), int(argv[2]), int(argv[3])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
