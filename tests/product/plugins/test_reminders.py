"""The reminders plugin through the real scheduler: set by a tool call, fired into the right chat
and thread, kept across restarts, fired at start when due during downtime, owned by their user."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from bot.testing.fake_llm import FakeLLM, reply, tool_calls
from tests.conftest import AppFactory, group, private

REMINDERS = {"plugins": ["plugins.reminders"]}


class Recorder:
    """Stands in for a platform adapter: records what the bot posts on its own."""

    def __init__(self) -> None:
        self.posts: list[tuple[str, str | None, str, float]] = []

    async def send_text(self, chat_id: str, thread_id: str | None, text: str) -> None:
        self.posts.append((chat_id, thread_id, text, time.monotonic()))

    async def wait(self, count: int = 1, timeout: float = 5.0) -> None:  # noqa: ASYNC109
        deadline = time.monotonic() + timeout
        while len(self.posts) < count:
            assert time.monotonic() < deadline, f"only {len(self.posts)} posts: {self.posts}"
            await asyncio.sleep(0.05)


def tool_result(fake: FakeLLM) -> str:
    body: dict[str, Any] = fake.chat_requests[-1].json
    return str([m for m in body["messages"] if m["role"] == "tool"][-1]["content"])


async def test_a_reminder_fires_in_the_right_chat_and_thread(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    recorder = Recorder()
    fake_llm.script(
        tool_calls(("set_reminder", {"text": "stretch", "in_minutes": 0.01})), reply("Will do.")
    )
    async with make_app(**REMINDERS) as app:
        app.outbound.register("telegram", recorder)
        await app.service.chat(group(thread_id="77"), "remind me in a moment to stretch")
        assert tool_result(fake_llm).startswith("Reminder #1 set for")
        await recorder.wait()
        # The reminder is forgotten once sent (after the post: a crash between sends it again).
        for _ in range(100):
            if not await app.store.kv_items("reminders", "reminder:"):
                break
            await asyncio.sleep(0.05)
        assert await app.store.kv_items("reminders", "reminder:") == []
    [(chat_id, thread_id, text, _)] = recorder.posts
    assert (chat_id, thread_id) == ("-100", "77")
    assert text == "⏰ Alice, you asked me to remind you: stretch"


async def test_a_reminder_set_before_a_restart_fires_after_it(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.script(
        tool_calls(("set_reminder", {"text": "drink water", "in_minutes": 0.03})), reply("ok")
    )
    async with make_app(**REMINDERS) as app:
        await app.service.chat(private(), "remind me soon to drink water")
    recorder = Recorder()
    async with make_app(**REMINDERS) as app:
        app.outbound.register("telegram", recorder)
        await recorder.wait(timeout=6)
    assert recorder.posts[0][2].endswith("drink water")


async def test_a_reminder_due_during_downtime_fires_at_start(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.script(
        tool_calls(("set_reminder", {"text": "call mum", "in_minutes": 0.005})), reply("ok")
    )
    async with make_app(**REMINDERS) as app:
        await app.service.chat(private(), "remind me to call mum")
    await asyncio.sleep(1.5)  # the bot is down when it falls due (past apscheduler's 1 s grace)
    recorder = Recorder()
    started = time.monotonic()
    async with make_app(**REMINDERS) as app:
        app.outbound.register("telegram", recorder)
        await recorder.wait(timeout=3)
    assert recorder.posts[0][3] - started < 2.0
    assert recorder.posts[0][2].endswith("call mum")


async def test_users_list_and_cancel_only_their_own(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    alice, bob = group("1", "Alice"), group("2", "Bob")
    later = (datetime.now(UTC) + timedelta(days=1)).replace(microsecond=0).isoformat()
    async with make_app(**REMINDERS, chat={"default_scope": "user"}) as app:
        fake_llm.script(tool_calls(("set_reminder", {"text": "standup", "at": later})), reply("ok"))
        await app.service.chat(alice, "remind me tomorrow about standup")
        fake_llm.script(tool_calls(("list_reminders", {})), reply("none"))
        await app.service.chat(bob, "what are my reminders?")
        assert tool_result(fake_llm) == "The user has no pending reminders."
        fake_llm.script(tool_calls(("cancel_reminder", {"reminder_id": 1})), reply("no"))
        await app.service.chat(bob, "cancel reminder 1")
        assert tool_result(fake_llm) == "Error: the user has no reminder #1."
        assert app.scheduler is not None
        assert [j.job_id for j in app.scheduler.pending("reminders.fire")] == ["reminders:1"]
        fake_llm.script(tool_calls(("list_reminders", {})), reply("one"))
        await app.service.chat(alice, "my reminders?")
        assert tool_result(fake_llm).startswith("#1 ") and tool_result(fake_llm).endswith("standup")
        fake_llm.script(tool_calls(("cancel_reminder", {"reminder_id": 1})), reply("done"))
        await app.service.chat(alice, "cancel it")
        assert tool_result(fake_llm) == "Cancelled reminder #1: standup"
        assert app.scheduler.pending("reminders.fire") == []


async def test_times_are_checked(make_app: AppFactory, fake_llm: FakeLLM) -> None:
    settings = {
        "plugins": [{"module": "plugins.reminders", "settings": {"timezone": "Asia/Tokyo"}}]
    }
    async with make_app(**settings) as app:
        fake_llm.script(
            tool_calls(("set_reminder", {"text": "x", "at": "2020-01-01T10:00"})), reply("no")
        )
        await app.service.chat(private(), "remind me in the past")
        assert "already passed" in tool_result(fake_llm)
        fake_llm.script(tool_calls(("set_reminder", {"text": "x", "at": "soon"})), reply("no"))
        await app.service.chat(private(), "remind me soon")
        assert "not an ISO 8601 date-time" in tool_result(fake_llm)
        fake_llm.script(tool_calls(("set_reminder", {"text": "x"})), reply("no"))
        await app.service.chat(private(), "remind me")
        assert "exactly one of" in tool_result(fake_llm)
        tomorrow = (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%dT18:00")
        fake_llm.script(tool_calls(("set_reminder", {"text": "x", "at": tomorrow})), reply("ok"))
        await app.service.chat(private(), "remind me at 18:00 tomorrow")
        assert "18:00 JST" in tool_result(fake_llm)  # a time without offset is the bot's zone


async def test_parallel_reminders_get_their_own_ids_and_groups_see_only_theirs(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with make_app(**REMINDERS) as app:
        fake_llm.script(
            tool_calls(
                ("set_reminder", {"text": "take my meds", "in_minutes": 60}),
                ("set_reminder", {"text": "call the bank", "in_minutes": 90}),
            ),
            reply("ok"),
        )
        await app.service.chat(private(), "two reminders please")
        assert app.scheduler is not None
        jobs = sorted(j.job_id for j in app.scheduler.pending() if j.job_id.startswith("rem"))
        assert jobs == ["reminders:1", "reminders:2"]
        fake_llm.script(tool_calls(("list_reminders", {})), reply("none here"))
        await app.service.chat(group(), "@bot my reminders?")
        assert tool_result(fake_llm) == "The user has no pending reminders here (2 in other chats)."


class HeldRecorder(Recorder):
    """A send that never finishes by itself (the process stops while it is under way)."""

    def __init__(self) -> None:
        super().__init__()
        self.sending = asyncio.Event()

    async def send_text(self, chat_id: str, thread_id: str | None, text: str) -> None:
        self.sending.set()
        await asyncio.Event().wait()


async def test_a_reminder_whose_send_was_cut_by_shutdown_is_sent_at_the_next_start(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.script(
        tool_calls(("set_reminder", {"text": "stretch", "in_minutes": 0.01})), reply("ok")
    )
    held = HeldRecorder()
    async with make_app(**REMINDERS) as app:
        app.outbound.register("telegram", held)
        await app.service.chat(private(), "remind me in a moment to stretch")
        await asyncio.wait_for(held.sending.wait(), 5)
    recorder = Recorder()
    async with make_app(**REMINDERS) as app:  # not marked as in flight: sent at once
        app.outbound.register("telegram", recorder)
        await recorder.wait(timeout=3)
    assert recorder.posts[0][2].endswith("stretch")


async def test_a_reminder_marked_in_flight_waits_until_that_run_is_surely_over(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    """A mark left by a process that died mid-send (or a run still sending elsewhere)."""
    now = datetime.now(UTC)
    record = {
        "platform": "telegram",
        "chat_id": "1",
        "thread_id": None,
        "user_id": "1",
        "user_name": "Alice",
        "due": (now - timedelta(minutes=20)).isoformat(),
    }
    async with make_app(**REMINDERS) as app:
        stale = now - timedelta(minutes=11)  # that process is long gone
        recent = now - timedelta(minutes=1)  # may still be sending
        for n, text, since in ((1, "stale", stale), (2, "recent", recent)):
            value = {**record, "id": n, "text": text, "firing_since": since.isoformat()}
            await app.store.kv_set("reminders", f"reminder:{n:010d}", value)
    recorder = Recorder()
    async with make_app(**REMINDERS) as app:
        app.outbound.register("telegram", recorder)
        await recorder.wait(timeout=3)
        assert app.scheduler is not None
        (waiting,) = app.scheduler.pending("reminders.fire")
        assert waiting.job_id == "reminders:2"
        assert waiting.next_run == recent + timedelta(minutes=10)
    assert [text for _, _, text, _ in recorder.posts] == [
        "⏰ Alice, you asked me to remind you: stale"
    ]
