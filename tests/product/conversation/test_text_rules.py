"""The grapheme and fence rules the splitters and the reply cap share (bot.platform.text_rules)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.platform.text_rules import FENCE, clusters, extends

PIECES = ["a", " ", "\n", "\r", "é", "e\u0301", "\u200d", "👍", "🏽", "🇫", "🇷", "\ufe0f"]
TEXTS = st.lists(st.sampled_from(PIECES)).map("".join)


@given(TEXTS)
def test_clusters_keep_every_character_in_order(text: str) -> None:
    assert "".join(clusters(text)) == text


@given(TEXTS)
def test_a_character_that_attaches_starts_a_cluster_only_after_a_line_break(text: str) -> None:
    found = clusters(text)
    for before, cluster in itertools.pairwise(found):
        assert not extends(cluster[0]) or before in ("\n", "\r", "\r\n")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("🇫🇷🇫🇷", ["🇫🇷", "🇫🇷"]),
        ("👍🏽!", ["👍🏽", "!"]),
        ("e\u0301x", ["e\u0301", "x"]),
        ("a\r\nb", ["a", "\r\n", "b"]),
        ("👩\u200d💻", ["👩\u200d💻"]),
    ],
)
def test_clusters_hold_what_is_shown_as_one_character(text: str, expected: list[str]) -> None:
    assert clusters(text) == expected


def test_fence_lines_as_commonmark_reads_them() -> None:
    assert FENCE.fullmatch("```python") and FENCE.fullmatch("   ~~~")
    assert not FENCE.fullmatch("    ```")  # four spaces: indented code, not a fence
