"""Where the prompt's history begins: cut in steps, so consecutive prompts share their prefix.

A provider's prompt cache bills again only the bytes after the first change (OpenAI, DeepSeek,
Anthropic; vLLM and llama.cpp skip that part of the prefill). Trimming the oldest turn every
turn, as a sliding window does, changes the prompt right after the system block on every turn:
almost nothing is reused. So the window keeps its first turn, and the prompt for the next
message starts with the exact bytes of this one, until history would pass its budget (tokens,
or ``history.max_turns`` turns); then it is cut once, down to the low-water mark
(``history.low_water`` of both), and stays put again for several turns.

The start is stored (:mod:`bot.storage.prompt_windows`), since it is a fact about what the
model was sent: recall searches every turn before it, compaction summarises those turns.

Pure functions over the loaded turns; ``bot.conversation.prompt_sources`` fetches and stores.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bot.values import StoredTurn, TurnStatus, WindowMark

__all__ = ["Placement", "cut_window", "place_window", "recall_boundary", "spans", "window_for"]

Span = tuple[StoredTurn, ...]  # one turn, led by the overheard context rows moved into it


@dataclass(frozen=True, slots=True)
class Placement:
    """The history a prompt is built with, and where it begins."""

    turns: tuple[StoredTurn, ...]  # oldest first: what is sent
    start: int  # the first turn id the window holds (ids below it left the prompt)
    over: bool  # past its budget: it must be cut (see :func:`cut_window`)
    summary: str | None = None  # the summary the prompt shows
    cut: WindowMark | None = None  # set when this request moved the start: store it

    @property
    def recall_before(self) -> int | None:
        """Recall searches turns with ids below this (None: nothing has left the window)."""
        if self.turns:
            return self.turns[0].turn_id
        return self.start or None


def window_for(
    history: Sequence[StoredTurn],
    mark: WindowMark | None,
    latest_summary: str | None,
    *,
    cost: Callable[[Sequence[StoredTurn]], int],
    room: Callable[[str | None], int],
    max_turns: int,
    low_water: float,
) -> Placement:
    """This request's window: from the stored ``mark`` while it fits, else cut anew.

    ``room(summary)`` is the tokens history may take beside a system block showing
    ``summary``. Between cuts the prompt shows the summary pinned with the mark, so the
    system block does not change when compaction writes a newer one; a cut shows
    ``latest_summary`` from then on (a conversation never cut shows it as it comes).
    """
    shown = latest_summary if mark is None else (mark.summary or None)
    start = 0 if mark is None else mark.start_turn_id
    placed = place_window(history, start, cost=cost, room=room(shown), max_turns=max_turns)
    if not placed.over:
        return dataclasses.replace(placed, summary=shown)
    cut = cut_window(
        history, cost=cost, room=room(latest_summary), max_turns=max_turns, low_water=low_water
    )
    new_mark = WindowMark(cut.start, latest_summary or "")
    return dataclasses.replace(cut, summary=latest_summary, cut=new_mark)


def recall_boundary(history: Sequence[StoredTurn], mark: WindowMark | None) -> int | None:
    """Where recall starts searching before the window is placed: below its stored start
    (below the first loaded turn if it was never cut). If this request cuts the window, the
    service searches again from the new start."""
    start = 0 if mark is None else mark.start_turn_id
    kept = next((t.turn_id for t in history if t.turn_id >= start), None)
    return kept if kept is not None else (start or None)


def spans(history: Sequence[StoredTurn]) -> list[Span]:
    """Turns grouped for cutting: overheard context rows stay with the turn they were said
    before (they were its context), so a cut never separates them."""
    grouped: list[Span] = []
    pending: list[StoredTurn] = []
    for turn in history:
        pending.append(turn)
        if turn.status is not TurnStatus.CONTEXT:
            grouped.append(tuple(pending))
            pending = []
    if pending:
        grouped.append(tuple(pending))
    return grouped


def place_window(
    history: Sequence[StoredTurn],
    start: int,
    *,
    cost: Callable[[Sequence[StoredTurn]], int],
    room: int,
    max_turns: int,
) -> Placement:
    """The window beginning at turn id ``start`` (0: the first loaded), and whether it is over.

    ``history`` is what the store loaded: at most ``max_turns`` turns, newest last. When the
    load was full and ``start`` lies before it, more turns than ``max_turns`` follow ``start``
    (turn ids are shared by every conversation, so they cannot be counted from the ids).
    """
    grouped = spans(history)
    first = bisect.bisect_left(grouped, start, key=_first_id)  # spans run in turn id order
    kept = grouped[first:]
    # Only the last span can end in chatter (after the last turn): it alone is not a turn.
    chatter = 1 if grouped and grouped[-1][-1].status is TurnStatus.CONTEXT else 0
    loaded_all = len(grouped) - chatter < max_turns
    # the load was full and the window starts before it: more turns follow ``start`` than fit
    beyond = not loaded_all and bool(kept) and first == 0 and start < kept[0][0].turn_id
    turns = tuple(history[len(history) - sum(map(len, kept)) :])  # the spans' turns, in order
    over = (
        beyond
        or len(kept) - (chatter if kept else 0) > max_turns
        or (bool(turns) and cost(turns) > room)
    )
    return Placement(turns, start, over)


def _first_id(span: Span) -> int:
    return span[0].turn_id


def cut_window(
    history: Sequence[StoredTurn],
    *,
    cost: Callable[[Sequence[StoredTurn]], int],
    room: int,
    max_turns: int,
    low_water: float,
) -> Placement:
    """The newest whole turns within ``low_water`` of both budgets: the window after a cut.

    ``cost`` prices a turn's messages alone (their tokens, without the list's own overhead),
    so the spans are priced one by one, newest first. The newest turn goes too when it alone
    is over the mark: the prompt still holds the new message, the rest is recalled.
    """
    token_cap = int(room * low_water)
    turn_cap = min(int(max_turns * low_water), max_turns - 1)
    kept: list[Span] = []
    used = 0
    for span in reversed(spans(history)):
        used += cost(span)
        if used > token_cap or real_turns([*kept, span]) > turn_cap:
            break
        kept.append(span)
    kept.reverse()
    turns = tuple(t for s in kept for t in s)
    # when everything left, the window begins after the newest loaded turn
    after_all = history[-1].turn_id + 1 if history else 0
    return Placement(turns, turns[0].turn_id if turns else after_all, over=False)


def real_turns(kept: Sequence[Span]) -> int:
    context = TurnStatus.CONTEXT
    return len([s for s in kept if s[-1].status is not context])
