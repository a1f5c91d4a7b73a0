"""Section 15, speed: documents added per second, and search time against the chunks stored.

**Ingestion.** Generated documents (:mod:`bench.knowledge_texts`), each added through the real
path (:func:`bot.knowledge.library.add_document`: hashed, read and chunked in a worker thread,
stored in one transaction), one after the other as ``parlour knowledge add`` adds them, into a
fresh store. Pages per second over the whole run (every document's pages over the total time).

**Search.** Chunks of about 1,000 characters (roughly a chunk of real prose at the default 300
tokens; made-up words take more tokens each), generated and stored by ``put_document`` (the
store's public API; no parsing or chunking, so this fills a store fast), 100 chunks a document,
all in one base, the one searched: every chunk is a candidate. Then ``search_chunks([base],
query, limit=8)`` for queries of 3-6 content words taken from a random stored chunk plus two
function words (dropped by the search as stop words), timed one at a time after 20 untimed.
The store grows from 10^4 to 10^5 chunks between the two measurements. How much a search must
score depends on how many chunks share a word with the query: the table gives the median share,
counted on 5 stored chunks of each document (unstemmed words; SQuAD's questions share one with
about 12 % of its paragraphs).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from bench.knowledge_quality import BASE, knowledge_settings
from bench.knowledge_texts import PAGE_CHARS, Words, pdf_document
from bench.pg import bench_schema
from bot.knowledge.library import add_document
from bot.llm.tokens import TokenCounter
from bot.storage import Storage, open_storage
from bot.storage.knowledge import NewChunk, NewDocument
from bot.storage.search_text import query_terms, search_form

CHUNK_CHARS = 1_000
CHUNKS_PER_DOCUMENT = 100
SAMPLED = 5  # chunks of each document kept for queries and the matching share
WARM_UP = 20
Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class IngestFigures:
    backend: str
    kind: str  # "PDF" or "Markdown"
    documents: int
    pages: int
    chunks: int
    tokens: int
    seconds: float

    @property
    def pages_per_s(self) -> float:
        return self.pages / self.seconds


@dataclass(frozen=True, slots=True)
class SearchFigures:
    backend: str
    chunks: int
    fill_s: float  # storing the chunks added since the previous size
    queries: int
    p50_ms: float
    p95_ms: float
    mean_hits: float  # chunks a search returned, of at most 8
    matching: float  # median share of chunks sharing a word with a query (a sample, unstemmed)


@asynccontextmanager
async def backend_store(
    backend: str, root: Path, pg_url: str | None, label: str
) -> AsyncIterator[Storage]:
    """A fresh, open store: a SQLite file under ``root``, or a throw-away PostgreSQL schema."""
    if backend == "SQLite":
        async with open_storage(knowledge_settings(root / f"{label}.db")) as store:
            yield store
        return
    assert pg_url is not None
    async with (
        bench_schema(pg_url, label) as schema,
        open_storage(knowledge_settings(schema.url)) as store,
    ):
        yield store


def _document(kind: str, words: Words, name: str, pages: int) -> tuple[str, bytes]:
    """A generated document of ``pages`` pages: its file name and bytes."""
    if kind == "PDF":
        return f"{name}.pdf", pdf_document(words.pdf_pages(pages))
    return f"{name}.md", words.markdown_pages(name, pages).encode()


async def measure_ingest(
    backend: str, root: Path, pg_url: str | None, *, documents: int, pages: int
) -> list[IngestFigures]:
    """PDF then Markdown: ``documents`` documents of ``pages`` pages each, per kind. Each kind
    has a fresh token counter (its cache of counted texts empty: the same texts are added on
    each backend) and one untimed document first (imports, first statements)."""
    model = knowledge_settings(root / "x.db").llm.model
    figures = []
    for kind in ("PDF", "Markdown"):
        words = Words(seed=15)  # the same text on both backends
        made = [_document(kind, words, f"doc-{n}", pages) for n in range(documents)]
        warm_source, warm_data = _document(kind, Words(seed=99), "warm-up", pages)
        counter = TokenCounter(model)
        await asyncio.to_thread(counter.load)
        async with backend_store(backend, root, pg_url, f"ingest_{kind.lower()}") as store:
            settings = knowledge_settings(root / "unused.db")
            await add_document(
                store, settings, base="warm-up", source=warm_source, data=warm_data,
                added_by="bench", count=counter.count_text,
            )  # fmt: skip
            chunks = tokens = 0
            started = time.perf_counter()
            for source, data in made:
                result = await add_document(
                    store, settings, base=BASE, source=source, data=data,
                    added_by="bench", count=counter.count_text,
                )  # fmt: skip
                chunks += result.document.chunks
                tokens += result.document.tokens
            seconds = time.perf_counter() - started
        figures.append(
            IngestFigures(backend, kind, documents, documents * pages, chunks, tokens, seconds)
        )
    return figures


def _documents(words: Words, first: int, count: int) -> list[NewDocument]:
    made = []
    for n in range(first, first + count):
        chunks = tuple(
            NewChunk(i, (f"Document {n}",), text, len(text) // 4)  # tokens: not searched
            for i, text in enumerate(words.text(CHUNK_CHARS) for _ in range(CHUNKS_PER_DOCUMENT))
        )
        made.append(
            NewDocument(BASE, f"doc-{n}.md", f"sha256:{n:064x}", "markdown", "bench", chunks)
        )
    return made


async def measure_search(
    backend: str,
    root: Path,
    pg_url: str | None,
    sizes: Sequence[int],
    *,
    queries: int,
    seconds: float = 120.0,
    progress: Progress | None = None,
) -> list[SearchFigures]:
    """Fill one store to each of ``sizes`` chunks in turn, timing searches at each: ``queries``
    of them, or fewer when they take more than ``seconds`` (at least 50)."""
    words = Words(seed=16)
    figures = []
    stored = 0  # documents
    pool: list[str] = []  # a few chunks of each document: queries come from them
    async with backend_store(backend, root, pg_url, "search") as store:
        for size in sizes:
            wanted = size // CHUNKS_PER_DOCUMENT - stored
            started = time.perf_counter()
            for batch in range(0, wanted, 10):  # generated 10 documents at a time
                documents = _documents(words, stored, min(10, wanted - batch))
                for document in documents:
                    await store.put_document(document)
                    pool += [c.text for c in words.rng.sample(document.chunks, SAMPLED)]
                stored += len(documents)
                if progress is not None and stored % 200 == 0:
                    done, took = stored * CHUNKS_PER_DOCUMENT, time.perf_counter() - started
                    progress(f"{backend}: {done:,} chunks stored, {took:.0f} s")
            fill_s = time.perf_counter() - started
            texts = [words.query(words.rng.choice(pool)) for _ in range(queries + WARM_UP)]
            times: list[float] = []
            hits = 0
            timed = time.perf_counter()
            for n, query in enumerate(texts):
                if len(times) >= 50 and time.perf_counter() - timed > seconds:
                    break
                started = time.perf_counter()
                found = await store.search_chunks([BASE], query, limit=8)
                if n >= WARM_UP:
                    times.append(time.perf_counter() - started)
                    hits += len(found)
            p50, p95 = statistics.median(times) * 1000, statistics.quantiles(times, n=20)[-1] * 1000
            mean_hits = hits / len(times)
            matching = _matching(pool, texts[WARM_UP : WARM_UP + len(times)])
            figures.append(
                SearchFigures(backend, size, fill_s, len(times), p50, p95, mean_hits, matching)
            )
    return figures


def _matching(sample: Sequence[str], queries: Sequence[str]) -> float:
    """The median share of ``sample``'s chunks holding one of a query's terms (unstemmed)."""
    chunks = [frozenset(search_form(text).split()) for text in sample]
    shares = []
    for query in queries:
        terms = set(query_terms(query))
        shares.append(sum(1 for chunk in chunks if not terms.isdisjoint(chunk)) / len(chunks))
    return statistics.median(shares)


def page_note(figures: Sequence[IngestFigures]) -> str:
    """What a page was, for the table's footnote."""
    pdf = next((f for f in figures if f.kind == "PDF"), None)
    per_page = f", {pdf.tokens / pdf.pages:,.0f} tokens a page" if pdf else ""
    return f"a page is about {PAGE_CHARS:,} characters of generated text{per_page}"
