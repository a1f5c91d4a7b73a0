"""Markdown -> Telegram HTML rendering and length splitting (adapters.telegram.render/split)."""

from __future__ import annotations

import re
from collections.abc import Callable
from html.parser import HTMLParser
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.telegram.render import html_to_text, markdown_to_html, unescape_html
from adapters.telegram.split import split_html, split_text, utf16_len

telegram_parse: Callable[[str], tuple[str, list[dict[str, Any]]]] | None
try:
    from bot.testing.telegram.parse_html import parse_html as telegram_parse
except ImportError:  # the fake Telegram parser is optional for these tests
    telegram_parse = None

PROPERTY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ---------------------------------------------------------------- a strict validator

_TAGS = frozenset({"b", "i", "u", "s", "code", "pre", "a", "blockquote", "tg-spoiler"})
_START_TAG = {
    "a": re.compile(r'<a href="[^"<>]*">'),
    "code": re.compile(r'<code(?: class="language-[A-Za-z0-9_+#-]+")?>'),
}
_OK_ENTITY = re.compile(r"&(?:lt|gt|amp|quot);")


class StrictTelegramHTML(HTMLParser):
    """Accepts only well-nested Telegram HTML with the nesting rules the renderer promises."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.stack: list[str] = []
        self.pre_children: list[str] = []  # what the innermost <pre> holds: "text" / "code"

    def fail(self, why: str) -> None:
        raise AssertionError(f"{why} at {self.getpos()}")

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        raw = self.get_starttag_text() or ""
        if tag not in _TAGS:
            self.fail(f"tag {tag!r} not allowed")
        pattern = _START_TAG.get(tag)
        if not (pattern.fullmatch(raw) if pattern else raw == f"<{tag}>"):
            self.fail(f"bad start tag {raw!r}")
        if "&" in _OK_ENTITY.sub("", raw):
            self.fail(f"bad entity in {raw!r}")
        top = self.stack[-1] if self.stack else ""
        if top == "code":
            self.fail("tag inside <code>")
        if top == "pre":
            if tag != "code" or self.pre_children:
                self.fail("only one <code> may sit inside <pre>")
            self.pre_children.append("code")
        elif "pre" in self.stack:
            self.fail("tag inside <pre>")
        if tag in ("a", "blockquote", "pre") and tag in self.stack:
            self.fail(f"nested <{tag}>")
        if tag == "code" and "a" in self.stack:
            self.fail("<code> inside a link")
        if tag == "pre":
            self.pre_children = []
        self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.fail(f"unbalanced </{tag}>, open: {self.stack}")
        self.stack.pop()

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.fail(f"self-closing <{tag}/>")

    def handle_data(self, data: str) -> None:
        if any(ch in data for ch in "<>&"):
            self.fail(f"unescaped markup in {data!r}")
        if self.stack and self.stack[-1] == "pre":
            if "code" in self.pre_children:
                self.fail("text beside <code> in <pre>")
            self.pre_children.append("text")

    def handle_entityref(self, name: str) -> None:
        if name not in ("lt", "gt", "amp", "quot"):
            self.fail(f"entity &{name};")

    def handle_comment(self, data: str) -> None:
        self.fail("comment")

    def handle_decl(self, decl: str) -> None:
        self.fail("declaration")

    def handle_pi(self, data: str) -> None:
        self.fail("processing instruction")

    def unknown_decl(self, data: str) -> None:
        self.fail("unknown declaration")


def assert_valid(html: str) -> None:
    parser = StrictTelegramHTML()
    parser.feed(html)
    parser.close()
    assert not parser.stack, f"unclosed {parser.stack} in {html!r}"
    if telegram_parse is not None:
        plain, _ = telegram_parse(html)  # raises like Telegram's "can't parse entities"
        assert plain == html_to_text(html)


# ---------------------------------------------------------------- rendering table

CASES = [
    ("plain", "hello", "hello"),
    ("escaping", "a < b & c > d", "a &lt; b &amp; c &gt; d"),
    ("script tag", "<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),
    ("inline html", "x <b>y</b>", "x &lt;b&gt;y&lt;/b&gt;"),
    ("entities decoded then escaped", "&copy; &amp; &nbsp;x", "© &amp; \xa0x"),
    ("bold", "**b**", "<b>b</b>"),
    ("italic", "*i* _j_", "<i>i</i> <i>j</i>"),
    ("strike", "~~gone~~", "<s>gone</s>"),
    ("bold italic", "***both***", "<i><b>both</b></i>"),
    ("nested", "**bold *it* bold**", "<b>bold <i>it</i> bold</b>"),
    ("unclosed bold", "a **b", "a **b"),
    ("unclosed code", "`a", "`a"),
    ("inline code", "`a<b>`", "<code>a&lt;b&gt;</code>"),
    ("bold in bold", "**a __b__ c**", "<b>a b c</b>"),
    ("heading", "# Title *x*\ntext", "<b>Title <i>x</i></b>\n\ntext"),
    ("heading strong", "## **Bold** title", "<b>Bold title</b>"),
    ("paragraphs", "one\ntwo\n\nthree", "one\ntwo\n\nthree"),
    ("hard break", "one  \ntwo", "one\ntwo"),
    ("bullets", "- a\n- b", "• a\n• b"),
    ("nested bullets", "- a\n  - b\n    - c\n- d", "• a\n  • b\n    • c\n• d"),
    ("ordered start", "3. x\n4. y", "3. x\n4. y"),
    ("ordered in bullets", "- a\n  1. x\n  2. y", "• a\n  1. x\n  2. y"),
    ("loose list", "- a\n\n  more\n- b", "• a\n  more\n• b"),
    (
        "fence lang",
        "```python\nx = 1 < 2\n```",
        '<pre><code class="language-python">x = 1 &lt; 2</code></pre>',
    ),
    (
        "fence bad lang",
        '```c"><script>\nx\n```',
        '<pre><code class="language-cscript">x</code></pre>',
    ),
    ("fence c++", "```c++ {.x}\nx\n```", '<pre><code class="language-c++">x</code></pre>'),
    ("fence no lang", "```\n<b>\n```", "<pre>&lt;b&gt;</pre>"),
    ("indented code", "    code\n    more", "<pre>code\nmore</pre>"),
    ("empty fence", "```\n```", ""),
    ("unclosed fence", "```py\nx", '<pre><code class="language-py">x</code></pre>'),
    ("link", "[t](https://e.com/?a=1&b=2)", '<a href="https://e.com/?a=1&amp;b=2">t</a>'),
    ("link quote", '[t](<https://e.com/"x">)', '<a href="https://e.com/%22x%22">t</a>'),
    ("tg link", "[u](tg://resolve?domain=x)", '<a href="tg://resolve?domain=x">u</a>'),
    ("no text mentions", "[u](tg://user?id=1)", "u"),
    ("no pings", "ask @bob, not me@x.io", "ask @\u2060bob, not me@x.io"),
    ("code keeps @", "`@decorator`", "<code>@decorator</code>"),
    ("mailto autolink", "<a@b.co>", '<a href="mailto:a@b.co">a@b.co</a>'),
    ("javascript link", "[t](javascript:alert(1))", "t"),
    ("ftp link", "[**t**](ftp://x.y)", "<b>t</b>"),
    ("relative link", "[t](/path)", "t"),
    ("empty link text", "[](https://e.com)", '<a href="https://e.com">https://e.com</a>'),
    ("code in link", "[`x`](https://e.com)", '<a href="https://e.com">x</a>'),
    ("image", "![cat](https://e.com/c.png)", '<a href="https://e.com/c.png">cat</a>'),
    ("image bad scheme", "![cat](data:x)", "cat"),
    ("image in link", "[![i](https://a.b/i)](https://a.b)", '<a href="https://a.b">i</a>'),
    ("blockquote", "> q *i*\n>\n> r", "<blockquote>q <i>i</i>\n\nr</blockquote>"),
    ("nested blockquote", "> a\n> > b", "<blockquote>a\n\nb</blockquote>"),
    ("hr", "a\n\n---\n\nb", "a\n\n———\n\nb"),
    ("html block", "<div>\nhi\n</div>", "&lt;div&gt;\nhi\n&lt;/div&gt;"),
    ("trailing blank", "a\n\n&nbsp;\n\n", "a"),
    ("empty", "", ""),
    ("blank", " \n\n\t", ""),
]


@pytest.mark.parametrize(("source", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_markdown_to_html(source: str, expected: str) -> None:
    html = markdown_to_html(source)
    assert html == expected
    assert_valid(html)


def test_table_is_aligned_pre_block() -> None:
    html = markdown_to_html("| name | n |\n|:--|--:|\n| **Al** | 1 |\n| 中文 | 22 |")
    assert html == "<pre>name |  n\n-----+---\nAl   |  1\n中文 | 22</pre>"
    assert_valid(html)


def test_table_escapes_cells() -> None:
    html = markdown_to_html("| a<b |\n|---|\n| `&` |")
    assert html == "<pre>a&lt;b\n---\n&amp;</pre>"


def test_list_with_code_keeps_code_unindented() -> None:
    html = markdown_to_html("- item\n\n  ```py\n  a\n    b\n  ```\n- next")
    assert html == '• item\n<pre><code class="language-py">a\n  b</code></pre>\n• next'
    assert_valid(html)


@pytest.mark.parametrize(
    "source",
    [">" * 100 + " x", "- " * 100 + "x", "*" * 500 + "x" + "*" * 500, "a" + "~~" * 300 + "x"],
    ids=["deep quotes", "deep lists", "deep emphasis", "many strikes"],
)
def test_absurd_nesting_keeps_the_text(source: str) -> None:
    html = markdown_to_html(source)
    assert_valid(html)
    assert "x" in html_to_text(html)


def test_html_to_text_unescapes_like_telegram() -> None:
    assert html_to_text('<b>a &lt; b</b> <a href="x?a=1&amp;b">&amp;&quot;</a>') == 'a < b &"'
    assert unescape_html("&lt &#65;&#x41; &nbsp; &#0;") == "< AA &nbsp; &#0;"


# ---------------------------------------------------------------- rendering properties

_MD_BITS = [
    "**", "*", "_", "__", "~~", "`", "``", "```", "```py\n", "```\n", "\n", "\n\n", "# ", "## ",
    "> ", ">> ", "- ", "* ", "1. ", "7) ", "  ", "    ", "\t", "[", "]", "](", ")", "![",
    "](https://x.y/?a=1&b=\"2\")", "](javascript:alert(1))", "](tg://user?id=1)", "<", ">",
    "&", "&amp;", "&nbsp;", "&#0;", "&#x1F600;", "|", "| a | b |\n|---|:-:|\n", "---\n",
    "<script>", "</b>", "<b>", "\\", "😀", "👨‍👩‍👧", "👍🏽", "🇺🇦", "中文", "é", "e\u0301",
    "word ", "text", "\r\n", "\u200d",
]  # fmt: skip
markdown = st.lists(st.one_of(st.sampled_from(_MD_BITS), st.text(max_size=8)), max_size=40).map(
    "".join
)


@PROPERTY
@given(markdown)
def test_render_always_valid(source: str) -> None:
    html = markdown_to_html(source)
    assert_valid(html)
    assert set(re.findall(r"&([A-Za-z]+);", html)) <= {"lt", "gt", "amp", "quot"}
    visible = html_to_text(html)
    assert visible == visible.rstrip()


@PROPERTY
@given(st.text())
def test_render_never_raises_on_any_text(source: str) -> None:
    assert_valid(markdown_to_html(source))


# ---------------------------------------------------------------- splitting


def assert_chunks(original: str, chunks: list[str], limit: int) -> None:
    """Each chunk fits, and together they are the original text minus whitespace at cuts."""
    pos = 0
    for chunk in chunks:
        assert chunk.strip(), chunks
        assert utf16_len(chunk) <= limit
        found = original.find(chunk, pos)
        assert found >= 0 and not original[pos:found].strip(), (chunk, original[pos:])
        pos = found + len(chunk)
    assert not original[pos:].strip()


def longest_space_run(text: str) -> int:
    return max((utf16_len(m) for m in re.findall(r"\s+", text)), default=0)


def check_split_html(html: str, limit: int) -> list[str]:
    chunks = split_html(html, limit)
    visible = [html_to_text(chunk) for chunk in chunks]
    for chunk in chunks:
        assert_valid(chunk)
    original = html_to_text(html)
    assert_chunks(original, visible, limit)
    for text in visible[:-1]:  # minimal-ish: only the last chunk may be short
        assert utf16_len(text) >= limit / 2 - longest_space_run(original), visible
    return chunks


@PROPERTY
@given(markdown, st.integers(min_value=20, max_value=200))
def test_split_html_properties(source: str, limit: int) -> None:
    check_split_html(markdown_to_html(source * 3), limit)


@PROPERTY
@given(markdown, st.integers(min_value=2, max_value=20))
def test_split_html_tiny_limits(source: str, limit: int) -> None:
    html = markdown_to_html(source)
    chunks = split_html(html, limit)
    for chunk in chunks:
        assert_valid(chunk)
    assert_chunks(html_to_text(html), [html_to_text(c) for c in chunks], limit)


@PROPERTY
@given(st.text(), st.integers(min_value=2, max_value=100))
def test_split_text_properties(text: str, limit: int) -> None:
    chunks = split_text(text, limit)
    assert_chunks(text, chunks, limit)
    if not text.strip():
        assert chunks == []


def test_long_reply_splits_into_three_messages() -> None:
    paragraph = (
        "Here is **an important point** about `asyncio` and *why* it matters: the event "
        "loop runs one task at a time, so blocking calls stall every chat at once & more. "
    )
    code = "```python\n" + "\n".join(f"print({i} < {i + 1})" for i in range(12)) + "\n```"
    parts = [paragraph * 3 if i % 4 else code for i in range(27)]
    html = markdown_to_html("\n\n".join(parts))
    assert 10_000 <= len(html_to_text(html)) <= 11_000
    chunks = check_split_html(html, 4096)
    assert len(chunks) == 3
    assert all(utf16_len(html_to_text(chunk)) <= 4096 for chunk in chunks)


def test_cut_reopens_tags_with_attributes() -> None:
    html = '<b>bold <a href="https://e.com/?a&amp;b">' + "link " * 10 + "</a> tail</b>"
    chunks = check_split_html(html, 20)
    assert all(c.startswith("<b>") and c.endswith("</b>") for c in chunks)
    assert all('<a href="https://e.com/?a&amp;b">' in c for c in chunks[:-1])


def test_cut_inside_pre_reopens_code_language() -> None:
    html = markdown_to_html("```py\n" + "\n".join(f"x{i} = {i}" for i in range(20)) + "\n```")
    chunks = check_split_html(html, 40)
    assert len(chunks) > 1
    for chunk in chunks:
        assert chunk.startswith('<pre><code class="language-py">x')
        assert chunk.endswith("</code></pre>")


def test_prefers_paragraph_then_newline_then_space() -> None:
    assert split_text("aaaa bbbb\ncccc\n\ndddd eeee", 20) == ["aaaa bbbb\ncccc", "dddd eeee"]
    assert split_text("aaaa bbbb\ncccc dddd eeee", 16) == ["aaaa bbbb", "cccc dddd eeee"]
    assert split_text("aaaa bbbb cccc dddd eeee", 12) == ["aaaa bbbb", "cccc dddd", "eeee"]
    assert split_text("abcdefghij", 4) == ["abcd", "efgh", "ij"]


def test_counts_utf16_and_keeps_graphemes() -> None:
    assert utf16_len("a😀中") == 4
    assert split_text("😀" * 5, 4) == ["😀😀", "😀😀", "😀"]
    assert split_text("👍🏽" * 3, 5) == ["👍🏽"] * 3
    assert split_text("🇺🇦🇺🇦", 6) == ["🇺🇦", "🇺🇦"]
    assert split_html("&amp;" * 5, 2) == ["&amp;&amp;", "&amp;&amp;", "&amp;"]


def test_split_repairs_literal_ampersands_without_changing_the_text() -> None:
    html = "a &nbsp; &ltx; b & c"
    chunks = split_html(html, 3)
    for chunk in chunks:
        assert_valid(chunk)
    assert_chunks(html_to_text(html), [html_to_text(c) for c in chunks], 3)


def test_split_edge_cases() -> None:
    assert split_html("") == []
    assert split_html("<b> \n </b>") == []
    assert split_html("<b>short</b>") == ["<b>short</b>"]
    assert split_text("  \n ") == []
    assert split_text("ab\r\ncd\r\n\r\nef", 4) == ["ab", "cd", "ef"]
    with pytest.raises(ValueError):
        split_text("abc", 1)
