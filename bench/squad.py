"""SQuAD v1.1's dev set, a public data set we did not write, read for :mod:`bench.knowledge`.

SQuAD (Rajpurkar et al., 2016, rajpurkar.github.io/SQuAD-explorer) asks crowd workers'
questions about Wikipedia paragraphs; each answer is a span of its paragraph. The dev set holds
48 articles, 2,067 paragraphs and 10,570 questions (each with one to several reference answers,
spans of the same paragraph). Licence: CC BY-SA 4.0.

The file (4,854,279 bytes) is never committed: it is read from ``--data PATH``, else
``$PARLOUR_SQUAD``, else :data:`CACHE`, which is filled from :data:`URLS` when empty (checked
against :data:`SHA256`, the official file's digest).

What the bench reads of it is each article's title, its paragraphs, and each question's id, text
and answer strings (not ``answer_start``). :data:`CONTENT` is a digest of exactly that, as
:func:`content_digest` computes it, for the copy the documented figures were made on: a file with
other bytes but that content (say, one rebuilt from the explorer's pages) is accepted, as it gives
the same figures.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

URLS = (
    "https://rajpurkar.github.io/SQuAD-explorer/dataset/dev-v1.1.json",
    "https://raw.githubusercontent.com/rajpurkar/SQuAD-explorer/master/dataset/dev-v1.1.json",
)
SHA256 = "95aa6a52d5d6a735563366753ca50492a658031da74f301ac5238b03966972c9"  # official bytes
CONTENT = "456d15e77555a6967dfebde4bea568228d70544bd80e5796f0e23fa4d10e48ad"  # see the docstring
CACHE = Path("~/.cache/parlour-bench/squad-dev-v1.1.json")
ENV = "PARLOUR_SQUAD"
LICENCE = "CC BY-SA 4.0"


@dataclass(frozen=True, slots=True)
class Question:
    qid: str
    text: str
    answers: tuple[str, ...]  # the reference answers, each once, in the file's order
    article: int  # index into :attr:`Dataset.articles`
    paragraph: int  # index into that article's paragraphs


@dataclass(frozen=True, slots=True)
class Article:
    title: str  # as the file has it: "Sky_(United_Kingdom)"
    paragraphs: tuple[str, ...]

    @property
    def heading(self) -> str:
        return self.title.replace("_", " ")

    @property
    def source(self) -> str:
        """The document's name in the base."""
        return f"{self.title}.md"

    def markdown(self) -> str:
        """The article as one Markdown document: its title as the heading, then paragraphs."""
        return "\n\n".join([f"# {self.heading}", *self.paragraphs]) + "\n"


@dataclass(frozen=True, slots=True)
class Dataset:
    articles: tuple[Article, ...]
    questions: tuple[Question, ...]  # in the file's order
    path: Path
    copy: str  # which copy: "official bytes" or "content-identical copy"


class DataMissing(Exception):
    """The data set could not be found or fetched; the message says where to put it."""


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def where_to_put(path: Path, why: str) -> str:
    return (
        f"SQuAD v1.1 dev is not available ({why}): download {URLS[0]} (sha256 {SHA256},"
        f" 4,854,279 bytes, {LICENCE}) and put it at {path},"
        f" or pass --data PATH, or set {ENV}=PATH."
    )


def content_digest(raw: dict[str, Any]) -> str:
    """SHA-256 of what the bench reads (titles, paragraphs, question ids, texts, answers)."""
    canonical = [
        [
            article["title"],
            [
                [
                    paragraph["context"],
                    [
                        [qa["id"], qa["question"], [a["text"] for a in qa["answers"]]]
                        for qa in paragraph["qas"]
                    ],
                ]
                for paragraph in article["paragraphs"]
            ],
        ]
        for article in raw["data"]
    ]
    text = json.dumps(canonical, ensure_ascii=False, separators=(",", ":"))
    return _sha256(text.encode("utf-8"))


def _which(data: bytes) -> tuple[str, dict[str, Any]] | None:
    """("official bytes" | "content-identical copy", the parsed file), or None."""
    try:
        raw: dict[str, Any] = json.loads(data)
    except ValueError:
        return None
    if _sha256(data) == SHA256:
        return "official bytes", raw
    if isinstance(raw, dict) and content_digest(raw) == CONTENT:
        return "content-identical copy", raw
    return None


def _download() -> tuple[bytes, str]:
    errors = []
    for url in URLS:
        try:
            with urllib.request.urlopen(url, timeout=60) as response:
                body: bytes = response.read()
        except (OSError, ValueError) as exc:
            errors.append(f"{url}: {exc}")
            continue
        if _sha256(body) == SHA256:
            return body, url
        errors.append(f"{url}: the sha256 did not match")
    raise OSError("; ".join(errors))


def load(data: Path | None = None) -> Dataset:
    """The data set from ``data``, else ``$PARLOUR_SQUAD``, else :data:`CACHE` (downloaded into
    it when missing). Raises :class:`DataMissing` with one sentence on failure."""
    chosen = data or (Path(os.environ[ENV]) if os.environ.get(ENV) else None)
    if chosen is not None:
        if not chosen.is_file():
            raise DataMissing(where_to_put(chosen, f"no file at {chosen}"))
        body = chosen.read_bytes()
        known = _which(body)
        if known is None:  # another version: figures not comparable
            sys.stderr.write(f"warning: {chosen} is not the SQuAD file the figures were made on\n")
            return parse(json.loads(body), chosen, "another version")
        return parse(known[1], chosen, known[0])
    path = CACHE.expanduser()
    if path.is_file() and (known := _which(path.read_bytes())) is not None:
        return parse(known[1], path, known[0])
    try:
        body, _ = _download()
    except OSError as exc:
        raise DataMissing(where_to_put(path, f"download failed: {exc}")) from exc
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".part")
    partial.write_bytes(body)
    partial.replace(path)
    return parse(json.loads(body), path, "official bytes")


def parse(raw: dict[str, Any], path: Path, copy: str) -> Dataset:
    articles: list[Article] = []
    questions: list[Question] = []
    for a, article in enumerate(raw["data"]):
        paragraphs = []
        for p, paragraph in enumerate(article["paragraphs"]):
            paragraphs.append(str(paragraph["context"]))
            for qa in paragraph["qas"]:
                answers = tuple(dict.fromkeys(str(x["text"]) for x in qa["answers"]))
                questions.append(Question(str(qa["id"]), str(qa["question"]), answers, a, p))
        articles.append(Article(str(article["title"]), tuple(paragraphs)))
    return Dataset(tuple(articles), tuple(questions), path, copy)
