"""Generated documents for section 15's speed figures: seeded, so every run writes the same bytes.

Words: 40 common English function words (all on the search's stop list) then 20,000 made-up
words (syllables), drawn by a Zipf law (s = 1.07), so a few words are everywhere, as in text, and
most are rare. Sentences of 6-24 words; a Markdown "page" is a ``##`` section of about 3,000
characters in paragraphs; a PDF page holds about 3,000 characters of text too, set in lines of
Helvetica by hand (no PDF library: each page's content stream is ``Tj`` lines).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence

from bot.testing.documents import text_pdf

_FUNCTION_TEXT = """
    the of and to a in is that for it as was with be by on not he this are or his from at which
    but have an they you were her she there been their has would when if so no will can who
"""
FUNCTION_WORDS = _FUNCTION_TEXT.split()
MADE_UP = 20_000
ZIPF_S = 1.07
PAGE_CHARS = 3_000  # a Markdown page; about what a PDF page here holds
LINE_CHARS = 90  # a PDF line
_ONSETS = ("b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br",
           "ch", "dr", "gl", "kr", "pl", "sh", "st", "th", "tr")  # fmt: skip
_NUCLEI = ("a", "e", "i", "o", "u", "ai", "ea", "ou", "y")
_CODAS = ("", "", "", "n", "r", "s", "l", "m", "nd", "st", "x")


def _made_up_words(n: int, rng: random.Random) -> list[str]:
    seen = set(FUNCTION_WORDS)
    found: list[str] = []
    while len(found) < n:
        syllables = rng.choice((1, 2, 2, 3, 3, 4))
        word = "".join(
            rng.choice(_ONSETS) + rng.choice(_NUCLEI) + rng.choice(_CODAS) for _ in range(syllables)
        )
        if word not in seen:
            seen.add(word)
            found.append(word)
    return found


class Words:
    """A seeded source of words, sentences, chunks, pages and queries."""

    def __init__(self, seed: int = 15) -> None:
        self.rng = random.Random(seed)
        self.vocabulary = [*FUNCTION_WORDS, *_made_up_words(MADE_UP, self.rng)]
        weights = [1 / (rank**ZIPF_S) for rank in range(1, len(self.vocabulary) + 1)]
        self.cumulative = list(itertools.accumulate(weights))
        self.function = frozenset(FUNCTION_WORDS)

    def words(self, k: int) -> list[str]:
        return self.rng.choices(self.vocabulary, cum_weights=self.cumulative, k=k)

    def sentence(self) -> str:
        said = self.words(self.rng.randint(6, 24))
        return " ".join(said).capitalize() + "."

    def text(self, chars: int) -> str:
        """Sentences until about ``chars`` characters."""
        out: list[str] = []
        size = 0
        while size < chars:
            out.append(self.sentence())
            size += len(out[-1]) + 1
        return " ".join(out)

    def query(self, text: str) -> str:
        """3-6 distinct words of ``text`` that are not function words, in random order, as a
        question's content words (a function word or two in front, as a question has)."""
        said = dict.fromkeys(w.strip(".").lower() for w in text.split())
        content = [w for w in said if w not in self.function]
        picked = self.rng.sample(content, min(len(content), self.rng.randint(3, 6)))
        return " ".join([*self.rng.sample(FUNCTION_WORDS[:12], 2), *picked])

    def markdown_pages(self, title: str, pages: int) -> str:
        """A Markdown document of ``pages`` sections of about :data:`PAGE_CHARS` each."""
        parts = [f"# {title}"]
        for page in range(1, pages + 1):
            parts.append(f"## Section {page}")
            size = 0
            while size < PAGE_CHARS:
                paragraph = self.text(self.rng.randint(300, 700))
                parts.append(paragraph)
                size += len(paragraph)
        return "\n\n".join(parts) + "\n"

    def pdf_pages(self, pages: int) -> list[list[str]]:
        """Each page's lines, about :data:`PAGE_CHARS` characters a page."""
        out = []
        for _ in range(pages):
            words = self.text(PAGE_CHARS).split()
            lines: list[str] = []
            line = ""
            for word in words:
                if line and len(line) + 1 + len(word) > LINE_CHARS:
                    lines.append(line)
                    line = word
                else:
                    line = f"{line} {word}" if line else word
            out.append([*lines, line])
        return out


def pdf_document(pages: Sequence[Sequence[str]]) -> bytes:
    """A valid PDF whose pages show ``pages``' lines (the test kit's :func:`text_pdf`)."""
    return text_pdf(*pages)
