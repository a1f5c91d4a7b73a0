"""Splitting Markdown replies into Discord messages without breaking code fences."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.discord.split import DISCORD_LIMIT, split_message

PROPERTY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ---------------------------------------------------------------- an independent fence scanner

_OPEN = re.compile(r"( {0,3})(`{3,}|~{3,})(.*)")
_CLOSE = re.compile(r" {0,3}(`{3,}|~{3,})[ \t]*")


def scan(text: str, limit: int | None = None) -> tuple[list[str], list[str], str | None]:
    """CommonMark fences: (fence lines, other lines, fence still open at the end).

    An opening line longer than ``limit`` reads as text: no chunk can hold it whole, so the
    splitter must cut it and its pieces are no fence (documented: split as prose).
    """
    fences: list[str] = []
    other: list[str] = []
    fence: str | None = None
    for line in re.split(r"\r\n|\r|\n", text):
        if fence is None:
            m = _OPEN.fullmatch(line)
            too_long = limit is not None and len(line) > limit
            if m and not (m[2][0] == "`" and "`" in m[3]) and not too_long:
                fence = m[2]
                fences.append(line)
                continue
        else:
            m = _CLOSE.fullmatch(line)
            if m and m[1][0] == fence[0] and len(m[1]) >= len(fence):
                fence = None
                fences.append(line)
                continue
        other.append(line)
    return fences, other, fence


def squash(text: str, limit: int | None = None) -> str:
    """The text without its fence lines and without any whitespace."""
    return "".join("".join(scan(text, limit)[1]).split())


def check(text: str, limit: int) -> list[str]:
    chunks = split_message(text, limit)
    for chunk in chunks:
        assert len(chunk) <= limit, (chunk, limit)
        assert chunk.strip(), chunks
        fences, _, still_open = scan(chunk)
        if still_open is not None:
            # Documented limit: an opening line that cannot share a chunk with its closing
            # line and one body character is split as prose (found by hypothesis).
            opener = fences[-1]
            assert len(opener) + 1 + len(still_open) + 2 > limit, f"unbalanced fence in {chunk!r}"
            fences = fences[:-1]
        assert len(fences) % 2 == 0
    assert "".join(squash(c) for c in chunks) == squash(text, limit)
    return chunks


# ---------------------------------------------------------------- table tests


def test_a_fence_line_too_long_to_close_stays_prose() -> None:
    assert split_message("~~~_________", 16) == ["~~~_________"]
    assert split_message("~~~____", 16) == ["~~~____\n~~~"]  # room to close it: closed


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("____\n~~~_________", ["____", "~~~_________"]),  # found by hypothesis
        ("~~~_________\n____", ["~~~_________", "____"]),
        ("____\r\n~~~_________\r\n____", ["____", "~~~_________", "____"]),
        ("  ~~~_________\nxy\nab", ["  ~~~_________", "xy\nab"]),
        ("~~~" + "_" * 20, ["~~", "~" + "_" * 15, "_" * 5]),  # longer than the limit: cut
    ],
)
def test_an_unclosable_fence_line_is_cut_at_its_line_breaks(text: str, expected: list[str]) -> None:
    # Cutting inside it when a line break fits would turn a fence into two lines of text.
    assert check(text, 16) == expected


def test_limits_and_trivial_input() -> None:
    with pytest.raises(ValueError):
        split_message("hello", 15)
    assert split_message("") == []
    assert split_message(" \n\n \t") == []
    assert split_message("  hello  \n") == ["hello"]
    assert split_message("x" * DISCORD_LIMIT) == ["x" * DISCORD_LIMIT]


def test_discord_counts_code_points() -> None:
    # discord.py's Paginator documents max_size in code points: one per astral emoji
    assert split_message("😀" * 2000) == ["😀" * 2000]
    assert split_message("😀" * 2001) == ["😀" * 2000, "😀"]


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("a" * 30 + "\n\n" + "b" * 30, 50, ["a" * 30, "b" * 30]),
        ("aaaa bbbb\ncccc\n\ndddd eeee", 20, ["aaaa bbbb\ncccc", "dddd eeee"]),
        ("aaaa bbbb\ncccc dddd eeee", 16, ["aaaa bbbb", "cccc dddd eeee"]),
        ("aaaa bbbb cccc dddd eeee", 16, ["aaaa bbbb cccc", "dddd eeee"]),
        ("x" * 40, 16, ["x" * 16, "x" * 16, "x" * 8]),
        ("aaa `b c d` eee fff", 16, ["aaa `b c d` eee", "fff"]),
        ("aaa **b c d** eee fff", 18, ["aaa **b c d** eee", "fff"]),
        ("see [the docs](https://x.io/a) now", 31, ["see [the docs](https://x.io/a)", "now"]),
    ],
)
def test_prose_cut_preferences(text: str, limit: int, expected: list[str]) -> None:
    assert check(text, limit) == expected


def test_grapheme_clusters_stay_whole() -> None:
    family = "👨\u200d👩\u200d👧"  # five code points
    assert check(family * 7, 16) == [family * 3, family * 3, family]
    assert check("👍🏽" * 9, 16) == ["👍🏽" * 8, "👍🏽"]
    assert check("e\u0301" * 10, 16) == ["e\u0301" * 8, "e\u0301" * 2]
    assert check("🇺🇦" * 9, 16) == ["🇺🇦" * 8, "🇺🇦"]
    assert check("❤️" * 9, 16) == ["❤️" * 8, "❤️"]


def test_code_block_is_closed_and_reopened_with_its_language() -> None:
    code = "\n".join(f"x = {i}  # comment" for i in range(10))
    text = f"Intro.\n\n```python\n{code}\n```\nAfter."
    chunks = check(text, 80)
    assert len(chunks) > 2
    assert chunks[0].startswith("Intro.\n\n```python\nx = 0")
    for chunk in chunks[1:]:
        assert chunk.startswith("```python\nx = ")
    for chunk in chunks[:-1]:
        assert chunk.endswith("# comment\n```")
    assert chunks[-1].endswith("\n```\nAfter.")


def test_cut_between_prose_and_code_prefers_the_block_edge() -> None:
    text = "p" * 30 + "\n```\n" + "c" * 20 + "\n```"
    assert check(text, 40) == ["p" * 30, "```\n" + "c" * 20 + "\n```"]


def test_code_lines_are_cut_at_newlines_and_keep_indentation() -> None:
    text = "```js\nfunction f() {\n    return 1;\n    // done\n}\n```"
    assert check(text, 40) == [
        "```js\nfunction f() {\n    return 1;\n```",
        "```js\n    // done\n}\n```",
    ]


def test_tilde_and_long_fences_reopen_with_the_same_fence() -> None:
    text = "~~~ruby\n" + "\n".join(["puts 1"] * 8) + "\n~~~"
    for chunk in check(text, 30):
        assert chunk.startswith("~~~ruby\n") and chunk.endswith("\n~~~")
    inner = "```py\nprint(1)\n```"
    text = "````markdown\n" + "\n".join([inner] * 4) + "\n````"
    chunks = check(text, 40)
    assert len(chunks) > 1
    for chunk in chunks:
        assert chunk.startswith("````markdown\n") and chunk.endswith("\n````")


def test_indented_fence_keeps_its_indent() -> None:
    text = "1. step\n\n   ```sh\n" + "\n".join(["   make all"] * 6) + "\n   ```"
    chunks = check(text, 45)
    assert chunks[1].startswith("   ```sh\n   make all")
    assert all(c.endswith("\n   ```") for c in chunks)
    # four spaces is not a fence: nothing to repair
    assert scan("    ```sh\nx")[2] is None


def test_unclosed_fence_is_closed_in_the_last_chunk() -> None:
    assert split_message("Here:\n```py\nprint(1)") == ["Here:\n```py\nprint(1)\n```"]
    chunks = check("```py\n" + "\n".join(["print(1)"] * 10), 40)
    assert all(c.startswith("```py\n") and c.endswith("\nprint(1)\n```") for c in chunks)


def test_a_line_longer_than_the_limit_is_hard_cut_inside_the_fence() -> None:
    chunks = check("```py\n" + "y" * 100 + "\n```", 40)
    assert chunks == ["```py\n" + "y" * 30 + "\n```"] * 3 + ["```py\n" + "y" * 10 + "\n```"]


def test_backticks_mid_line_never_become_a_fence() -> None:
    text = "word ``` word " * 10
    for chunk in check(text, 30):
        assert not chunk.startswith("```")
    for chunk in check("x" * 20 + " ```" + "y" * 30, 30):
        assert not chunk.startswith("```")


def test_a_body_line_is_not_cut_into_a_closing_fence() -> None:
    text = "````\n" + "ab ```` cd " * 6 + "\n````"
    for chunk in check(text, 30):
        assert chunk.count("\n") >= 2


def test_crlf_line_endings() -> None:
    text = "para one\r\n\r\n```c\r\n" + "int x;\r\n" * 8 + "```\r\ndone"
    chunks = check(text, 40)
    assert chunks[0].startswith("para one\r\n\r\n```c\r\nint x;")
    assert chunks[0].endswith("int x;\n```") and chunks[1].startswith("```c\nint x;")
    assert chunks[-1].endswith("int x;\r\n```\r\ndone")


def test_a_long_reply_with_code_fits_in_four_messages() -> None:
    para = (
        "Parlour splits long answers so that every message renders on its own, "
        "and code blocks stay code blocks even when they are cut. "
    ) * 4
    code = "\n".join(
        f"    result_{i} = compute(value_{i}, factor={i})  # step {i}" for i in range(50)
    )
    text = f"{para}\n\n{para}\n\n```python\ndef main():\n{code}\n```\n\n{para}\n\n{para}\n\n{para}"
    assert 5000 <= len(text) <= 5600
    chunks = check(text, DISCORD_LIMIT)
    assert len(chunks) <= 4
    assert any(c.startswith("```python\n") for c in chunks[1:])


# ---------------------------------------------------------------- properties

_WORDS = st.sampled_from(
    [
        "hello", "world", "漢字", "テスト", "中文字符串", "😀", "👍🏽", "👨\u200d👩\u200d👧", "🇺🇦",
        "e\u0301", "❤️", "`x`", "`a b`", "**bold text**", "```", "````", "~~~", "``", "a``b",
        "[link](http://x.y/z)", "__u__", "||spoiler||", "*", "-", "#", ">",
    ]
)  # fmt: skip
_LONG = st.builds(
    lambda c, k: c * k, st.sampled_from(["x", "字", "😀", "`a"]), st.integers(20, 400)
)
_TOKEN = st.one_of(_WORDS, _WORDS, _WORDS, _LONG)
_PROSE_LINE = st.builds(lambda ws: "w " + " ".join(ws), st.lists(_TOKEN, max_size=12))
_PARAGRAPH = st.builds("\n".join, st.lists(_PROSE_LINE, min_size=1, max_size=4))
_CODE_LINE = st.one_of(
    st.builds(lambda i, ws: " " * i + "c " + " ".join(ws), st.integers(0, 6), st.lists(_TOKEN)),
    st.sampled_from(["", "  ", "```", "````", "~~~", "``` x", "    ```", "}"]),
)


@st.composite
def _code_block(draw: st.DrawFn) -> str:
    indent = " " * draw(st.integers(0, 3))
    fence = draw(st.sampled_from("`~")) * draw(st.integers(3, 5))
    lang = draw(st.sampled_from(["", "python", "c++", "js", " rust ", "x-y_z.1"]))
    body = draw(st.lists(_CODE_LINE, max_size=8))
    closing = draw(st.sampled_from(["", indent + fence, fence + "  ", fence + fence[0]]))
    return "\n".join([indent + fence + lang, *body, *([closing] if closing else [])])


_DOCUMENT = st.builds(
    lambda blocks, seps: "".join(b + s for b, s in zip(blocks, seps * len(blocks), strict=False)),
    st.lists(st.one_of(_PARAGRAPH, _code_block()), min_size=1, max_size=6),
    st.lists(st.sampled_from(["\n\n", "\n", "\n \n\n"]), min_size=1, max_size=3),
)


@PROPERTY
@given(_DOCUMENT, st.integers(40, 300))
def test_split_properties(text: str, limit: int) -> None:
    check(text, limit)


@PROPERTY
@given(st.text(alphabet="ab `~\n*_\u0301😀", max_size=400), st.integers(16, 60))
def test_split_survives_arbitrary_text(text: str, limit: int) -> None:
    check(text, limit)
