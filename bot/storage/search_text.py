"""How text is indexed and searched, and how vectors are stored: the same on every backend.

Chinese and Japanese have no spaces, so a word tokenizer would take a whole sentence for one
word, and a trigram tokenizer cannot match two-character words (花生, peanut). Both the indexed
text and the query therefore go through :func:`search_form`, which turns every run of CJK, kana
or hangul into overlapping character bigrams and keeps other text as words; the index's own
tokenizer then only lower-cases, strips diacritics and stems English. (Here, below memory, so
that storage can index without importing :mod:`bot.memory`; that package re-exports these.)
"""

from __future__ import annotations

import re
import sys
import unicodedata
from array import array
from collections.abc import Sequence

__all__ = [
    "MAX_QUERY_TERMS",
    "match_query",
    "pack_vector",
    "query_terms",
    "search_form",
    "unpack_vector",
]

MAX_QUERY_TERMS = 64  # a pasted essay must not become a thousand-term OR
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
