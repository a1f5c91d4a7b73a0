"""How many tokens recall may take in a request, and the recalled blocks cut to them.

Recall's lines are the prompt's most volatile part, and once sent, what everyone may read is
kept with the turn (``bot.prompt.assembly``): so what recall may take is decided here, in one
place, for the memory provider's estimate (``bot.memory.recalled``) and the prompt's exact
count alike.

* :func:`recall_cap`: ``memory.max_tokens``, at most a share of the prompt's room;
* :func:`recall_room`: what a request's *new* lines may take beside those the window holds;
* :func:`recalled_blocks`: the kept block and the asker's own, counted exactly to that room.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.config import Settings
from bot.llm.tokens import TokenCounter
from bot.prompt.safety import held_lines, recalled_message
from bot.values import StoredTurn

__all__ = [
    "LINE_COST",
    "RECALL_FLOOR",
    "RECALL_SHARE",
    "recall_cap",
    "recall_room",
    "recalled_block",
    "recalled_blocks",
]

Message = dict[str, Any]
RECALL_SHARE = 32  # recall takes at most this fraction of a prompt's room (recall_cap)
RECALL_FLOOR = 16  # a request's new recalled lines take at least this fraction of the cap
LINE_COST = 2  # tokens a line costs in the block beyond its text (the line break, rounding)


def recall_cap(settings: Settings) -> int:
    """``memory.max_tokens``, but at most 1/:data:`RECALL_SHARE` of what a prompt may hold (the
    context window less the reply): a small model's window is not given over to recall, whose
    lines stay in the history once sent (bench section 9 at a 4,000-token window: 0.86 of
    each prompt cached at this share, 0.78 at a quarter)."""
    room = settings.llm.context_window - settings.llm.max_output_tokens
    return max(0, min(settings.memory.max_tokens, room // RECALL_SHARE))


def recall_room(cap: int, held: int) -> int:
    """Tokens this request's new recalled lines may take when the window carries ``held``
    tokens of lines recalled before (stored with their turns): what the cap leaves, and never
    less than 1/:data:`RECALL_FLOOR` of it, so a new question still finds its answer (a line
    or two: the window grows by at most that a turn until the next cut)."""
    return max(cap - held, cap // RECALL_FLOOR)


def recalled_block(
    lines: Sequence[str], counter: TokenCounter, cap: int, used: int = 0
) -> list[Message]:
    """Recalled memories as one user-role message of quoted items (none: an empty list);
    ``used``: tokens of the cap taken already."""
    kept: list[str] = []
    for line in lines:  # most relevant first: the cap drops the least relevant
        cost = counter.count_text(line) + LINE_COST
        if used + cost > cap:
            continue  # a long line must not hide shorter ones after it
        kept.append(line)
        used += cost
    return [recalled_message(kept)] if kept else []


def recalled_blocks(
    kept: Sequence[str],
    own: Sequence[str],
    history: Sequence[StoredTurn],
    counter: TokenCounter,
    cap: int,
) -> tuple[list[Message], list[Message]]:
    """The kept block, then the asker's own, within what :func:`recall_room` leaves beside the
    lines ``history`` holds already."""
    if not kept and not own:  # nothing recalled (memory off): the window need not be read
        return [], []
    held = sum(
        counter.count_text(line) + LINE_COST
        for turn in history
        for line in held_lines(turn.messages)
    )
    used = cap - recall_room(cap, held)
    kept_block = recalled_block(kept, counter, cap, used)
    used += sum(counter.count_text(line) + LINE_COST for line in _lines(kept_block))
    return kept_block, recalled_block(own, counter, cap, used)


def _lines(block: list[Message]) -> list[str]:
    return [line for m in block for line in str(m["content"]).split("\n")[1:]]
