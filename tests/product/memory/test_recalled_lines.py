"""What recall sends, as pure logic (bot.memory.recalled): one ranking of facts and old messages,
the budget, dates and speakers, and neighbouring messages merged -- merging as a property."""

from __future__ import annotations

import json
from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st

from bot.memory.recalled import MERGE_GAP, interleave, merge_neighbours, recalled_lines
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
        gap = after.created_at - before.created_at
        together = before.user_id == after.user_id and gap <= MERGE_GAP
        # merged exactly where they belong together: same speaker, no large gap between
        assert (group_of[before.turn_id] == group_of[after.turn_id]) == together


def test_facts_and_messages_interleave_rank_by_rank() -> None:
    a, b = fact(1, "a"), fact(2, "b")
    x, y, z = said(7, NOV_30), said(8, NOV_30), said(9, NOV_30)
    assert interleave([a, b], [x, y, z]) == [a, x, b, y, z]
    assert interleave([], [x]) == [x] and interleave([a], []) == [a]


def test_lines_carry_dates_speakers_and_merge_neighbours() -> None:
    early = said(3, NOV_30, user="2", text="the boat is blue")
    one = said(10, NOV_30 + 86400, text="we sail at dawn")
    two = said(11, NOV_30 + 86400 + 60, text="from pier 4")
    lines = recalled_lines(
        [fact(1, "Ann likes tea")],
        [two, early, one],
        shared=True,
        budget=1000,
        cost=len,
    )
    items = [json.loads(line) for line in lines]
    assert items == [
        {"fact": "Ann likes tea", "by": "Ann", "date": "2026-11-30"},
        {
            "earlier_messages": ["we sail at dawn", "from pier 4"],
            "by": "name-1",
            "date": "2026-12-01",
        },
        {"earlier_message": "the boat is blue", "by": "name-2", "date": "2026-11-30"},
    ]
    [private] = recalled_lines([], [early], shared=False, budget=1000, cost=len)
    assert json.loads(private)["by"] == "the user"


def test_the_best_lines_fit_the_budget_first_and_the_rest_follow() -> None:
    found = [said(n, NOV_30 + n * 3600, text=f"message number {n}") for n in (5, 1, 9, 3)]
    lines = recalled_lines([], found, shared=True, budget=200, cost=len)
    texts = [json.loads(line)["earlier_message"] for line in lines]
    assert texts == [t.text for t in found]  # best first, whatever the budget
    fits = sum(len(line) for line in lines[:2]) <= 200 < sum(len(line) for line in lines[:3])
    assert fits
    # the ones past the budget are not merged into the best ones' items
    close = [said(1, NOV_30, text="x" * 150), said(2, NOV_30 + 1, text="y" * 150)]
    lines = recalled_lines([], close, shared=True, budget=250, cost=len)
    assert len(lines) == 2
    assert len(recalled_lines([], close, shared=True, budget=1000, cost=len)) == 1
