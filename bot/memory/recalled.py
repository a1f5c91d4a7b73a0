"""What recall sends, as pure functions: one ranking, neighbours, the token budget, the lines.

:class:`~bot.memory.provider.StoredMemory` finds remembered facts and old messages; here they
become the recalled block's lines, **one compact line per item**: a JSON array, so a newline or a
quote inside an item stays escaped and no text can open a line of its own:

* an old message: ``["2023-05-08","Caroline","what she said"]`` (date, speaker, words);
* a remembered fact: ``["2023-05-08","Ann","remember","Mei is allergic to peanuts"]``.

A line costs about 12 tokens around its text (the JSON objects used before cost 19-21, as much
as the typical message they carried: bench section 14 measures both on public conversations).

* **one ranking**: facts and old messages come from different indexes whose scores do not
  compare, but their ranks do, so the two lists are interleaved rank by rank (reciprocal rank
  fusion of two disjoint lists), a fact first at equal rank: someone asked for it to be kept;
* **neighbours**: an answer is often the message *after* the one that shares the question's
  words ("what did you do?" - "I went to ..."), so each recalled message brings the messages
  said right after and right before it (:func:`with_neighbours`), after it and before the next
  match, while the budget allows;
* **the budget**: items are taken in that order while their cost fits ``memory.max_tokens``
  (the prompt's cap, ``bot.prompt.assembly.recalled_block``, counts exactly and has the last
  word); the ones that did not fit follow, so the cap can still fill any room the estimate left;
* **read together**: messages said within :data:`MERGE_GAP` of each other (an exchange) are
  placed one after the other in the order they were said, at the place of the best of them;
* **kept or own** (:class:`~bot.values.Recalled`): what everyone in the conversation may read
  (its old messages, its own memories; in a private chat, everything) is *kept*: stored with
  the turn, it stays in the prompt's stable part, so what recall adds does not change the
  cached prefix on every turn. Lines the window holds already (``held``) are not sent again,
  and count against the budget (``bot.prompt.assembly.recall_room``: never below half of it).
  What only the asker may read (their facts from elsewhere) is *own*, never stored.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import UTC, datetime

from bot.prompt.recall_budget import recall_room
from bot.prompt.safety import one_line_json
from bot.values import FoundTurn, Memory, Recalled

__all__ = [
    "MERGE_GAP",
    "PRIVATE_SPEAKER",
    "fact_line",
    "interleave",
    "merge_neighbours",
    "message_line",
    "recalled_lines",
    "utc_date",
    "with_neighbours",
]

MERGE_GAP = 300.0  # seconds between two messages that still read as one exchange
PRIVATE_SPEAKER = "the user"
FACT_MARK = "remember"

Found = Memory | FoundTurn


def utc_date(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).date().isoformat()


def interleave(facts: Sequence[Memory], earlier: Sequence[FoundTurn]) -> list[Found]:
    """Both rankings as one, best first: rank by rank, the fact first."""
    ranked: list[Found] = []
    for rank in range(max(len(facts), len(earlier))):
        ranked.extend(facts[rank : rank + 1])
        ranked.extend(earlier[rank : rank + 1])
    return ranked


def with_neighbours(
    ranked: Sequence[Found], beside: Mapping[int, Sequence[FoundTurn]]
) -> list[Found]:
    """``ranked`` with each message's neighbours (``beside[turn_id]``: the message after it,
    then the one before) right after it, each item once, at its best place."""
    seen: set[tuple[bool, int]] = set()
    out: list[Found] = []
    for item in ranked:
        extra = beside.get(item.turn_id, ()) if isinstance(item, FoundTurn) else ()
        for each in (item, *extra):
            key = (isinstance(each, Memory), _ident(each))
            if key not in seen:
                seen.add(key)
                out.append(each)
    return out


def _ident(item: Found) -> int:
    return item.memory_id if isinstance(item, Memory) else item.turn_id


def merge_neighbours(turns: Sequence[FoundTurn], gap: float = MERGE_GAP) -> list[list[FoundTurn]]:
    """``turns`` (best first, one conversation) in exchanges: in time order, each next one
    within ``gap`` seconds of the one before. Exchanges come in the order of their best member;
    each in the order it was said."""
    if not turns:
        return []
    rank = {turn.turn_id: n for n, turn in enumerate(turns)}
    groups: list[list[FoundTurn]] = []
    for turn in sorted(turns, key=lambda t: t.turn_id):
        if groups and abs(turn.created_at - groups[-1][-1].created_at) <= gap:
            groups[-1].append(turn)
        else:
            groups.append([turn])
    return sorted(groups, key=lambda group: min(rank[t.turn_id] for t in group))


def fact_line(memory: Memory) -> str:
    by = memory.user_name or memory.user_id
    return one_line_json([utc_date(memory.created_at), by, FACT_MARK, memory.text])


def message_line(turn: FoundTurn, shared: bool, *, dated: bool = True) -> str:
    """One old message; in a private chat its speaker is "the user". ``dated`` False: the
    date is "" (said the same day as the line before it, in one exchange)."""
    by = (turn.user_name or turn.user_id) if shared else PRIVATE_SPEAKER
    return one_line_json([utc_date(turn.created_at) if dated else "", by, turn.text])


def _exchange(group: Sequence[FoundTurn], shared: bool) -> list[str]:
    """An exchange's lines: the date once, then again only where the day changes."""
    days = [utc_date(t.created_at) for t in group]
    return [
        message_line(t, shared, dated=n == 0 or days[n] != days[n - 1]) for n, t in enumerate(group)
    ]


def _slots(turn: FoundTurn, gap: float) -> set[tuple[str, int]]:
    """Where a message said within ``gap`` of this one on its day falls: such a message reads
    in its exchange without a date of its own (an estimate for the budget; :func:`_render`
    decides)."""
    day, slot = utc_date(turn.created_at), int(turn.created_at // gap)
    return {(day, slot - 1), (day, slot), (day, slot + 1)}


def _line(item: Found, shared: bool) -> str:
    return fact_line(item) if isinstance(item, Memory) else message_line(item, shared)


def _is_held(item: Found, line: str, shared: bool, held: Collection[str]) -> bool:
    """Whether the window carries ``item`` already, dated or as an exchange's undated line."""
    if line in held:
        return True
    return isinstance(item, FoundTurn) and message_line(item, shared, dated=False) in held


def _render(items: Sequence[Found], shared: bool, gap: float) -> list[str]:
    """``items`` (best first) as lines, each exchange in the order it was said at the place
    of its best message."""
    placed: list[tuple[int, list[str]]] = []
    position: dict[int, int] = {}
    turns: list[FoundTurn] = []
    for n, item in enumerate(items):
        if isinstance(item, Memory):
            placed.append((n, [fact_line(item)]))
        else:
            position[item.turn_id] = n
            turns.append(item)
    for group in merge_neighbours(turns, gap):
        first = min(position[t.turn_id] for t in group)
        placed.append((first, _exchange(group, shared)))
    return [line for _, lines in sorted(placed, key=lambda pair: pair[0]) for line in lines]


def recalled_lines(
    facts: Sequence[Memory],
    earlier: Sequence[FoundTurn],
    *,
    conversation_key: str,
    shared: bool,
    budget: int,
    cost: Callable[[str], int],
    beside: Mapping[int, Sequence[FoundTurn]] | None = None,
    held: Collection[str] = (),
    gap: float = MERGE_GAP,
) -> Recalled:
    """The recalled block's lines (module docstring): ``held`` lines skipped and their cost
    taken from ``budget``; the items that fit by ``cost`` (tokens of a line in the block) in
    rank order, then the rest; split into kept and own."""
    used = budget - recall_room(budget, sum(cost(line) for line in held))
    chosen: list[Found] = []
    spare: list[Found] = []
    near: set[tuple[str, int]] = set()  # (day, time // gap) of the chosen messages
    for item in with_neighbours(interleave(facts, earlier), beside or {}):
        line = _line(item, shared)
        if _is_held(item, line, shared, held):
            continue
        if isinstance(item, FoundTurn) and _slots(item, gap) & near:  # joins an exchange
            price = cost(message_line(item, shared, dated=False))
        else:
            price = cost(line)
        if used + price <= budget:
            chosen.append(item)
            used += price
            if isinstance(item, FoundTurn):
                near |= _slots(item, gap)
        else:
            spare.append(item)

    def kept(item: Found) -> bool:
        return (
            not shared
            or not isinstance(item, Memory)
            or (item.conversation_key == conversation_key)
        )

    return Recalled(
        kept=tuple(
            _render([i for i in chosen if kept(i)], shared, gap)
            + _render([i for i in spare if kept(i)], shared, gap)
        ),
        own=tuple(
            _render([i for i in chosen if not kept(i)], shared, gap)
            + _render([i for i in spare if not kept(i)], shared, gap)
        ),
    )
