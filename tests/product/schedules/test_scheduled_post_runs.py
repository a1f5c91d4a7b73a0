"""A scheduled post's run in one process: it waits for its platform's adapter at start-up, a
one-off nobody here can post is put off (a weekly run skipped), and a posted run is a turn of
the chat's conversation that later answers remember."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from bot.app import App
from bot.scheduling.kinds import SCHEDULED_POSTS_KIND
from bot.scheduling.scheduler import ScheduledJob
from bot.testing.fake_llm import FakeLLM, reply
from bot.values import HistoryStats
from tests.conftest import AppFactory, group
from tests.product.schedules.test_schedule_command_telegram import moment_in, soon, until
from tests.product.schedules.test_schedules_admin_api import Posts

ADMIN = replace(group("1", "Alice"), is_admin=True)


def once_soon(seconds: float = 1.0) -> str:
    moment = moment_in(seconds)
    return f"once {moment:%Y-%m-%d %H:%M:%S} UTC"


def jobs(app: App) -> list[ScheduledJob]:
    assert app.scheduler is not None
    return app.scheduler.pending(SCHEDULED_POSTS_KIND)


async def test_a_run_waits_for_its_platforms_adapter_to_start(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with make_app() as app:
        assert app.schedules is not None
        fake_llm.script(reply("Good morning, team."))
        await app.schedules.schedule(ADMIN, once_soon(0.5), "greet the team")
        await until(lambda: not jobs(app))  # fired: no adapter can post yet
        await asyncio.sleep(0.5)
        posts = Posts()
        app.outbound.register("telegram", posts)  # the adapter comes up
        await until(lambda: posts.sent)
        assert posts.sent == [("-100", None, "Good morning, team.")]


async def test_a_one_off_nobody_here_can_post_is_put_off_and_a_weekly_run_skipped(
    make_app: AppFactory, fake_llm: FakeLLM, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    async with make_app() as app:
        assert app.schedules is not None
        app.schedules.adapter_wait = 0.2
        requests = len(fake_llm.chat_requests)
        await app.schedules.schedule(ADMIN, once_soon(), "greet the team")
        await app.schedules.schedule(ADMIN, soon(1.0), "weekly digest")
        await until(lambda: "this run is skipped" in caplog.text and "put off until" in caplog.text)
        once, weekly = sorted(jobs(app), key=lambda job: job.job_id)
        assert once.payload["attempts"] == 1
        assert timedelta(minutes=4) < once.next_run - datetime.now(UTC) <= timedelta(minutes=5)
        assert weekly.next_run - datetime.now(UTC) > timedelta(days=6)
        assert len(fake_llm.chat_requests) == requests  # nothing was asked of the model


async def test_a_posted_run_is_a_turn_of_the_chat_that_later_answers_remember(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with make_app() as app:
        assert app.schedules is not None
        posts = Posts()
        app.outbound.register("telegram", posts)
        fake_llm.script(reply("Question of the day: tabs or spaces?"))
        post = await app.schedules.schedule(ADMIN, once_soon(), "ask a question of the day")
        assert post.next_run is not None
        await until(lambda: posts.sent)
        fake_llm.script(reply("Spaces, then."))
        await app.service.chat(group("2", "Bob"), "spaces, obviously")
        sent = fake_llm.chat_requests[-1].json["messages"]
        said = [str(m.get("content")) for m in sent]
        assert any("Question of the day: tabs or spaces?" in text for text in said)
        [item, _] = (await app.store.history_page("telegram:-100"))[::-1][:2]
        assert (item.user_id, item.user_name) == ("schedule-1", "Scheduled post #1")
        assert item.text.endswith("ask a question of the day")
        assert item.answer == "Question of the day: tabs or spaces?"


class RefusedPosts(Posts):
    """An adapter the platform refuses (the bot was removed from the group)."""

    async def send_text(self, chat_id: str, thread_id: str | None, text: str) -> None:
        self.sent.append((chat_id, thread_id, text))
        raise RuntimeError("Forbidden: bot was kicked from the group chat")


async def test_a_run_the_platform_refused_is_stored_undelivered(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    """Later prompts must not think the chat saw a post it never got."""
    async with make_app() as app:
        assert app.schedules is not None
        posts = RefusedPosts()
        app.outbound.register("telegram", posts)
        fake_llm.script(reply("Nobody will read this."))
        await app.schedules.schedule(ADMIN, once_soon(), "say something")
        await until(lambda: posts.sent)
        stats = await until_undelivered(app)
    assert stats.undelivered == 1


async def until_undelivered(app: App) -> HistoryStats:
    for _ in range(100):
        stats = await app.store.stats("telegram:-100")
        if stats.undelivered:
            return stats
        await asyncio.sleep(0.05)
    return stats
