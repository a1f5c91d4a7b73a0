"""Per-user limits and the circuit breaker hold across replicas: two Apps, each with its own store
instance, on one PostgreSQL schema, with one user's messages spread over both."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from bot.app import App
from bot.errors import LLMBadRequestError, LLMUnavailableError, UserFacingError
from bot.guardrails.rate_limit import RateLimitedError, StillAnsweringError
from bot.testing.fake_llm import FakeLLM, error, hang, reply
from bot.values import BreakerState
from tests import postgres_support
from tests.conftest import Sleeps, group, make_settings

pytestmark = pytest.mark.skipif(
    postgres_support.pg_base_url() is None, reason=postgres_support.HOW_TO_RUN
)

Replicas = Callable[..., AbstractAsyncContextManager[tuple[App, App]]]


@pytest.fixture
def replicas(fake_llm: FakeLLM, tmp_path: Path, sleeps: Sleeps) -> Replicas:
    @asynccontextmanager
    async def two(**sections: Any) -> AsyncIterator[tuple[App, App]]:
        url = postgres_support.fresh_pg_url()
        sections.setdefault("memory", {"enabled": False})  # a user's flood, not its memories
        async with AsyncExitStack() as stack:
            apps = []
            for name in ("a", "b"):  # two processes, each with its own local files
                storage = {"url": url, "jobs_path": str(tmp_path / f"{name}.jobs.sqlite")}
                settings = make_settings(fake_llm, tmp_path, storage=storage, **sections)
                apps.append(await stack.enter_async_context(App(settings, retry_sleep=sleeps)))
            first, second = apps
            assert first.store is not second.store and first.store.replicas
            yield first, second

    return two


async def asked(fake: FakeLLM) -> None:
    """Until a chat request has reached the fake model (it records each on arrival)."""
    async with asyncio.timeout(10):
        while not fake.chat_requests:  # noqa: ASYNC110 (the fake model has no change event)
            await asyncio.sleep(0.01)


async def test_a_flood_spread_over_two_replicas_costs_the_burst_and_one_notice(
    replicas: Replicas, fake_llm: FakeLLM
) -> None:
    limits = {"messages_per_minute": 1, "burst": 3}
    async with replicas(limits=limits) as apps:
        results = await asyncio.gather(
            *(apps[n % 2].service.chat(group("7", "Spammer"), f"spam {n}") for n in range(24)),
            return_exceptions=True,
        )
        stored = (await apps[0].store.stats("telegram:-100")).turns_stored
        bob = await apps[1].service.chat(group("8", "Bob"), "hello?")  # others still answered
    refusals = [r for r in results if isinstance(r, RateLimitedError)]
    assert len(fake_llm.chat_requests) == 4  # the burst of 3 (the rate adds none), and Bob
    assert len(refusals) == 21 and len(results) == 24
    assert sum(r.notify for r in refusals) == 1  # told once, by whichever replica refused first
    told = next(r for r in refusals if r.notify)
    assert "the limit is 1 a minute" in told.chat_text
    assert stored == 3  # nothing refused is stored
    assert bob.text == "echo: [Bob] hello?"


async def test_daily_budgets_count_what_every_replica_spent(
    replicas: Replicas, fake_llm: FakeLLM
) -> None:
    usage = {"prompt_tokens": 60, "completion_tokens": 40, "total_tokens": 100}
    fake_llm.script(*(reply("ok", usage=usage) for _ in range(3)))
    limits = {"daily_tokens_total": 250, "daily_tokens_per_user": 150}
    async with replicas(limits=limits) as (a, b):
        await a.service.chat(group("1", chat="-100"), "hi")
        await b.service.chat(group("1", chat="-200"), "again")  # 100 of 150: still in
        with pytest.raises(UserFacingError) as mine:
            await a.service.chat(group("1", chat="-300"), "and again")
        assert "You have used today's budget" in mine.value.chat_text
        await a.service.chat(group("2", chat="-100"), "hello")  # 200 of 250: still in
        with pytest.raises(UserFacingError) as everyone:
            await b.service.chat(group("3", chat="-400"), "me too?")
        assert "today's budget for everyone" in everyone.value.chat_text
    assert len(fake_llm.chat_requests) == 3


async def test_one_request_in_flight_holds_across_replicas(
    replicas: Replicas, fake_llm: FakeLLM
) -> None:
    fake_llm.latency = 0.5
    async with replicas(limits={"one_in_flight": True, "max_queued": 0}) as (a, b):
        first = asyncio.ensure_future(a.service.chat(group("1", "Alice"), "first"))
        await asked(fake_llm)  # A is asking the model
        with pytest.raises(StillAnsweringError) as busy:
            await b.service.chat(group("1", "Alice"), "second")
        assert busy.value.notify and "still answering" in busy.value.chat_text
        with pytest.raises(StillAnsweringError) as again:
            await a.service.chat(group("1", "Alice"), "third")
        assert not again.value.notify  # said once
        assert (await b.service.chat(group("2", "Bob"), "bob")).text == "echo: [Bob] bob"
        assert (await first).text == "echo: [Alice] first"
        assert (await b.service.chat(group("1", "Alice"), "fourth")).text.endswith("fourth")
        assert (await a.store.stats("telegram:-100")).turns_stored == 3


async def test_a_cancelled_or_failed_request_gives_its_flight_back(
    replicas: Replicas, fake_llm: FakeLLM
) -> None:
    fake_llm.script(hang(), error(400))
    async with replicas(limits={"one_in_flight": True}) as (a, b):
        stuck = asyncio.ensure_future(a.service.chat(group("1", "Alice"), "hangs"))
        await asked(fake_llm)
        stuck.cancel()  # the user's request is abandoned (adapter shutdown, timeout)
        with pytest.raises(asyncio.CancelledError):
            await stuck
        with pytest.raises(LLMBadRequestError):  # not StillAnsweringError: the flight is back
            await b.service.chat(group("1", "Alice"), "rejected")
        answered = await a.service.chat(group("1", "Alice"), "answered")
        assert answered.text == "echo: [Alice] answered"


async def test_a_breaker_opened_on_one_replica_fails_fast_on_the_other(
    replicas: Replicas, fake_llm: FakeLLM
) -> None:
    fake_llm.script(*[error(500)] * 4)
    async with replicas(llm={"circuit_breaker": 30}) as (a, b):
        with pytest.raises(LLMUnavailableError):
            await a.service.chat(group("1"), "is it down?")
        assert len(fake_llm.chat_requests) == 4  # A's retries
        with pytest.raises(LLMUnavailableError) as fast:
            await b.service.chat(group("2", "Bob", chat="-200"), "hello?")
        assert "failing fast" in str(fast.value)
        assert len(fake_llm.chat_requests) == 4  # B was told without a request...
        assert (await b.store.stats("telegram:-200")).turns_stored == 0  # ...or a stored turn
        await b.service.llm.endpoints[0].breaker.succeeded()  # as if B's probe came back
        assert (await a.service.chat(group("1"), "back?")).text == "echo: [Alice] back?"


async def test_a_closed_breaker_reads_the_shared_state_once_a_second(
    replicas: Replicas, fake_llm: FakeLLM
) -> None:
    """A burst of turns shares one read of the breaker per endpoint while it is closed; an
    endpoint another replica found down is skipped here from the next read on."""
    async with replicas(llm={"circuit_breaker": 30}) as (a, b):
        now = [100.0]
        breaker = b.service.llm.endpoints[0].breaker
        breaker.clock = lambda: now[0]
        reads: list[str] = []
        assert breaker.shared is not None
        state = breaker.shared.breaker_state

        async def counted(name: str) -> BreakerState:
            reads.append(name)
            return await state(name)

        breaker.shared = SimpleNamespace(breaker_state=counted)  # type: ignore[assignment]
        for n in range(3):
            answer = await b.service.chat(group(str(n + 1), chat=f"-{300 + n}"), "hi")
            assert answer.text.endswith("hi")
        assert len(reads) == 1  # three turns, one read
        fake_llm.script(*[error(500)] * 4)
        with pytest.raises(LLMUnavailableError):
            await a.service.chat(group("9"), "is it down?")  # A opens it for everyone
        now[0] += 1.5
        with pytest.raises(LLMUnavailableError, match="failing fast"):
            await b.service.chat(group("4", chat="-400"), "hello?")
        assert len(reads) == 2
        assert len(fake_llm.chat_requests) == 3 + 4  # B's three answers, A's retries


async def test_ambient_modes_hourly_cap_holds_across_replicas(replicas: Replicas) -> None:
    """Two replicas answer a chat's unaddressed messages (Telegram webhook mode spreads a
    chat's updates over them): ``ambient.max_per_hour`` counts both."""
    chats = [{"match": "telegram:-100", "ambient": True}]
    async with replicas(chats=chats, ambient={"max_per_hour": 2}) as (a, b):
        asked = "Parlour, what time is it?"
        names = ("Parlour",)
        assert await a.service.ambient(group("1", "Alice"), asked, names=names)
        assert await b.service.ambient(group("2", "Bob"), asked, names=names)
        assert not await a.service.ambient(group("3", "Cy"), "nice weather", names=names)
        # A's own count is 1 of 2 and the last message was not answered: only the shared
        # places say the hour is spent
        assert not await a.service.ambient(group("3", "Cy"), asked, names=names)
        assert a.service.ambient_mode.status(group()).limits.answers_this_hour == 1
