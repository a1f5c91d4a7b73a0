"""Section 15, retrieval quality: does the passage holding a question's answer reach the prompt?

SQuAD v1.1 dev (:mod:`bench.squad`): each of its 48 Wikipedia articles becomes one Markdown
document (the title as ``# heading``, then its paragraphs), added through the real path
(:func:`bot.knowledge.library.add_document`, default chunking: 300 tokens, 40 overlap) to ONE
base in a fresh SQLite file, so retrieval must find the right article as well as the right part
of it. Each question is then asked the way a turn asks it before the model call:
:func:`bot.knowledge.retrieval.retrieve` with ``knowledge.top_k`` (8) and
:func:`~bot.knowledge.retrieval.passage_cap` (``knowledge.max_tokens`` with a 128,000-token
context window, so the cap is ``max_tokens`` itself).

A question is a **hit** when a passage given comes from its article and holds one of its
reference answers (after collapsing whitespace); a **strict hit** when that passage holds the
answer's own sentence of the paragraph the question was written on (the sentences holding a
reference answer; the whole paragraph when an answer crosses a sentence end), so an answer
string that happens to occur elsewhere in the article does not count. Tokens: the block of
passages as sent (:func:`bot.prompt.passages.passages_message`), counted by the product's counter.

Baseline, same run, same chunks: plain Okapi BM25 (``rank-bm25``; lower-cased word tokens, no
stemming, no stop words) over each chunk's heading path and text, its best 8 chunks with a
positive score kept by the same :func:`~bot.knowledge.retrieval.within` as the product: only the
ranking differs.
"""

from __future__ import annotations

import asyncio
import random
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rank_bm25 import BM25Okapi  # type: ignore[import-untyped]

from bench.common import make_settings
from bench.squad import Article, Dataset, Question
from bot.config import Settings
from bot.knowledge.library import add_document
from bot.knowledge.retrieval import passage_cap, retrieve, within
from bot.llm.tokens import TokenCounter, get_counter
from bot.prompt.passages import NumberedPassage, passages_message
from bot.storage import open_storage
from bot.storage.knowledge import FoundChunk, KnowledgeDocuments

BASE = "squad"
BUDGETS = (1000, 400)  # knowledge.max_tokens: the default, then a small one
CONTEXT_WINDOW = 128_000
NO_LLM = "http://127.0.0.1:9/v1"  # never called
PARLOUR = "Parlour (retrieve: FTS5 BM25, stemmed, stop words out)"
PLAIN = "plain BM25 (rank-bm25, no stemming)"
_WORD = re.compile(r"\w+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")  # as bot.knowledge.chunking cuts sentences


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def norm(text: str) -> str:
    return " ".join(text.split())


def knowledge_settings(db: Path | str, max_tokens: int = BUDGETS[0], **sections: Any) -> Settings:
    return make_settings(
        NO_LLM,
        db,
        llm={"context_window": CONTEXT_WINDOW},
        knowledge={"bases": {BASE: {}}, "max_tokens": max_tokens},
        **sections,
    )


@dataclass(frozen=True, slots=True)
class Run:
    """What every quality measurement starts from: its settings, the passage cap of each
    budget, the token counter and the questions asked."""

    settings: Settings
    caps: dict[str, int]
    counter: TokenCounter
    asked: list[Question]

    @property
    def top_k(self) -> int:
        return self.settings.knowledge.top_k


async def prepare_run(
    dataset: Dataset, root: Path, name: str, questions: int | None, seed: int, **sections: Any
) -> Run:
    settings = knowledge_settings(root / name, **sections)
    caps = {
        f"{b:,} tokens": passage_cap(knowledge_settings(root / "x.db", b, **sections))
        for b in BUDGETS
    }
    counter = get_counter(settings.llm.model)
    await asyncio.to_thread(counter.load)
    return Run(settings, caps, counter, sample(dataset.questions, questions, seed))


@dataclass(slots=True)
class Tally:
    """One system at one budget: hits, strict hits, passages and block tokens, summed."""

    questions: int = 0
    hits: int = 0
    strict: int = 0
    passages: int = 0
    tokens: int = 0

    def add(self, hit: bool, strict: bool, passages: int, tokens: int) -> None:
        self.questions += 1
        self.hits += hit
        self.strict += strict
        self.passages += passages
        self.tokens += tokens


@dataclass(slots=True)
class QualityFigures:
    dataset: Dataset
    asked: int  # questions asked (all, or a seeded sample)
    chunks: int
    chunk_tokens: float  # mean tokens of a chunk
    ingest_s: float
    ask_s: float
    ceiling: int  # questions whose answer is in some chunk of their article
    strict_ceiling: int
    tallies: dict[tuple[str, str], Tally] = field(default_factory=dict)  # (system, budget)


@dataclass(frozen=True, slots=True)
class Gold:
    """What a question's passage must come from and hold."""

    source: str
    answers: tuple[str, ...]  # normalised
    sentences: tuple[str, ...]  # normalised: the paragraph's sentences holding an answer

    @classmethod
    def of(cls, question: Question, article: Article) -> Gold:
        answers = tuple(norm(a) for a in question.answers if a.strip())
        paragraph = article.paragraphs[question.paragraph]
        parts = [norm(s) for s in _SENTENCE_END.split(paragraph.strip()) if s.strip()]
        holding = tuple(s for s in parts if any(a in s for a in answers))
        return cls(article.source, answers, holding or (norm(paragraph),))

    def judge(self, chunks: Sequence[FoundChunk]) -> tuple[bool, bool]:
        texts = [norm(c.text) for c in chunks if c.source == self.source]
        hit = any(a in t for t in texts for a in self.answers)
        strict = any(s in t for t in texts for s in self.sentences)
        return hit, strict


class PlainBM25:
    """Okapi BM25 over every chunk of the base, ranked as the baseline ranks them.

    ``rank-bm25``'s ``BM25Okapi`` builds the tables (idf with its floor, lengths, k1 1.5, b
    0.75); the scores are its ``get_scores`` formula summed over an inverted index of its own
    term counts, so only the chunks holding a query word are visited (the same floats: a word
    a chunk lacks adds exactly 0 there), ten times faster on 1,600 chunks.
    """

    def __init__(self, chunks: Sequence[FoundChunk]) -> None:
        self.chunks = list(chunks)
        self.index = index = BM25Okapi([words("\n".join([*c.headings, c.text])) for c in chunks])
        self.postings: dict[str, list[tuple[int, int]]] = {}
        for n, counts in enumerate(index.doc_freqs):
            for word, tf in counts.items():
                self.postings.setdefault(word, []).append((n, tf))
        k1, b, avgdl = index.k1, index.b, index.avgdl
        self.norms = [k1 * (1 - b + b * length / avgdl) for length in index.doc_len]

    def scores(self, query: Sequence[str]) -> dict[int, float]:
        """Each chunk holding a query word, by position, and its score."""
        index, norms = self.index, self.norms
        found: dict[int, float] = {}
        for word in query:
            idf = index.idf.get(word) or 0
            for n, tf in self.postings.get(word, ()):
                found[n] = found.get(n, 0.0) + idf * (tf * (index.k1 + 1) / (tf + norms[n]))
        return found

    def search(self, query: str, limit: int) -> list[FoundChunk]:
        """The best ``limit`` chunks with a positive score, best first, ties in chunk order."""
        found = self.scores(words(query))
        best = sorted((n for n, score in found.items() if score > 0), key=lambda n: (-found[n], n))
        return [self.chunks[n] for n in best[:limit]]


def block_tokens(chunks: Sequence[FoundChunk], counter: TokenCounter) -> int:
    """Tokens of the passages' block as a turn sends it (0: no block)."""
    if not chunks:
        return 0
    numbered = [
        NumberedPassage(n, c.source, c.headings, c.page, c.text) for n, c in enumerate(chunks, 1)
    ]
    return counter.count_messages([passages_message(numbered)])


def sample(questions: Sequence[Question], size: int | None, seed: int) -> list[Question]:
    """All questions, or ``size`` of them drawn by ``seed`` from the questions sorted by id (the
    same draw from any copy with the same content)."""
    if size is None or size >= len(questions):
        return list(questions)
    ordered = sorted(questions, key=lambda q: q.qid)
    return random.Random(seed).sample(ordered, size)


async def ingest(
    store: KnowledgeDocuments,
    settings: Settings,
    articles: Sequence[Article],
    count: Callable[[str], int],
) -> list[FoundChunk]:
    for article in articles:
        await add_document(
            store, settings, base=BASE, source=article.source,
            data=article.markdown().encode(), added_by="bench", count=count,
        )  # fmt: skip
    chunks: list[FoundChunk] = []
    for article in articles:
        chunks += await store.document_chunks(BASE, article.source)
    return chunks


def baseline(
    dataset: Dataset, asked: Sequence[Question], chunks: Sequence[FoundChunk], ingest_s: float
) -> tuple[PlainBM25, list[Gold], QualityFigures]:
    """What every run measures beside Parlour on the same chunks: plain BM25, each question's
    gold, and the figures' frame with the ceiling (the answer's passage is in some chunk)."""
    golds = [Gold.of(q, dataset.articles[q.article]) for q in asked]
    by_source: dict[str, list[FoundChunk]] = {}
    for chunk in chunks:
        by_source.setdefault(chunk.source, []).append(chunk)
    ceilings = [g.judge(by_source.get(g.source, [])) for g in golds]
    figures = QualityFigures(
        dataset, len(asked), len(chunks), sum(c.tokens for c in chunks) / len(chunks),
        ingest_s, 0.0, sum(h for h, _ in ceilings), sum(s for _, s in ceilings),
    )  # fmt: skip
    return PlainBM25(chunks), golds, figures


async def measure_quality(
    dataset: Dataset,
    root: Path,
    *,
    questions: int | None = None,
    seed: int = 29,
    progress: Callable[[str], None] | None = None,
) -> QualityFigures:
    run = await prepare_run(dataset, root, "squad.db", questions, seed)
    settings, caps, top_k, counter, asked = (
        run.settings,
        run.caps,
        run.top_k,
        run.counter,
        run.asked,
    )
    count = counter.count_text
    async with open_storage(settings) as store:
        started = time.perf_counter()
        chunks = await ingest(store, settings, dataset.articles, count)
        ingest_s = time.perf_counter() - started
        plain, golds, figures = baseline(dataset, asked, chunks, ingest_s)
        tallies = figures.tallies
        started = time.perf_counter()
        for n, (question, gold) in enumerate(zip(asked, golds, strict=True), 1):
            found = await store.search_chunks([BASE], question.text, limit=top_k)
            ranked = plain.search(question.text, top_k)
            for system, given in ((PARLOUR, found), (PLAIN, ranked)):
                tallies.setdefault((system, f"the {top_k} found, before the budget"), Tally()).add(
                    *gold.judge(given), len(given), block_tokens(given, counter)
                )
            for budget, cap in caps.items():
                kept = await retrieve(
                    store, [BASE], question.text, limit=top_k, max_tokens=cap, count=count
                )
                plain_kept = within(ranked, cap, count)
                for system, given in ((PARLOUR, kept), (PLAIN, plain_kept)):
                    tallies.setdefault((system, budget), Tally()).add(
                        *gold.judge(given), len(given), block_tokens(given, counter)
                    )
            if progress is not None and n % 1000 == 0:
                progress(f"{n:,}/{len(asked):,} questions, {time.perf_counter() - started:.0f} s")
        figures.ask_s = time.perf_counter() - started
    return figures
