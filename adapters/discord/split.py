"""Split a Markdown reply into Discord messages without breaking fenced code blocks.

Why: Discord renders the Markdown itself and rejects messages over 2000 characters, counted in
code points (discord.py's ``Paginator`` documents ``max_size`` as "codepoints": Python ``len``).
Cutting inside a fenced block would leave one message with an unbalanced fence, which turns the
rest of it into code, and the next with code shown as prose. So a cut inside a block closes the
fence at the end of the chunk and reopens it (the same opening line: indent, fence, language) at
the start of the next, and both added lines count toward the limit.

Fences follow CommonMark: a line indented at most three spaces, opening with three or more
backticks (no backtick in the info string) or tildes, closed by a line of the same character at
least as long, followed only by spaces. A block the original never closes is closed at the end
of the last chunk (a reply cut off by the model's token limit still renders as code). A fence
line too long to fit in a chunk with its closing line cannot be repaired and is split as prose;
if it fits the limit it stays whole, so its pieces never turn from a fence into text.

Cuts prefer, among points that keep the chunk at least half full: a paragraph break or the edge
of a code block, a newline, a space outside inline code / emphasis / links, a space inside them,
then a hard cut between grapheme-ish clusters. Whitespace at a prose cut is dropped (Discord
trims messages anyway); in code only the newline of a line cut is dropped. No cut leaves a line
fragment that would read as a fence (``a ``` b`` cut at the space).
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field

from bot.platform.text_rules import FENCE, FENCE_CLOSER, NEWLINES, clusters

__all__ = ["DISCORD_LIMIT", "split_message"]

DISCORD_LIMIT = 2000
MIN_LIMIT = 16
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)?")
_FENCEISH = re.compile(r" {0,3}(?:```|~~~)")
_GUARDED = re.compile(
    r"(`+)[^`].*?(?<!`)\1(?!`)|\*\*.+?\*\*|__.+?__|~~.+?~~|\|\|.+?\|\||\[[^\]]*\]\([^)\s]*\)"
)
_PROSE, _OPEN, _BODY, _CLOSE = range(4)


@dataclass(slots=True)
class _Block:
    reopen: str  # the opening line, ending in "\n": starts every chunk that resumes the block
    closer: str  # indent + fence: ends every chunk cut inside the block
    body_start: int = 0  # unit index of the first body unit
    body_end: int = -1  # unit index of the closing line, or len(units) if never closed
    need: int = 0  # the shortest chunk that holds both fence lines and one body character


@dataclass(slots=True)
class _Doc:
    units: list[str] = field(default_factory=list)  # grapheme-ish clusters; fence lines whole
    kind: list[int] = field(default_factory=list)
    block: list[_Block | None] = field(default_factory=list)
    line_start: list[int] = field(default_factory=list)  # unit index where each unit's line starts
    blank: list[bool] = field(default_factory=list)  # per unit: its line is whitespace only
    unclosable: list[bool] = field(default_factory=list)  # per unit: its line is a fence opener
    # too long to close within the limit (split as prose, but reads as a fence wherever it starts)
    off: list[int] = field(default_factory=list)  # per boundary: code points before it
    nextnw: list[int] = field(default_factory=list)  # per boundary: next non-blank unit
    guarded: list[bool] = field(default_factory=list)  # per boundary: inside `code`, **x**, [l](u)

    def inside(self, b: int) -> _Block | None:
        """The block a cut at boundary ``b`` would have to close and reopen."""
        return self.block[b - 1] if b > 0 and self.kind[b - 1] in (_OPEN, _BODY) else None


def split_message(text: str, limit: int = DISCORD_LIMIT) -> list[str]:
    """Split ``text`` into non-blank chunks of at most ``limit`` code points, fences balanced."""
    if limit < MIN_LIMIT:
        raise ValueError(f"limit must be at least {MIN_LIMIT} to leave room for code fences")
    d = _parse(text, limit)
    n = len(d.units)
    chunks: list[str] = []
    s = _skip(d, 0)
    while s < n:
        blk = d.inside(s)
        prefix = blk.reopen if blk else ""
        budget = limit - len(prefix)
        far = bisect_right(d.off, d.off[s] + budget) - 1
        if far == n and _fits(d, s, n, budget):
            cut, resume = n, n
        else:
            cut, resume = _choose(d, s, far, budget)
        body = "".join(d.units[s:cut])
        end = d.inside(cut)
        if end is None:
            chunk = (prefix + body).rstrip()
        else:
            chunk = prefix + body + ("" if body.endswith(("\n", "\r")) else "\n") + end.closer
        if chunk.strip():
            chunks.append(chunk)
        s = _skip(d, resume)
    return chunks


# ---------------------------------------------------------------- parsing


def _parse(text: str, limit: int) -> _Doc:
    lines = [m.group() for m in _LINE.finditer(text) if m.group()]
    roles: list[tuple[int, _Block | None]] = []
    blk: _Block | None = None  # the block open after the previous line
    for line in lines:
        bare = line.rstrip("\r\n")
        if blk is None:
            if m := _opens(bare):
                blk = _Block(bare + "\n", m[1] + m[2])
                blk.need = len(line) + len(blk.closer) + 2
            roles.append((_OPEN if blk else _PROSE, blk))
        elif _closes(bare, blk.closer):
            blk.need += max(0, len(line) - len(blk.closer) - 1)
            roles.append((_CLOSE, blk))
            blk = None
        else:
            roles.append((_BODY, blk))
    d = _Doc()
    guards: list[tuple[int, str]] = []
    blocks: list[_Block] = []
    for line, (role, owner) in zip(lines, roles, strict=True):
        blk = owner if owner and owner.need <= limit else None  # else too long: prose
        unclosable = role == _OPEN and blk is None
        role = role if blk else _PROSE
        start = len(d.units)
        if blk and role == _OPEN:
            blk.body_start = start + 1
            blocks.append(blk)
        elif blk and role == _CLOSE:
            blk.body_end = start
        bare = line.rstrip("\r\n")
        if role in (_OPEN, _CLOSE):
            pieces = [line]
        elif unclosable and len(bare) <= limit:  # whole, or a cut inside would unmake the fence
            pieces = [bare, line[len(bare) :]] if bare != line else [line]
        else:
            room = limit - len(blk.reopen) - len(blk.closer) - 1 if blk else limit
            pieces = _clusters(line, room)
            if role == _PROSE:
                guards.append((start, line))
        d.units += pieces
        d.kind += [role] * len(pieces)
        d.block += [blk] * len(pieces)
        d.line_start += [start] * len(pieces)
        d.blank += [not line.strip()] * len(pieces)
        d.unclosable += [unclosable] * len(pieces)
    n = len(d.units)
    for blk in blocks:
        blk.body_end = n if blk.body_end < 0 else blk.body_end
    d.off = [0] * (n + 1)
    for i, unit in enumerate(d.units):
        d.off[i + 1] = d.off[i] + len(unit)
    d.nextnw = [n] * (n + 1)
    for i in range(n - 1, -1, -1):
        d.nextnw[i] = d.nextnw[i + 1] if d.units[i].isspace() else i
    d.guarded = [False] * (n + 1)
    for start, line in guards:
        base = d.off[start]
        for m in _GUARDED.finditer(line):
            lo = bisect_right(d.off, base + m.start())
            for b in range(lo, bisect_left(d.off, base + m.end())):
                d.guarded[b] = True
    return d


def _clusters(line: str, room: int) -> list[str]:
    """Grapheme-ish clusters; one wider than ``room`` falls back to code points."""
    if line.isascii() and "\r" not in line:
        return list(line)
    return [piece for c in clusters(line) for piece in (c if len(c) > room else (c,))]


# ---------------------------------------------------------------- choosing cuts


def _fits(d: _Doc, s: int, cut: int, budget: int) -> bool:
    blk = d.inside(cut)
    return d.off[cut] - d.off[s] + (len(blk.closer) + 1 if blk else 0) <= budget


def _skip(d: _Doc, i: int) -> int:
    while i < len(d.units) and d.kind[i] == _PROSE and d.units[i].isspace():
        i += 1
    return i


def _choose(d: _Doc, s: int, far: int, budget: int) -> tuple[int, int]:
    """Where to end the chunk starting at ``s`` and where the next one resumes."""
    low = bisect_left(d.off, d.off[s] + (budget + 1) // 2)
    options = sorted((r, -b, b) for b in range(s + 1, far + 1) if (r := _rank(d, b)) is not None)
    for lo, hi in ((low, far), (s + 1, low - 1)):  # a chunk at least half full first
        for _, _, b in options:
            if lo <= b <= hi and (picked := _try(d, s, b, budget)):
                return picked
    for b in range(far, s, -1):  # nothing clean fits: the longest chunk that does
        if _fits(d, s, b, budget):
            return b, b
    raise AssertionError("unreachable: every unit fits in a chunk on its own")


def _rank(d: _Doc, b: int) -> int | None:
    """How good a cut at boundary ``b`` looks (lower is better); None: never cut here."""
    n = len(d.units)
    before, after = d.units[b - 1], d.units[b] if b < n else "\n"
    if d.inside(b) is not None:
        if before in NEWLINES or d.kind[b - 1] == _OPEN:
            return None  # the cut before this line's newline is the same, but better
        return 1 if after in NEWLINES else 2 if before.isspace() or after.isspace() else 4
    if d.kind[b - 1] == _CLOSE or (b < n and d.kind[b] == _OPEN):
        return 0
    if before in NEWLINES and (b == n or d.blank[b]):
        return 0  # a blank line follows: paragraph break
    if before in NEWLINES or after in NEWLINES:
        return 1
    return (2 if before.isspace() or after.isspace() else 4) + d.guarded[b]


def _try(d: _Doc, s: int, b: int, budget: int) -> tuple[int, int] | None:
    """``(cut, resume)`` for a cut at ``b``, or None if it would break a fence or not fit."""
    blk = d.inside(b)
    if blk is None:
        cut = b
        while cut > s and d.units[cut - 1].isspace():
            cut -= 1
        resume = _skip(d, b)
        if cut == s or not _fits(d, s, cut, budget):
            return None
    else:
        cut, resume = b, b + 1 if b < len(d.units) and d.units[b] in NEWLINES else b
        first = max(s, blk.body_start)
        if not _fits(d, s, cut, budget) or d.nextnw[first] >= cut:
            return None
        if d.nextnw[resume] >= blk.body_end:
            return None  # the next chunk would hold an empty block
    before_ok = _fragment_ok(d, max(s, d.line_start[cut - 1]), cut, blk)
    return (cut, resume) if before_ok and _fragment_ok(d, resume, None, blk) else None


def _fragment_ok(d: _Doc, start: int, end: int | None, blk: _Block | None) -> bool:
    """False if the line piece ``units[start:end]`` would read as a fence on its own line.

    A whole line that already opens an unclosable fence is no fragment: it reads the same in
    the chunk as in the original, so a cut at its edges (a line break) creates nothing new.
    """
    if start >= len(d.units) or d.kind[start] in (_OPEN, _CLOSE):
        return True
    if not _FENCEISH.match("".join(d.units[start : start + 7])):
        return True
    stop = start
    while stop < len(d.units) and d.units[stop] not in NEWLINES:
        stop += 1
    end = stop if end is None else end
    if (
        d.unclosable[start]
        and d.line_start[start] == start
        and not "".join(d.units[end:stop]).strip()
    ):
        return True
    piece = "".join(d.units[start:end]).rstrip()
    return not (_closes(piece, blk.closer) if blk else _opens(piece))


def _opens(line: str) -> re.Match[str] | None:
    """CommonMark opening fence: groups indent, fence, info (no backtick after backticks)."""
    m = FENCE.fullmatch(line)
    return None if m is None or (m[2][0] == "`" and "`" in m[3]) else m


def _closes(line: str, closer: str) -> bool:
    """Whether ``line`` closes the block opened by ``closer`` (indent + fence)."""
    c, fence = FENCE_CLOSER.fullmatch(line), closer.lstrip(" ")
    return c is not None and c[1][0] == fence[0] and len(c[1]) >= len(fence)
