"""The search maths of long-term memory, as pure functions: text forms, queries, vectors, fusion.

Chinese and Japanese have no spaces, so a word tokenizer would take a whole sentence for one
word, and a trigram tokenizer cannot match two-character words (花生, peanut). Both the indexed
text and the query therefore go through :func:`search_form`, which turns every run of CJK, kana
or hangul into overlapping character bigrams and keeps other text as words; the index's own
tokenizer then only lower-cases, strips diacritics and stems English.

With embeddings, two rankings (full-text relevance and cosine similarity) are merged by
reciprocal rank fusion (:func:`fuse`, :func:`fuse_turns`: score = sum of 1 / (60 + rank)), for
memories and for past messages alike.
"""

from __future__ import annotations

import dataclasses
import operator
import re
import sys
import unicodedata
from array import array
from collections.abc import Callable, Sequence
from typing import TypeVar

from bot.storage.memories import FoundTurn
from bot.storage.values import Memory

__all__ = [
    "MAX_QUERY_TERMS",
    "RRF_K",
    "by_cosine",
    "fuse",
    "fuse_ranked",
    "fuse_turns",
    "match_query",
    "memory_id",
    "pack_vector",
    "query_terms",
    "search_form",
    "turn_id",
    "unpack_vector",
]

MAX_QUERY_TERMS = 64  # a pasted essay must not become a thousand-term OR
RRF_K = 60  # the usual reciprocal-rank-fusion constant: top ranks matter, but not overwhelmingly

_CJK = (
    "\u1100-\u11ff\u3005-\u3007\u3040-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf"
    "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0003134f"
)
_TOKEN = re.compile(rf"([{_CJK}]+)|[^\W_{_CJK}]+")
# Dropped from queries (still indexed). Single CJK characters only occur as one-character runs.
_STOP_TEXT = """
    a about am an and any are as at be been but by can could d did do does for from had has have
    he her him his how i if in into is it its just ll m me my no not of on or our re s she so t
    than that the their them then there these they this those to us ve was we were what when
    where which who whom why will with would you your 的 了 是 我 你 他 她 它 吗 呢 の は が を に
    で と も か
"""
_STOP_WORDS = frozenset(_STOP_TEXT.split())

T = TypeVar("T")


def memory_id(memory: Memory) -> int:
    return memory.memory_id


def turn_id(turn: FoundTurn) -> int:
    return turn.turn_id


def search_form(text: str) -> str:
    """``text`` as the index sees it: words, and CJK runs as overlapping bigrams.

    NFKC first, so full-width Latin and half-width katakana index like their usual forms.
    """
    tokens: list[str] = []
    for match in _TOKEN.finditer(unicodedata.normalize("NFKC", text).casefold()):
        run = match.group(1)
        if run is None:
            tokens.append(match.group(0))
        elif len(run) == 1:
            tokens.append(run)
        else:
            tokens.extend(run[i : i + 2] for i in range(len(run) - 1))
    return " ".join(tokens)


def query_terms(text: str) -> list[str]:
    """The distinct search-form terms of ``text`` worth matching: no stop words, at most
    :data:`MAX_QUERY_TERMS`, in order."""
    terms = dict.fromkeys(t for t in search_form(text).split() if t not in _STOP_WORDS)
    return list(terms)[:MAX_QUERY_TERMS]


def match_query(text: str) -> str | None:
    """A full-text query OR-ing ``text``'s terms, each quoted; None when nothing is left.

    Quoting makes every term a plain string to FTS5 (and to most query languages), so user text
    such as ``AND``, ``"``, ``*`` or ``NEAR(`` is searched for, never parsed as query syntax.
    """
    quoted = ['"' + t.replace('"', '""') + '"' for t in query_terms(text)]
    return " OR ".join(quoted) or None


def pack_vector(vector: Sequence[float]) -> bytes:
    """A vector as stored: float32, little-endian whatever the machine."""
    packed = array("f", vector)
    if sys.byteorder == "big":
        packed.byteswap()
    return packed.tobytes()


def unpack_vector(blob: bytes) -> array[float]:
    packed = array("f")
    packed.frombytes(blob)
    if sys.byteorder == "big":
        packed.byteswap()
    return packed


def by_cosine(
    query: Sequence[float],
    candidates: Sequence[tuple[T, Sequence[float]]],
    floor: float,
    top: int,
    ident: Callable[[T], int],
) -> list[tuple[float, T]]:
    """The ``top`` candidates (memories or found turns, told apart by ``ident``) whose vectors
    are at least ``floor`` similar to ``query``, best first (ties: the newer, higher id).

    Vectors are stored normalised, so cosine is a dot product. Worth a worker thread.
    """
    scored: list[tuple[float, T]] = []
    for found, vector in candidates:
        similarity = sum(map(operator.mul, query, vector))
        if similarity >= floor:
            scored.append((similarity, found))
    scored.sort(key=lambda pair: (-pair[0], -ident(pair[1])))
    return scored[:top]


def fuse_ranked(
    rankings: Sequence[Sequence[T]], ident: Callable[[T], int], limit: int, k: int = RRF_K
) -> list[tuple[T, float]]:
    """Reciprocal rank fusion of anything with an id: each item scores the sum of
    1 / (k + rank) over the rankings it appears in (rank 1 = best); ties go to the higher id."""
    fused: dict[int, float] = {}
    found: dict[int, T] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            key = ident(item)
            fused[key] = fused.get(key, 0.0) + 1.0 / (k + rank)
            found.setdefault(key, item)
    best = sorted(fused, key=lambda key: (-fused[key], -key))[:limit]
    return [(found[key], fused[key]) for key in best]


def fuse(rankings: Sequence[Sequence[Memory]], limit: int, k: int = RRF_K) -> list[Memory]:
    """:func:`fuse_ranked` of memories; the fused scores replace ``score``."""
    return [
        dataclasses.replace(memory, score=score)
        for memory, score in fuse_ranked(rankings, memory_id, limit, k)
    ]


def fuse_turns(
    rankings: Sequence[Sequence[FoundTurn]], limit: int, k: int = RRF_K
) -> list[FoundTurn]:
    """:func:`fuse_ranked` of past messages; the fused scores replace ``score``."""
    return [
        dataclasses.replace(turn, score=score)
        for turn, score in fuse_ranked(rankings, turn_id, limit, k)
    ]
