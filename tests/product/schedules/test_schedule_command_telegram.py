"""``/schedule`` in a Telegram group, through the real adapter on the fake Bot API: who may set a
post (``getChatMember`` decides), what the run sends the model (the chat's history, its tools),
what reaches the group, the cost on the ledger, a spent budget, listing, cancelling, and the
messages a wrong schedule gets."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bot.app import App
from bot.guardrails.budgets import utc_day
from bot.scheduling.kinds import SCHEDULED_POSTS_KIND
from bot.scheduling.recurrence import DAY_NAMES
from bot.testing.fake_llm import FakeLLM, reply, tool_calls
from bot.testing.fake_telegram import FakeTelegram
from tests.conftest import AppFactory
from tests.telegram_harness import fed_bot

JSONDict = dict[str, Any]
SETUP = {"telegram": {"stream": False}, "plugins": ["plugins.clock"]}
SECOND = timedelta(seconds=1)


def moment_in(seconds: float) -> datetime:
    """A whole second at least ``seconds`` from now (schedules name whole seconds)."""
    return (datetime.now(UTC) + timedelta(seconds=seconds)).replace(microsecond=0) + SECOND


def soon(seconds: float = 2.0) -> str:
    """A weekly schedule whose next run is ``seconds`` (and up to one more) from now, UTC."""
    moment = moment_in(seconds)
    return f"every {DAY_NAMES[moment.weekday()]} {moment:%H:%M:%S} UTC"


def pending(app: App) -> list[str]:
    assert app.scheduler is not None
    return [job.job_id for job in app.scheduler.pending(SCHEDULED_POSTS_KIND)]


def team(tg: FakeTelegram, **kw: Any) -> tuple[JSONDict, JSONDict, JSONDict]:
    admin, member = tg.user(7, "Alice"), tg.user(8, "Bob")
    chat = tg.group(-200, "Team", supergroup=True, **kw)
    tg.set_member(chat["id"], admin["id"], "administrator")
    tg.set_member(chat["id"], member["id"], "member")
    return chat, admin, member


async def test_a_weekly_post_runs_with_the_chats_history_and_tools_and_reaches_the_group(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    chat, admin, member = team(tg)
    async with fed_bot(make_app, tg, **SETUP) as fed:
        fake_llm.script(reply("Noted: Friday."))
        tg.send(chat, member, "@parlour_bot we ship the release on Friday")
        await fed.replies(chat["id"])

        tg.send(chat, member, "/schedule every monday 09:00 | post something")
        messages = await fed.replies(chat["id"], count=2)
        assert messages[-1]["text"] == "Only this chat's admins can use /schedule."
        assert pending(fed.app) == []
        assert any(c.method == "getChatMember" for c in tg.calls)  # the platform's rule

        fake_llm.script(
            tool_calls(("current_time", {"timezone": "UTC"})),
            reply("This week: the release ships on Friday."),
        )
        requests_before = len(fake_llm.chat_requests)
        tg.send(chat, admin, f"/schedule {soon()} | summarise last week's discussion")
        messages = await fed.replies(chat["id"], count=3)
        confirmation = messages[-1]["text"]
        assert confirmation.startswith("Scheduled post #1: every ")
        assert "Cancel it with /schedule cancel 1." in confirmation and "UTC" in confirmation
        assert pending(fed.app) == ["schedules:1"]

        await tg.wait_until(lambda: len(tg.messages(chat["id"])) >= 4, 15, what="the post")
        post = tg.messages(chat["id"])[-1]
        assert post["text"] == "This week: the release ships on Friday."
        assert "reply_to_message" not in post  # a post of its own, not an answer to someone

        first, second = fake_llm.chat_requests[requests_before:]
        sent = first.json["messages"]
        said = [str(m.get("content")) for m in sent]
        assert any("we ship the release on Friday" in text for text in said)  # the history
        assert any("Noted: Friday." in text for text in said)
        assert "summarise last week's discussion" in said[-1]
        assert "[Scheduled post #1] [Set by " in said[-1] and " to run every " in said[-1]
        assert [t["function"]["name"] for t in first.json["tools"]] == ["current_time"]
        tool_answers = [m for m in second.json["messages"] if m["role"] == "tool"]
        assert len(tool_answers) == 1  # the chat's tool ran

        rows = await fed.app.store.daily_usage(utc_day(), "telegram:-200")
        booked = [r for r in rows if r.user_id == "schedule-1"]
        assert len(booked) == 1 and booked[0].usage.total_tokens > 0
        assert booked[0].turns == 1

        tg.send(chat, admin, "/schedule list")
        listed = (await fed.replies(chat["id"], count=5))[-1]["text"]
        assert listed.startswith("Scheduled posts here (1):\n#1 every ")
        assert "summarise last week's discussion" in listed
        assert app_next_run(fed.app) > datetime.now(UTC) + timedelta(days=6)

        tg.send(chat, admin, "/schedule cancel 1")
        assert (await fed.replies(chat["id"], count=6))[-1]["text"].startswith(
            "Cancelled scheduled post #1 (every "
        )
        assert pending(fed.app) == []
        tg.send(chat, admin, "/schedule cancel 1")
        assert (
            "There is no scheduled post #1 here" in (await fed.replies(chat["id"], 7))[-1]["text"]
        )
        tg.send(chat, admin, "/schedule")
        assert (await fed.replies(chat["id"], 8))[-1]["text"].startswith("No posts are scheduled")


def app_next_run(app: App) -> datetime:
    assert app.scheduler is not None
    (job,) = app.scheduler.pending(SCHEDULED_POSTS_KIND)
    return job.next_run


async def test_a_spent_budget_refuses_the_run_it_is_logged_and_nothing_is_posted(
    make_app: AppFactory,
    fake_llm: FakeLLM,
    fake_telegram: FakeTelegram,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    tg = fake_telegram
    chat, admin, member = team(tg)
    limits = {"daily_tokens_per_chat": 100}
    async with fed_bot(make_app, tg, limits=limits, **SETUP) as fed:
        fake_llm.script(
            reply("A long answer.", usage={"prompt_tokens": 90, "completion_tokens": 20})
        )
        tg.send(chat, member, "@parlour_bot tell me everything")
        await fed.replies(chat["id"])
        tg.send(chat, admin, f"/schedule {soon()} | summarise the week")
        await fed.replies(chat["id"], count=2)
        requests = len(fake_llm.chat_requests)

        def refused() -> bool:
            return "scheduled post 1 not posted chat=telegram:-200" in caplog.text

        await until(refused)
        await asyncio.sleep(0.3)
        assert len(tg.messages(chat["id"])) == 2  # the answer and the confirmation: no post
        assert len(fake_llm.chat_requests) == requests  # the model was never asked
        assert "daily chat budget spent" in caplog.text
        assert pending(fed.app) == ["schedules:1"]  # next week it tries again


async def until(predicate: Callable[[], object], timeout: float = 15.0) -> None:  # noqa: ASYNC109
    """Until ``predicate()`` holds (an AssertionError after ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s")
        await asyncio.sleep(0.05)


async def test_a_one_off_in_a_topic_posts_there_once_and_is_gone(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    chat, admin, _ = team(tg, forum=True)
    topic = tg.topic(chat, "News")
    moment = moment_in(2)
    async with fed_bot(make_app, tg, **SETUP) as fed:
        await fed.feed()  # the topic's service message
        fake_llm.script(reply("Happy launch day!"))
        tg.send(
            chat, admin, f"/schedule once {moment:%Y-%m-%d %H:%M:%S} UTC | cheer", thread_id=topic
        )
        [confirmation] = await fed.replies(chat["id"])
        assert confirmation["text"].startswith("Scheduled post #1: once on ")
        await tg.wait_until(
            lambda: len(tg.messages(chat["id"], thread_id=topic)) >= 2, 15, what="the post"
        )
        assert tg.messages(chat["id"], thread_id=topic)[-1]["text"] == "Happy launch day!"
        assert pending(fed.app) == []
        await asyncio.sleep(0.5)
        assert len(tg.messages(chat["id"])) == 2


@pytest.mark.parametrize(
    ("args", "told"),
    [
        ("every monday 09:00 Europe/Berln | hi", "Not scheduled: Unknown time zone 'Europe/Berln'"),
        ("every monday 24:30 | hi", "Not scheduled: '24:30' is not a time of day: use 24-hour"),
        ("once 2020-05-01 10:00 Europe/Berlin | hi", "2020-05-01 10:00 (Europe/Berlin) has already"
         " passed"),
        ("every funday 10:00 | hi", "Not scheduled: 'funday' is not a day"),
        ("every monday 09:00 |   ", "Not scheduled: Say what to post after a |"),
        ("every monday 09:00", "/schedule WHEN | PROMPT - run PROMPT at those times"),
        ("cancel one", "Usage: /schedule cancel N"),
    ],
)  # fmt: skip
async def test_a_wrong_schedule_is_refused_with_what_is_wrong(
    make_app: AppFactory, fake_telegram: FakeTelegram, args: str, told: str
) -> None:
    tg = fake_telegram
    chat, admin, _ = team(tg)
    async with fed_bot(make_app, tg, **SETUP) as fed:
        tg.send(chat, admin, f"/schedule {args}")
        [answer] = await fed.replies(chat["id"])
        assert told in answer["text"]
        assert pending(fed.app) == []


async def test_the_limits_who_and_where(make_app: AppFactory, fake_telegram: FakeTelegram) -> None:
    tg = fake_telegram
    chat, admin, _ = team(tg)
    owner = tg.user(9, "Owner")
    direct = tg.private_chat(owner)
    schedules = {"max_per_chat": 1}
    async with fed_bot(make_app, tg, schedules=schedules, admins=["telegram:9"], **SETUP) as fed:
        tg.send(chat, admin, "/schedule daily 08:00 | a question of the day")
        assert (await fed.replies(chat["id"]))[-1]["text"].startswith("Scheduled post #1")
        tg.send(chat, admin, "/schedule daily 09:00 | another")
        told = (await fed.replies(chat["id"], 2))[-1]["text"]
        assert "This chat has 1 scheduled posts, the most it may have" in told
        tg.send(direct, owner, "/schedule daily 08:00 | hi")
        assert (
            "Scheduled posts are for group chats" in (await fed.replies(direct["id"]))[-1]["text"]
        )
        member = tg.user(10, "Member")  # not an admin: told the same, not "only admins"
        private = tg.private_chat(member)
        for args in ("list", "daily 08:00 | hi"):
            tg.send(private, member, f"/schedule {args}")
        answers = [m["text"] for m in await fed.replies(private["id"], 2)]
        assert all(a.startswith("Scheduled posts are for group chats") for a in answers)
        assert pending(fed.app) == ["schedules:1"]
    async with fed_bot(make_app, tg, schedules={"who": "bot_admins"}, **SETUP) as fed:
        tg.send(chat, admin, "/schedule cancel 1")  # a chat admin, not a bot admin
        told = (await fed.replies(chat["id"], 3))[-1]["text"]
        assert told == "Only the bot's admins can schedule posts."
        assert pending(fed.app) == ["schedules:1"]  # and it survived the restart


async def test_with_schedules_off_there_is_no_command(
    make_app: AppFactory, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    chat, admin, _ = team(tg)
    async with fed_bot(make_app, tg, schedules={"enabled": False}, **SETUP) as fed:
        assert not fed.app.commands.knows("schedule")
        tg.send(chat, admin, "/help")
        assert "/schedule" not in (await fed.replies(chat["id"]))[-1]["text"]
