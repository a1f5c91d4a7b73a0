"""Daily token budgets, the usage ledger and `usage` CLI, input and output caps, LLM slots."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from pathlib import Path

import pytest

from bot.config import LimitSettings
from bot.context import ChatContext, ChatType
from bot.conversation.service import Done
from bot.errors import UserFacingError
from bot.guardrails.budgets import Budgets
from bot.storage.sqlite import SQLiteStore
from bot.storage.sqlite.migrations import MIGRATIONS
from bot.testing.fake_llm import FakeLLM, error, reply, tool_calls
from bot.values import NewTurn, Usage
from tests.conftest import AppFactory, group, private
from tests.product.app.test_cli import SECRET, env_for, run_cli, write_config

USAGE_COLUMNS = ["day", "chat", "user", "turns", "prompt", "cached", "completion", "total"]

USAGE = {"prompt_tokens": 60, "completion_tokens": 40, "total_tokens": 100}
USAGE_ = Usage(60, 40)  # the same, as stored


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
        assert mine == (
            "You used 200 tokens today (UTC) of a 150-token daily budget\n"
            "Your input: 120 tokens, of them cached: 0 %."
        )
        admin = (await app.commands.handle(group("2", is_admin=True), "usage")).text
        assert "This chat used 300 of a 250-token daily budget" in admin


async def test_a_full_llm_queue_answers_busy_never_silence(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.latency = 0.6
    limits = {"max_concurrent_llm_calls": 1, "queue_timeout": 0.2}
    async with make_app(limits=limits) as app:
        first = asyncio.ensure_future(app.service.chat(group("1"), "first"))
        async with asyncio.timeout(30):  # the first holds the one slot: its request is out
            while not fake_llm.chat_requests:  # noqa: ASYNC110 - the fake records, no event
                await asyncio.sleep(0.01)
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


async def test_usage_is_a_ledger_that_clear_and_migration_keep(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with make_app(limits={"daily_tokens_per_chat": 150}) as app:
        fake_llm.script(reply("ok", usage=USAGE), reply("ok", usage=USAGE))
        await app.service.chat(group("1", "Alice"), "hi")
        await app.service.chat(group("2", "Bob"), "hello")
        await app.commands.handle(group("2", is_admin=True), "clear")
        assert (await app.store.stats("telegram:-100")).turns_stored == 0
        with pytest.raises(UserFacingError):  # wiping the history does not refill the budget
            await app.service.chat(group("1", "Alice"), "again")
        await app.service.migrate_chat("telegram:-100", "telegram:-1009")
        assert await app.service.usage_today(group("1", chat="-1009")) == (100, 200)
        assert await app.service.usage_today(group("1")) == (100, 0)  # Alice's, everywhere
        rows = await app.store.daily_usage("2000-01-01")
    assert [(r.chat_key, r.user_id, r.user_name, r.turns, r.usage.total_tokens) for r in rows] == [
        ("telegram:-1009", "1", "Alice", 1, 100),
        ("telegram:-1009", "2", "Bob", 1, 100),
    ]


async def test_schema_9_books_the_answered_turns_already_stored(tmp_path: Path) -> None:
    path = tmp_path / "v8.db"
    with sqlite3.connect(path) as raw:
        for script in MIGRATIONS[:8]:
            raw.executescript(script)
        raw.execute("PRAGMA user_version = 8")
        raw.executemany(
            "INSERT INTO turns (conv_key, chat_key, user_id, user_name, user_text, status,"
            " prompt_tokens, completion_tokens, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                ("tg:1", "tg:1", "u", "U", "a", "answered", 10, 5, 86400 * 3),
                ("tg:1", "tg:1", "u", "U", "b", "answered", 20, 5, 86400 * 3 + 60),
                ("tg:1", "tg:1", "u", "U", "c", "unanswered", 0, 0, 86400 * 3 + 90),
                ("tg:1", "tg:1", "v", "V", "d", "answered", 1, 1, 86400 * 4),
            ],
        )
    async with SQLiteStore(path) as store:
        assert await store.tokens_on("1970-01-04", "tg:1") == 40
        assert await store.tokens_on("1970-01-04", "tg:1", "u") == 40
        assert await store.tokens_on("1970-01-05", "tg:1", "v") == 2
        assert [r.turns for r in await store.daily_usage("1970-01-01")] == [2, 1]


@pytest.mark.slow
async def test_usage_command_reports_tokens_per_chat_user_and_day(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    write_config(tmp_path)
    env = env_for(tmp_path, OPENAI_BASE_URL=fake_llm.base_url, OPENAI_API_KEY=SECRET)
    for command in (["usage"], ["history", "list"]):
        code, _out, err = await run_cli(*command, env=env)
        assert code == 1 and "no history database at" in err  # and none was created
    assert not (tmp_path / "bot.db").exists()
    fake_llm.script(reply("one", usage=USAGE), reply("two", usage=USAGE))
    code, _out, err = await run_cli("chat", env=env, stdin="first\nsecond\n")
    assert code == 0, err
    code, out, err = await run_cli("usage", env=env)
    assert code == 0, err
    header, row = out.splitlines()
    assert header.split() == USAGE_COLUMNS
    assert row.split()[-5:] == ["2", "120", "0", "80", "200"]  # short prompts: none cached
    assert row.split()[1] == "console:local"
    code, out, err = await run_cli("usage", "--json", "--chat", "console:local", env=env)
    assert code == 0, err
    [record] = [json.loads(line) for line in out.splitlines()]
    assert record["total_tokens"] == 200 and record["turns"] == 2
    code, out, _err = await run_cli("usage", "--chat", "telegram:-1", env=env)
    assert code == 0 and out.startswith("no usage since ")
    code, _out, err = await run_cli("usage", "--days", "0", env=env)
    assert code == 2 and "--days" in err


async def test_the_whole_bot_has_a_daily_ceiling_that_admins_pass(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    limits = {"daily_tokens_total": 150, "daily_tokens_per_user": None}
    async with make_app(limits=limits, admins=["telegram:99"]) as app:
        fake_llm.script(*(reply("ok", usage=USAGE) for _ in range(3)))
        await app.service.chat(group("1", chat="-100"), "hi")
        await app.service.chat(group("2", chat="-200"), "hello")
        with pytest.raises(UserFacingError) as spent:
            await app.service.chat(group("3", chat="-300"), "and me?")
        assert "today's budget for everyone" in spent.value.chat_text
        await app.service.chat(group("99", chat="-300"), "the owner still gets through")
        report = (await app.commands.handle(group("99", chat="-300"), "usage")).text
        assert "The whole bot used 300 of a 150-token daily budget." in report
    assert len(fake_llm.chat_requests) == 3


def test_budgets_are_on_by_default() -> None:
    limits = LimitSettings()
    assert (limits.daily_tokens_per_user, limits.daily_tokens_per_chat) == (200_000, 1_000_000)
    assert limits.daily_tokens_total == 5_000_000
    assert (limits.messages_per_minute, limits.burst, limits.one_in_flight) == (10, 5, True)


async def test_tokens_of_a_turn_that_fails_later_are_still_booked(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.script(
        tool_calls(("calculate", {"expression": "2+2"}), usage=USAGE),
        error(400),  # the second round is refused
    )
    async with make_app(plugins=["plugins.calculator"]) as app:
        with pytest.raises(UserFacingError):
            await app.service.chat(group(), "what is 2+2?")
        assert await app.service.usage_today(group()) == (100, 100)
        [row] = await app.store.daily_usage("2000-01-01")
        assert row.turns == 0  # billed, not answered


async def test_a_server_that_reports_no_usage_is_estimated(
    make_app: AppFactory, fake_llm: FakeLLM, caplog: pytest.LogCaptureFixture
) -> None:
    fake_llm.report_usage = False
    async with make_app(limits={"daily_tokens_per_user": 30}) as app:
        reply_ = await app.service.chat(group(), "hello there, how much does this cost?")
        assert reply_.usage.prompt_tokens > 10 and reply_.usage.completion_tokens > 5
        with pytest.raises(UserFacingError):  # the estimate counts toward the budget
            await app.service.chat(group(), "and this?")
    assert "reports no token usage" in caplog.text


async def test_a_new_chat_is_not_a_fresh_user_budget(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with make_app(limits={"daily_tokens_per_user": 150}) as app:
        for chat in ("-100", "-200"):
            fake_llm.script(reply("ok", usage=USAGE))
            await app.service.chat(group("1", chat=chat), "hi")
        with pytest.raises(UserFacingError):  # a third group, a thread, a DM: the same person
            await app.service.chat(group("1", chat="-300"), "and here?")
        with pytest.raises(UserFacingError):
            await app.service.chat(private("1"), "in private?")
        await app.service.chat(
            ChatContext("discord", "55", ChatType.GROUP, "1", "Alice"), "another platform's id"
        )


async def test_a_slow_reader_does_not_hold_an_llm_slot(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    """An adapter waiting out flood control mid-stream: the model is done, the slot is free."""
    limits = {"max_concurrent_llm_calls": 1, "queue_timeout": 0.5}
    async with make_app(limits=limits) as app:
        stream = app.service.stream(group("1", chat="-100"), "a long story please")
        async with contextlib.aclosing(stream) as events:
            await anext(events)  # the first words are shown...
            await asyncio.sleep(0.2)  # ...and the platform makes us wait before the next edit
            other = await app.service.chat(group("2", chat="-200"), "meanwhile?")
            assert other.text == "echo: [Alice] meanwhile?"
            done = [e async for e in events if isinstance(e, Done)]
        assert done[0].reply.text == "echo: [Alice] a long story please"


async def test_a_reader_that_stops_after_the_model_finished_still_pays(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.script(reply("a long story " * 20, usage=USAGE))
    async with make_app() as app:
        async with contextlib.aclosing(app.service.stream(group(), "a story")) as events:
            await anext(events)
            await asyncio.sleep(0.3)  # the model is done; the adapter gives up (flood control)
        assert await app.service.usage_today(group()) == (100, 100)
        stats = await app.store.stats("telegram:-100")
        assert (stats.turns_stored, stats.unanswered) == (1, 1)


class _Ledger:
    """A store whose ledger the test moves by hand, to order a read against a write."""

    def __init__(self) -> None:
        self.tokens = 0

    async def tokens_on(self, day: str, chat_key: str | None = None) -> int:
        return self.tokens

    async def user_tokens_on(self, day: str, platform: str, user_id: str) -> int:
        return self.tokens


async def test_a_turn_written_during_a_read_is_never_counted_twice(
    make_app: AppFactory,
) -> None:
    async with make_app() as app:
        ledger = _Ledger()
        budgets = Budgets(app.settings.limits, ledger, app.service.access)  # type: ignore[arg-type]
        assert await budgets.total_today() == 0  # a figure from before the turn
        with budgets.booking(group(), Usage(60, 40)):
            ledger.tokens = 100  # the turn's write commits (the trigger books it)...
            assert await budgets.total_today(fresh=True) == 100  # ...a check reads it meanwhile
        assert await budgets.total_today() == 100  # not 200: that read was not trusted
        ledger.tokens = 100
        assert await budgets.total_today() == 100
        with budgets.booking(group(), Usage(60, 40)):
            ledger.tokens = 200
        assert await budgets.total_today() == 200  # a figure from before: the tokens added


class _SlowLedger(_Ledger):
    """Counts its reads, each of which waits until the test lets it go."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0
        self.go = asyncio.Event()

    async def tokens_on(self, day: str, chat_key: str | None = None) -> int:
        self.reads += 1
        await self.go.wait()
        return self.tokens


async def test_an_old_figure_answers_at_once_and_is_read_again_beside_the_turns(
    make_app: AppFactory,
) -> None:
    async with make_app() as app:
        ledger = _SlowLedger()
        ledger.tokens, ledger.go = 7, asyncio.Event()
        budgets = Budgets(app.settings.limits, ledger, app.service.access, reread=0.05)  # type: ignore[arg-type]
        ledger.go.set()
        assert await budgets.total_today() == 7  # unknown: read before answering
        ledger.go.clear()
        ledger.tokens = 9  # another process's turn
        await asyncio.sleep(0.06)  # the figure is now old
        checks = await asyncio.gather(*(budgets.total_today() for _ in range(50)))
        assert checks == [7] * 50  # none waited for the ledger
        assert ledger.reads == 2  # one re-read for the fifty, still on its way
        ledger.go.set()
        await asyncio.sleep(0.01)
        assert await budgets.total_today() == 9  # the re-read landed


async def test_an_answer_after_the_turn_was_closed_as_interrupted_is_still_booked(
    tmp_path: Path,
) -> None:
    async with SQLiteStore(tmp_path / "h.db") as store:
        turn = await store.begin_turn(NewTurn("tg:1", "tg:1", "u", "U", "very slow", None))
        with sqlite3.connect(store.path) as raw:  # housekeeping, from another process
            raw.execute(
                "UPDATE turns SET status = 'unanswered', completed_at = 0 WHERE id = ?", (turn,)
            )
        await store.complete_turn(turn, [{"role": "assistant", "content": "x"}], USAGE_, "m")
        [row] = await store.daily_usage("2000-01-01")
        assert (row.turns, row.usage.total_tokens) == (1, 100)


async def test_a_spent_budget_is_said_once_in_a_while(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with make_app(limits={"daily_tokens_per_user": 50}) as app:
        fake_llm.script(reply("ok", usage=USAGE))
        await app.service.chat(group(), "hi")
        notices = []
        for _ in range(3):
            with pytest.raises(UserFacingError) as spent:
                await app.service.chat(group(), "more?")
            notices.append(spent.value.notify)
        assert notices == [True, False, False]
