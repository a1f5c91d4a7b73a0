"""A fetched page as the text a person reads: headings, paragraphs, list items; no markup.

HTML is parsed with ``lxml.html`` (tolerant of real pages, and of a body cut short by the size
limit); what is not the page's content (scripts, styles, navigation, header, footer, forms,
hidden elements) is dropped before the text is taken. Plain text and Markdown pass through as
they are. Anything else (images, PDF, archives) is refused before its body is read: the fetcher
asks for :data:`READABLE` types only.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["HTML", "READABLE", "Readable", "readable"]

HTML = frozenset({"text/html", "application/xhtml+xml"})
TEXT = frozenset({"text/plain", "text/markdown", "text/x-markdown"})
READABLE = HTML | TEXT

_SKIP = frozenset(
    {
        "script", "style", "noscript", "template", "head", "nav", "header", "footer", "aside",
        "form", "button", "select", "textarea", "iframe", "svg", "canvas", "object", "embed",
        "dialog", "menu",
    }
)  # fmt: skip
_SKIP_ROLES = frozenset({"navigation", "banner", "contentinfo", "search", "menu", "dialog"})
_HEADINGS = {f"h{level}": level for level in range(1, 7)}
_BLOCKS = frozenset(
    {
        "p", "div", "section", "article", "main", "li", "ul", "ol", "dl", "dt", "dd", "pre",
        "blockquote", "table", "tr", "figure", "figcaption", "caption", "address", "details",
        "summary", "hr", "br", "body",
    }
)  # fmt: skip
_CELLS = frozenset({"td", "th"})
_SPACES = re.compile(r"\s+")
_BARE = re.compile(r"^[#\-\s]*$")


@dataclass(frozen=True, slots=True)
class Readable:
    title: str
    text: str


def readable(body: bytes, content_type: str, charset: str | None) -> Readable:
    """The page's title (may be empty) and text. ``content_type`` "" is sniffed."""
    if content_type in TEXT:
        return Readable("", _decode(body, charset).strip())
    if content_type in HTML or (not content_type and _looks_like_html(body)):
        return _from_html(body, charset)
    if not content_type:
        return Readable("", _decode(body, charset).strip())  # no type given: read it as text
    raise ValueError(f"not a readable type: {content_type}")


def _decode(body: bytes, charset: str | None) -> str:
    return body.decode(_codec(charset) or "utf-8", errors="replace")


def _codec(charset: str | None) -> str | None:
    if not charset:
        return None
    try:
        return codecs.lookup(charset).name
    except LookupError:
        return None  # an unknown charset: let the parser or UTF-8 decide


def _looks_like_html(body: bytes) -> bool:
    head = body[:512].lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html", b"<head", b"<body"))


def _from_html(body: bytes, charset: str | None) -> Readable:
    import lxml.html
    from lxml import etree

    parser = lxml.html.HTMLParser(encoding=_codec(charset), remove_comments=True)
    try:
        root = lxml.html.document_fromstring(body, parser=parser)
    except (etree.ParserError, ValueError):  # "Document is empty" and the like
        return Readable("", "")
    title = _clean(root.findtext(".//title") or "")
    lines = _Lines()
    body_element = root.find("body")
    _walk(body_element if body_element is not None else root, lines)
    return Readable(title, lines.text())


class _Lines:
    """Text gathered in document order; a block's start or end ends the current line."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.current: list[str] = []

    def add(self, text: str | None) -> None:
        if text:
            self.current.append(text)

    def end(self) -> None:
        line = _clean("".join(self.current))
        self.current = []
        if line and not _BARE.match(line):  # a list mark or heading mark with no text
            self.lines.append(line)

    def raw(self, text: str) -> None:
        self.end()
        self.lines.extend(line.rstrip() for line in text.strip("\n").splitlines())

    def text(self) -> str:
        self.end()
        return "\n".join(self.lines)


def _walk(element: Any, out: _Lines) -> None:
    tag = element.tag.lower() if isinstance(element.tag, str) else ""
    if not tag or _hidden(element, tag):
        return
    if tag == "pre":
        out.raw(element.text_content())
        return
    block = tag in _BLOCKS or tag in _HEADINGS
    if block:
        out.end()
        if tag in _HEADINGS:
            out.add("#" * _HEADINGS[tag] + " ")
        elif tag == "li":
            out.add("- ")
    elif tag in _CELLS:
        out.add(" | ")
    elif tag == "img" and element.get("alt"):
        out.add(f" [image: {element.get('alt')}] ")
    out.add(element.text)
    for child in element:
        _walk(child, out)
        out.add(child.tail)
    if block:
        out.end()


def _hidden(element: Any, tag: str) -> bool:
    if tag in _SKIP or element.get("hidden") is not None:
        return True
    if (element.get("aria-hidden") or "").lower() == "true":
        return True
    if (element.get("role") or "").lower() in _SKIP_ROLES:
        return True
    style = (element.get("style") or "").replace(" ", "").lower()
    return "display:none" in style or "visibility:hidden" in style


def _clean(text: str) -> str:
    return _SPACES.sub(" ", text).strip().strip("|").strip()
