"""Daily token budgets per user and per chat, and /usage."""

from __future__ import annotations

import asyncio

import pytest

from bot.errors import UserFacingError
from bot.testing.fake_llm import FakeLLM, reply
from tests.conftest import AppFactory, group

USAGE = {"prompt_tokens": 60, "completion_tokens": 40, "total_tokens": 100}


async def test_daily_budgets_refuse_clearly_and_store_nothing(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    limits = {"daily_tokens_per_user": 150, "daily_tokens_per_chat": 250}
    async with make_app(limits=limits) as app:
        for _ in range(2):
            fake_llm.script(reply("ok", usage=USAGE))
            await app.service.chat(group("1", "Alice"), "hi")
        with pytest.raises(UserFacingError) as spent:
            await app.service.chat(group("1", "Alice"), "one more")
        assert "You have used today's budget" in spent.value.chat_text
        fake_llm.script(reply("ok", usage=USAGE))
        await app.service.chat(group("2", "Bob"), "my turn")  # Bob has his own budget...
        with pytest.raises(UserFacingError) as chat_spent:
            await app.service.chat(group("3", "Cy"), "and me?")  # ...but the chat's is spent
        assert "This chat has used today's budget" in chat_spent.value.chat_text
        assert (await app.store.stats("telegram:-100")).turns_stored == 3
        assert len(fake_llm.chat_requests) == 3
        mine = (await app.commands.handle(group("1"), "usage")).text
        assert mine == "You used 200 tokens here today (UTC) of a 150-token daily budget."
        admin = (await app.commands.handle(group("2", is_admin=True), "usage")).text
        assert "This chat used 300 of a 250-token daily budget" in admin


async def test_a_full_llm_queue_answers_busy_never_silence(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.latency = 0.6
    limits = {"max_concurrent_llm_calls": 1, "queue_timeout": 0.2}
    async with make_app(limits=limits) as app:
        first = asyncio.ensure_future(app.service.chat(group("1"), "first"))
        await asyncio.sleep(0.1)
        with pytest.raises(UserFacingError) as busy:
            await app.service.chat(group("2", chat="-200"), "second")
        assert "answering a lot of people" in busy.value.chat_text
        assert (await first).text == "echo: [Alice] first"
        stats = await app.store.stats("telegram:-200")
        assert (stats.turns_stored, stats.unanswered) == (1, 1)  # kept, marked unanswered
        assert len(fake_llm.chat_requests) == 1


async def test_limits_max_input_chars_wins(make_app: AppFactory) -> None:
    async with make_app(limits={"max_input_chars": 10}) as app:
        with pytest.raises(UserFacingError) as long:
            await app.service.chat(group(), "x" * 11)
        assert "the limit is 10" in long.value.chat_text
