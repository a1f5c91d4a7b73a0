"""Chunks follow the document's structure, fit their token budget and lose no word."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.knowledge.chunking import Block, chunk_blocks, pieces
from bot.llm.tokens import TokenCounter


def words(text: str) -> int:
    return len(text.split())


WORD = st.text(alphabet="abcdefghij", min_size=1, max_size=8)
SENTENCE = st.lists(WORD, min_size=1, max_size=30).map(lambda ws: " ".join(ws) + ".")
BLOCK = st.builds(
    Block,
    st.sampled_from([(), ("Rules",), ("Rules", "Bans"), ("Setup",)]),
    st.lists(SENTENCE, min_size=1, max_size=6).map(" ".join),
)


@settings(max_examples=200, deadline=None)
@given(blocks=st.lists(BLOCK, max_size=12), size=st.integers(4, 60), overlap=st.integers(0, 20))
def test_chunks_fit_keep_order_and_lose_no_word(
    blocks: list[Block], size: int, overlap: int
) -> None:
    overlap = min(overlap, size - 1)
    chunks = chunk_blocks(blocks, max_tokens=size, overlap=overlap, count=words)
    assert all(chunk.tokens <= size for chunk in chunks)
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    # every block's words appear, in order, in chunks under the block's own headings
    for block in blocks:
        wanted = block.text.split()
        found = [w for c in chunks if c.headings == block.headings for w in c.text.split()]
        position = 0
        for word in found:
            if position < len(wanted) and word == wanted[position]:
                position += 1
        assert position == len(wanted)


def test_a_new_heading_starts_a_new_chunk_and_a_long_section_overlaps() -> None:
    blocks = [
        Block(("Rules",), "Be kind. No spam."),
        Block(("Rules", "Bans"), "One. Two. Three. Four. Five. Six."),
    ]
    chunks = chunk_blocks(blocks, max_tokens=4, overlap=1, count=words)
    assert [c.text for c in chunks if c.headings == ("Rules",)] == ["Be kind. No spam."]
    bans = [c.text for c in chunks if c.headings == ("Rules", "Bans")]
    assert bans == ["One. Two. Three. Four.", "Four.\nFive. Six."]  # the overlap


def test_pieces_cut_a_huge_word_without_dropping_it() -> None:
    assert "".join(pieces("x" * 50, 10, len)) == "x" * 50
    with pytest.raises(ValueError, match="overlap"):
        chunk_blocks([], max_tokens=5, overlap=5, count=words)


def test_real_token_counts_bound_every_chunk() -> None:
    counter = TokenCounter("gpt-4o-mini")
    text = " ".join(
        f"Rule {n}: members post links only in #links, never twice." for n in range(200)
    )
    chunks = chunk_blocks(
        [Block(("Rules",), text)], max_tokens=120, overlap=20, count=counter.count_text
    )
    assert len(chunks) > 10
    assert all(counter.count_text(c.text) <= 120 for c in chunks)


def test_a_chunk_never_spans_two_pdf_pages() -> None:
    blocks = [Block(("Guide",), "Page one text.", 1), Block(("Guide",), "Page two text.", 2)]
    chunks = chunk_blocks(blocks, max_tokens=300, overlap=40, count=lambda t: len(t.split()))
    assert [(c.text, c.page) for c in chunks] == [("Page one text.", 1), ("Page two text.", 2)]
