"""A document made ready to store: hashed as given, chunked, or refused before anything."""

from __future__ import annotations

import pytest

from bot.knowledge.formats import DocumentError
from bot.knowledge.prepare import PreparedDocument, prepare_document
from bot.llm.tokens import TokenCounter

COUNT = TokenCounter("gpt-4o-mini").count_text


def prepare(name: str, data: bytes) -> PreparedDocument:
    return prepare_document(
        name, data, max_bytes=100_000, chunk_tokens=200, overlap=20, count=COUNT
    )


def test_same_bytes_same_hash_and_a_change_changes_it() -> None:
    rules = b"# Rules\n\nNo spam in #general.\n\n# Links\n\nPost links in #links."
    first, again = prepare("rules.md", rules), prepare("rules.md", rules)
    changed = prepare("rules.md", rules.replace(b"spam", b"ads"))
    assert first == again
    assert changed.content_hash != first.content_hash
    assert [c.headings for c in first.chunks] == [("Rules",), ("Links",)]
    assert first.format == "markdown"


def test_a_refused_file_raises_before_anything_is_made() -> None:
    with pytest.raises(DocumentError, match="unsupported"):
        prepare("photo.png", b"\x89PNG\r\n")
