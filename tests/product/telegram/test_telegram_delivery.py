"""Replies that Telegram will not take: retried within a bound, else stored as undelivered.

The real aiogram client against the fake Bot API, with its 429s and 5xx errors injected; what
the user ends up seeing is read from the fake, what was stored from the history file. Updates
are fed in-process (``fed_bot``) unless a test injects failures while an answer is under way
or restarts the bot to repair one (``running_bot``, the polling path).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiogram.exceptions import AiogramError, TelegramServerError

from adapters.telegram.flood import FloodRetry
from adapters.telegram.output import Outbox, Target
from adapters.telegram.recovery import AGAIN_MARK, NOTICE, PREVIEW_MARK, inbox_reruns, recover
from adapters.telegram.streaming import StreamingReply, typing_indicator
from bot.conversation.preview import EditThrottle
from bot.platform.delivery_log import DeliveryLog
from bot.storage.coordination import INBOX_MAX_ATTEMPTS
from bot.storage.sqlite import SQLiteStore
from bot.testing.fake_llm import FakeLLM, reply
from bot.testing.fake_telegram import FakeTelegram
from tests import postgres_support
from tests.conftest import AppFactory, Sleeps
from tests.telegram_harness import fed_bot, running_bot

WORDS = " ".join(f"w{n}" for n in range(80))

# These read (or plant rows in) the test app's SQLite file as an owner would with sqlite3; in the
# PostgreSQL pass of the end-to-end suites the same records are the conformance suite's
# (tests/conformance/test_deliveries.py, test_turns.py), run on both backends.
reads_the_sqlite_file = pytest.mark.skipif(
    postgres_support.e2e_on_postgres(), reason="inspects the SQLite file directly"
)


def stored_turns(tmp_path: Path) -> list[dict[str, Any]]:
    """The turns of the test app's history file, as a bot owner would inspect them."""
    with contextlib.closing(sqlite3.connect(tmp_path / "parlour.db")) as db:
        db.row_factory = sqlite3.Row
        return [dict(row) for row in db.execute("SELECT * FROM turns ORDER BY id")]


def calls(tg: FakeTelegram, method: str) -> list[Any]:
    return [c for c in tg.calls if c.method == method]


@reads_the_sqlite_file
async def test_a_flood_longer_than_the_retries_is_stored_undelivered(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram, tmp_path: Path
) -> None:
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    chat = tg.private_chat(alice)
    waits = Sleeps()
    tg.flood("sendMessage", retry_after=5, times=4)  # the first try and all 3 resends
    async with fed_bot(make_app, tg, flood_sleeps=waits, telegram={"stream": False}) as fed:
        tg.send(chat, alice, "hello?")
        await fed.feed()
        stats = await fed.app.store.stats("telegram:7:u:7")
    assert len(calls(tg, "sendMessage")) == 4
    assert waits == [5, 5, 5]
    assert tg.messages(chat["id"]) == []
    [turn] = stored_turns(tmp_path)
    assert turn["status"] == "undelivered"
    assert "TelegramRetryAfter" in turn["error"]
    # The answer is kept, so the model knows what it said (and which tools it ran).
    assert json.loads(turn["answer"]) == [{"role": "assistant", "content": "echo: hello?"}]
    assert (stats.turns_stored, stats.unanswered, stats.undelivered) == (1, 0, 1)


@reads_the_sqlite_file
async def test_a_502_on_send_message_is_retried_and_delivered(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram, tmp_path: Path
) -> None:
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    chat = tg.private_chat(alice)
    waits = Sleeps()
    tg.fail("sendMessage", 502, "Bad Gateway", times=1)
    async with fed_bot(make_app, tg, flood_sleeps=waits, telegram={"stream": False}) as fed:
        tg.send(chat, alice, "are you there?")
        await fed.feed()
    assert [m["text"] for m in tg.messages(chat["id"])] == ["echo: are you there?"]
    assert [c.error for c in calls(tg, "sendMessage")] == ["Bad Gateway", None]
    [wait] = waits  # one backoff, jittered
    assert 0 < wait <= 1.0
    [turn] = stored_turns(tmp_path)
    assert turn["status"] == "answered"


@reads_the_sqlite_file
async def test_a_final_edit_flooded_for_good_still_delivers_the_whole_answer(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram, tmp_path: Path
) -> None:
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    chat = tg.private_chat(alice)
    fake_llm.stream_interval = 0.02
    fake_llm.script(reply(WORDS))
    waits = Sleeps()
    overrides = {"edit_interval_private": 0.1}
    async with running_bot(make_app, tg, flood_sleeps=waits, telegram=overrides):
        tg.send(chat, alice, "go")
        await tg.wait_for_message(chat["id"])  # the preview is up
        tg.flood("editMessageText", retry_after=5, times=10_000)  # no edit gets through again
        await tg.wait_until(
            lambda: any(m["text"] == WORDS for m in tg.messages(chat["id"])), timeout=15
        )
        await tg.wait_idle(quiet=0.3)
    # The answer came as a new message and the stale preview went: nothing truncated is left.
    assert [m["text"] for m in tg.messages(chat["id"])] == [WORDS]
    assert not any(c.ok for c in calls(tg, "editMessageText")[1:])
    [turn] = stored_turns(tmp_path)
    assert turn["status"] == "answered"


@pytest.fixture
async def flooded_bot(fake_telegram: FakeTelegram) -> AsyncIterator[tuple[Bot, Sleeps]]:
    """A client with the adapter's retry layer, whose waits are recorded, not slept."""
    waits = Sleeps()
    session = AiohttpSession(api=TelegramAPIServer.from_base(fake_telegram.api_server))
    session.middleware(FloodRetry(retries=3, max_wait=60, sleep=waits))
    client = Bot(fake_telegram.token, session=session)
    yield client, waits
    await client.session.close()


async def test_a_preview_that_cannot_be_completed_is_marked_interrupted(
    fake_telegram: FakeTelegram, flooded_bot: tuple[Bot, Sleeps]
) -> None:
    tg = fake_telegram
    bot, _ = flooded_bot
    chat = tg.private_chat(tg.user(7, "Alice"))
    outbox = Outbox(bot, Target(chat["id"]))
    streaming = StreamingReply(
        outbox,
        EditThrottle(0.0, 0.0),
        private=True,
        typing=typing_indicator(bot, chat["id"], None),
    )
    await streaming.feed("The first half of the answer")
    tg.flood("editMessageText", retry_after=5, times=4)  # the final edit, resends and all
    tg.flood("sendMessage", retry_after=5, times=4)  # and the answer sent anew
    with pytest.raises(AiogramError):
        await streaming.finish("The first half of the answer, and the second half.")
    [preview] = tg.messages(chat["id"])
    assert preview["text"] == "The first half of the answer [interrupted]"
    assert streaming.marked


async def test_server_errors_are_retried_within_the_deadline(
    fake_telegram: FakeTelegram,
) -> None:
    tg = fake_telegram
    chat = tg.private_chat(tg.user(7, "Alice"))
    now = [0.0]

    async def sleep(seconds: float) -> None:
        now[0] += seconds

    retry = FloodRetry(retries=3, max_wait=60, deadline=20, sleep=sleep, clock=lambda: now[0])
    session = AiohttpSession(api=TelegramAPIServer.from_base(tg.api_server))
    session.middleware(retry)
    async with Bot(tg.token, session=session) as bot:
        tg.fail("sendMessage", 500, "Internal Server Error", times=1_000)
        with pytest.raises(TelegramServerError):
            await bot.send_message(chat["id"], "hello")
    attempts = len(calls(tg, "sendMessage"))
    assert 3 <= attempts <= 10
    assert now[0] <= 20  # no wait began that would end past the deadline
    assert tg.messages(chat["id"]) == []


@reads_the_sqlite_file
async def test_a_preview_telegram_would_not_mark_is_marked_at_the_next_start(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram, tmp_path: Path
) -> None:
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    chat = tg.private_chat(alice)
    fake_llm.stream_interval = 0.02
    fake_llm.script(reply(WORDS))
    overrides = {"edit_interval_private": 0.1}
    async with running_bot(make_app, tg, flood_sleeps=Sleeps(), telegram=overrides):
        tg.send(chat, alice, "go")
        await tg.wait_for_message(chat["id"])
        tg.flood("editMessageText", retry_after=5, times=10_000)  # Telegram takes nothing more
        tg.flood("sendMessage", retry_after=5, times=10_000)
        await tg.wait_until(lambda: stored_turns(tmp_path)[0]["status"] == "undelivered")
        await tg.wait_idle(quiet=0.3)
    [preview] = tg.messages(chat["id"])
    cut = str(preview["text"])
    assert cut.endswith(" …")  # cut off, and nothing could be done about it then
    tg.heal()
    async with running_bot(make_app, tg, telegram=overrides):
        pass  # the repair runs before the first getUpdates
    [marked] = tg.messages(chat["id"])
    assert marked["message_id"] == preview["message_id"]
    assert marked["text"] == f"{cut.removesuffix(' …')} {PREVIEW_MARK}"
    with contextlib.closing(sqlite3.connect(tmp_path / "parlour.db")) as db:
        assert db.execute("SELECT count(*) FROM deliveries").fetchone() == (0,)
    [turn] = stored_turns(tmp_path)
    assert turn["status"] == "undelivered"


@reads_the_sqlite_file
async def test_the_repair_at_start_is_done_once_and_never_stops_the_bot(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram, tmp_path: Path
) -> None:
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    chat = tg.private_chat(alice)
    group = tg.group(-100, "Team", supergroup=True)
    question = tg.send(group, alice, "a question (privacy mode: the new process never sees it)")
    async with SQLiteStore(tmp_path / "parlour.db") as store:  # a process that then died
        log = DeliveryLog(store)
        await log.begin("telegram", "telegram:-100", "-100", None, str(question["message_id"]))
        gone = await log.begin("telegram", "telegram:7", "7", None, "1")
        await log.showing(gone, "999", "a preview the user deleted …")
        await log.begin("discord", "discord:1", "1", None, "5")  # not this adapter's
    async with running_bot(make_app, tg):
        tg.send(chat, alice, "hello")
        await tg.wait_until(lambda: len(tg.messages(chat["id"])) == 1)
        await tg.wait_idle(quiet=0.3)
    [notice] = tg.messages(group["id"])
    assert notice["text"] == NOTICE
    assert notice["reply_to_message"]["message_id"] == question["message_id"]
    assert [m["text"] for m in tg.messages(chat["id"])] == ["echo: hello"]
    with contextlib.closing(sqlite3.connect(tmp_path / "parlour.db")) as db:
        left = db.execute("SELECT platform FROM deliveries").fetchall()
    assert left == [("discord",)]
    async with running_bot(make_app, tg):  # done once: nothing is repaired twice
        pass
    assert len(tg.messages(group["id"])) == 1


@reads_the_sqlite_file
async def test_a_refused_message_writes_no_delivery_record(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram, tmp_path: Path
) -> None:
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    chat = tg.private_chat(alice)
    limits = {"messages_per_minute": 1, "burst": 1}
    async with fed_bot(make_app, tg, limits=limits) as fed:
        for n in range(5):
            tg.send(chat, alice, f"message {n}")
        await fed.replies(chat["id"], count=2)  # the answer, and "slow down" once
    with contextlib.closing(sqlite3.connect(tmp_path / "parlour.db")) as db:
        assert db.execute(
            "SELECT seq FROM sqlite_sequence WHERE name = 'deliveries'"
        ).fetchall() == [(1,)]
        assert db.execute("SELECT count(*) FROM deliveries").fetchone() == (0,)
    assert len(stored_turns(tmp_path)) == 1


@pytest.mark.parametrize(
    ("claims", "finished", "again"),
    [
        (1, None, True),  # waits to run again
        (INBOX_MAX_ATTEMPTS, None, False),  # its next claim gives it up
        (2, "", True),  # another replica ran it again and answered
        (2, "given up after 5 attempts", False),
    ],
    ids=["waiting", "last-attempt", "answered-elsewhere", "given-up"],
)
async def test_a_preview_whose_question_is_answered_anyway_says_so_not_ask_again(
    fake_telegram: FakeTelegram,
    tmp_path: Path,
    claims: int,
    finished: str | None,
    again: bool,
) -> None:
    """Webhook mode: the question a crash cut a reply off in is answered anyway when its update
    waits in the inbox with an attempt to spare, or ran again and was answered."""
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    group = tg.group(-100, "Team", supergroup=True)
    asked = str(tg.send(group, alice, "a long question")["message_id"])
    session = AiohttpSession(api=TelegramAPIServer.from_base(tg.api_server))
    async with Bot(tg.token, session=session) as bot:
        preview = await bot.send_message(group["id"], "The first half …")
        async with SQLiteStore(tmp_path / "p.db") as store:  # a process that then died
            log = DeliveryLog(store)
            row = await log.begin("telegram", "telegram:-100", "-100", None, asked)
            await log.showing(row, str(preview.message_id), "The first half …")
            assert await store.inbox_put("src", 1, "-100", "{}", subject=f"message:{asked}")
            for _ in range(claims):  # claimed and cut off this often
                (item,) = await store.inbox_claim("src", "dead", 60, 10)
                await store.inbox_release("dead")
            if finished is not None:  # then claimed once more, and finished
                (item,) = await store.inbox_claim("src", "other", 60, 10)
                assert await store.inbox_done(item.id, "other", error=finished or None)
        async with SQLiteStore(tmp_path / "p.db") as store:  # the next start
            runs_again = inbox_reruns(store, "src")
            assert await recover(bot, DeliveryLog(store), 10, runs_again=runs_again) == 1
    [marked] = [m for m in tg.messages(group["id"]) if m["message_id"] == preview.message_id]
    assert marked["text"] == f"The first half {AGAIN_MARK if again else PREVIEW_MARK}"
