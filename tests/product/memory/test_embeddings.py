"""Optional embeddings for memory recall: the fake ``/v1/embeddings`` through the real SDK, the
Embedder behind the one retry layer, BM25 + cosine fusion, scope isolation with vectors, and
memories that outlive a failing embeddings endpoint."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import openai
import pytest

from bot.config import ConfigError, EmbeddingSettings, LLMSettings, settings_from_mapping
from bot.errors import LLMBadRequestError, LLMBusyError
from bot.llm.embeddings import Embedder, endpoint_settings
from bot.memory.store import Memory, MemoryScope, MemoryStore, fuse
from bot.storage.sqlite import SQLiteStore
from bot.testing.fake_llm import (
    FakeLLM,
    error,
    fake_embedding,
    rate_limited,
    reply,
    tool_calls,
)
from bot.values import NewTurn
from tests.conformance.test_memories import ME, group
from tests.conftest import TEST_KEY, AppFactory, Sleeps, private
from tests.product.memory.test_memory import recalled_text

MODEL = "text-embedding-3-small"
MEI = "Mei is allergic to peanuts"
OTHERS = ("Bob plays the cello", "This chat meets on Fridays", "Alice likes green tea")
PARAPHRASE = "any allergies?"  # Porter: allergi vs allerg -- FTS5 cannot match it


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def embedder_for(fake: FakeLLM, sleeps: Sleeps | None = None, **options: Any) -> Embedder:
    llm = LLMSettings(base_url=fake.base_url, api_key=TEST_KEY)
    return Embedder(EmbeddingSettings(model=MODEL, **options), llm, sleep=sleeps)


@pytest.fixture
async def embedder(fake_llm: FakeLLM, sleeps: Sleeps) -> AsyncIterator[Embedder]:
    made = embedder_for(fake_llm, sleeps)
    try:
        yield made
    finally:
        await made.close()


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    async with SQLiteStore(tmp_path / "m.db") as opened:
        yield opened


# -- the fake endpoint, through the real SDK ---------------------------------------------------


async def test_fake_endpoint_through_the_sdk_float_and_base64(fake_llm: FakeLLM) -> None:
    fake_llm.api_key = TEST_KEY
    async with openai.AsyncOpenAI(base_url=fake_llm.base_url, api_key=TEST_KEY) as client:
        default = await client.embeddings.create(model=MODEL, input=["green tea", "花生過敏"])
        floats = await client.embeddings.create(
            model=MODEL, input="green tea", encoding_format="float"
        )
        short = await client.embeddings.create(
            model=MODEL, input="green tea", encoding_format="float", dimensions=8
        )
    # The SDK asks for base64 unless told otherwise, and decodes it to floats itself.
    assert fake_llm.embedding_requests[0].json["encoding_format"] == "base64"
    assert [d.index for d in default.data] == [0, 1] and default.model == MODEL
    assert default.data[0].embedding == pytest.approx(fake_embedding("green tea"), abs=1e-6)
    assert floats.data[0].embedding == fake_embedding("green tea")
    assert len(floats.data[0].embedding) == 256 and len(short.data[0].embedding) == 8
    assert floats.usage.prompt_tokens == floats.usage.total_tokens > 0
    assert cosine(fake_embedding("green tea"), fake_embedding("green tea")) == pytest.approx(1)


@pytest.mark.parametrize(
    "body",
    [
        {"model": MODEL, "input": []},
        {"model": MODEL, "input": ""},
        {"model": MODEL, "input": ["ok", ""]},
        {"model": MODEL, "input": [1, 2, 3]},
        {"model": MODEL, "input": 5},
        {"input": "no model"},
        {"model": MODEL, "input": "x", "encoding_format": "int8"},
        {"model": MODEL, "input": "x", "dimensions": 0},
    ],
)
async def test_fake_endpoint_rejects_bad_requests_with_400(
    fake_llm: FakeLLM, body: dict[str, Any]
) -> None:
    async with openai.AsyncOpenAI(base_url=fake_llm.base_url, api_key=TEST_KEY) as client:
        with pytest.raises(openai.BadRequestError) as caught:
            await client.post("/embeddings", body=body, cast_to=object)
    assert isinstance(caught.value.body, dict) and caught.value.body.get("message")


async def test_fake_endpoint_checks_the_key_and_scripts_its_own_queue(fake_llm: FakeLLM) -> None:
    fake_llm.api_key = TEST_KEY
    async with openai.AsyncOpenAI(
        base_url=fake_llm.base_url, api_key="sk-wrong-key-0000", max_retries=0
    ) as client:
        with pytest.raises(openai.AuthenticationError):
            await client.embeddings.create(model=MODEL, input="x")
    with pytest.raises(ValueError):
        fake_llm.script_embeddings(tool_calls(("remember", {"fact": "x"})))
    fake_llm.script_embeddings(error(503))
    assert fake_llm.pending_scripts == 0  # chat scripts are a separate queue


# -- the Embedder ------------------------------------------------------------------------------


async def test_embedder_batches_and_normalises(fake_llm: FakeLLM) -> None:
    embedder = embedder_for(fake_llm, batch_size=2)
    try:
        texts = ["one", "two", "three", "four", "five"]
        vectors = await embedder.embed(texts)
    finally:
        await embedder.close()
    assert [len(r.json["input"]) for r in fake_llm.embedding_requests] == [2, 2, 1]
    assert vectors == [pytest.approx(fake_embedding(t)) for t in texts]
    request = fake_llm.embedding_requests[0]
    assert request.headers["authorization"] == f"Bearer {TEST_KEY}"  # the llm's key, same host
    assert request.json["encoding_format"] == "float"


async def test_embedder_retries_a_429_through_the_retry_layer(
    fake_llm: FakeLLM, embedder: Embedder, sleeps: Sleeps
) -> None:
    fake_llm.script_embeddings(rate_limited(retry_after=2))
    [vector] = await embedder.embed(["green tea"])
    assert vector == pytest.approx(fake_embedding("green tea"))
    assert len(fake_llm.embedding_requests) == 2 and sleeps == [2.0]


async def test_embedder_raises_parlour_errors(fake_llm: FakeLLM, embedder: Embedder) -> None:
    fake_llm.script_embeddings(error(400))
    with pytest.raises(LLMBadRequestError):
        await embedder.embed(["x"])
    assert len(fake_llm.embedding_requests) == 1  # a 400 is never retried
    fake_llm.script_embeddings(*[rate_limited(retry_after=0.1)] * 10)
    with pytest.raises(LLMBusyError):
        await embedder.embed(["x"])


def test_endpoint_defaults_to_the_llm_and_keeps_its_key_at_home() -> None:
    llm = LLMSettings(base_url="https://gw.example/v1", api_key=TEST_KEY)
    same = endpoint_settings(EmbeddingSettings(model=MODEL), llm)
    assert same.effective_base_url == "https://gw.example/v1" and same.api_key == llm.api_key
    other = endpoint_settings(
        EmbeddingSettings(model=MODEL, base_url="http://localhost:11434/v1"), llm
    )
    assert other.api_key is None  # the chat provider's key is not sent to another host
    settings = settings_from_mapping({"memory": {"embeddings": {"model": " "}}})
    assert settings.memory.embeddings.model is None  # off, e.g. "${EMBEDDING_MODEL:-}"
    with pytest.raises(ConfigError, match=r"memory\.embeddings\.base_url"):
        settings_from_mapping({"memory": {"embeddings": {"base_url": "ftp://x"}}})


# -- retrieval ---------------------------------------------------------------------------------


async def test_embeddings_find_a_paraphrase_that_bm25_misses(
    store: SQLiteStore, embedder: Embedder
) -> None:
    with_vectors = MemoryStore(store, embedder)
    for text in (MEI, *OTHERS):
        await with_vectors.add(private(), text)
    fts_only = MemoryStore(store)
    assert await fts_only.search(ME, PARAPHRASE) == []
    found = await with_vectors.search(ME, PARAPHRASE)
    assert [m.text for m in found] == [MEI]
    # Exact words still win through BM25, and both rankings agree on the best.
    found = await with_vectors.search(ME, "who plays the cello?")
    assert found[0].text == "Bob plays the cello"
    # The floor: an unrelated question recalls nothing, though some vector ranks first.
    assert await with_vectors.search(ME, "when does the train leave?") == []


def test_fusion_is_reciprocal_rank() -> None:
    a, b, c = (Memory(i, "k", "k", "u", "", MemoryScope.CHAT, t, 0.0) for i, t in enumerate("abc"))
    fused = fuse([[a, b], [b, c]], limit=3, k=60)
    assert [m.text for m in fused] == ["b", "a", "c"]
    assert fused[0].score == pytest.approx(1 / 62 + 1 / 61)
    assert fuse([[a, b], [b, c]], limit=1) == [fused[0]]


async def test_a_failed_embedding_still_stores_the_memory(
    fake_llm: FakeLLM, store: SQLiteStore, embedder: Embedder
) -> None:
    memories = MemoryStore(store, embedder)
    fake_llm.script_embeddings(error(500), error(500))  # the interactive policy tries twice
    added = await memories.add(private(), MEI)
    assert [m.text for m in await memories.list("telegram:1")] == [MEI]
    assert await _vector_count(store) == 0
    assert [m.memory_id for m in await memories.search(ME, "peanuts")] == [added.memory_id]
    assert await memories.backfill_vectors() == 1
    assert await memories.backfill_vectors() == 0
    assert [m.text for m in await memories.search(ME, PARAPHRASE)] == [MEI]


async def test_search_falls_back_to_bm25_when_embeddings_fail(
    fake_llm: FakeLLM, store: SQLiteStore, embedder: Embedder
) -> None:
    memories = MemoryStore(store, embedder)
    await memories.add(private(), MEI)
    fake_llm.script_embeddings(error(503), error(503))
    assert [m.text for m in await memories.search(ME, "peanuts")] == [MEI]


async def test_backfill_covers_old_memories_and_a_new_model(
    fake_llm: FakeLLM, store: SQLiteStore, embedder: Embedder
) -> None:
    await MemoryStore(store).add(private(), MEI)  # from before embeddings were switched on
    memories = MemoryStore(store, embedder)
    assert await memories.backfill_vectors() == 1
    other = Embedder(
        EmbeddingSettings(model="other-model"),
        LLMSettings(base_url=fake_llm.base_url, api_key=TEST_KEY),
    )
    try:
        assert await MemoryStore(store, other).backfill_vectors() == 1
    finally:
        await other.close()


async def _vector_count(store: SQLiteStore) -> int:
    rows = await store.database.reader.execute_fetchall("SELECT count(*) FROM memory_vectors")
    return int(next(iter(rows))[0])


# -- wired into the app ------------------------------------------------------------------------


async def test_app_recalls_a_paraphrase_with_embeddings_on(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    sections: dict[str, Any] = {
        "plugins": ["plugins.memory"],
        "memory": {"embeddings": {"model": MODEL}},
    }
    async with make_app(**sections) as app:
        assert app.memories is not None and app.memories.embedder is not None
        fake_llm.script(tool_calls(("remember", {"fact": MEI})), reply("Noted."))
        await app.service.chat(private("7", "Mei"), "remember that I'm allergic to peanuts")
        await app.service.chat(private("7", "Mei"), "Do I have allergies?")
    assert MEI in recalled_text(fake_llm)
    assert fake_llm.embedding_requests and all(
        r.json["model"] == MODEL for r in fake_llm.embedding_requests
    )


async def test_app_without_embeddings_never_calls_the_endpoint(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with make_app(plugins=["plugins.memory"]) as app:
        assert app.memories is not None and app.memories.embedder is None
        await app.service.chat(group("1"), "hello there")
    assert fake_llm.embedding_requests == []


async def test_old_messages_get_vectors_in_the_background_past_a_failing_endpoint(
    fake_llm: FakeLLM, store: SQLiteStore, embedder: Embedder
) -> None:
    conv = "telegram:5:u:5"
    said = [MEI, *OTHERS]
    ids = [await store.begin_turn(NewTurn(conv, "telegram:5", "5", "Mei", t)) for t in said]
    memories = MemoryStore(store, embedder)
    later = ids[-1] + 1
    assert await memories.search_turns(conv, PARAPHRASE, before_turn_id=later) == []
    fake_llm.script_embeddings(error(400))  # history from before embeddings: none cached
    memories.embed_turns_later(conv)
    await memories.wait_for_turn_vectors()
    assert await store.turn_vectors(conv, MODEL, 256, before_turn_id=later, limit=10) == []
    asked = len(fake_llm.embedding_requests)
    memories.embed_turns_later(conv)  # the next recall tries again
    memories.embed_turns_later(conv)  # while one runs: it goes round once more, no second task
    await memories.wait_for_turn_vectors()
    filled = await store.turn_vectors(conv, MODEL, 256, before_turn_id=later, limit=10)
    assert [t.turn_id for t, _ in filled] == ids[::-1]
    [batch] = [r.json["input"] for r in fake_llm.embedding_requests[asked:]]  # one request
    assert sorted(batch) == sorted(said)
    found = await memories.search_turns(conv, PARAPHRASE, before_turn_id=later)
    assert [t.text for t in found] == [MEI]  # by meaning: no word in common
    assert await memories.search_turns(conv, PARAPHRASE, before_turn_id=ids[0]) == []
    await memories.aclose()
