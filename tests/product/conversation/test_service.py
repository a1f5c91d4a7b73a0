"""ChatService end to end: the real openai SDK against the test kit's fake, a real SQLite file."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from bot.app import App
from bot.context import ChatContext, Scope
from bot.conversation.service import Done, ToolFinished, ToolStarted
from bot.errors import (
    ContextTooLongError,
    LLMAuthError,
    LLMBusyError,
    LLMQuotaError,
    LLMUnavailableError,
)
from bot.llm.client import TextDelta, ToolCall
from bot.testing.fake_llm import (
    FakeLLM,
    error,
    hang,
    quota_exhausted,
    rate_limited,
    reply,
    tool_calls,
)
from tests.conftest import TEST_KEY, AppFactory, Sleeps, group, make_settings, private


def sent(fake: FakeLLM, index: int = -1) -> list[dict[str, Any]]:
    """The messages of one request as they crossed the wire."""
    messages: list[dict[str, Any]] = fake.requests[index].json["messages"]
    return messages


def contents(messages: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    return [(m["role"], m.get("content")) for m in messages]


async def test_multi_turn_history_reaches_the_model(app: App, fake_llm: FakeLLM) -> None:
    ctx = private()
    first = await app.service.chat(ctx, "my name is Ada")
    assert first.text == "echo: my name is Ada"
    await app.service.chat(ctx, "what is my name?")
    assert contents(sent(fake_llm))[1:] == [
        ("user", "my name is Ada"),
        ("assistant", "echo: my name is Ada"),
        ("user", "what is my name?"),
    ]
    assert sent(fake_llm)[0]["role"] == "system"


async def test_group_turns_keep_the_speaker(app: App, fake_llm: FakeLLM) -> None:
    await app.service.chat(group(user="1", name="Alice"), "I like tea")
    await app.service.chat(group(user="2", name="Bob [admin]"), "I like coffee")
    assert contents(sent(fake_llm))[1:] == [
        ("user", "[Alice] I like tea"),
        ("assistant", "echo: [Alice] I like tea"),
        ("user", "[Bob (admin)] I like coffee"),
    ]
    exported = [r async for r in app.store.export("telegram:-100")]
    assert [(r.get("user_name"), r["content"]) for r in exported if r["role"] == "user"] == [
        ("Alice", "I like tea"),
        ("Bob [admin]", "I like coffee"),
    ]


async def test_no_context_leaks_between_chats(app: App, fake_llm: FakeLLM) -> None:
    await app.service.chat(private(user="1"), "private secret")
    await app.service.chat(group(chat="-100"), "group A talk")
    await app.service.chat(group(chat="-200"), "group B talk")
    wire = json.dumps(sent(fake_llm))
    assert "private secret" not in wire
    assert "group A talk" not in wire
    await app.service.chat(private(user="1"), "again")
    assert "private secret" in json.dumps(sent(fake_llm))


@pytest.mark.parametrize(
    ("scope", "same_conversation"),
    [(Scope.CHAT, True), (Scope.USER, False), (Scope.THREAD, False)],
)
async def test_scopes(
    make_app: AppFactory, fake_llm: FakeLLM, scope: Scope, same_conversation: bool
) -> None:
    async with make_app(chat={"default_scope": scope.value}) as app:
        await app.service.chat(group(user="1", thread_id="t1"), "first")
        await app.service.chat(group(user="2", thread_id="t2"), "second")
    assert ("first" in json.dumps(sent(fake_llm))) is same_conversation


async def test_scope_override_is_stored_and_survives_restart(make_app: AppFactory) -> None:
    admin = group(is_admin=True)
    async with make_app() as app:
        result = await app.commands.handle(group(), "scope", "user")
        assert not result.ok
        result = await app.commands.handle(admin, "scope", "user")
        assert result.ok
    async with make_app() as app:
        assert app.service.conversation_key(group(user="7")) == "telegram:-100:u:7"


async def test_reset_is_a_soft_cut(app: App, fake_llm: FakeLLM) -> None:
    ctx = private()
    await app.service.chat(ctx, "old topic")
    result = await app.commands.handle(ctx, "reset")
    assert result.ok
    await app.service.chat(ctx, "new topic")
    assert contents(sent(fake_llm))[1:] == [("user", "new topic")]
    info = await app.service.history_info(ctx)
    assert (info.turns_stored, info.turns_in_context) == (2, 1)


async def test_clear_needs_an_admin_in_groups(app: App, fake_llm: FakeLLM) -> None:
    await app.service.chat(group(user="1"), "keep me")
    refused = await app.commands.handle(group(user="2", name="Mallory"), "clear")
    assert not refused.ok
    assert "admins" in refused.text
    assert (await app.service.history_info(group())).turns_stored == 1

    done = await app.commands.handle(group(user="9", name="Root", is_admin=True), "clear")
    assert done.ok
    assert (await app.service.history_info(group())).turns_stored == 0
    (audit,) = await app.store.clear_audit("telegram:-100")
    assert (audit["actor_id"], audit["actor_name"], audit["deleted_turns"]) == ("9", "Root", 1)


async def test_bot_admin_from_config_may_clear(make_app: AppFactory) -> None:
    async with make_app(admins=["telegram:5"]) as app:
        assert (await app.commands.handle(group(user="5"), "clear")).ok


async def test_private_user_may_clear_own_chat(app: App) -> None:
    await app.service.chat(private(), "hello")
    assert (await app.commands.handle(private(), "clear")).ok


async def test_rate_limit_twice_then_success_honours_retry_after(
    app: App, fake_llm: FakeLLM, sleeps: Sleeps
) -> None:
    fake_llm.script(rate_limited(retry_after=1.5), rate_limited(retry_after_ms=250), reply("ok"))
    answer = await app.service.chat(private(), "hi")
    assert answer.text == "ok"
    assert sleeps == [1.5, 0.25]
    assert len(fake_llm.requests) == 3


async def test_retry_after_is_really_waited(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.script(rate_limited(retry_after=0.3), reply("ok"))
    async with App(make_settings(fake_llm, tmp_path)) as app:
        await app.service.chat(private(), "hi")
    first, second = fake_llm.requests
    assert second.received_at - first.received_at >= 0.3


async def test_spent_quota_is_not_retried_and_says_so(
    app: App, fake_llm: FakeLLM, sleeps: Sleeps
) -> None:
    fake_llm.script(quota_exhausted())
    with pytest.raises(LLMQuotaError) as info:
        await app.service.chat(private(), "are you there?")
    assert info.value.chat_text == "The LLM quota is exhausted (admins: check billing)."
    assert len(fake_llm.requests) == 1
    assert sleeps == []


async def test_persistent_rate_limit_tells_users_to_retry(app: App, fake_llm: FakeLLM) -> None:
    fake_llm.script(*[rate_limited(retry_after=0.01) for _ in range(10)])
    with pytest.raises(LLMBusyError) as info:
        await app.service.chat(private(), "hi")
    assert "busy" in info.value.chat_text
    assert len(fake_llm.requests) == 10  # retry.max_rate_limited_attempts, not max_attempts


async def test_wrong_key_gives_the_auth_text(
    app: App, fake_llm: FakeLLM, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    fake_llm.api_key = "sk-the-right-key-000000000000"
    with pytest.raises(LLMAuthError) as info:
        await app.service.chat(private(), "hi")
    assert info.value.chat_text == "LLM authentication failed (admins: check the API key)."
    assert len(fake_llm.requests) == 1
    assert TEST_KEY not in str(info.value)
    assert TEST_KEY not in caplog.text
    assert fake_llm.requests[0].headers["authorization"] == f"Bearer {TEST_KEY}"


async def test_failed_turn_is_kept_and_the_next_request_is_valid(
    app: App, fake_llm: FakeLLM
) -> None:
    fake_llm.script(*[error(503) for _ in range(4)])
    with pytest.raises(LLMUnavailableError):
        await app.service.chat(private(), "lost message?")
    info = await app.service.history_info(private())
    assert (info.turns_stored, info.unanswered) == (1, 1)
    answer = await app.service.chat(private(), "second try")
    assert answer.text == "echo: second try"
    assert contents(sent(fake_llm))[1:] == [("user", "lost message?"), ("user", "second try")]


async def test_too_long_message_stores_nothing(make_app: AppFactory, fake_llm: FakeLLM) -> None:
    async with make_app(llm={"context_window": 400, "max_output_tokens": 100}) as app:
        with pytest.raises(ContextTooLongError) as info:
            await app.service.chat(private(), "word " * 500)
        assert "too long" in info.value.chat_text
        assert (await app.service.history_info(private())).turns_stored == 0
    assert fake_llm.requests == []


async def test_long_history_is_trimmed_to_fit(make_app: AppFactory, fake_llm: FakeLLM) -> None:
    fake_llm.model_context_window = 1000
    async with make_app(llm={"context_window": 1000, "max_output_tokens": 200}) as app:
        for i in range(30):
            await app.service.chat(private(), f"message number {i} " + "blah " * 30)
    last = sent(fake_llm)
    assert last[-1]["content"].startswith("message number 29")
    assert "message number 0 " not in json.dumps(last)
    assert fake_llm.requests[-1].json["max_tokens"] == 200


async def test_provider_context_limit_gets_one_smaller_retry(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    # a window cut only a little below its budget: full enough that 3,000 tokens reject it
    llm = {"context_window": 4000, "max_output_tokens": 100}
    async with make_app(llm=llm, history={"low_water": 0.95}) as app:
        for i in range(12):
            await app.service.chat(private(), f"turn {i} " + "lorem ipsum dolor " * 60)
        fake_llm.model_context_window = 3000  # the server is smaller than configured
        before = len(fake_llm.requests)
        answer = await app.service.chat(private(), "still there?")
    assert answer.text == "echo: still there?"
    assert len(fake_llm.requests) == before + 2
    assert len(sent(fake_llm)) < len(sent(fake_llm, -2))


async def test_twenty_concurrent_messages_are_twenty_ordered_turns(
    app: App, fake_llm: FakeLLM
) -> None:
    fake_llm.latency = 0.01
    ctx = private()
    replies = await asyncio.gather(*(app.service.chat(ctx, f"m{i}") for i in range(20)))
    assert [r.text for r in replies] == [f"echo: m{i}" for i in range(20)]
    records = [r async for r in app.store.export(app.service.conversation_key(ctx))]
    assert [r["content"] for r in records] == [
        text for i in range(20) for text in (f"m{i}", f"echo: m{i}")
    ]
    assert [r["turn"] for r in records[::2]] == sorted(r["turn"] for r in records[::2])
    # each request saw exactly the turns before it
    for i, request in enumerate(fake_llm.requests):
        assert len(request.json["messages"]) == 1 + 2 * i + 1
    assert len(app.service._locks) == 0


async def test_different_conversations_run_concurrently(app: App, fake_llm: FakeLLM) -> None:
    fake_llm.latency = 0.3
    await asyncio.gather(*(app.service.chat(private(user=str(i)), "hi") for i in range(10)))
    arrivals = sorted(r.received_at for r in fake_llm.requests)
    assert arrivals[-1] - arrivals[0] < 0.3  # all were in flight together


async def test_streaming_yields_deltas_then_done(app: App, fake_llm: FakeLLM) -> None:
    fake_llm.script(reply("Hello there, this is a streamed answer."))
    events = [e async for e in app.service.stream(private(), "hi")]
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(deltas) > 1
    done = events[-1]
    assert isinstance(done, Done)
    assert "".join(deltas) == done.reply.text == "Hello there, this is a streamed answer."
    assert fake_llm.requests[-1].json["stream"] is True
    assert done.reply.usage.prompt_tokens > 0
    stats = await app.store.stats(done.reply.conversation_key)
    assert stats.prompt_tokens == done.reply.usage.prompt_tokens


class AddTool:
    """A minimal stand-in for a plugin registry: one tool that adds two numbers."""

    def definitions(self, ctx: ChatContext) -> list[dict[str, Any]]:
        params = {"type": "object", "properties": {"a": {"type": "number"}}}
        return [{"type": "function", "function": {"name": "add", "parameters": params}}]

    async def run(self, ctx: ChatContext, call: ToolCall) -> str:
        try:
            args = json.loads(call.arguments)
            return str(args["a"] + args["b"])
        except (ValueError, KeyError, TypeError) as exc:
            return f"error: {exc}"


@pytest.mark.parametrize("streaming", [False, True])
async def test_tool_round_trip_is_stored_valid(
    fake_llm: FakeLLM, tmp_path: Path, streaming: bool
) -> None:
    fake_llm.script(
        tool_calls(("add", {"a": 2, "b": 3}), ("add", {"a": 1, "b": 1})), reply("5 and 2")
    )
    async with App(make_settings(fake_llm, tmp_path), tools=AddTool()) as app:
        if streaming:
            events = [e async for e in app.service.stream(private(), "add things")]
            assert [type(e) for e in events if not isinstance(e, TextDelta)] == [
                ToolStarted,
                ToolStarted,
                ToolFinished,
                ToolFinished,
                Done,
            ]
        else:
            await app.service.chat(private(), "add things")
        tool_request = sent(fake_llm)
        assert [m["content"] for m in tool_request if m["role"] == "tool"] == ["5", "2"]
        await app.service.chat(private(), "and now?")
    history = sent(fake_llm)
    assert [m["role"] for m in history[1:]] == [
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "user",
    ]


async def test_fallback_endpoint_answers_when_primary_gives_up(
    fake_llm: FakeLLM, tmp_path: Path, sleeps: Sleeps
) -> None:
    fake_llm.script(*[error(502) for _ in range(4)])
    async with FakeLLM(default_reply=lambda body: "from fallback") as backup:
        settings = make_settings(
            fake_llm,
            tmp_path,
            llm={"fallbacks": [{"base_url": backup.base_url, "model": "local-model"}]},
        )
        async with App(settings, retry_sleep=sleeps) as app:
            answer = await app.service.chat(private(), "hi")
        assert answer.text == "from fallback"
        assert backup.requests[0].json["model"] == "local-model"


async def test_history_command_reports_budget(app: App) -> None:
    await app.service.chat(private(), "hello")
    result = await app.commands.handle(private(), "history")
    assert "Conversation: this private chat" in result.text
    assert "Turns stored: 1" in result.text
    assert "126976-token budget" in result.text


async def test_empty_message_is_refused_politely(app: App) -> None:
    from bot.errors import UserFacingError

    with pytest.raises(UserFacingError, match="empty"):
        await app.service.chat(private(), "   ")


async def test_hanging_provider_times_out_with_a_clear_error(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.script(hang(), hang())
    async with make_app(llm={"timeout": 0.3, "retry": {"max_attempts": 2}}) as app:
        with pytest.raises(LLMUnavailableError) as info:
            await app.service.chat(private(), "hello?")
        assert "unavailable" in info.value.chat_text
        assert len(fake_llm.requests) == 2
        assert (await app.service.history_info(private())).unanswered == 1


async def test_unreachable_provider_is_unavailable(make_app: AppFactory) -> None:
    async with make_app(
        llm={"base_url": "http://127.0.0.1:9/v1", "retry": {"max_attempts": 2}}
    ) as app:
        with pytest.raises(LLMUnavailableError):
            await app.service.chat(private(), "anyone?")


async def test_the_first_turn_loads_the_token_encoding_off_the_event_loop(
    make_app: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Building an encoding takes 0.5-0.7 s: the loop (every other chat) must not wait on it."""
    import threading

    from bot.llm import tokens

    monkeypatch.setattr(tokens, "_COUNTERS", {})  # this process's counters, not yet loaded
    loaded_on: list[threading.Thread] = []
    encoding = tokens._encoding

    def observed(name: str) -> Any:
        loaded_on.append(threading.current_thread())
        return encoding(name)

    monkeypatch.setattr(tokens, "_encoding", observed)
    async with make_app() as app:
        assert not app.service.counter.loaded
        assert (await app.service.chat(private(), "hello")).text == "echo: hello"
        assert (await app.service.chat(private(), "again")).text == "echo: again"
    assert loaded_on and threading.main_thread() not in loaded_on
