"""Chunks' vectors through the real embedder on the fake ``/v1/embeddings``: a chunk the
endpoint refuses does not hold back those after it; an endpoint that is down stops the run
with its error and loses nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.errors import LLMError
from bot.knowledge.embedding import ChunkEmbedding
from bot.knowledge.library import add_document
from bot.llm.embeddings import make_embedder
from bot.storage import open_storage
from bot.testing.fake_llm import FakeLLM, error
from tests.conftest import make_settings

MODEL = "text-embedding-3-small"
GUIDE = b"# One\n\nFirst part.\n\n# Two\n\nSecond part.\n\n# Three\n\nThird part.\n"


async def test_a_refused_chunk_does_not_hold_back_the_others(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    settings = make_settings(
        fake_llm, tmp_path, memory={"embeddings": {"model": MODEL}},
        knowledge={"bases": {"rules": {}}},
    )  # fmt: skip
    embedder = make_embedder(settings.memory.embeddings, settings.llm)
    try:
        async with open_storage(settings) as store:
            await add_document(store, settings, base="rules", source="guide.md", data=GUIDE,
                               added_by="test", count=lambda t: len(t.split()))  # fmt: skip
            filling = ChunkEmbedding(store, embedder)
            fake_llm.script_embeddings(error(400), error(400))  # the batch, then chunk One
            assert await filling.fill() == 2
            [(_, left)] = await store.unembedded_chunks(MODEL, 0, 9)
            assert left == "One\nFirst part."
            assert await filling.fill() == 1  # taken when the endpoint takes it

            await store.put_chunk_vectors("other-model", [(1, [1.0])])  # a model change
            fake_llm.script_embeddings(*[error(503)] * 20)  # down: every attempt refused
            with pytest.raises(LLMError):
                await ChunkEmbedding(store, embedder, batch=1).fill()
            assert [i for i, _ in await store.unembedded_chunks(MODEL, 0, 9)] == [1]
    finally:
        await embedder.close()
