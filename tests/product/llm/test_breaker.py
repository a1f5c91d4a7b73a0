"""The circuit breaker: an endpoint that is down is skipped, and users are told at once."""

from __future__ import annotations

import time

import pytest

from bot.errors import LLMBusyError, LLMUnavailableError
from bot.llm.breaker import CircuitBreaker
from bot.testing.fake_llm import FakeLLM, error, hang, rate_limited
from tests.conftest import AppFactory, group


async def test_opens_after_a_failure_and_lets_one_probe_through_after_the_cooldown() -> None:
    now = [0.0]
    breaker = CircuitBreaker(15, "primary", clock=lambda: now[0])
    with breaker.attempt():
        await breaker.failed()
    with pytest.raises(LLMUnavailableError) as fast, breaker.attempt():
        pass
    assert "primary: down, failing fast" in str(fast.value)
    assert fast.value.chat_text == LLMUnavailableError.chat_text
    now[0] = 15.5
    with breaker.attempt():  # the probe...
        assert not breaker.admits()  # ...while it runs, everyone else is still told
        await breaker.failed()
    assert breaker.is_open
    now[0] = 31
    with breaker.attempt():
        await breaker.succeeded()
    assert breaker.admits()
    off = CircuitBreaker(0)
    await off.failed()
    assert off.admits()


async def test_users_after_an_outage_are_told_at_once_and_nothing_is_stored(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.script(*[error(500)] * 4)
    async with make_app(llm={"circuit_breaker": 30}) as app:
        with pytest.raises(LLMUnavailableError):
            await app.service.chat(group("1"), "is it down?")
        assert len(fake_llm.chat_requests) == 4  # the retries
        with pytest.raises(LLMUnavailableError) as fast:
            await app.service.chat(group("2", "Bob", chat="-200"), "hello?")
        assert "failing fast" in str(fast.value)
        assert len(fake_llm.chat_requests) == 4  # told without a request...
        assert (await app.store.stats("telegram:-200")).turns_stored == 0  # ...or a stored turn
        await app.service.llm.endpoints[0].breaker.succeeded()  # as if a probe came back
        await app.service.chat(group("2", "Bob", chat="-200"), "back?")


async def test_a_hanging_primary_leaves_time_for_the_fallback(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.script(*[hang()] * 8)
    async with FakeLLM() as backup:
        llm = {
            "timeout": 30,
            "deadline": 1.0,
            "circuit_breaker": 30,
            "fallbacks": [{"base_url": backup.base_url, "model": "gpt-4o-mini"}],
        }
        async with make_app(llm=llm) as app:
            started = time.monotonic()
            first = await app.service.chat(group("1"), "anyone?")
            assert time.monotonic() - started < 3  # half the deadline on the primary, then on
            assert first.text == "echo: [Alice] anyone?"
            await app.service.chat(group("1"), "again")  # the primary is skipped: no wait
        assert len(backup.chat_requests) == 2
        assert len(fake_llm.chat_requests) == 1


async def test_busy_is_not_down(make_app: AppFactory, fake_llm: FakeLLM) -> None:
    fake_llm.script(*[rate_limited(retry_after=0.01)] * 10)
    async with make_app(llm={"circuit_breaker": 30}) as app:
        with pytest.raises(LLMBusyError):
            await app.service.chat(group("1"), "first")
        await app.service.chat(group("1"), "second")  # a 429 storm does not open it
