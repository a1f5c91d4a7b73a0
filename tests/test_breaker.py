"""The circuit breaker: a provider that is down costs the next users nothing but the notice."""

from __future__ import annotations

import pytest

from bot.errors import LLMBusyError, LLMUnavailableError
from bot.llm.breaker import CircuitBreaker
from bot.testing.fake_llm import FakeLLM, error, rate_limited
from tests.conftest import AppFactory, group


def test_opens_after_a_failure_and_closes_after_the_cooldown() -> None:
    now = [0.0]
    breaker = CircuitBreaker(15, clock=lambda: now[0])
    breaker.check()
    breaker.failed()
    with pytest.raises(LLMUnavailableError) as fast:
        breaker.check()
    assert "failing fast" in str(fast.value)
    assert fast.value.chat_text == LLMUnavailableError.chat_text
    now[0] = 15.5
    breaker.check()  # half-open: the next call tries again
    breaker.failed()
    assert breaker.is_open
    breaker.succeeded()
    breaker.check()
    off = CircuitBreaker(0)
    off.failed()
    off.check()


async def test_users_after_an_outage_are_told_at_once(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.script(*[error(500)] * 4)
    async with make_app(llm={"circuit_breaker": 30}) as app:
        with pytest.raises(LLMUnavailableError):
            await app.service.chat(group("1"), "is it down?")
        assert len(fake_llm.chat_requests) == 4  # the retries
        with pytest.raises(LLMUnavailableError):
            await app.service.chat(group("2", "Bob", chat="-200"), "hello?")
        assert len(fake_llm.chat_requests) == 4  # told without a request
        app.service.llm.breaker.succeeded()  # as if the cooldown passed and a probe came back
        await app.service.chat(group("2", "Bob", chat="-200"), "back?")


async def test_busy_is_not_down(make_app: AppFactory, fake_llm: FakeLLM) -> None:
    fake_llm.script(*[rate_limited(retry_after=0.01)] * 10)
    async with make_app(llm={"circuit_breaker": 30}) as app:
        with pytest.raises(LLMBusyError):
            await app.service.chat(group("1"), "first")
        await app.service.chat(group("1"), "second")  # a 429 storm does not open it
