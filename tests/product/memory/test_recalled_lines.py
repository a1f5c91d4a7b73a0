"""What recall sends, as pure logic (bot.memory.recalled): one ranking of facts and old messages,
neighbours, the budget, dates and speakers, one compact line per item, exchanges read in order --
grouping and the lines' quoting as properties."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st

from bot.memory.recalled import (
    MERGE_GAP,
    fact_line,
    interleave,
    merge_neighbours,
    message_line,
    recalled_lines,
    with_neighbours,
)
from bot.values import FoundTurn, Memory, MemoryScope

NOV_30 = 1_796_000_000.0  # 2026-11-30 (UTC)


def said(turn_id: int, at: float, user: str = "1", text: str = "") -> FoundTurn:
    return FoundTurn(turn_id, user, f"name-{user}", text or f"message {turn_id}", at)


def fact(memory_id: int, text: str, at: float = NOV_30) -> Memory:
    return Memory(memory_id, "tg:-1", "tg:-1", "1", "Ann", MemoryScope.MEMBER, text, at)


@st.composite
def hits(draw: st.DrawFn) -> list[FoundTurn]:
    """Distinct turns, best first in a random order, with random speakers and time steps."""
    steps = draw(
        st.lists(
            st.tuples(
                st.sampled_from(["1", "2"]),
                st.one_of(st.floats(0, MERGE_GAP), st.floats(MERGE_GAP + 1, 10 * 86400)),
            ),
            max_size=25,
        )
    )
    turns, at = [], NOV_30
    for n, (user, step) in enumerate(steps):
        at += step
        turns.append(said(n + 1, at, user))
    return draw(st.permutations(turns))


@given(hits())
def test_merging_keeps_everything_in_order_and_never_bridges_a_gap(
    found: list[FoundTurn],
) -> None:
    groups = merge_neighbours(found)
    merged = [t for group in groups for t in group]
    assert sorted(t.turn_id for t in merged) == sorted(t.turn_id for t in found)  # nothing lost
    assert len(merged) == len(found)
    rank = {t.turn_id: n for n, t in enumerate(found)}
    best = [min(rank[t.turn_id] for t in group) for group in groups]
    assert best == sorted(best)  # groups come best first
    if found:
        assert found[0] in groups[0]
    by_time = sorted(found, key=lambda t: t.turn_id)
    group_of = {t.turn_id: n for n, group in enumerate(groups) for t in group}
    for group in groups:
        assert [t.turn_id for t in group] == sorted(t.turn_id for t in group)  # as said
    for before, after in pairwise(by_time):
        together = after.created_at - before.created_at <= MERGE_GAP
        # one exchange exactly where no large gap lies between, whoever spoke
        assert (group_of[before.turn_id] == group_of[after.turn_id]) == together


LINE_BREAKS = ("\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")


@given(st.text(), st.text(), st.floats(0, 4_000_000_000), st.booleans())
def test_a_line_is_one_json_array_whatever_it_quotes(
    text: str, name: str, at: float, shared: bool
) -> None:
    """Nothing a user writes (text or display name) can open a line, end the array or pose
    as another item: the line parses back to exactly what was said."""
    turn = FoundTurn(1, "42", name, text, at)
    line = message_line(turn, shared)
    assert not any(mark in line for mark in LINE_BREAKS)
    assert line.splitlines() == [line]
    assert json.loads(line) == [
        datetime.fromtimestamp(at, UTC).date().isoformat(),
        (name or "42") if shared else "the user",
        text,
    ]
    memory = Memory(3, "tg:-1", "tg:-1", "42", name, MemoryScope.MEMBER, text, at)
    line = fact_line(memory)
    assert line.splitlines() == [line] and not any(mark in line for mark in LINE_BREAKS)
    assert json.loads(line)[2:] == ["remember", text]


def test_neighbours_follow_their_match_once_at_its_best_place() -> None:
    a, b, c, d = (said(n, NOV_30) for n in (1, 2, 3, 4))
    x = fact(9, "x")
    assert with_neighbours([c, x, a], {3: [d, b], 1: [b]}) == [c, d, b, x, a]
    assert with_neighbours([c], {}) == [c]


def test_facts_and_messages_interleave_rank_by_rank() -> None:
    a, b = fact(1, "a"), fact(2, "b")
    x, y, z = said(7, NOV_30), said(8, NOV_30), said(9, NOV_30)
    assert interleave([a, b], [x, y, z]) == [a, x, b, y, z]
    assert interleave([], [x]) == [x] and interleave([a], []) == [a]


def test_lines_carry_dates_speakers_and_read_exchanges_in_order() -> None:
    early = said(3, NOV_30, user="2", text="the boat is blue")
    one = said(10, NOV_30 + 86400, text="we sail at dawn")
    two = said(11, NOV_30 + 86400 + 60, user="2", text="from pier 4")
    lines = recalled_lines(
        [fact(1, "Ann likes tea")],
        [two, early, one],
        conversation_key="tg:-1",
        shared=True,
        budget=1000,
        cost=len,
    ).lines
    assert [json.loads(line) for line in lines] == [
        ["2026-11-30", "Ann", "remember", "Ann likes tea"],
        ["2026-12-01", "name-1", "we sail at dawn"],  # one exchange, as it was said
        ["", "name-2", "from pier 4"],  # the same day as the line above: no date again
        ["2026-11-30", "name-2", "the boat is blue"],
    ]
    [private] = recalled_lines(
        [], [early], conversation_key="tg:7:u:7", shared=False, budget=1000, cost=len
    ).kept
    assert json.loads(private)[1] == "the user"


def test_the_best_lines_fit_the_budget_first_and_the_rest_follow() -> None:
    found = [said(n, NOV_30 + n * 3600, text=f"message number {n}") for n in (5, 1, 9, 3)]
    lines = recalled_lines([], found, conversation_key="k", shared=True, budget=100, cost=len).kept
    texts = [json.loads(line)[2] for line in lines]
    assert texts == [t.text for t in found]  # best first, whatever the budget
    fits = sum(len(line) for line in lines[:2]) <= 100 < sum(len(line) for line in lines[:3])
    assert fits
    # a neighbour is taken after its match and before the next match, while it fits
    match, after, other = said(1, NOV_30, text="m" * 40), said(2, NOV_30), said(7, NOV_30 + 9e4)
    lines = recalled_lines(
        [], [match, other], conversation_key="k", shared=True, budget=120, cost=len,
        beside={1: [after]},
    ).kept  # fmt: skip
    assert [json.loads(line)[2] for line in lines] == [match.text, after.text, other.text]
    assert sum(map(len, lines[:2])) <= 120 < sum(map(len, lines))  # the other did not fit


def test_what_only_the_asker_may_read_is_never_kept_and_held_lines_are_not_sent_again() -> None:
    mine = fact(1, "the group meets on Fridays")  # said in this conversation: anyone here
    theirs = Memory(2, "tg:-1", "tg:-1:u:1", "1", "Ann", MemoryScope.MEMBER, "Ann is vegan", NOV_30)
    old = said(5, NOV_30, text="the hall is booked")
    got = recalled_lines(
        [mine, theirs], [old], conversation_key="tg:-1", shared=True, budget=1000, cost=len
    )
    assert [json.loads(line)[-1] for line in got.kept] == [mine.text, old.text]
    assert [json.loads(line)[-1] for line in got.own] == [theirs.text]
    private = recalled_lines(
        [theirs], [], conversation_key="tg:1:u:1", shared=False, budget=1000, cost=len
    )
    assert (len(private.kept), private.own) == (1, ())  # a private chat has one reader
    held = got.kept[0]
    again = recalled_lines(
        [mine], [old], conversation_key="tg:-1", shared=True, budget=len(held) + 40, cost=len,
        held={held},
    )  # fmt: skip
    assert held not in again.lines  # the window carries it already ...
    assert again.kept == (message_line(old, True),)


def test_a_line_held_without_its_date_is_not_sent_again() -> None:
    """In an exchange only the first line carries the date: the window holds the others as
    ``["", speaker, words]``, and they are the same messages (found by a fresh-clone trial:
    12 of 13 kept lines were sent twice)."""
    exchange = [said(n, NOV_30 + 60 * n, text=f"part {n} of the plan") for n in (1, 2, 3)]
    first = recalled_lines([], exchange, conversation_key="k", shared=True, budget=1000, cost=len)
    assert [json.loads(line)[0] for line in first.kept] == ["2026-11-30", "", ""]
    again = recalled_lines(
        [], [*exchange, said(9, NOV_30 + 9e5, text="something new")], conversation_key="k",
        shared=True, budget=1000, cost=len, held=set(first.kept),
    )  # fmt: skip
    assert [json.loads(line)[2] for line in again.kept] == ["something new"]
