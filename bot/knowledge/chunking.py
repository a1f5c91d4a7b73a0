"""Chunks that follow a document's structure, sized in tokens, with a small overlap.

Pure: a document is a list of :class:`Block` (a paragraph, a list item, a code block or a table
row, with the path of headings it sits under); :func:`chunk_blocks` packs consecutive blocks of
one section into chunks of at most ``max_tokens`` and starts a new chunk where the heading path
or a PDF's page changes, so a passage found by search is about one thing and says where it sits
(its page, when cited, is the page its text is on). A block too big
for one chunk is cut at sentence ends, then at words. Within a section, each chunk after the
first begins with the end of the one before (up to ``overlap`` tokens, whole sentences where
they fit), so a sentence that answers a question is never only half in a chunk.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from bot.storage.knowledge import NewChunk

__all__ = ["Block", "chunk_blocks", "pieces"]

Counter = Callable[[str], int]

_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")


@dataclass(frozen=True)
class Block:
    """One unit of a document's text, under ``headings`` (outermost first)."""

    headings: tuple[str, ...]
    text: str
    page: int | None = None  # a PDF's page (1-based), for the source label


def pieces(text: str, max_tokens: int, count: Counter) -> list[str]:
    """``text`` cut into parts of at most ``max_tokens``: at sentence ends where it can, else at
    spaces, else (a single huge word) at characters. Nothing is dropped but whitespace."""
    if count(text) <= max_tokens:
        return [text]
    parts: list[str] = []
    for unit in _units(text, max_tokens, count):
        if parts and count(parts[-1] + " " + unit) <= max_tokens:
            parts[-1] = parts[-1] + " " + unit
        else:
            parts.append(unit)
    return parts


def _units(text: str, max_tokens: int, count: Counter) -> Iterator[str]:
    """Sentences, words or character runs of ``text``, each within ``max_tokens``."""
    for sentence in filter(None, _SENTENCE_END.split(text.strip())):
        if count(sentence) <= max_tokens:
            yield sentence
            continue
        for word in sentence.split():
            if count(word) <= max_tokens:
                yield word
                continue
            run = ""
            for char in word:
                if run and count(run + char) > max_tokens:
                    yield run
                    run = ""
                run += char
            if run:
                yield run


def _tail(parts: Sequence[str], overlap: int, count: Counter) -> list[str]:
    """The last parts of a chunk (whole sentences) that fit in ``overlap`` tokens."""
    kept: list[str] = []
    for part in reversed(parts):
        sentences = [s for s in _SENTENCE_END.split(part) if s]
        for sentence in reversed(sentences):
            if count(" ".join([sentence, *kept])) > overlap:
                return kept
            kept.insert(0, sentence)
    return kept


def chunk_blocks(
    blocks: Sequence[Block], *, max_tokens: int, overlap: int, count: Counter
) -> list[NewChunk]:
    """The chunks of a document, in its order (see the module's docstring)."""
    if max_tokens < 1 or overlap < 0 or overlap >= max_tokens:
        raise ValueError("chunks need max_tokens >= 1 and 0 <= overlap < max_tokens")
    chunks: list[NewChunk] = []
    current: list[str] = []
    fresh = 0  # how many of ``current`` are not overlap
    headings: tuple[str, ...] | None = None
    page: int | None = None

    def flush() -> None:
        nonlocal current, fresh
        if fresh:
            text = "\n".join(current)
            chunks.append(NewChunk(len(chunks), headings or (), text, count(text), page))
        current, fresh = [], 0

    for block in blocks:
        text = block.text.strip()
        if not text:
            continue
        if block.headings != headings or block.page != page:  # a PDF's page: cited by it
            flush()
            headings, page = block.headings, block.page
        for part in pieces(text, max_tokens, count):
            if current and count("\n".join([*current, part])) > max_tokens:
                tail = _tail(current, overlap, count) if overlap else []
                flush()
                while tail and count(" ".join(tail) + "\n" + part) > max_tokens:
                    tail.pop(0)
                current, page = [" ".join(tail)] if tail else [], block.page
            if not current and not fresh:
                page = block.page
            current.append(part)
            fresh += 1
    flush()
    return chunks
