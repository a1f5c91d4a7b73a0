"""Regression tests, each named after the failure it guards against (found in review)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sqlite3
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from bot.app import App
from bot.config import load_settings, secret_values, settings_from_mapping
from bot.context import ChatContext
from bot.conversation.service import Done
from bot.errors import ConfigError, LLMUnavailableError, UserFacingError
from bot.llm.client import TextDelta, ToolCall
from bot.storage.maintenance import STALE_PENDING_SECONDS
from bot.storage.sqlite import SQLiteStore
from bot.testing.fake_llm import FakeLLM, hang, reply, tool_calls
from bot.values import NewTurn, TurnStatus, Usage
from tests.conftest import AppFactory, make_settings, private
from tests.product.app.test_cli import env_for, run_cli, write_config
from tests.product.conversation.test_service import AddTool
from tests.waits import EXIT, STARTUP


async def test_interrupted_turns_are_closed_when_the_store_opens(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    async with SQLiteStore(path) as store:
        old = await store.begin_turn(NewTurn("tg:1", "tg:1", "u", "U", "from long ago", None))
        fresh = await store.begin_turn(NewTurn("tg:1", "tg:1", "u", "U", "in flight", None))
        killed = await store.begin_turn(NewTurn("tg:1", "tg:1", "u", "U", "killed", None))
    with sqlite3.connect(path) as raw:
        raw.execute(
            "UPDATE turns SET created_at = ? WHERE id = ?",
            (time.time() - STALE_PENDING_SECONDS - 1, old),
        )
        # Rows of an unknown process (written before schema 10, or by another host).
        raw.execute("UPDATE turns SET owner = NULL WHERE id IN (?, ?)", (old, fresh))
    async with SQLiteStore(path) as neighbour:  # a live process sharing the file
        live = await neighbour.begin_turn(NewTurn("tg:2", "tg:2", "u", "U", "live", None))
        async with SQLiteStore(path) as store:
            statuses = {t.turn_id: t.status for t in await store.load_window("tg:1", 10)}
            # The process that began ``killed`` is gone: closed at once, not after 15 minutes.
            assert statuses == {
                old: TurnStatus.UNANSWERED,
                fresh: TurnStatus.PENDING,
                killed: TurnStatus.UNANSWERED,
            }
            [other] = await store.load_window("tg:2", 10)
            assert (other.turn_id, other.status) == (live, TurnStatus.PENDING)
            # Unknown owner, soon after: housekeeping closes it once it is old enough.
            assert await store.close_interrupted_turns() == 0
            with sqlite3.connect(path) as raw:
                raw.execute(
                    "UPDATE turns SET created_at = ? WHERE id = ?",
                    (time.time() - STALE_PENDING_SECONDS - 1, fresh),
                )
            assert await store.close_interrupted_turns() == 1
            statuses = {t.turn_id: t.status for t in await store.load_window("tg:1", 10)}
            assert set(statuses.values()) == {TurnStatus.UNANSWERED}
            with sqlite3.connect(path) as raw:
                errors = raw.execute("SELECT DISTINCT error FROM turns WHERE conv_key = 'tg:1'")
                assert errors.fetchall() == [("interrupted",)]
        await neighbour.complete_turn(live, [{"role": "assistant", "content": "ok"}], Usage(), "m")


async def test_truncated_tool_calls_are_never_run(fake_llm: FakeLLM, tmp_path: Path) -> None:
    # The fake cuts the call's JSON at max_tokens, as a model does, with finish_reason "length".
    fake_llm.script(tool_calls(("add", {"a": 2, "b": 3, "note": "padding " * 60})))
    ran: list[str] = []

    class Recording(AddTool):
        async def run(self, ctx: ChatContext, call: ToolCall) -> str:
            ran.append(call.arguments)
            return await super().run(ctx, call)

    settings = make_settings(fake_llm, tmp_path, llm={"max_output_tokens": 20})
    async with App(settings, tools=Recording()) as app:
        answer = await app.service.chat(private(), "add")
        assert fake_llm.requests[0].json["max_tokens"] == 20
        assert ran == []
        assert answer.text
        assert answer.truncated
        await app.service.chat(private(), "next")  # the stored history is valid for the API


async def test_a_stream_that_ends_early_is_an_error(tmp_path: Path) -> None:
    async def cut_off(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        chunk = (
            '{"id":"c","object":"chat.completion.chunk","created":1,"model":"m",'
            '"choices":[{"index":0,"delta":{"role":"assistant","content":"Hello partial"},'
            '"finish_reason":null}]}'
        )
        await response.write(f"data: {chunk}\n\n".encode())
        return response  # connection closes: no finish_reason, no [DONE]

    server = web.Application()
    server.router.add_post("/v1/chat/completions", cut_off)
    runner = web.AppRunner(server)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        settings = settings_from_mapping(
            {
                "llm": {"base_url": f"http://127.0.0.1:{port}/v1", "retry": {"max_attempts": 1}},
                "storage": {"path": str(tmp_path / "h.db")},
            }
        )
        async with App(settings) as app:
            with pytest.raises(LLMUnavailableError):
                async for _ in app.service.stream(private(), "hi"):
                    pass
            info = await app.service.history_info(private())
            assert (info.turns_stored, info.unanswered) == (1, 1)
    finally:
        await runner.cleanup()


async def test_stopping_at_done_does_not_lock_the_conversation(app: App) -> None:
    events = app.service.stream(private(), "first")
    async for event in events:
        if isinstance(event, Done):
            break  # the generator is left open on purpose
    answer = await asyncio.wait_for(app.service.chat(private(), "second"), timeout=5)
    assert answer.text == "echo: second"
    await events.aclose()  # type: ignore[attr-defined]


async def test_streamed_text_matches_stored_answer(app: App, fake_llm: FakeLLM) -> None:
    fake_llm.script(reply("part one, part two"))
    text = ""
    async with contextlib.aclosing(app.service.stream(private(), "hi")) as events:  # type: ignore[type-var]
        async for event in events:
            if isinstance(event, TextDelta):
                text += event.text
    exported = [r async for r in app.store.export("telegram:1:u:1")]
    assert exported[-1]["content"] == text == "part one, part two"


async def test_max_input_chars_is_enforced(make_app: AppFactory, fake_llm: FakeLLM) -> None:
    async with make_app(chat={"max_input_chars": 100}) as app:
        with pytest.raises(UserFacingError) as info:
            await app.service.chat(private(), "x" * 101)
        assert "limit is 100" in info.value.chat_text
    assert fake_llm.requests == []


def test_yaml_errors_do_not_echo_the_line(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("llm:\n  model: [gsk_live_SECRET1234567890: oops\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_settings(path)
    assert "gsk_live" not in str(info.value)
    assert "line" in str(info.value)


def test_credentials_in_urls_are_refused_and_query_keys_are_secret() -> None:
    with pytest.raises(ConfigError, match="credentials"):
        settings_from_mapping({"llm": {"base_url": "http://user:pw@127.0.0.1/v1"}})
    settings = settings_from_mapping(
        {"llm": {"base_url": "http://127.0.0.1/v1?api-key=gw-secret-123456"}}
    )
    assert "gw-secret-123456" in secret_values(settings)


def test_empty_variable_is_not_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMPTY_PROMPT", "")
    monkeypatch.delenv("UNSET_MODEL", raising=False)
    settings = settings_from_mapping(
        {"chat": {"system_prompt": "${EMPTY_PROMPT}"}, "llm": {"model": "${UNSET_MODEL:-m1}"}}
    )
    assert settings.chat.system_prompt == ""
    assert settings.llm.model == "m1"


async def test_config_path_that_is_a_directory(tmp_path: Path) -> None:
    code, _, err = await run_cli("--config", str(tmp_path), "check-config", env=env_for(tmp_path))
    assert code == 2
    assert "cannot read config file" in err
    assert "Traceback" not in err


async def test_export_to_an_unwritable_place(fake_llm: FakeLLM, tmp_path: Path) -> None:
    write_config(tmp_path)
    env = env_for(tmp_path, OPENAI_BASE_URL=fake_llm.base_url)
    await run_cli("chat", env=env, stdin="hello\n")
    key = (await run_cli("history", "list", env=env))[1].split("\t")[0]
    target = tmp_path / "missing-dir" / "out.jsonl"
    code, _, err = await run_cli("history", "export", key, "-o", str(target), env=env)
    assert code == 1
    assert err.startswith("error:")
    assert "Traceback" not in err


@pytest.fixture
async def hanging_llm() -> AsyncIterator[FakeLLM]:
    async with FakeLLM() as fake:
        fake.script(hang())
        yield fake


@pytest.mark.slow
async def test_second_signal_stops_a_chat_stuck_on_the_model(
    hanging_llm: FakeLLM, tmp_path: Path
) -> None:
    write_config(tmp_path)
    env = env_for(tmp_path, OPENAI_BASE_URL=hanging_llm.base_url)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        "chat",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    assert proc.stdin is not None
    proc.stdin.write(b"are you stuck?\n")
    await proc.stdin.drain()
    deadline = time.monotonic() + STARTUP
    while not hanging_llm.requests and time.monotonic() < deadline:  # noqa: ASYNC110 (no event)
        await asyncio.sleep(0.05)
    assert hanging_llm.requests, "the bot never called the model"
    proc.send_signal(signal.SIGTERM)
    await asyncio.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    await asyncio.wait_for(proc.communicate(), timeout=EXIT)
    async with SQLiteStore(tmp_path / "bot.db") as store:
        (key, _), *_ = await store.conversations()
        (turn,) = await store.load_window(key, 5)
    assert turn.status is TurnStatus.UNANSWERED
    assert turn.messages[0]["content"] == "are you stuck?"
