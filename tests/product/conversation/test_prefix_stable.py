"""The prompt's prefix across turns, as the fake LLM receives it: stable between cuts, cut in
steps, cached by the provider; and what left the window is still recalled."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from bot.errors import ContextTooLongError
from bot.prompt.safety import RECALLED_HEADER
from bot.testing.fake_llm import FakeLLM
from tests.conftest import AppFactory, group, private

TOPICS = ["the weather", "a recipe for bread", "train times", "a good book", "football scores"]
GROUP = {"plugins": ["plugins.memory", "plugins.clock"], "history": {"max_turns": 12}}


def wire(request: Any) -> tuple[list[str], str]:
    body: dict[str, Any] = request.json
    return [json.dumps(m, ensure_ascii=False) for m in body["messages"]], json.dumps(
        body.get("tools")
    )


def volatile(messages: list[str]) -> int:
    """How many messages at the end change every turn: the message alone. A recalled block of
    what everyone here may read is stored with its turn and comes back at the same place."""
    return 1


async def test_requests_extend_each_other_between_cuts(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with make_app(**GROUP) as app:
        bob, alice = group("2", "Bob"), group("1", "Alice")
        await app.service.chat(alice, "remember that the picnic is on Saturday at the lake")
        for n in range(40):
            if n % 3 == 0:
                await app.service.overhear(bob, f"side note {n}: I like {TOPICS[n % 5]}")
            said = f"@bot tell me about {TOPICS[n % 5]}, round {n}. " + "Details please. " * 20
            await app.service.chat(alice if n % 2 else bob, said)
        await app.service.chat(alice, "when is the picnic?")
    requests = [wire(r) for r in fake_llm.chat_requests]
    breaks = []
    for n in range(1, len(requests)):
        (before, tools_before), (after, tools) = requests[n - 1], requests[n]
        assert tools == tools_before  # the same definitions, in the same order and form
        stable = before[: len(before) - volatile(before)]
        if after[: len(stable)] != stable:
            breaks.append(n)
            assert after[0] == before[0]  # a cut moves the history, never the system prompt
            assert len(after) < len(before)
    # 12 turns at most, cut to 7 (0.65): a cut every 5 or 6 turns, not every turn
    assert 4 <= len(breaks) <= 9, breaks
    assert all(b - a >= 4 for a, b in itertools.pairwise(breaks)), breaks
    cached = sum(r.cached_tokens or 0 for r in fake_llm.chat_requests)
    prompt = sum(int(r.usage["prompt_tokens"]) for r in fake_llm.chat_requests if r.usage)
    assert cached / prompt > 0.6  # the fake's prefix cache reuses most of every prompt
    blocks = [m for m in requests[-1][0] if RECALLED_HEADER in m]  # from before the window,
    assert any("picnic is on Saturday" in m for m in blocks)  # now or earlier (kept with it)


async def test_a_fact_cut_by_the_token_budget_is_recalled(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    """The turn count (50) never reaches the fact: the token budget pushes it out, and recall
    searches from where the sent window begins, not from the oldest turn loaded."""
    small = {"llm": {"context_window": 2500, "max_output_tokens": 200}}
    async with make_app(plugins=["plugins.memory"], **small) as app:
        await app.service.chat(private(), "my name is Mei and I'm allergic to peanuts")
        for n in range(14):
            await app.service.chat(private(), f"tell me about {TOPICS[n % 5]} " + "ok " * 120)
        await app.service.chat(private(), "what am I allergic to?")
        stats = await app.store.stats(app.service.conversation_key(private()))
    assert 15 < stats.turns_in_context < 50  # everything is still within history.max_turns
    messages = fake_llm.chat_requests[-1].json["messages"]
    history = [str(m["content"]) for m in messages[:-2]]
    assert all("peanuts" not in m for m in history)  # not in the window any more ...
    assert RECALLED_HEADER in str(messages[-2]["content"])
    assert "allergic to peanuts" in str(messages[-2]["content"])  # ... but recalled


async def test_the_window_start_survives_a_restart(make_app: AppFactory, fake_llm: FakeLLM) -> None:
    """The start is stored: a restarted bot sends the same prefix, so the cache still holds."""
    config = {"history": {"max_turns": 6}}
    async with make_app(**config) as app:
        for n in range(9):
            await app.service.chat(private(), f"message {n}")
        mark = await app.store.load_window_mark(app.service.conversation_key(private()))
    assert mark is not None
    before = wire(fake_llm.chat_requests[-1])[0]
    async with make_app(**config) as app:
        await app.service.chat(private(), "after the restart")
    after = wire(fake_llm.chat_requests[-1])[0]
    assert after[: len(before) - 1] == before[:-1]


async def test_a_refused_long_message_leaves_the_window_where_it_was(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    """A message too long for the model is refused before anything moves: the next request
    still starts with the same history."""
    async with make_app(llm={"context_window": 2000, "max_output_tokens": 200}) as app:
        for n in range(4):
            await app.service.chat(private(), f"short message {n}")
        before = wire(fake_llm.chat_requests[-1])[0]
        with pytest.raises(ContextTooLongError):
            await app.service.chat(private(), "word " * 3000)
        assert await app.store.load_window_mark(app.service.conversation_key(private())) is None
        await app.service.chat(private(), "and now?")
    after = wire(fake_llm.chat_requests[-1])[0]
    assert after[: len(before) - 1] == before[:-1]
