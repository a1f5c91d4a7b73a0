"""The search maths of long-term memory, as pure functions: text forms, queries, vectors, fusion.

Chinese and Japanese have no spaces, so a word tokenizer would take a whole sentence for one
word, and a trigram tokenizer cannot match two-character words (花生, peanut). Both the indexed
text and the query therefore go through :func:`search_form`, which turns every run of CJK, kana
or hangul into overlapping character bigrams and keeps other text as words; the index's own
tokenizer then only lower-cases, strips diacritics and stems English.

With embeddings, two rankings (full-text relevance and cosine similarity) are merged by
reciprocal rank fusion (:func:`fuse`, :func:`fuse_turns`: score = sum of 1 / (60 + rank)), for
memories and for past messages alike. A question's vector leaves out the names of the people
who speak in the conversation (:func:`without_names`): what they said is embedded without their
names, so a name in the question can only pull it towards messages *addressed* to them.
"""

from __future__ import annotations

import dataclasses
import operator
import re
import unicodedata
from collections.abc import Callable, Collection, Sequence
from typing import TypeVar

from bot.storage.search_text import (
    MAX_QUERY_TERMS,
    match_query,
    pack_vector,
    query_terms,
    search_form,
    unpack_vector,
)
from bot.values import FoundTurn, Memory

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
    "without_names",
]

RRF_K = 60  # the usual reciprocal-rank-fusion constant: top ranks matter, but not overwhelmingly

T = TypeVar("T")


def memory_id(memory: Memory) -> int:
    return memory.memory_id


def turn_id(turn: FoundTurn) -> int:
    return turn.turn_id


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


def without_names(query: str, names: Collection[str]) -> str:
    """``query`` with every word of ``names`` taken out (whole words, any case), for its
    vector; ``query`` itself when nothing else would be left to search by.

    Measured on LoCoMo (bench section 14): with the two speakers' names left in, "What did
    Caroline research?" finds messages addressed to Caroline first, and fused with full text
    the vectors cost recall instead of adding it.
    """
    # Word by word, compared folded (:func:`_folded`): a regex's IGNORECASE folds one character
    # at a time, so "Aİ" never matched its own lower case "ai̇" (three characters).
    words = {_folded(w) for name in names for w in re.findall(r"\w+", name) if len(w) > 1}
    if not words:
        return query
    kept = re.sub(r"\w+", lambda m: " " if _folded(m.group()) in words else m.group(), query)
    stripped = " ".join(kept.split())
    return stripped if re.search(r"\w\w", stripped) else query


def _folded(word: str) -> str:
    """``word`` case-folded without its accents: "İlker", "ilker" and "Ilker" are one name, as
    are "José" and "Jose" (people type names either way)."""
    decomposed = unicodedata.normalize("NFD", word.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))
