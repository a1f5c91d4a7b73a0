"""A Telegram group that becomes a supergroup changes its chat id; its scheduled posts follow it
(through the real adapter on the fake Bot API, which sends both service messages): the new
chat's ``/schedule list`` shows them, they keep their numbers and next runs, a run posts
straight into the supergroup as a turn of the conversation that moved there, and the new
chat's admins cancel them there."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.app import App
from bot.scheduling.kinds import SCHEDULED_POSTS_KIND
from bot.testing.fake_llm import FakeLLM, reply
from bot.testing.fake_telegram import FakeTelegram
from bot.values import AuditAction
from tests.conftest import AppFactory
from tests.product.schedules.test_schedule_command_telegram import SETUP, soon
from tests.telegram_harness import fed_bot

OLD, NEW = -5, -1005


def jobs(app: App) -> dict[str, tuple[str, str, datetime]]:
    """Pending posts: job id -> (chat key, chat id, next run)."""
    assert app.scheduler is not None
    return {
        job.job_id: (job.payload["chat_key"], job.payload["chat_id"], job.next_run)
        for job in app.scheduler.pending(SCHEDULED_POSTS_KIND)
    }


async def test_a_groups_scheduled_posts_follow_it_to_the_supergroup(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    alice, bob = tg.user(7, "Alice"), tg.user(8, "Bob")
    group = tg.group(OLD, "Small group")  # a basic group: it can be upgraded
    tg.set_member(OLD, alice["id"], "administrator")
    tg.set_member(OLD, bob["id"], "member")
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).replace(second=0, microsecond=0)
    async with fed_bot(make_app, tg, **SETUP) as fed:
        fake_llm.script(reply("Noted: Friday."))
        tg.send(group, bob, "@parlour_bot we ship the release on Friday")
        await fed.feed()
        tg.send(group, alice, f"/schedule {soon(5)} | summarise the week")
        tg.send(group, alice, f"/schedule once {tomorrow:%Y-%m-%d %H:%M} UTC | wish us luck")
        said = [m["text"] for m in await fed.replies(OLD, count=3)]
        assert said[1].startswith("Scheduled post #1") and said[2].startswith("Scheduled post #2")
        before = jobs(fed.app)
        assert {key for key, _, _ in before.values()} == {f"telegram:{OLD}"}

        supergroup = tg.migrate(group, NEW)
        await fed.feed()  # both service messages: the second moves nothing
        migrated_at = len(tg.calls)
        after = jobs(fed.app)
        assert after == {
            job_id: (f"telegram:{NEW}", str(NEW), next_run)  # same numbers, same next runs
            for job_id, (_, _, next_run) in before.items()
        }

        tg.send(supergroup, alice, "/schedule list")
        [listed] = await fed.replies(NEW)
        assert listed["text"].startswith("Scheduled posts here (2):\n#1 every ")
        assert "#2 once on " in listed["text"] and "wish us luck" in listed["text"]

        fake_llm.script(reply("This week: the release ships on Friday."))
        await tg.wait_until(lambda: len(tg.messages(NEW)) >= 2, 15, what="the post")
        assert tg.messages(NEW)[-1]["text"] == "This week: the release ships on Friday."
        sends = [c for c in tg.calls[migrated_at:] if c.method == "sendMessage"]
        assert {str(c.params["chat_id"]) for c in sends} == {str(NEW)}  # never the old id
        said_to_model = [str(m.get("content")) for m in fake_llm.chat_requests[-1].json["messages"]]
        assert any("we ship the release on Friday" in text for text in said_to_model)  # moved
        history = await fed.app.store.history_page(f"telegram:{NEW}")
        assert history[0].user_id == "schedule-1"
        assert history[0].answer == "This week: the release ships on Friday."
        assert jobs(fed.app)["schedules:1"][0] == f"telegram:{NEW}"  # next week: there again

        tg.send(supergroup, alice, "/schedule cancel 2")
        [*_, cancelled] = await fed.replies(NEW, count=3)
        assert cancelled["text"].startswith("Cancelled scheduled post #2 (once on ")
        assert list(jobs(fed.app)) == ["schedules:1"]
        trail = await fed.app.store.audit(f"telegram:{NEW}")
        assert await fed.app.store.audit(f"telegram:{OLD}") == []
    assert [(e.action, e.actor_id, e.detail.split(":")[0]) for e in trail] == [
        (AuditAction.SCHEDULE, "7", "set #1"),  # moved with the chat
        (AuditAction.SCHEDULE, "7", "set #2"),
        (AuditAction.SCHEDULE, "7", "cancelled #2"),
    ]


async def test_only_the_migrated_chats_posts_move(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    """Another group's posts stay where they are; a post in a chat the move does not name is
    left alone, however often the move is told."""
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    group, other = tg.group(OLD, "Small group"), tg.group(-6, "Other group")
    for chat in (OLD, -6):
        tg.set_member(chat, alice["id"], "administrator")
    async with fed_bot(make_app, tg, **SETUP) as fed:
        tg.send(group, alice, "/schedule every monday 09:00 | here")
        tg.send(other, alice, "/schedule every tuesday 09:00 | there")
        await fed.feed()
        tg.migrate(group, NEW)
        await fed.feed()
        assert fed.app.schedules is not None
        assert await fed.app.schedules.moved(f"telegram:{OLD}", f"telegram:{NEW}") == 0
        moved = {job_id: key for job_id, (key, _, _) in jobs(fed.app).items()}
    assert moved == {"schedules:1": f"telegram:{NEW}", "schedules:2": "telegram:-6"}
