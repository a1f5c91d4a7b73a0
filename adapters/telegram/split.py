"""Split a reply into messages that fit Telegram's length limit.

Why split after rendering: the limit (4096) applies to the text the user sees, after entity
parsing, and Markdown syntax shrinks or grows when rendered (``**x**`` is one visible
character, ``<`` costs four bytes as ``&lt;``). Splitting the Markdown would both miscount
and cut constructs in half. Splitting the rendered HTML lets us count exactly and keep every
chunk a valid fragment: tags open at a cut are closed at the end of the chunk and re-opened,
attributes and all, at the start of the next one (so a cut inside ``<pre><code
class="language-py">`` continues as highlighted code).

Why UTF-16: Telegram measures message length in UTF-16 code units, so an emoji outside the
Basic Multilingual Plane costs two. Counting Python ``len`` would overflow on emoji-heavy
replies and Telegram would reject the message.

Cuts prefer a paragraph break, then a newline, then a space, then anywhere; a break is only
taken if the chunk stays at least half full, which keeps the number of messages near minimal.
Units are never split inside a tag, an entity, a code point or a (cheaply detected) grapheme
cluster; whitespace at a cut is dropped.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from adapters.telegram.render import unescape_html
from bot.platform.text_rules import NEWLINES, clusters

__all__ = ["TELEGRAM_LIMIT", "split_html", "split_text", "utf16_len"]

TELEGRAM_LIMIT = 4096
_TOKEN = re.compile(
    r"<(/?)([A-Za-z][\w-]*)[^>]*>|&(?:#x[0-9a-fA-F]*|#[0-9]*|[A-Za-z]+);?|[^<&]+|[<&]"
)


@dataclass(frozen=True, slots=True)
class _Atom:
    raw: str  # the HTML source of this piece
    text: str = ""  # what the user sees; "" for tags
    tag: str = ""  # lower-case tag name, for tags
    closing: bool = False


_Stack = tuple[tuple[str, str], ...]  # open tags: (name, raw opening tag)


def utf16_len(text: str) -> int:
    """Length as Telegram counts it: UTF-16 code units (astral characters count two)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def split_text(text: str, limit: int = TELEGRAM_LIMIT) -> list[str]:
    """Split plain text into non-blank chunks of at most ``limit`` UTF-16 units."""
    units = _units(text, limit)
    return ["".join(units[start:end]) for start, end in _plan(units, limit)]


def split_html(html: str, limit: int = TELEGRAM_LIMIT) -> list[str]:
    """Split Telegram HTML into balanced chunks of at most ``limit`` visible UTF-16 units."""
    atoms = _tokenize(html, limit)
    where = [i for i, atom in enumerate(atoms) if atom.text]  # unit index -> atom index
    chunks: list[str] = []
    stack: _Stack = ()
    done = 0  # atoms[:done] have been applied to ``stack``
    for start, end in _plan([atoms[i].text for i in where], limit):
        first = where[start - 1] + 1 if start else 0
        last = where[end - 1] + 1
        for atom in atoms[done:first]:
            stack = _apply(stack, atom)
        html_chunk, stack = _emit(atoms[first:last], stack)
        chunks.append(html_chunk)
        done = last
    return chunks


# ---------------------------------------------------------------- tokenizing


def _units(text: str, limit: int) -> list[str]:
    """Grapheme-ish clusters; a cluster wider than ``limit`` falls back to code points."""
    if text.isascii() and "\r" not in text:
        return list(text)  # the common case: every character is its own cluster
    out: list[str] = []
    for cluster in clusters(text):
        out.extend(cluster if len(cluster) > 1 and utf16_len(cluster) > limit else (cluster,))
    return out


def _tokenize(html: str, limit: int) -> list[_Atom]:
    atoms: list[_Atom] = []
    for match in _TOKEN.finditer(html):
        raw = match.group(0)
        if match.group(2):
            atoms.append(_Atom(raw, tag=match.group(2).lower(), closing=bool(match.group(1))))
        elif raw.startswith("&") and (text := unescape_html(raw)) != raw:
            atoms.append(_Atom(raw, text))
        else:  # text; a stray "<" or "&" is escaped so that no cut can make it markup
            atoms.extend(_Atom(_escape(unit), unit) for unit in _units(raw, limit))
    return atoms


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;")


# ---------------------------------------------------------------- planning cuts


def _plan(units: Sequence[str], limit: int) -> list[tuple[int, int]]:
    """Chunk boundaries as ``[start, end)`` unit ranges; whitespace at cuts is left out."""
    if limit < 2:
        raise ValueError("limit must be at least 2 UTF-16 code units")
    widths = [len(unit) if unit.isascii() else utf16_len(unit) for unit in units]
    spans: list[tuple[int, int]] = []
    start = 0
    while start < len(units):
        end, total = start, 0
        while end < len(units) and total + widths[end] <= limit:
            total += widths[end]
            end += 1
        end = max(end, start + 1)  # only a malformed unit can be wider than the limit
        cut, resume = (
            (end, end) if end == len(units) else _best_cut(units, widths, start, end, limit)
        )
        while cut > start and units[cut - 1].isspace():
            cut -= 1
        if any(not unit.isspace() for unit in units[start:cut]):
            spans.append((start, cut))
        start = resume
    return spans


def _best_cut(
    units: Sequence[str], widths: list[int], start: int, end: int, limit: int
) -> tuple[int, int]:
    """Where to cut a window that overflows at ``end``, and where the next chunk resumes."""
    low, filled, half = start, 0, limit / 2
    while low < end and filled < half:
        filled += widths[low]
        low += 1
    rules: list[tuple[Callable[[int], bool], Callable[[str], bool]]] = [
        (lambda j: _is_nl(units[j]) and j + 1 < len(units) and _is_nl(units[j + 1]), _is_nl),
        (lambda j: _is_nl(units[j]), _is_nl),
        (lambda j: units[j].isspace(), str.isspace),
    ]
    for is_break, skippable in rules:
        for j in range(end, max(low, start + 1) - 1, -1):
            if is_break(j):
                resume = j
                while resume < len(units) and skippable(units[resume]):
                    resume += 1
                return j, resume
    return end, end


def _is_nl(unit: str) -> bool:
    return unit in NEWLINES


# ---------------------------------------------------------------- emitting


def _apply(stack: _Stack, atom: _Atom) -> _Stack:
    if not atom.tag:
        return stack
    if not atom.closing:
        return (*stack, (atom.tag, atom.raw))
    names = [name for name, _ in stack]
    if atom.tag not in names:
        return stack
    return stack[: len(names) - 1 - names[::-1].index(atom.tag)]


def _emit(atoms: Sequence[_Atom], stack: _Stack) -> tuple[str, _Stack]:
    """HTML for ``atoms`` with ``stack`` re-opened before and closed after; empty tags pruned."""
    out: list[str] = []
    opened: list[int] = []  # index in ``out`` of each open tag's opening piece

    def push(raw: str) -> None:
        opened.append(len(out))
        out.append(raw)

    def pop(name: str) -> None:
        if opened.pop() == len(out) - 1:
            out.pop()  # nothing inside: drop the pair
        else:
            out.append(f"</{name}>")

    for _, raw in stack:
        push(raw)
    for atom in atoms:
        new_stack = _apply(stack, atom)
        if atom.tag and not atom.closing:
            push(atom.raw)
        elif atom.tag:
            for name, _ in reversed(stack[len(new_stack) :]):
                pop(name)
        else:
            out.append(atom.raw)
        stack = new_stack
    for name, _ in reversed(stack):
        pop(name)
    return "".join(out), stack
