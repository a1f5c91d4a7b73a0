"""Documents read into :class:`~bot.knowledge.chunking.Block` lists, or refused with a reason.

Libraries, and why: Markdown with ``markdown-it-py`` (already the bot's Markdown parser,
CommonMark-exact), HTML with ``lxml.html`` (a tolerant C parser that reads real-world markup),
PDF with ``pypdf`` (pure Python, maintained, bounds its own decompression), DOCX with
``python-docx`` (headings and list styles as Word names them). Each reader keeps the document's
structure: headings become the path a block sits under; paragraphs, list items, code blocks and
table rows become blocks.

Every refusal is a :class:`DocumentError` whose message a person can act on: a file over the size
limit, an unknown format, text that is not UTF-8, an encrypted, corrupt or image-only PDF, a
DOCX whose archive would expand past the limit (a decompression bomb).
"""

from __future__ import annotations

import io
import logging
import re
import textwrap
import zipfile
from collections.abc import Callable, Iterator
from pathlib import PurePath
from typing import Any

from bot.errors import ParlourError
from bot.knowledge.chunking import Block

__all__ = ["FORMATS", "DocumentError", "check_size", "format_of", "read_document"]

FORMATS = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".txt": "text",
    ".text": "text",
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
    ".docx": "docx",
}
MAX_EXPANSION = 20  # a DOCX may expand to at most this many times the size limit
_SPACE = re.compile(r"[ \t\r\f\v]+")


class DocumentError(ParlourError):
    """A document that cannot be read; the message says why and what to do."""


def format_of(name: str, data: bytes) -> str:
    """The format of a file called ``name``: its content's signature first, then its suffix."""
    if data.startswith(b"%PDF-"):
        return "pdf"
    suffix = PurePath(name).suffix.lower()
    if data.startswith(b"PK\x03\x04") and suffix == ".docx":
        return "docx"
    found = FORMATS.get(suffix)
    if found == "pdf":
        raise DocumentError(f"{name}: not a PDF (it does not begin with %PDF-)")
    if found == "docx":
        raise DocumentError(f"{name}: not a DOCX (a DOCX is a zip archive; this is not one)")
    if found is None:
        known = ", ".join(sorted(FORMATS))
        raise DocumentError(f"{name}: unsupported format {suffix or '(no suffix)'!r}; use {known}")
    return found


def read_document(name: str, data: bytes, *, max_bytes: int) -> list[Block]:
    """The blocks of the document ``name`` holding ``data``; refuses what it cannot read."""
    check_size(name, len(data), max_bytes)
    reader: Callable[[str, bytes, int], list[Block]] = _READERS[format_of(name, data)]
    blocks = [b for b in reader(name, data, max_bytes) if b.text.strip()]
    if not blocks:
        raise DocumentError(f"{name}: no text found")
    return blocks


def check_size(name: str, size: int, max_bytes: int) -> None:
    """Refuse a document of ``size`` bytes over the limit (before reading it, where one can)."""
    if size > max_bytes:
        raise DocumentError(
            f"{name}: {size:,} bytes is over the limit of {max_bytes:,} (knowledge.max_file_bytes)"
        )


def _decoded(name: str, data: bytes) -> str:
    if b"\x00" in data[:8192]:
        raise DocumentError(f"{name}: binary data, not text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise DocumentError(
            f"{name}: not UTF-8 text (byte {error.start}); save it as UTF-8"
        ) from None


def _clean(text: str) -> str:
    return "\n".join(
        line for line in (_SPACE.sub(" ", x).strip() for x in text.split("\n")) if line
    )


def _indented(text: str) -> str:
    """A list item or table as written: its lines' indentation kept relative to the first (a
    code block inside a list item stays valid code), blank lines and trailing spaces out."""
    lines = [line.rstrip() for line in textwrap.dedent(text.replace("\t", "    ")).split("\n")]
    return "\n".join(line for line in lines if line)


def _read_text(name: str, data: bytes, max_bytes: int) -> list[Block]:
    paragraphs = re.split(r"\n\s*\n", _decoded(name, data))
    return [Block((), _clean(p)) for p in paragraphs]


def _read_markdown(name: str, data: bytes, max_bytes: int) -> list[Block]:
    from markdown_it import MarkdownIt

    source = _decoded(name, data)
    lines = source.splitlines()
    tokens = MarkdownIt("commonmark").enable("table").parse(source)
    path: list[tuple[int, str]] = []
    blocks: list[Block] = []
    index, depth = 0, 0  # depth: inside a list item or table (taken whole from the source)
    while index < len(tokens):
        token = tokens[index]
        if token.type == "heading_open":
            level, title = int(token.tag[1:]), tokens[index + 1].content.strip()
            path = [(lvl, text) for lvl, text in path if lvl < level] + [(level, title)]
        elif token.type in {"list_item_open", "table_open"} and token.map:
            if depth == 0:
                start, end = token.map
                blocks.append(Block(_titles(path), _indented("\n".join(lines[start:end]))))
            depth += 1
        elif token.type in {"list_item_close", "table_close"}:
            depth -= 1
        elif depth == 0 and token.type == "inline" and tokens[index - 1].type == "paragraph_open":
            blocks.append(Block(_titles(path), _clean(token.content)))
        elif depth == 0 and token.type in {"fence", "code_block", "html_block"}:
            blocks.append(Block(_titles(path), token.content.strip()))
        index += 1
    return blocks


def _titles(path: list[tuple[int, str]]) -> tuple[str, ...]:
    return tuple(_heading(title) for _, title in path)


def _heading(text: str) -> str:
    """A heading as a label: one line, at most 200 characters (a document's words)."""
    line = " ".join(text.split())
    return line if len(line) <= 200 else line[:199] + "…"


_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_BLOCKS = {"p", "li", "pre", "blockquote", "dt", "dd", "figcaption", "caption", "tr", "address"}
_SKIP = {"script", "style", "noscript", "template", "nav", "head", "iframe", "svg", "form"}


def _read_html(name: str, data: bytes, max_bytes: int) -> list[Block]:
    import lxml.html
    from lxml import etree

    try:
        root = lxml.html.document_fromstring(data)
    except (etree.ParserError, ValueError) as error:
        raise DocumentError(f"{name}: not readable HTML ({error})") from None
    blocks: list[Block] = []
    path: list[tuple[int, str]] = []

    def text_of(element: Any) -> str:
        if element.tag == "tr":
            cells = [_clean(cell.text_content()) for cell in element if isinstance(cell.tag, str)]
            return " | ".join(cell for cell in cells if cell)
        return _clean(element.text_content())

    def walk(element: Any) -> None:
        nonlocal path
        loose: list[str] = [element.text or ""]
        for child in element:
            tag = child.tag if isinstance(child.tag, str) else ""
            if tag in _SKIP or not tag:
                loose.append(child.tail or "")
                continue
            if tag in _HEADINGS or tag in _BLOCKS or _has_blocks(child):
                blocks.append(Block(_titles(path), _clean(" ".join(loose))))
                loose = []
                if tag in _HEADINGS:
                    level = _HEADINGS[tag]
                    path = [(lvl, t) for lvl, t in path if lvl < level]
                    path.append((level, _clean(child.text_content())))
                elif tag in _BLOCKS and not (tag == "li" and _has_blocks(child)):
                    blocks.append(Block(_titles(path), text_of(child)))
                else:
                    walk(child)
            else:
                loose.append(child.text_content())
            loose.append(child.tail or "")
        blocks.append(Block(_titles(path), _clean(" ".join(loose))))

    body = root.find("body")
    walk(body if body is not None else root)
    return blocks


def _has_blocks(element: Any) -> bool:
    return any(
        isinstance(e.tag, str) and (e.tag in _BLOCKS or e.tag in _HEADINGS or e.tag == "div")
        for e in element.iterdescendants()
    )


def _read_pdf(name: str, data: bytes, max_bytes: int) -> list[Block]:
    from pypdf import PdfReader
    from pypdf.errors import FileNotDecryptedError, PdfReadError, PdfStreamError

    # pypdf logs what it repairs in a damaged file ("EOF marker not found") as warnings: the
    # sender gets the refusal's reason instead, and the log keeps errors only
    logging.getLogger("pypdf").setLevel(logging.ERROR)

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise DocumentError(f"{name}: the PDF is encrypted; save a copy without a password")
        titles = _pdf_outline(reader)
        blocks: list[Block] = []
        total = 0
        for number, page in enumerate(reader.pages, start=1):
            text = page.extract_text() or ""
            total += len(text)
            if total > max_bytes:
                raise DocumentError(f"{name}: its text expands past {max_bytes:,} characters")
            heading = titles.get(number, ())
            for paragraph in re.split(r"\n\s*\n", text):
                blocks.append(Block(heading, _clean(paragraph), number))
    except FileNotDecryptedError:
        raise DocumentError(
            f"{name}: the PDF is encrypted; save a copy without a password"
        ) from None
    except (PdfReadError, PdfStreamError, ValueError, KeyError, TypeError) as error:
        raise DocumentError(f"{name}: not a readable PDF ({type(error).__name__})") from None
    if not any(block.text for block in blocks):
        raise DocumentError(
            f"{name}: no text in the PDF (scanned pages are images); run OCR on it first"
        )
    return blocks


def _pdf_outline(reader: Any) -> dict[int, tuple[str, ...]]:
    """Each page's heading path from the PDF's outline (bookmarks), where it has one."""
    starts: list[tuple[int, tuple[str, ...]]] = []

    def visit(items: list[Any], path: tuple[str, ...]) -> None:
        last: tuple[str, ...] = path
        for item in items:
            if isinstance(item, list):
                visit(item, last)
                continue
            try:
                page = reader.get_destination_page_number(item) + 1
            except Exception:  # a broken bookmark only loses its heading
                continue
            last = (*path, _heading(str(item.title)))
            starts.append((page, last))

    try:
        visit(list(reader.outline), ())
    except Exception:  # a broken outline is no reason to refuse the text
        return {}
    starts.sort(key=lambda start: start[0])  # stable: bookmarks of one page keep their order
    pages: dict[int, tuple[str, ...]] = {}
    current: tuple[str, ...] | None = None
    ahead = iter(starts)
    upcoming = next(ahead, None)
    for page_number in range(1, len(reader.pages) + 1):  # one pass, not pages x bookmarks
        while upcoming is not None and upcoming[0] <= page_number:
            current, upcoming = upcoming[1], next(ahead, None)
        if current is not None:
            pages[page_number] = current
    return pages


def _read_docx(name: str, data: bytes, max_bytes: int) -> list[Block]:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            expanded = sum(info.file_size for info in archive.infolist())
    except zipfile.BadZipFile:
        raise DocumentError(f"{name}: not a readable DOCX (a damaged archive)") from None
    if expanded > MAX_EXPANSION * max_bytes:
        raise DocumentError(
            f"{name}: the archive would expand to {expanded:,} bytes (a decompression bomb?)"
        )
    import docx
    from docx.table import Table

    try:
        document = docx.Document(io.BytesIO(data))
    except (KeyError, ValueError, zipfile.BadZipFile) as error:
        raise DocumentError(f"{name}: not a readable DOCX ({type(error).__name__})") from None
    path: list[tuple[int, str]] = []
    blocks: list[Block] = []
    # each paragraph's style by its id, from one table: ``paragraph.style`` searches every
    # style for each paragraph (a 40 kB file of short paragraphs took 30 s of CPU)
    names = {style.style_id: style.name or "" for style in document.styles}
    for item in document.iter_inner_content():
        if isinstance(item, Table):
            blocks.extend(Block(_titles(path), row) for row in _rows(item))
            continue
        style = names.get(item._p.style or "", "")
        level = _docx_heading(style)
        if level is not None and item.text.strip():
            path = [(lvl, t) for lvl, t in path if lvl < level] + [(level, _clean(item.text))]
        else:
            blocks.append(Block(_titles(path), _clean(item.text)))
    return blocks


def _docx_heading(style: str) -> int | None:
    if style == "Title":
        return 0
    match = re.fullmatch(r"Heading (\d)", style)
    return int(match.group(1)) if match else None


def _rows(table: Any) -> Iterator[str]:
    for row in table.rows:
        cells = [_clean(cell.text) for cell in row.cells]
        yield " | ".join(dict.fromkeys(c for c in cells if c))  # merged cells repeat


_READERS: dict[str, Callable[[str, bytes, int], list[Block]]] = {
    "markdown": _read_markdown,
    "text": _read_text,
    "html": _read_html,
    "pdf": _read_pdf,
    "docx": _read_docx,
}
