"""Tests for ``bot.llm.trim.trim_history``: table-driven cases plus hypothesis properties."""

from __future__ import annotations

import copy
import sys
import types
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.errors import ContextTooLongError
from bot.llm.trim import trim_history

Msg = dict[str, Any]
Counter = Callable[[list[Msg]], int]


# --------------------------------------------------------------------------- helpers


def system(content: str = "be nice") -> Msg:
    return {"role": "system", "content": content}


def developer(content: str = "dev rules") -> Msg:
    return {"role": "developer", "content": content}


def user(content: str) -> Msg:
    return {"role": "user", "content": content}


def asst(content: str | None) -> Msg:
    return {"role": "assistant", "content": content}


def calls(*ids: str, content: str | None = None) -> Msg:
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}} for i in ids
        ],
    }


def tool(call_id: str, content: str = "result") -> Msg:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def count(messages: list[Msg]) -> int:
    """Additive test counter: 3 per reply, 3 per message plus content chars // 4."""
    return 3 + sum(3 + len(m.get("content") or "") // 4 for m in messages)


def lumpy_count(messages: list[Msg]) -> int:
    """Non-additive counter: lists of more than 8 messages cost a flat 60-token penalty.

    No single generated turn is that long, so per-turn costs miss the penalty and only the
    final full count sees it.
    """
    return count(messages) + (60 if len(messages) > 8 else 0)


S, D = system(), developer()
U1, A1, U2, A2, U3, A3 = user("u1"), asst("a1"), user("u2"), asst("a2"), user("u3"), asst("a3")
CALL, R1, R2 = calls("c1", "c2"), tool("c1"), tool("c2")
LONG = user("x" * 400)  # 3 + 100 tokens


# --------------------------------------------------------------------------- table tests

CASES: list[tuple[str, list[Msg], dict[str, Any], list[Msg]]] = [
    ("no limits returns input", [S, U1, A1, U2], {}, [S, U1, A1, U2]),
    ("empty input", [], {"max_turns": 0, "max_tokens": 100}, []),
    ("system only", [S, D], {"max_turns": 0}, [S, D]),
    ("system kept, oldest dropped", [S, U1, A1, U2, A2, U3], {"max_turns": 2}, [S, U2, A2, U3]),
    ("max_turns=0 keeps newest", [S, U1, A1, U2, A2], {"max_turns": 0}, [S, U2, A2]),
    ("newest user kept, unanswered", [S, U1, A1, U2], {"max_turns": 0}, [S, U2]),
    ("max_messages whole turns", [U1, A1, U2, A2, U3], {"max_messages": 4}, [U2, A2, U3]),
    (
        "max_messages < newest turn",
        [U1, A1, U2, CALL, R1, R2, A2],
        {"max_messages": 1},
        [U2, CALL, R1, R2, A2],
    ),
    ("developer kept", [S, D, U1, A1, U2], {"max_turns": 1}, [S, D, U2]),
    ("partial leading turn first", [S, A1, U1, A2], {"max_turns": 1}, [S, U1, A2]),
    ("partial leading turn counts", [S, A1, U1, A2], {"max_turns": 2}, [S, A1, U1, A2]),
    ("no user: all is newest turn", [S, A1, A2], {"max_turns": 0}, [S, A1, A2]),
    (
        "mid system kept in turn",
        [U1, A1, system("note"), U2, A2],
        {"max_messages": 4},
        [U1, A1, system("note"), U2, A2],
    ),
    (
        "mid system not counted",
        [U1, A1, system("note"), U2],
        {"max_messages": 3},
        [U1, A1, system("note"), U2],
    ),
    (
        "tool group kept intact",
        [U1, CALL, R1, R2, A1, U2],
        {"max_messages": 6},
        [U1, CALL, R1, R2, A1, U2],
    ),
    ("tool group dropped whole", [U1, CALL, R1, R2, A1, U2], {"max_messages": 5}, [U2]),
    (
        "tokens drop oldest",
        [S, LONG, A1, U2, A2, U3],
        {"max_tokens": count([S, U2, A2, U3])},
        [S, U2, A2, U3],
    ),
    (
        "tokens keep all that fit",
        [S, U1, A1, U2],
        {"max_tokens": count([S, U1, A1, U2])},
        [S, U1, A1, U2],
    ),
    (
        "limits combine",
        [U1, A1, U2, A2, U3, A3],
        {"max_turns": 3, "max_messages": 4},
        [U2, A2, U3, A3],
    ),
    # ---- repair
    ("orphan tool at start", [S, tool("zz"), U1, A1], {}, [S, U1, A1]),
    ("orphan tool mid", [U1, A1, tool("zz"), U2], {}, [U1, A1, U2]),
    ("unknown id after group", [U1, CALL, R1, tool("zz"), R2, A1], {}, [U1, CALL, R1, R2, A1]),
    ("duplicate result dropped", [U1, CALL, R1, R2, tool("c1"), A1], {}, [U1, CALL, R1, R2, A1]),
    ("incomplete calls dropped", [U1, CALL, R1, U2], {}, [U1, U2]),
    ("calls with no results dropped", [U1, A1, U2, CALL], {}, [U1, A1, U2]),
    (
        "incomplete calls with text kept",
        [U1, calls("c1", "c2", content="hm"), R2, A1],
        {},
        [U1, asst("hm"), A1],
    ),
    ("blank text is not content", [U1, calls("c1", content="  "), U2], {}, [U1, U2]),
    (
        "results must follow directly",
        [U1, calls("c1"), system("x"), tool("c1"), A1],
        {},
        [U1, system("x"), A1],
    ),
    ("empty tool_calls removed", [U1, {**asst("a"), "tool_calls": []}], {}, [U1, asst("a")]),
    (
        "call without id dropped",
        [U1, {**CALL, "tool_calls": [{"type": "function"}]}, U2],
        {},
        [U1, U2],
    ),
    ("repair before limits", [U1, A1, U2, CALL, R1], {"max_turns": 1}, [U2]),
]


@pytest.mark.parametrize(
    ("messages", "kwargs", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_table(messages: list[Msg], kwargs: dict[str, Any], expected: list[Msg]) -> None:
    before = copy.deepcopy(messages)
    result = trim_history(messages, count_tokens=count, **kwargs)
    assert result == expected
    assert messages == before  # input not mutated
    assert all(r is not m for r in result for m in messages)  # fresh dicts


def test_context_too_long() -> None:
    history = [S, U1, A1, LONG]
    with pytest.raises(ContextTooLongError) as info:
        trim_history(history, max_tokens=50, count_tokens=count)
    assert info.value.needed == count([S, LONG])
    assert info.value.budget == 50


def test_context_too_long_for_system_alone() -> None:
    with pytest.raises(ContextTooLongError):
        trim_history([system("x" * 400)], max_tokens=10, count_tokens=count)


def test_input_not_mutated_by_repair() -> None:
    bad = calls("c1", "c2", content="thinking")
    history = [U1, bad, tool("c1"), tool("orphan")]
    before = copy.deepcopy(history)
    result = trim_history(history, max_tokens=1000, count_tokens=count)
    assert history == before
    assert "tool_calls" in bad
    result[1]["content"] = "changed"
    assert bad["content"] == "thinking"


def test_verify_step_drops_more_for_non_additive_counter() -> None:
    history = [S] + [m for i in range(6) for m in (user(f"q{i}"), asst(f"a{i}"))]
    budget = count(history)  # fits for an additive counter, not with the penalty
    result = trim_history(history, max_tokens=budget, count_tokens=lumpy_count)
    assert result == [S, *history[-6:]]  # [S] + 4 turns is 9 messages: still penalised
    assert lumpy_count(result) <= budget


def test_negative_limit_rejected() -> None:
    with pytest.raises(ValueError, match="max_turns"):
        trim_history([U1], max_turns=-1)


def test_default_counter_imported_lazily(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.ModuleType("bot.llm.tokens")
    fake.default_count_tokens = lambda msgs: 10 * len(msgs)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "bot.llm.tokens", fake)
    assert trim_history([S, U1, A1, U2], max_tokens=25) == [S, U2]


def test_no_counter_needed_without_max_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "bot.llm.tokens", None)  # importing it would fail
    assert trim_history([S, U1, A1, U2], max_turns=1) == [S, U2]


def test_counts_each_turn_once() -> None:
    history = [S] + [m for i in range(300) for m in (user(f"q{i}"), asst(f"a{i}"))]
    calls_made: list[int] = []

    def counting(messages: list[Msg]) -> int:
        calls_made.append(len(messages))
        return count(messages)

    result = trim_history(history, max_tokens=count(history) // 2, count_tokens=counting)
    assert count(result) <= count(history) // 2
    # system block, [], every examined turn once, one verification of the final list.
    assert len(calls_made) <= 300 + 3
    assert sum(calls_made) <= 3 * len(history)


def test_a_history_that_fits_is_counted_once() -> None:
    history = [S] + [m for i in range(50) for m in (user(f"q{i}"), asst(f"a{i}"))]
    calls_made: list[int] = []

    def counting(messages: list[Msg]) -> int:
        calls_made.append(len(messages))
        return count(messages)

    assert trim_history(history, max_tokens=count(history), count_tokens=counting) == history
    assert calls_made == [len(history)]


# --------------------------------------------------------------------------- properties

_text = st.text(alphabet="ab ", max_size=120)


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[Msg], list[list[Msg]]]:
    """A well-formed history, returned as (leading system block, turns)."""
    lead = draw(
        st.lists(
            st.builds(
                lambda r, c: {"role": r, "content": c},
                st.sampled_from(["system", "developer"]),
                _text,
            ),
            max_size=3,
        )
    )
    turns: list[list[Msg]] = []
    for t in range(draw(st.integers(0, 10))):
        turn = [user(draw(_text))]
        kind = draw(st.sampled_from(["unanswered", "answer", "tools", "tools+answer"]))
        if kind.startswith("tools"):
            ids = [f"call_{t}_{k}" for k in range(draw(st.integers(1, 3)))]
            turn.append(calls(*ids))
            turn += [tool(i, draw(_text)) for i in ids]
        if kind != "unanswered" and kind != "tools":
            turn.append(asst(draw(_text)))
        if draw(st.integers(0, 9)) == 0:
            turn.append(system(draw(_text)))
        turns.append(turn)
    return lead, turns


def _non_system(turns: list[list[Msg]]) -> int:
    return sum(1 for turn in turns for m in turn if m["role"] not in ("system", "developer"))


def _assert_tool_groups_intact(result: list[Msg]) -> None:
    open_ids: set[str] = set()
    for m in result:
        if m["role"] == "tool":
            assert m["tool_call_id"] in open_ids
            open_ids.discard(m["tool_call_id"])
            continue
        assert not open_ids, "tool_calls left unanswered"
        if m.get("tool_calls"):
            open_ids = {c["id"] for c in m["tool_calls"]}
    assert not open_ids


Limits = tuple[float | None, int | None, int | None]


def _check(counter: Counter, data: tuple[list[Msg], list[list[Msg]]], limits: Limits) -> None:
    lead, turns = data
    history = lead + [m for turn in turns for m in turn]
    before = copy.deepcopy(history)
    # The token budget is drawn as a fraction of the whole history's count, so it binds often.
    fraction, max_turns, max_messages = limits
    max_tokens = None if fraction is None else int(fraction * counter(history))
    kwargs = {"max_tokens": max_tokens, "max_turns": max_turns, "max_messages": max_messages}
    newest = lead + (turns[-1] if turns else [])
    if max_tokens is not None and counter(newest) > max_tokens:
        with pytest.raises(ContextTooLongError) as info:
            trim_history(history, count_tokens=counter, **kwargs)
        assert info.value.needed == counter(newest)
        assert info.value.budget == max_tokens
        return
    result = trim_history(history, count_tokens=counter, **kwargs)
    assert history == before
    assert result[: len(lead)] == lead
    tail = result[len(lead) :]
    suffixes = [[m for t in turns[len(turns) - k :] for m in t] for k in range(len(turns) + 1)]
    assert tail in suffixes, "result is not system block + a suffix of whole turns"
    k = suffixes.index(tail)
    assert k >= (1 if turns else 0)  # newest turn, with the last user message, always kept
    _assert_tool_groups_intact(result)
    if max_tokens is not None:
        assert counter(result) <= max_tokens
    if max_turns is not None:
        assert k <= max(max_turns, 1)
    if max_messages is not None and k > 1:
        assert _non_system(turns[len(turns) - k :]) <= max_messages
    if k < len(turns) and counter is count:  # exact counter: no turn dropped needlessly
        bigger = turns[len(turns) - k - 1 :]
        assert (
            (max_turns is not None and k + 1 > max_turns)
            or (max_messages is not None and _non_system(bigger) > max_messages)
            or (max_tokens is not None and count(lead + suffixes[k + 1]) > max_tokens)
        )
    if limits == (None, None, None):
        assert result == history


_limits = st.tuples(
    st.none() | st.floats(0, 1.2),
    st.none() | st.integers(0, 10),
    st.none() | st.integers(0, 40),
)
_settings = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_settings
@given(histories(), _limits)
def test_property_additive_counter(data: tuple[list[Msg], list[list[Msg]]], limits: Limits) -> None:
    _check(count, data, limits)


@_settings
@given(histories(), _limits)
def test_property_non_additive_counter(
    data: tuple[list[Msg], list[list[Msg]]], limits: Limits
) -> None:
    _check(lumpy_count, data, limits)
