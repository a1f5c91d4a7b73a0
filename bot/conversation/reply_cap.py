"""The bot's own cap on one reply, whatever the model writes.

Why: ``max_tokens`` is a request, not a guarantee. A server that ignored it once answered one
question with 51 Telegram messages. So the core cuts every answer, streamed or not, at
``limits.max_reply_chars`` (code points), and at what fits in ``limits.max_reply_messages`` of
the adapter's messages, and says so in the reply itself. The cut text, note included, is what is
stored: later turns see exactly what the user saw.

Cuts prefer a paragraph break, a line break, a sentence end, then a space, in the last fifth
before the cap. They never split a surrogate pair, nor a cheaply detected grapheme cluster (an
accent, a ZWJ sequence, a flag) shorter than 32 code points; a cut inside a fenced code block
closes the fence, so the note reads as prose.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from bot.platform.text_rules import FENCE, ZWJ, extends, is_flag_half

__all__ = [
    "NOTE",
    "OUTPUT_NOTE",
    "REPLY_LIMIT",
    "Cut",
    "Fitted",
    "SplitReply",
    "StreamCap",
    "as_shown",
    "cut",
    "fit_messages",
]

NOTE = "[answer cut: it passed this bot's reply limit]"
OUTPUT_NOTE = "\n\n[reply cut at the output limit]"  # shown after an answer the model stopped
REPLY_LIMIT = "reply_limit"  # the finish_reason of a model round the bot cut short
_LOOKBACK = 5  # boundaries are looked for in the last 1/_LOOKBACK of the allowed text
_BOUNDARIES = ("\n\n", "\n", ". ", "! ", "? ", " ")
_FIT_TRIES = 12
_MAX_CLUSTER = 32  # code points a cut may step back to keep a character whole

SplitReply = Callable[[str], Awaitable[Sequence[str]]]
"""An adapter's rendering of a reply, exactly as shown, into the messages it would send
(Telegram HTML chunks, Discord chunks): the core uses it to keep a reply within
``limits.max_reply_messages``, and hands the last messages back for the adapter to send."""


def as_shown(text: str, finish_reason: str) -> str:
    """An answer as a chat shows it: one the model stopped at its output limit says so (the
    note is not stored; the bot's own cut carries its note in the text)."""
    return text + OUTPUT_NOTE if finish_reason == "length" else text


@dataclass(frozen=True, slots=True)
class Cut:
    """An answer cut short: ``kept`` is a prefix of it, ``tail`` closes an open code fence and
    carries the note."""

    kept: str
    tail: str

    @property
    def text(self) -> str:
        return self.kept + self.tail


def cut(text: str, limit: int, *, keep: int = 0) -> Cut:
    """``text`` cut to at most ``limit`` code points, plus the note.

    ``keep``: how much was already shown while streaming; the cut never goes back before it.
    """
    kept = text[: _cut_index(text, max(limit, 0), keep=min(keep, limit))]
    return Cut(kept, _tail(kept))


def _cut_index(text: str, limit: int, *, keep: int) -> int:
    if len(text) <= limit:
        return len(text)
    hard = limit
    shortest = max(keep, limit - _MAX_CLUSTER)  # a run of marks (Zalgo text) is cut anyway
    while hard > shortest and _joined(text, hard):
        hard -= 1
    if hard > keep and _splits_pair(text, hard):
        hard -= 1
    floor = max(keep, hard - hard // _LOOKBACK)
    for boundary in _BOUNDARIES:
        position = text.rfind(boundary, floor, hard)
        if position != -1 and not _joined(text, position + len(boundary)):
            return position + len(boundary)
    return hard


def _splits_pair(text: str, index: int) -> bool:
    """A surrogate pair left as two code points (a provider split one across deltas)."""
    return "\ud800" <= text[index - 1] <= "\udbff" and "\udc00" <= text[index] <= "\udfff"


def _joined(text: str, index: int) -> bool:
    """Whether a cut before ``text[index]`` would split what is shown as one character."""
    before, after = text[index - 1], text[index]
    if _splits_pair(text, index) or before == ZWJ or extends(after):
        return True
    if is_flag_half(after) and is_flag_half(before):
        run = index
        while run > 0 and is_flag_half(text[run - 1]):
            run -= 1
        return (index - run) % 2 == 1  # inside a pair of regional indicators
    return False


def _tail(kept: str) -> str:
    fence = _open_fence(kept)
    if fence is not None:
        return ("" if kept.endswith("\n") else "\n") + fence + "\n\n" + NOTE
    if kept.endswith("\n\n") or not kept.strip():
        return NOTE
    if kept.endswith("\n"):
        return "\n" + NOTE
    return ("…" if kept[-1].isspace() else " …") + "\n\n" + NOTE


def _open_fence(text: str) -> str | None:
    """The fence of the code block still open at the end of ``text``, or None."""
    opened: str | None = None
    for line in text.split("\n"):
        match = FENCE.fullmatch(line.rstrip("\r"))
        if match is None:
            continue
        _indent, fence, rest = match.groups()
        if opened is None:
            if not (fence[0] == "`" and "`" in rest):  # CommonMark: no backtick in the info
                opened = fence
        elif fence[0] == opened[0] and len(fence) >= len(opened) and not rest.strip():
            opened = None
    return opened


class StreamCap:
    """Counts a streamed answer against the cap; says what of each delta may be shown."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.shown = 0
        self._parts: list[str] = []

    def feed(self, delta: str) -> tuple[str, Cut | None]:
        """The part of ``delta`` to show, and the cut once the answer passed the cap."""
        if self.shown + len(delta) <= self.limit:
            self._parts.append(delta)
            self.shown += len(delta)
            return delta, None
        text = "".join(self._parts) + delta
        done = cut(text, self.limit, keep=self.shown)
        return text[self.shown : len(done.kept)], done


@dataclass(frozen=True, slots=True)
class Fitted:
    """What fitting made of an answer: ``cut`` None when it fit as shown; ``messages``, the
    adapter's messages for the text now shown (the last ``split``)."""

    cut: Cut | None
    messages: tuple[str, ...]


async def fit_messages(
    text: str, split: SplitReply, max_messages: int, *, body: str | None = None
) -> Fitted:
    """The answer, cut further if it takes more than ``max_messages`` of ``split``.

    ``text``: the answer as shown. ``body``: what a cut keeps a prefix of, when ``text`` ends in
    a note (an earlier cut's, the output limit's); a cut answer is shown as its cut text. Each
    try renders the whole text, so the first guess comes from how much of it the allowed
    messages hold; every retry keeps 15% less (a render or two in practice). The last render
    is kept: the adapter sends it as it is.
    """
    chunks = await split(text)
    if len(chunks) <= max_messages:
        return Fitted(None, tuple(chunks))
    body = text if body is None else body
    fits = sum(map(len, chunks[:max_messages])) / max(sum(map(len, chunks)), 1)
    limit = int(min(len(body), len(text) * fits) - len(NOTE) - 8)
    for _ in range(_FIT_TRIES):
        attempt = cut(body, max(limit, 0))
        chunks = await split(attempt.text)
        if limit <= 0 or len(chunks) <= max_messages:
            return Fitted(attempt, tuple(chunks))
        limit = int(limit * 0.85)
    attempt = cut(body, 0)  # the note alone
    return Fitted(attempt, tuple(await split(attempt.text)))
