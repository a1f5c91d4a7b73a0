"""Render the Markdown an LLM writes into the small HTML subset Telegram accepts.

Why HTML and not MarkdownV2: MarkdownV2 needs almost every punctuation mark escaped and a
single unmatched ``_`` makes Telegram answer "can't parse entities"; HTML needs only
``&lt; &gt; &amp;`` escaped, so a correct renderer cannot produce an unparsable message.

Why markdown-it-py: LLM Markdown is CommonMark-ish and full of edge cases (unclosed ``**``,
backticks inside code, nested lists, stray ``<tags>``). Regex converters get those wrong and
then emit overlapping tags, which Telegram rejects. markdown-it-py is a spec-compliant parser;
walking its syntax tree yields properly nested output by construction, and everything it
does not recognise arrives as plain text that we escape.

Telegram's nesting rules (https://core.telegram.org/bots/api#formatting-options) are applied
while walking: nothing inside ``<pre>``/``<code>`` except ``pre > code``, no link inside a
link, no code inside a link, no blockquote inside a blockquote. Constructs Telegram has no
entity for (headings, lists, rules, tables) become text layouts.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token
    from markdown_it.tree import SyntaxTreeNode

__all__ = ["defuse_mentions", "html_to_text", "markdown_to_html", "unescape_html"]

HR = "———"
BULLET = "• "
INDENT = "  "
_LINK_SCHEMES = frozenset({"http", "https", "mailto", "tg"})
# "@name" in a bot's text becomes a mention that notifies that user; the model must not ping
# people, so a word joiner (invisible) goes after the "@". tg://user links are text mentions.
_MENTION = re.compile(r"(?<![\w@])@(?=[A-Za-z0-9_])")
_WORD_JOINER = "\u2060"
_LANG_JUNK = re.compile(r"[^A-Za-z0-9_+#-]")
_TAG = re.compile(r"<[^>]*>")
_ENTITY = re.compile(r"&(?:#x([0-9a-fA-F]*)|#([0-9]*)|([A-Za-z]+));?")
_NAMED = {"lt": "<", "gt": ">", "amp": "&", "quot": '"'}
_TRAILING_SPACE = re.compile(r"(?:\s|</[a-z-]+>)+\Z")
_CLOSING = re.compile(r"</[a-z-]+>")
_EMPTY_ELEMENT = re.compile(r"<([a-z-]+)(?: [^>]*)?></\1>")
_MARKS = {"strong": "b", "em": "i", "s": "s"}


_MAX_NESTING = 32  # markdown-it silently drops what is nested deeper: we fall back instead


@functools.cache
def _markdown() -> MarkdownIt:
    """CommonMark + tables + ~~strike~~; every link is parsed so we can drop bad schemes.
    Built (and markdown-it imported) for the first reply: an idle bot holds neither."""
    from markdown_it import MarkdownIt

    class _Parser(MarkdownIt):
        def validateLink(self, url: str) -> bool:  # markdown-it's hook name
            return True

    return _Parser("commonmark", {"maxNesting": _MAX_NESTING}).enable(["strikethrough", "table"])


@dataclass(frozen=True, slots=True)
class _Ctx:
    marks: frozenset[str] = frozenset()  # b/i/s already open: nesting them again is noise
    in_link: bool = False
    in_quote: bool = False


def markdown_to_html(text: str) -> str:
    """Render ``text`` (LLM Markdown) to Telegram HTML; never raises on any input string."""
    from markdown_it.tree import SyntaxTreeNode

    tokens = _markdown().parse(text)
    if any(tok.nesting == 1 and tok.level >= _MAX_NESTING - 1 for tok in tokens):
        return _plain_fallback(text)  # markdown-it skipped the rest of the input
    try:
        root = SyntaxTreeNode(_flatten_marks(tokens))
        return _tidy_tail(_blocks(root.children, _Ctx()))
    except RecursionError:  # absurd nesting that survived the checks above
        return _plain_fallback(text)


def _plain_fallback(text: str) -> str:
    return _tidy_tail(escape(text))


def _flatten_marks(tokens: list[Token]) -> list[Token]:
    """Drop strong/em/strike pairs nested in the same kind: ``***...***`` of any depth
    renders as at most one <b><i>, and the syntax tree stays shallow."""
    for token in tokens:
        if token.children:
            token.children = _flatten_marks(token.children)
    kept: list[Token] = []
    open_marks: dict[str, int] = {}
    keep_stack: list[bool] = []
    for token in tokens:
        kind = token.type.rsplit("_", 1)[0]
        if token.nesting == 1:
            keep = kind not in _MARKS or not open_marks.get(kind)
            open_marks[kind] = open_marks.get(kind, 0) + 1
            keep_stack.append(keep)
        elif token.nesting == -1:
            open_marks[kind] = open_marks.get(kind, 0) - 1
            keep = keep_stack.pop() if keep_stack else True
        else:
            keep = True
        if keep:
            kept.append(token)
    return kept


def html_to_text(html: str) -> str:
    """What Telegram shows for ``html``: tags dropped, entities decoded (plain-text fallback)."""
    return unescape_html(_TAG.sub("", html))


def unescape_html(text: str) -> str:
    """Decode entities as Telegram (TDLib) does: ``&lt; &gt; &amp; &quot;`` and numeric ones,
    the ``;`` optional; anything else stays literal."""
    return _ENTITY.sub(_decode_entity, text)


def _decode_entity(match: re.Match[str]) -> str:
    hex_digits, digits, name = match.groups()
    if name is not None:
        return _NAMED.get(name, match.group(0))
    number = hex_digits if hex_digits is not None else digits
    if not number or len(number) > (6 if hex_digits is not None else 7):
        return match.group(0)
    code = int(number, 16 if hex_digits is not None else 10)
    if code == 0 or code >= 0x10FFFF or 0xD800 <= code <= 0xDFFF:
        return match.group(0)
    return chr(code)


def escape(text: str) -> str:
    """Escape text content: exactly the three entities Telegram requires."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _escape_attr(text: str) -> str:
    return escape(text).replace('"', "&quot;")


# ---------------------------------------------------------------- blocks


def _blocks(nodes: list[SyntaxTreeNode], ctx: _Ctx, sep: str = "\n\n") -> str:
    parts = (_block(node, ctx) for node in nodes)
    return sep.join(part for part in parts if html_to_text(part).strip())


def _block(node: SyntaxTreeNode, ctx: _Ctx) -> str:
    kind = node.type
    if kind == "paragraph":
        return _inline_of(node, ctx)
    if kind == "heading":
        return f"<b>{_inline_of(node, replace(ctx, marks=ctx.marks | {'b'}))}</b>"
    if kind in ("bullet_list", "ordered_list"):
        return _list(node, ctx)
    if kind == "blockquote":
        inner = _blocks(node.children, replace(ctx, in_quote=True))
        return inner if ctx.in_quote else f"<blockquote>{inner}</blockquote>"
    if kind in ("fence", "code_block"):
        return _code_block(node.content, node.info)
    if kind == "html_block":
        return escape(node.content.rstrip("\n"))
    if kind == "hr":
        return HR
    if kind == "table":
        return _table(node)
    return _blocks(node.children, ctx)


def _inline_of(node: SyntaxTreeNode, ctx: _Ctx) -> str:
    return "".join(_inline(child, ctx) for inline in node.children for child in inline.children)


def _list(node: SyntaxTreeNode, ctx: _Ctx) -> str:
    start = int(node.attrs.get("start", 1)) if node.type == "ordered_list" else 0
    items = []
    for number, item in enumerate(node.children, start):
        marker = f"{number}. " if node.type == "ordered_list" else BULLET
        body = _blocks(item.children, ctx, sep="\n")
        items.append(marker + _indent_tail(body) if body else marker.rstrip())
    return "\n".join(items)


def _indent_tail(body: str) -> str:
    """Indent every line but the first by two spaces; code lines and block starts stay put."""
    lines = body.split("\n")
    out = [lines[0]]
    in_pre = _pre_state(lines[0], False)
    for line in lines[1:]:
        block_start = line.startswith(("<pre", "<blockquote"))
        out.append(line if in_pre or block_start or not line else INDENT + line)
        in_pre = _pre_state(line, in_pre)
    return "\n".join(out)


def _pre_state(line: str, in_pre: bool) -> bool:
    """Whether a ``<pre>`` is still open after ``line`` (text is escaped: tags are ours)."""
    opened, closed = line.rfind("<pre"), line.rfind("</pre>")
    return opened > closed if opened != -1 or closed != -1 else in_pre


def _code_block(content: str, info: str) -> str:
    code = content.rstrip("\n")
    if not code.strip():
        return ""
    words = info.split()
    lang = _LANG_JUNK.sub("", words[0]) if words else ""
    if lang:
        return f'<pre><code class="language-{lang}">{escape(code)}</code></pre>'
    return f"<pre>{escape(code)}</pre>"


def _table(node: SyntaxTreeNode) -> str:
    """A monospace grid: Telegram has no tables, and <pre> keeps the columns aligned."""
    rows = [
        [_plain(cell) for cell in tr.children] for part in node.children for tr in part.children
    ]
    aligns = [str(cell.attrs.get("style", "")) for cell in node.children[0].children[0].children]
    ncols = max(len(row) for row in rows)
    rows = [row + [""] * (ncols - len(row)) for row in rows]
    aligns += [""] * (ncols - len(aligns))
    widths = [max(1, *(_width(row[i]) for row in rows)) for i in range(ncols)]

    def line(row: list[str]) -> str:
        return " | ".join(map(_pad, row, widths, aligns)).rstrip()

    lines = [line(rows[0]), "-+-".join("-" * w for w in widths), *map(line, rows[1:])]
    return f"<pre>{escape(chr(10).join(lines))}</pre>"


def _pad(text: str, width: int, style: str) -> str:
    gap = width - _width(text)
    if style.endswith("right"):
        return " " * gap + text
    if style.endswith("center"):
        return " " * (gap // 2) + text + " " * (gap - gap // 2)
    return text + " " * gap


def _width(text: str) -> int:
    """Monospace columns: East Asian wide characters take two, combining marks none."""
    return sum(_char_width(ch) for ch in text)


def _char_width(ch: str) -> int:
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


# ---------------------------------------------------------------- inline


def _inline(node: SyntaxTreeNode, ctx: _Ctx) -> str:
    kind = node.type
    if kind in ("text", "html_inline"):
        return escape(defuse_mentions(node.content))
    if kind in ("softbreak", "hardbreak"):
        return "\n"
    if kind == "code_inline":
        return escape(node.content) if ctx.in_link else f"<code>{escape(node.content)}</code>"
    if kind in _MARKS:
        return _mark(_MARKS[kind], node, ctx)
    if kind == "link":
        return _link(node, ctx)
    if kind == "image":
        return _image(node, ctx)
    return "".join(_inline(child, ctx) for child in node.children)


def _mark(tag: str, node: SyntaxTreeNode, ctx: _Ctx) -> str:
    if tag in ctx.marks:
        return "".join(_inline(child, ctx) for child in node.children)
    inner_ctx = replace(ctx, marks=ctx.marks | {tag})
    return f"<{tag}>{''.join(_inline(child, inner_ctx) for child in node.children)}</{tag}>"


def defuse_mentions(text: str) -> str:
    """``@name`` shown as typed but no longer a mention Telegram would notify."""
    return _MENTION.sub("@" + _WORD_JOINER, text)


def _link(node: SyntaxTreeNode, ctx: _Ctx) -> str:
    href = str(node.attrs.get("href", ""))
    if href.lower().startswith("tg://user"):
        href = ""  # a text mention: it would notify that user
    inner = "".join(_inline(child, replace(ctx, in_link=True)) for child in node.children)
    if ctx.in_link or not _linkable(href, _LINK_SCHEMES):
        return inner
    if not html_to_text(inner).strip():
        inner = escape(href)
    return f'<a href="{_escape_attr(href)}">{inner}</a>'


def _image(node: SyntaxTreeNode, ctx: _Ctx) -> str:
    src = str(node.attrs.get("src", ""))
    alt = _plain(node)
    if ctx.in_link or not _linkable(src, frozenset({"http", "https"})):
        return escape(alt)
    return f'<a href="{_escape_attr(src)}">{escape(alt.strip() or src)}</a>'


def _linkable(url: str, schemes: frozenset[str]) -> bool:
    """Telegram only follows these schemes; web and tg links also need a host."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    scheme = parts.scheme.lower()
    if scheme not in schemes:
        return False
    return bool(parts.path) if scheme == "mailto" else bool(parts.netloc)


def _plain(node: SyntaxTreeNode) -> str:
    """The text of an inline subtree without formatting (table cells, image alt text)."""
    if node.type in ("text", "code_inline", "html_inline"):
        return node.content
    if node.type in ("softbreak", "hardbreak"):
        return " "
    return "".join(_plain(child) for child in node.children)


def _tidy_tail(html: str) -> str:
    """Drop trailing whitespace (even inside closing tags) and any element left empty."""
    while True:
        match = _TRAILING_SPACE.search(html)
        tidy = html
        if match:
            tidy = html[: match.start()] + "".join(_CLOSING.findall(match.group()))
        tidy = _EMPTY_ELEMENT.sub("", tidy)
        if tidy == html:
            return html
        html = tidy
