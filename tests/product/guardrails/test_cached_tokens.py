"""Cached input tokens: read from what providers report (OpenAI's ``prompt_tokens_details``,
DeepSeek's ``prompt_cache_hit_tokens``), booked in the ledger, shown by ``usage`` and /usage."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path

import pytest

from bot.app import App
from bot.config.storage_url import parse_storage_url
from bot.context import ChatContext
from bot.guardrails.budgets import utc_day
from bot.storage.postgres.migrations import CORE_STEPS, create_schema, migrate
from bot.storage.sqlite import SQLiteStore
from bot.storage.sqlite.migrations import MIGRATIONS
from bot.testing.fake_llm import FakeLLM, reply
from bot.values import NewTurn, Usage
from tests import postgres_support
from tests.conftest import AppFactory, private
from tests.product.app.test_cli import SECRET, env_for, run_cli, write_config
from tests.product.guardrails.test_limits import USAGE_COLUMNS

# About 1,500 tokens of a first message: from the second turn on the prompt starts with more
# than the 1,024 tokens a provider cache needs, and the fake reports a cached prefix.
LONG = " ".join(f"fact{n} is kept" for n in range(500))


async def _talk(app: App, ctx: ChatContext, turns: int) -> None:
    await app.service.chat(ctx, f"remember these: {LONG}")
    for n in range(turns - 1):
        await app.service.chat(ctx, f"question {n}")


async def _streamed(app: App, ctx: ChatContext, text: str) -> None:
    async with contextlib.aclosing(app.service.stream(ctx, text)) as events:
        async for _ in events:
            pass


async def test_the_fakes_cached_tokens_are_booked_and_shown_by_usage(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with make_app() as app:
        await _talk(app, private(), 3)
        await _streamed(app, private(), "and one streamed")  # the usage chunk carries it too
        reported = [r.cached_tokens for r in fake_llm.chat_requests]
        assert reported[0] == 0 and all(n is not None and n >= 1024 for n in reported[1:])
        prompts = sum(r.usage["prompt_tokens"] for r in fake_llm.chat_requests if r.usage)
        cached = sum(n or 0 for n in reported)
        [row] = await app.store.daily_usage(utc_day())
        assert (row.usage.prompt_tokens, row.usage.cached_tokens) == (prompts, cached)
        text = (await app.commands.handle(private(), "usage")).text
    share = int(cached * 100 / prompts)
    assert f"Your input: {prompts:,} tokens, of them cached: {share} %." in text
    assert 50 <= share < 100


async def test_usage_shows_no_cached_share_without_input(make_app: AppFactory) -> None:
    async with make_app() as app:
        text = (await app.commands.handle(private(), "usage")).text
    assert text == "You used 0 tokens today (UTC) of a 200,000-token daily budget."


@pytest.mark.parametrize("streaming", [False, True])
async def test_deepseeks_prompt_cache_hit_tokens_are_read_too(
    make_app: AppFactory, fake_llm: FakeLLM, streaming: bool
) -> None:
    deepseek = {"prompt_tokens": 2000, "cached_tokens": 0, "prompt_cache_hit_tokens": 1792}
    fake_llm.script(reply("ok", usage=deepseek))
    async with make_app() as app:
        if streaming:
            await _streamed(app, private(), "hello")
        else:
            await app.service.chat(private(), "hello")
        [row] = await app.store.daily_usage(utc_day())
    assert fake_llm.chat_requests[0].usage == {
        **fake_llm.chat_requests[0].usage,
        "prompt_cache_hit_tokens": 1792,  # sent as DeepSeek does, beside OpenAI's fields
    }
    assert row.usage == Usage(2000, row.usage.completion_tokens, 1792)


async def test_a_cached_count_past_the_prompt_is_clamped(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.script(reply("ok", usage={"prompt_tokens": 100, "cached_tokens": 5000}))
    async with make_app() as app:
        await app.service.chat(private(), "hello")
        [row] = await app.store.daily_usage(utc_day())
    assert (row.usage.prompt_tokens, row.usage.cached_tokens) == (100, 100)
    assert Usage(10, 1, -5).cached_tokens == 0 and Usage(10, 1, 50).cached_tokens == 10


@pytest.mark.slow
async def test_the_usage_command_prints_cached_tokens(fake_llm: FakeLLM, tmp_path: Path) -> None:
    write_config(tmp_path)
    fake_llm.script(
        reply("one", usage={"prompt_tokens": 2000, "completion_tokens": 10, "cached_tokens": 0}),
        reply("two", usage={"prompt_tokens": 2100, "completion_tokens": 10, "cached_tokens": 1536}),
    )
    env = env_for(tmp_path, OPENAI_BASE_URL=fake_llm.base_url, OPENAI_API_KEY=SECRET)
    code, _out, err = await run_cli("chat", env=env, stdin="first\nsecond\n")
    assert code == 0, err
    code, out, err = await run_cli("usage", env=env)
    assert code == 0, err
    header, row = out.splitlines()
    assert header.split() == USAGE_COLUMNS
    assert row.split()[-5:] == ["2", "4100", "1536", "20", "4120"]
    code, out, err = await run_cli("usage", "--json", env=env)
    assert code == 0, err
    [record] = [json.loads(line) for line in out.splitlines()]
    assert (record["prompt_tokens"], record["cached_tokens"]) == (4100, 1536)
    assert record["cached_share"] == round(1536 / 4100, 4)
    assert record["total_tokens"] == 4120  # cached input is part of the prompt, not extra


def _v13_ledger(raw: sqlite3.Connection) -> None:
    raw.execute(
        "INSERT INTO usage_daily (day, chat_key, user_id, user_name, turns, prompt_tokens,"
        " completion_tokens) VALUES (?, 'tg:1', 'u1', 'U', 1, 40, 2)",
        (utc_day(),),
    )


async def test_sqlite_14_keeps_the_ledger_and_books_cached_tokens(tmp_path: Path) -> None:
    path = tmp_path / "v13.db"
    with sqlite3.connect(path) as raw:
        for script in MIGRATIONS[:13]:
            raw.executescript(script)
        raw.execute("PRAGMA user_version = 13")
        _v13_ledger(raw)
    async with SQLiteStore(path) as store:
        [before] = await store.daily_usage(utc_day())
        turn_id = await store.begin_turn(NewTurn("tg:1", "tg:1", "u1", "U", "new"))
        answer = [{"role": "assistant", "content": "a"}]
        await store.complete_turn(turn_id, answer, Usage(2000, 3, 1920), "m")
        [after] = await store.daily_usage(utc_day())
    assert before.usage == Usage(40, 2)
    assert (after.turns, after.usage) == (2, Usage(2040, 5, 1920))


@pytest.mark.skipif(postgres_support.pg_base_url() is None, reason=postgres_support.HOW_TO_RUN)
async def test_postgres_core_3_keeps_the_ledger_and_books_cached_tokens() -> None:
    import asyncpg

    from bot.storage.postgres import PostgresStore

    parsed = parse_storage_url(postgres_support.fresh_pg_url())
    assert parsed.dsn is not None and parsed.schema is not None
    conn = await asyncpg.connect(parsed.dsn)
    try:
        await create_schema(conn, parsed.schema)
        await conn.execute(f'SET search_path TO "{parsed.schema}"')
        await migrate(conn, [("core", CORE_STEPS[:2])])
        await conn.execute(
            "INSERT INTO usage_daily (day, chat_key, user_id, user_name, turns, prompt_tokens,"
            " completion_tokens) VALUES ($1, 'tg:1', 'u1', 'U', 1, 40, 2)",
            utc_day(),
        )
    finally:
        await conn.close()
    async with PostgresStore(parsed.dsn, schema=parsed.schema) as store:
        [before] = await store.daily_usage(utc_day())
        turn_id = await store.begin_turn(NewTurn("tg:1", "tg:1", "u1", "U", "new"))
        answer = [{"role": "assistant", "content": "a"}]
        await store.complete_turn(turn_id, answer, Usage(2000, 3, 1920), "m")
        [after] = await store.daily_usage(utc_day())
    assert before.usage == Usage(40, 2)
    assert (after.turns, after.usage) == (2, Usage(2040, 5, 1920))
