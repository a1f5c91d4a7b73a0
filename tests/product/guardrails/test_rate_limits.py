"""Per-user message limits: the token bucket, one request in flight, and the flood drill."""

from __future__ import annotations

import asyncio
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.context import ChatContext, ChatType
from bot.errors import LLMUnavailableError
from bot.guardrails.rate_limit import (
    InFlight,
    MessageRateLimiter,
    RateLimitedError,
    StillAnsweringError,
)
from bot.testing.fake_llm import FakeLLM, hang
from bot.testing.fake_telegram import FakeTelegram
from tests.conftest import AppFactory, group, private
from tests.telegram_harness import running_bot


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_bucket_allows_a_burst_then_the_rate_and_says_so_once() -> None:
    clock = Clock()
    limiter = MessageRateLimiter(6, burst=3, clock=clock)  # one message per 10 s
    for _ in range(3):
        limiter.take("a")
    with pytest.raises(RateLimitedError) as first:
        limiter.take("a")
    assert first.value.notify and first.value.retry_after == 10
    assert "6 a minute" in first.value.chat_text
    with pytest.raises(RateLimitedError) as second:
        limiter.take("a")
    assert not second.value.notify  # the flood's repeats are quiet
    limiter.take("b")  # someone else is not affected
    clock.now += 10
    limiter.take("a")  # refilled one
    clock.now += 1
    with pytest.raises(RateLimitedError) as again:
        limiter.take("a")
    assert again.value.notify  # a new burst is told again


def test_bucket_off_and_memory_bounded() -> None:
    off = MessageRateLimiter(None, burst=1)
    for _ in range(100):
        off.take("a")
    clock = Clock()
    limiter = MessageRateLimiter(60, burst=2, clock=clock)
    for i in range(5000):
        limiter.take(f"user{i}")
        clock.now += 0.01
    clock.now += 10  # everyone has refilled: the next sweep drops them
    for i in range(2048):
        limiter.take(f"later{i}")
    assert len(limiter) < 3000


@settings(max_examples=200, deadline=None)
@given(
    per_minute=st.integers(1, 120),
    burst=st.integers(1, 10),
    gaps=st.lists(st.floats(0, 30, allow_nan=False), min_size=1, max_size=200),
)
def test_bucket_never_lets_more_through_than_burst_plus_rate(
    per_minute: int, burst: int, gaps: list[float]
) -> None:
    clock = Clock()
    limiter = MessageRateLimiter(per_minute, burst=burst, clock=clock)
    start = clock.now
    allowed = 0
    for gap in gaps:
        clock.now += gap
        try:
            limiter.take("k")
            allowed += 1
        except RateLimitedError:
            pass
    assert allowed <= burst + (clock.now - start) * per_minute / 60 + 1e-9
    if all(g >= 60 / per_minute for g in gaps):
        assert allowed == len(gaps)  # a user at the rate is never refused


def test_in_flight_refuses_the_same_key_and_tells_once() -> None:
    flight = InFlight(True)
    with flight.hold("a"):
        with pytest.raises(StillAnsweringError) as first, flight.hold("a"):
            pass
        assert first.value.notify
        with pytest.raises(StillAnsweringError) as second, flight.hold("a"):
            pass
        assert not second.value.notify
        with flight.hold("b"):
            pass
    with flight.hold("a"):
        assert "a" in flight
    assert "a" not in flight


def test_in_flight_lets_max_queued_wait_behind_the_answer() -> None:
    flight = InFlight(True, max_queued=2)
    with flight.hold("a"), flight.hold("a"), flight.hold("a"):  # the answer and two waiting
        with pytest.raises(StillAnsweringError) as full, flight.hold("a"):
            pass
        assert full.value.notify
    with flight.hold("a"), flight.hold("a"):  # all gone: room again
        pass
    assert "a" not in flight


async def test_a_message_sent_while_answered_waits_and_is_answered_next(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.latency = 0.5
    async with make_app(limits={"one_in_flight": True, "max_queued": 1}) as app:
        alice = group("1", "Alice")
        first = asyncio.ensure_future(app.service.chat(alice, "first"))
        await asyncio.sleep(0.05)
        second = asyncio.ensure_future(app.service.chat(alice, "second"))
        await asyncio.sleep(0.05)
        with pytest.raises(StillAnsweringError) as full:  # one waits already: the limit
            await app.service.chat(alice, "third")
        assert "still answering your earlier messages" in full.value.chat_text
        assert (await first).text == "echo: [Alice] first"
        assert (await second).text == "echo: [Alice] second"  # after the first, not refused
        assert (await app.store.stats("telegram:-100")).turns_stored == 2


async def test_one_request_in_flight_per_user_per_conversation(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.latency = 0.5
    async with make_app(limits={"one_in_flight": True, "max_queued": 0}) as app:
        first = asyncio.ensure_future(app.service.chat(group("1", "Alice"), "first"))
        await asyncio.sleep(0.05)
        with pytest.raises(StillAnsweringError) as busy:
            await app.service.chat(group("1", "Alice"), "second")
        assert "still answering your earlier messages" in busy.value.chat_text
        bob = asyncio.ensure_future(app.service.chat(group("2", "Bob"), "bob here"))
        elsewhere = asyncio.ensure_future(app.service.chat(private("1"), "in private"))
        assert (await first).text == "echo: [Alice] first"
        await asyncio.gather(bob, elsewhere)  # other users, other conversations: not refused
        await app.service.chat(group("1", "Alice"), "third")  # done: accepted again
        assert (await app.store.stats("telegram:-100")).turns_stored == 3  # "second" not stored


async def test_a_failed_turn_frees_the_user(make_app: AppFactory, fake_llm: FakeLLM) -> None:
    fake_llm.script(hang())
    limits = {"one_in_flight": True}
    # The deadline ends the hanging call; the next one must fit in it on a loaded machine too.
    async with make_app(limits=limits, llm={"deadline": 3.0}) as app:
        with pytest.raises(LLMUnavailableError):
            await app.service.chat(group(), "lost")
        await app.service.chat(group(), "again")


async def test_bot_admins_are_not_limited(make_app: AppFactory) -> None:
    limits = {"messages_per_minute": 1, "burst": 1, "one_in_flight": True}
    async with make_app(limits=limits, admins=["telegram:1"]) as app:
        for n in range(3):
            await app.service.chat(group("1"), f"admin {n}")
        await app.service.chat(group("2", "Bob"), "bob once")
        with pytest.raises(RateLimitedError):
            await app.service.chat(group("2", "Bob"), "bob twice")
        assert (await app.store.stats("telegram:-100")).turns_stored == 4


async def test_llm_deadline_bounds_a_hanging_provider(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.script(hang())
    async with make_app(llm={"deadline": 0.5}) as app:
        started = time.monotonic()
        with pytest.raises(LLMUnavailableError) as down:
            await app.service.chat(group(), "anyone there?")
        waited = time.monotonic() - started
    assert "llm.deadline" in str(down.value)
    assert down.value.chat_text == LLMUnavailableError.chat_text
    assert waited < 5  # bounded by the deadline, not by llm.timeout (60 s)


async def test_limits_max_output_tokens_caps_each_request(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with make_app(limits={"max_output_tokens": 200}) as app:
        await app.service.chat(group(), "hi")
    assert fake_llm.chat_requests[-1].json["max_tokens"] == 200


@pytest.mark.slow
async def test_a_thousand_messages_from_one_user_stay_within_the_limit(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    """The flood drill: LLM calls stay within the bucket, the flooder is told (once per kind),
    other people in the group are still answered, and nothing refused is stored."""
    tg = fake_telegram
    fake_llm.latency = 0.2
    spammer, bob = tg.user(7, "Spammer"), tg.user(8, "Bob")
    chat = tg.group(-100, "Team", supergroup=True)
    limits = {"messages_per_minute": 6, "burst": 3, "one_in_flight": True, "max_queued": 1}
    async with running_bot(make_app, tg, limits=limits) as (app, _adapter):
        for n in range(1000):
            tg.send(chat, spammer, f"@parlour_bot spam {n}")
        tg.send(chat, bob, "@parlour_bot hello, is the bot still with us?")
        await tg.wait_until(lambda: len(fake_llm.chat_requests) >= 2, timeout=30)
        await tg.wait_idle(quiet=1.0)
        texts = [m["text"] for m in tg.messages(chat["id"])]
        stats = await app.store.stats("telegram:-100")
    calls = fake_llm.chat_requests
    spam_calls = [r for r in calls if "spam" in str(r.json["messages"][-1]["content"])]
    assert 1 <= len(spam_calls) <= 3  # the burst, at most; the rate adds none in this time
    assert any("hello, is the bot still with us?" in t for t in texts)  # Bob is answered
    assert sum("still answering your earlier messages" in t for t in texts) == 1
    assert sum("faster than I can answer" in t for t in texts) == 1
    assert len(texts) == len(calls) + 2  # answers, plus one notice of each kind: no spam back
    assert stats.turns_stored == len(calls)  # refused messages are not stored
    typing = [c for c in tg.calls if c.method == "sendChatAction"]
    assert len(typing) <= len(calls) * 3  # refusals cost no API calls


async def test_a_refused_message_costs_no_typing_call(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    """The indicator starts once a message is admitted: with the limits in the database
    (PostgreSQL) admission awaits, and a typing call per refused message would flood Telegram."""
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    chat = tg.private_chat(alice)
    async with running_bot(make_app, tg, limits={"messages_per_minute": 1, "burst": 1}):
        for n in range(12):
            tg.send(chat, alice, f"message {n}")
        await tg.wait_for_message(chat["id"], count=2)  # the answer, and "slow down" once
        await tg.wait_idle(quiet=0.3)
    assert len(fake_llm.chat_requests) == 1
    typing = [c for c in tg.calls if c.method == "sendChatAction"]
    assert len(typing) <= 1


async def test_commands_count_against_the_rate_too(make_app: AppFactory) -> None:
    limits = {"messages_per_minute": 1, "burst": 2}
    async with make_app(limits=limits) as app:
        results = [await app.commands.handle(group("1"), "history") for _ in range(4)]
        assert [r.ok for r in results] == [True, True, False, False]
        assert [r.notify for r in results] == [True, True, True, False]
        assert "faster than I can answer" in results[2].text
        with pytest.raises(RateLimitedError) as chat:  # one allowance for messages and commands
            await app.service.chat(group("1"), "and a question")
        assert not chat.value.notify
        assert (await app.commands.handle(group("2", "Bob"), "history")).ok


async def test_the_rate_is_per_user_per_chat_across_topics(make_app: AppFactory) -> None:
    limits = {"messages_per_minute": 1, "burst": 1}
    async with make_app(limits=limits, chat={"default_scope": "thread"}) as app:
        await app.service.chat(group(thread_id="1"), "in topic 1")
        with pytest.raises(RateLimitedError):  # a new topic is not a new allowance
            await app.service.chat(group(thread_id="2"), "in topic 2")
        await app.service.chat(group("2", "Bob", thread_id="2"), "someone else")


async def test_a_discord_thread_shares_its_channels_allowance(make_app: AppFactory) -> None:
    limits = {"messages_per_minute": 1, "burst": 1}
    thread = ChatContext("discord", "77", ChatType.GROUP, "1", "Alice", extra=(("parent", "5"),))
    channel = ChatContext("discord", "5", ChatType.GROUP, "1", "Alice")
    async with make_app(limits=limits) as app:
        await app.service.chat(thread, "in the thread")
        with pytest.raises(RateLimitedError):
            await app.service.chat(channel, "and in its channel")
