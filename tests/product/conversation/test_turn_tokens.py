"""``TurnTokens``: a window's stored turns are counted once, not on every message, and the prompt
built from those counts is the one built by counting it whole."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

import pytest

from bot.llm.tokens import TokenCounter
from bot.prompt.assembly import PromptLimits, TurnTokens, build_prompt, history_cost
from bot.values import Overheard, StoredTurn, TurnStatus


class CountingCounter(TokenCounter):
    def __init__(self, model: str) -> None:
        super().__init__(model)
        self.counted: list[Mapping[str, Any]] = []

    def count_message(self, message: Mapping[str, Any]) -> int:
        self.counted.append(message)
        return super().count_message(message)


def calibrated(model: str) -> CountingCounter:
    """A counter for a model it can only estimate, calibrated to a provider that counts more:
    its scaling rounds up, so counts of parts do not add up to the count of the whole."""
    counter = CountingCounter(model)
    for _ in range(5):
        counter.observe(1000, 1370)
    return counter


def window(n: int) -> list[StoredTurn]:
    turns = []
    for i in range(n):
        answer: tuple[dict[str, Any], ...] = ({"role": "assistant", "content": f"answer {i} " * i},)
        if i % 5 == 3:
            call = {"id": f"c{i}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            answer = (
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": f"c{i}", "content": "result " * i},
                *answer,
            )
        status = TurnStatus.CONTEXT if i % 7 == 6 else TurnStatus.ANSWERED
        user = {"role": "user", "content": f"question {i} " * (i % 9)}
        turns.append(StoredTurn(i + 1, f"u{i % 3}", f"User {i % 3}", status, (user, *answer)))
    return turns


COUNTERS = [lambda: CountingCounter("gpt-4o"), lambda: calibrated("local-llama")]


@pytest.mark.parametrize("make", COUNTERS)
@pytest.mark.parametrize("shared", [False, True])
def test_priced_like_history_cost_and_each_turn_counted_once(make: Any, shared: bool) -> None:
    counter = make()
    tokens = TurnTokens(counter)
    turns = window(40)
    assert tokens.cost(tokens.price(turns, shared)) == history_cost(turns, shared, counter)
    counter.counted.clear()
    tokens.price(turns, shared)  # the next message: the same turns
    assert counter.counted == []
    answered = dataclasses.replace(turns[-1], messages=turns[-1].messages[:1])
    newer = [*turns[1:-1], answered]  # the window moved on; a turn changed (a new object)
    priced = tokens.price(newer, shared)
    assert len(counter.counted) == 1  # only the changed turn, whose one message is new
    assert tokens.cost(priced) == history_cost(newer, shared, counter)


def test_forgets_beyond_its_limit() -> None:
    counter = CountingCounter("gpt-4o")
    tokens = TurnTokens(counter, limit=10)
    turns = window(30)
    tokens.price(turns, False)
    counter.counted.clear()
    tokens.price(turns[-5:], False)  # the newest are still known
    assert counter.counted == []
    tokens.price(turns[:5], False)  # the oldest were forgotten
    assert counter.counted


@pytest.mark.parametrize("make", COUNTERS)
def test_the_prompt_is_the_same_priced_or_counted(make: Any) -> None:
    counter = make()
    tokens = TurnTokens(counter)
    history = tuple(window(30))
    heard = [Overheard(99, "u7", "Zed", "psst " * 20, 0.0)]
    parts: dict[str, Any] = {
        "system_prompt": "be kind",
        "summary": "earlier: tea",
        "history": history,
        "overheard": heard,
        "recalled": ["a fact"],
        "text": "and now?",
        "speaker": "Ann",
        "shared": True,
        "tools": [],
        "counter": counter,
    }
    whole = build_prompt(**parts, limits=PromptLimits(10**6, 100))
    needed = counter.count_messages(whole.messages) + 100
    for window_size in range(needed - 40, needed + 5):  # around the edge of fitting whole
        limits = PromptLimits(window_size, 100)
        counted = build_prompt(**parts, limits=limits)
        priced = build_prompt(**parts, limits=limits, priced=tokens.price(history, True))
        assert priced == counted
        assert counter.count_messages(priced.window) <= priced.budget


def test_tool_definitions_are_counted_once_per_list() -> None:
    from bot.prompt.assembly import tools_cost

    class CountingText(TokenCounter):
        texts = 0

        def count_text(self, text: str) -> int:
            self.texts += 1
            return super().count_text(text)

    counter = CountingText("gpt-4o")
    dice = {"type": "function", "function": {"name": "roll", "parameters": {"type": "object"}}}
    clock = {"type": "function", "function": {"name": "now", "parameters": {"type": "object"}}}
    expected = counter.count_text(json.dumps([dice, clock]))
    counter.texts = 0
    assert tools_cost([dice, clock], counter) == expected
    assert tools_cost([dice, clock], counter) == expected  # a new list of the same definitions
    assert counter.texts == 1
    rebuilt = {"type": "function", "function": {"name": "now!", "parameters": {"type": "object"}}}
    assert tools_cost([dice, rebuilt], counter) == counter.count_text(json.dumps([dice, rebuilt]))
    assert tools_cost([clock, dice], counter) == counter.count_text(json.dumps([clock, dice]))
