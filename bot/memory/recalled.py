"""What recall sends, as pure functions: one ranking, the token budget, dates, merged neighbours.

:class:`~bot.memory.provider.StoredMemory` finds remembered facts and old messages; here they
become the recalled block's lines (each one line of JSON, :func:`recalled_item`):

* **one ranking**: facts and old messages come from different indexes whose scores do not
  compare, but their ranks do, so the two lists are interleaved rank by rank (reciprocal rank
  fusion of two disjoint lists), a fact first at equal rank: someone asked for it to be kept;
* **the budget**: the best items are taken while their estimated cost fits
  ``memory.max_tokens`` (the prompt's cap, ``bot.prompt.assembly.recalled_block``, counts
  exactly and has the last word); the ones that did not fit follow, so the cap can still fill
  any room the estimate left;
* **dates and speakers**: each line says when it was said (UTC date) and, in a shared chat,
  who said it (in a private chat: "the user");
* **neighbours merged**: messages of one speaker found within :data:`MERGE_GAP` of each other
  (a thought spread over several messages) become one item, in the order they were said, at
  the place of the best of them, so the model reads them together and the keys are paid once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from bot.prompt.safety import one_line_json
from bot.values import FoundTurn, Memory

__all__ = [
    "MERGE_GAP",
    "interleave",
    "merge_neighbours",
    "recalled_item",
    "recalled_lines",
    "utc_date",
]

MERGE_GAP = 300.0  # seconds between two messages of one speaker that still belong together
PRIVATE_SPEAKER = "the user"

Found = Memory | FoundTurn


def recalled_item(**fields: str | list[str]) -> str:
    """One recalled item as a single line of JSON: newlines and quotes inside stay escaped."""
    return one_line_json(fields)


def utc_date(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).date().isoformat()


def interleave(facts: Sequence[Memory], earlier: Sequence[FoundTurn]) -> list[Found]:
    """Both rankings as one, best first: rank by rank, the fact first."""
    ranked: list[Found] = []
    for rank in range(max(len(facts), len(earlier))):
        ranked.extend(facts[rank : rank + 1])
        ranked.extend(earlier[rank : rank + 1])
    return ranked


def _together(before: FoundTurn, after: FoundTurn, gap: float) -> bool:
    return before.user_id == after.user_id and abs(after.created_at - before.created_at) <= gap


def merge_neighbours(turns: Sequence[FoundTurn], gap: float = MERGE_GAP) -> list[list[FoundTurn]]:
    """``turns`` (best first, one conversation) in groups of messages that belong together:
    in time order, each next one by the same speaker within ``gap`` seconds of the one before.
    Groups come in the order of their best member; each group in the order it was said."""
    if not turns:
        return []
    rank = {turn.turn_id: n for n, turn in enumerate(turns)}
    groups: list[list[FoundTurn]] = []
    for turn in sorted(turns, key=lambda t: t.turn_id):
        if groups and _together(groups[-1][-1], turn, gap):
            groups[-1].append(turn)
        else:
            groups.append([turn])
    return sorted(groups, key=lambda group: min(rank[t.turn_id] for t in group))


def fact_line(memory: Memory) -> str:
    return recalled_item(
        fact=memory.text, by=memory.user_name or memory.user_id, date=utc_date(memory.created_at)
    )


def message_line(group: Sequence[FoundTurn], shared: bool) -> str:
    """One or more messages of one speaker, in the order they were said."""
    first, last = group[0], group[-1]
    by = (first.user_name or first.user_id) if shared else PRIVATE_SPEAKER
    date = utc_date(first.created_at)
    if utc_date(last.created_at) != date:
        date += " to " + utc_date(last.created_at)
    if len(group) == 1:
        return recalled_item(earlier_message=first.text, by=by, date=date)
    return recalled_item(earlier_messages=[t.text for t in group], by=by, date=date)


def _render(items: Sequence[Found], shared: bool, gap: float) -> list[str]:
    """``items`` (best first) as lines, neighbouring messages merged at the best one's place."""
    placed: list[tuple[int, str]] = []
    position: dict[int, int] = {}
    turns: list[FoundTurn] = []
    for n, item in enumerate(items):
        if isinstance(item, Memory):
            placed.append((n, fact_line(item)))
        else:
            position[item.turn_id] = n
            turns.append(item)
    for group in merge_neighbours(turns, gap):
        placed.append((min(position[t.turn_id] for t in group), message_line(group, shared)))
    return [line for _, line in sorted(placed, key=lambda pair: pair[0])]


def recalled_lines(
    facts: Sequence[Memory],
    earlier: Sequence[FoundTurn],
    *,
    shared: bool,
    budget: int,
    cost: Callable[[str], int],
    gap: float = MERGE_GAP,
) -> list[str]:
    """The recalled block's lines, best first: what fits ``budget`` by ``cost`` (tokens of a
    line in the block), merged; then the rest, merged among themselves (module docstring)."""
    chosen: list[Found] = []
    spare: list[Found] = []
    used = 0
    for item in interleave(facts, earlier):
        line = fact_line(item) if isinstance(item, Memory) else message_line([item], shared)
        if used + cost(line) <= budget:
            chosen.append(item)
            used += cost(line)
        else:
            spare.append(item)
    return _render(chosen, shared, gap) + _render(spare, shared, gap)
