"""Fallback endpoints carry their own context window: a smaller one gets a request that fits it."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest

from bot.config import LLMSettings
from bot.errors import LLMUnavailableError
from bot.llm.tokens import get_counter
from bot.testing.fake_llm import FakeLLM, error
from tests.conftest import AppFactory, private

SMALL_MODEL = "local-small-4k"  # not an OpenAI name: counted with the approximating tokenizer
LONG = " ".join(f"lorem{n % 7} ipsum" for n in range(180))  # a few hundred tokens


def _primary_gives_up(fake_llm: FakeLLM) -> None:
    fake_llm.script(*[error(503)] * 4)  # every attempt of the retry layer


async def _chat_history(app: Any, turns: int) -> None:
    for turn in range(turns):
        await app.service.chat(private(), f"turn {turn}: {LONG}")


async def test_a_smaller_fallback_gets_the_newest_whole_turns_that_fit_its_window(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with FakeLLM(model_context_window=4000) as small:
        fallback = {
            "base_url": small.base_url,
            "model": SMALL_MODEL,
            "context_window": 4000,
            "max_output_tokens": 500,
        }
        async with make_app(llm={"fallbacks": [fallback]}) as app:
            await _chat_history(app, 8)
            _primary_gives_up(fake_llm)
            answer = await app.service.chat(private(), "the newest question")
        assert answer.text == "echo: the newest question"

    full = fake_llm.chat_requests[-1].json["messages"]  # what the primary was sent (and refused)
    counter = get_counter(SMALL_MODEL)
    assert counter.count_messages(full) > 4000  # so the primary's request would not fit
    [received] = small.chat_requests
    sent = received.json
    messages = sent["messages"]
    assert sent["max_tokens"] == 500  # its own reserve, not the primary's 1024
    assert counter.count_messages(messages) + 500 <= 4000
    assert messages[0] == full[0] and messages[0]["role"] == "system"
    assert messages[-1] == {"role": "user", "content": "the newest question"}
    kept = messages[1:]
    assert len(kept) < len(full) - 1
    assert kept == full[len(full) - len(kept) :]  # the newest messages, in order...
    assert kept[0]["role"] == "user"  # ...starting at a turn: whole turns only
    one_more = [full[0], *full[len(full) - len(kept) - 2 :]]  # the next older turn back in
    assert one_more[1]["role"] == "user"
    assert counter.count_messages(one_more) + 500 > 4000  # it was dropped because it did not fit


async def test_a_fallback_with_the_primarys_window_gets_the_full_request(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with FakeLLM() as backup:
        fallback = {"base_url": backup.base_url, "model": SMALL_MODEL}
        async with make_app(llm={"fallbacks": [fallback]}) as app:
            await _chat_history(app, 8)
            _primary_gives_up(fake_llm)
            await app.service.chat(private(), "the newest question")
        [received] = backup.chat_requests
    full = fake_llm.chat_requests[-1].json
    assert received.json["messages"] == full["messages"]
    assert received.json["max_tokens"] == full["max_tokens"] == 1024


async def test_a_fallback_too_small_for_the_newest_message_is_never_sent_it(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with FakeLLM(model_context_window=300) as tiny:
        fallback = {
            "base_url": tiny.base_url,
            "model": SMALL_MODEL,
            "context_window": 300,
            "max_output_tokens": 100,
        }
        async with make_app(llm={"fallbacks": [fallback]}) as app:
            _primary_gives_up(fake_llm)
            with pytest.raises(LLMUnavailableError):  # the primary's failure, as without it
                await app.service.chat(private(), LONG)
        assert tiny.chat_requests == []


async def test_a_fallbacks_usage_does_not_calibrate_the_primarys_token_counter(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    primary = "local-primary-calibrated"  # an estimating counter, calibrated from usage
    async with FakeLLM(model_context_window=4000) as small:
        fallback = {"base_url": small.base_url, "model": SMALL_MODEL, "context_window": 4000}
        async with make_app(llm={"model": primary, "fallbacks": [fallback]}) as app:
            await _chat_history(app, 8)  # past the counter's warm-up; the fake agrees with it
            assert get_counter(primary).ratio == 1.0
            _primary_gives_up(fake_llm)
            await app.service.chat(private(), "the newest question")
        assert len(small.chat_requests) == 1  # re-trimmed: it reports far fewer prompt tokens
    assert get_counter(primary).ratio == 1.0


def test_a_fallback_inherits_the_primarys_limits_and_its_reserve_must_fit_its_window() -> None:
    llm = LLMSettings(
        context_window=32_000,
        max_output_tokens=2000,
        fallbacks=[{"model": "a"}, {"model": "b", "context_window": 8192}],
    )
    assert [llm.limits_of(each) for each in (llm, *llm.fallbacks)] == [
        (32_000, 2000),
        (32_000, 2000),
        (8192, 2000),
    ]
    with pytest.raises(pydantic.ValidationError, match=r"fallbacks\[0\]: max_output_tokens"):
        LLMSettings(fallbacks=[{"model": "a", "context_window": 1024}])  # the primary's 1024
