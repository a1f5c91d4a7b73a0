"""The OpenAI-compatible chat endpoint, driven by the official openai SDK: the bot's own engine
answers (history per ``user``, tools, limits), plain and streamed, errors in OpenAI's shape."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import openai
import pytest

from bot.context import ChatContext, ChatType
from bot.scheduling.scheduler import REMINDERS_KIND
from bot.testing.fake_llm import FakeLLM, error, held, reply, tool_calls
from tests.conftest import AppFactory
from tests.http_harness import ADMIN_TOKEN, CHAT_TOKEN, Served, serve_http


@asynccontextmanager
async def client(
    make_app: AppFactory, token: str = CHAT_TOKEN, **sections: Any
) -> AsyncIterator[tuple[Served, openai.AsyncOpenAI]]:
    async with serve_http(make_app, **sections) as served:
        sdk = openai.AsyncOpenAI(base_url=served.url + "/v1", api_key=token, max_retries=0)
        try:
            yield served, sdk
        finally:
            await sdk.close()


def said(text: str) -> list[Any]:
    return [{"role": "user", "content": text}]


def upstream_texts(fake: FakeLLM) -> list[str]:
    """The contents of the newest request the bot sent to the model."""
    return [str(m.get("content")) for m in fake.chat_requests[-1].json["messages"]]  # type: ignore[index]


async def test_a_plain_answer_comes_from_the_bot_with_its_usage(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.script(reply("Hello from Parlour", usage={"prompt_tokens": 40, "cached_tokens": 32}))
    async with client(make_app) as (served, sdk):
        answer = await sdk.chat.completions.create(
            model="parlour", messages=said("hi there"), user="alice"
        )
        assert answer.object == "chat.completion" and answer.id.startswith("chatcmpl-")
        assert answer.model == "parlour"
        assert answer.choices[0].message.role == "assistant"
        assert answer.choices[0].message.content == "Hello from Parlour"
        assert answer.choices[0].finish_reason == "stop"
        assert answer.usage is not None
        assert answer.usage.prompt_tokens == 40
        assert answer.usage.total_tokens == 40 + answer.usage.completion_tokens
        assert answer.usage.prompt_tokens_details is not None
        assert answer.usage.prompt_tokens_details.cached_tokens == 32
        info = await served.app.service.history_info(_http_ctx("alice"))
        assert info.conversation_key == "http:website:alice:u:website:alice"
        assert info.turns_stored == 1
        admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        async with (
            aiohttp.ClientSession(served.url) as http,
            http.get("/api/chats", headers=admin) as r,
        ):
            (chat,) = (await r.json())["chats"]
        assert (chat["chat_key"], chat["platform"], chat["title"], chat["token"]) == (
            "http:website:alice",
            "http",
            "alice",
            "website",
        )


async def test_a_streamed_answer_arrives_in_chunks_with_a_usage_chunk(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.script(reply("One, two, three, four, five, six.", usage={"prompt_tokens": 25}))
    async with client(make_app) as (_served, sdk):
        stream = await sdk.chat.completions.create(
            model="parlour",
            messages=said("count"),
            user="bob",
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = [chunk async for chunk in stream]
    assert {c.object for c in chunks} == {"chat.completion.chunk"}
    assert len({c.id for c in chunks}) == 1
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "One, two, three, four, five, six."
    content_chunks = [c for c in chunks if c.choices and c.choices[0].delta.content]
    assert len(content_chunks) > 1  # really streamed, not one lump
    finish = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finish[-1] == "stop" and set(finish[:-1]) == {None}
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.prompt_tokens == 25


async def test_the_raw_stream_ends_with_done(make_app: AppFactory, fake_llm: FakeLLM) -> None:
    async with serve_http(make_app) as served, aiohttp.ClientSession(served.url) as http:
        body = {"model": "parlour", "messages": said("hi"), "stream": True}
        async with http.post("/v1/chat/completions", json=body, headers=_bearer()) as r:
            assert r.status == 200
            assert r.headers["Content-Type"].startswith("text/event-stream")
            raw = (await r.read()).decode()
    events = [e for e in raw.split("\n\n") if e]
    assert all(e.startswith("data: ") for e in events)
    assert events[-1] == "data: [DONE]"
    last = json.loads(events[-2].removeprefix("data: "))
    assert last["choices"][0]["finish_reason"] == "stop"  # no usage chunk unless asked


async def test_history_is_kept_per_user_and_only_the_newest_message_is_read(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.script(reply("Nice to meet you, Ann"), reply("Hi Zed"), reply("You are Ann"))
    async with client(make_app) as (_served, sdk):
        await sdk.chat.completions.create(model="parlour", messages=said("I am Ann"), user="ann")
        await sdk.chat.completions.create(model="parlour", messages=said("I am Zed"), user="zed")
        long_history = [
            {"role": "system", "content": "You are a pirate (the client's own prompt)"},
            {"role": "user", "content": "an old question the client resends"},
            {"role": "assistant", "content": "an old answer the bot never gave"},
            {"role": "user", "content": [{"type": "text", "text": "Who am I?"}]},
        ]
        answer = await sdk.chat.completions.create(
            model="parlour", messages=long_history, user="ann"
        )
    assert answer.choices[0].message.content == "You are Ann"
    sent = upstream_texts(fake_llm)
    assert "I am Ann" in sent and "Nice to meet you, Ann" in sent
    assert sent[-1].endswith("Who am I?")
    joined = "\n".join(sent)
    assert "Zed" not in joined  # another user's conversation never leaks in
    assert "pirate" not in joined and "old question" not in joined and "never gave" not in joined


async def test_the_user_header_and_then_the_token_name_name_the_person(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with client(make_app) as (served, sdk):
        await sdk.chat.completions.create(
            model="parlour", messages=said("one"), extra_headers={"X-Parlour-User": "carol"}
        )
        await sdk.chat.completions.create(model="parlour", messages=said("two"))
        carol = await served.app.service.history_info(_http_ctx("carol"))
        website = await served.app.service.history_info(_http_ctx("website"))
    assert carol.turns_stored == 1 and website.turns_stored == 1


async def test_models_are_listed(make_app: AppFactory) -> None:
    async with client(make_app) as (_served, sdk):
        models = [m async for m in sdk.models.list()]
        assert [(m.id, m.object, m.owned_by) for m in models] == [("parlour", "model", "parlour")]
        assert isinstance(models[0].created, int)
        assert (await sdk.models.retrieve("parlour")).id == "parlour"
        with pytest.raises(openai.NotFoundError) as refused:
            await sdk.models.retrieve("gpt-4o")
        assert refused.value.code == "model_not_found"


async def test_tokens_are_checked_and_an_admin_token_works_too(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with client(make_app) as (served, _sdk):
        async with aiohttp.ClientSession(served.url) as http:  # the SDK insists on a key
            body = {"model": "parlour", "messages": said("hi")}
            async with http.post("/v1/chat/completions", json=body) as r:
                assert r.status == 401
                assert (await r.json())["error"]["code"] == "invalid_api_key"
        bad = openai.AsyncOpenAI(
            base_url=served.url + "/v1", api_key="cht-wrong-wrong-wrong-wrong", max_retries=0
        )
        with pytest.raises(openai.AuthenticationError) as refused:
            await bad.chat.completions.create(model="parlour", messages=said("hi"))
        assert refused.value.code == "invalid_api_key"
        await bad.close()
        admin = openai.AsyncOpenAI(base_url=served.url + "/v1", api_key=ADMIN_TOKEN, max_retries=0)
        answer = await admin.chat.completions.create(model="parlour", messages=said("hi"))
        await admin.close()
    assert answer.choices[0].message.content == "echo: hi"
    assert len(fake_llm.chat_requests) == 1  # refused requests never reached the model


BAD_BODIES: list[tuple[object, int, str | None, str | None]] = [
    ("{not json", 400, None, None),
    ([1, 2], 400, None, "invalid_type"),
    ({"model": "parlour"}, 400, "messages", "missing_required_parameter"),
    ({"model": "parlour", "messages": []}, 400, "messages", "empty_array"),
    ({"model": "parlour", "messages": "hi"}, 400, "messages", "invalid_type"),
    ({"model": "parlour", "messages": [{"content": "x"}]}, 400, "messages[0]", "invalid_type"),
    (
        {"model": "parlour", "messages": [{"role": "system", "content": "x"}]},
        400,
        "messages",
        "invalid_value",
    ),
    (
        {"model": "parlour", "messages": [{"role": "user", "content": 5}]},
        400,
        "messages[0].content",
        "invalid_type",
    ),
    (
        {
            "model": "parlour",
            "messages": [
                {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}
            ],
        },
        400,
        "messages[0].content[0]",
        "invalid_type",
    ),
    ({"model": "parlour", "messages": said("  ")}, 400, "messages[0].content", "invalid_value"),
    ({"model": "gpt-4o", "messages": said("hi")}, 404, None, "model_not_found"),
    ({"messages": said("hi")}, 400, "model", "missing_required_parameter"),
    ({"model": "parlour", "messages": said("hi"), "n": 2}, 400, "n", "unsupported_value"),
    ({"model": "parlour", "messages": said("hi"), "stream": "yes"}, 400, "stream", "invalid_type"),
    ({"model": "parlour", "messages": said("hi"), "user": "a:b"}, 400, "user", "invalid_value"),
    ({"model": "parlour", "messages": said("hi"), "user": 7}, 400, "user", "invalid_type"),
]


async def test_bad_requests_are_refused_like_openai_and_nothing_is_stored(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with serve_http(make_app) as served, aiohttp.ClientSession(served.url) as http:
        for body, status, param, code in BAD_BODIES:
            data = body if isinstance(body, str) else json.dumps(body)
            headers = {**_bearer(), "Content-Type": "application/json"}
            async with http.post("/v1/chat/completions", data=data, headers=headers) as r:
                assert r.status == status, body
                error = (await r.json())["error"]
            assert set(error) == {"message", "type", "param", "code"}
            assert error["type"] == "invalid_request_error" and error["message"]
            assert (error["param"], error["code"]) == (param, code), body
        stored = await served.app.service.history_info(_http_ctx("website"))
    assert stored.turns_stored == 0 and fake_llm.chat_requests == []


async def test_a_body_past_the_limit_is_refused_in_openai_shape(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with (
        serve_http(make_app, http={"max_body_bytes": 2048}) as served,
        aiohttp.ClientSession(served.url) as http,
    ):
        body = {"model": "parlour", "messages": said("x" * 4096)}
        async with http.post("/v1/chat/completions", json=body, headers=_bearer()) as r:
            assert r.status == 413
            assert (await r.json())["error"]["code"] == "request_too_large"
    assert fake_llm.chat_requests == []


async def test_a_rate_limited_user_gets_a_rate_limit_error(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    limits = {"messages_per_minute": 1, "burst": 1}
    async with client(make_app, limits=limits) as (_served, sdk):
        await sdk.chat.completions.create(model="parlour", messages=said("one"), user="dan")
        with pytest.raises(openai.RateLimitError) as refused:
            await sdk.chat.completions.create(model="parlour", messages=said("two"), user="dan")
        assert refused.value.code == "rate_limit_exceeded"
        assert 1 <= int(refused.value.response.headers["Retry-After"]) <= 120
        assert "faster than I can answer" in refused.value.message
        with pytest.raises(openai.RateLimitError):  # streamed: refused before any chunk
            await sdk.chat.completions.create(
                model="parlour", messages=said("three"), user="dan", stream=True
            )
        other = await sdk.chat.completions.create(model="parlour", messages=said("hi"), user="eve")
    assert other.choices[0].message.content == "echo: hi"


async def test_access_rules_apply_to_http_users(make_app: AppFactory, fake_llm: FakeLLM) -> None:
    access = {"private_bot": True, "allow": ["http:user:website:vip"]}
    async with client(make_app, access=access) as (_served, sdk):
        with pytest.raises(openai.PermissionDeniedError) as refused:
            await sdk.chat.completions.create(model="parlour", messages=said("hi"), user="anon")
        for stream in (False, True):  # every refusal says so, not only the first of the day
            with pytest.raises(openai.PermissionDeniedError):
                await sdk.chat.completions.create(
                    model="parlour", messages=said("hi"), user="anon", stream=stream
                )
        welcome = await sdk.chat.completions.create(
            model="parlour", messages=said("hi"), user="vip"
        )
    assert refused.value.code == "access_denied"
    assert refused.value.message.endswith("Sorry, this bot is private and can't chat here.")
    assert welcome.choices[0].message.content == "echo: hi"
    assert len(fake_llm.chat_requests) == 1


async def test_a_second_message_while_the_first_is_answered_is_refused(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    gate = asyncio.Event()
    fake_llm.script(
        tool_calls(("calculate", {"expression": "3*3"}), text="Thinking."),
        held(gate, reply("Nine.")),
    )
    sections: dict[str, Any] = {"plugins": ["plugins.calculator"]}
    limits = {"one_in_flight": True, "max_queued": 0}  # none may wait behind the answer
    async with client(make_app, limits=limits, **sections) as (_served, sdk):
        stream = await sdk.chat.completions.create(
            model="parlour", messages=said("3*3?"), user="kim", stream=True
        )
        chunks = aiter(stream)
        while not ((chunk := await anext(chunks)).choices and chunk.choices[0].delta.content):
            pass  # the first words: the turn is surely in flight
        with pytest.raises(openai.RateLimitError) as busy:
            await sdk.chat.completions.create(model="parlour", messages=said("and?"), user="kim")
        gate.set()
        rest = "".join([c.choices[0].delta.content or "" async for c in chunks if c.choices])
        first = chunk.choices[0].delta.content
    assert busy.value.code == "rate_limit_exceeded"
    assert "still answering" in busy.value.message
    assert first + rest == "Thinking.\n\nNine."  # after the tools: a paragraph of its own


async def test_a_spent_budget_is_insufficient_quota(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.script(reply("costly", usage={"prompt_tokens": 500, "completion_tokens": 500}))
    async with client(make_app, limits={"daily_tokens_per_user": 100}) as (_served, sdk):
        await sdk.chat.completions.create(model="parlour", messages=said("one"), user="fay")
        with pytest.raises(openai.RateLimitError) as refused:
            await sdk.chat.completions.create(model="parlour", messages=said("two"), user="fay")
    assert refused.value.code == "insufficient_quota"
    assert len(fake_llm.chat_requests) == 1


async def test_a_tool_runs_inside_the_bot(make_app: AppFactory, fake_llm: FakeLLM) -> None:
    fake_llm.script(tool_calls(("calculate", {"expression": "6*7"})), reply("It is 42."))
    fake_llm.script(tool_calls(("calculate", {"expression": "2**10"})), reply("It is 1024."))
    async with client(make_app, plugins=["plugins.calculator"]) as (_served, sdk):
        answer = await sdk.chat.completions.create(model="parlour", messages=said("6*7?"))
        stream = await sdk.chat.completions.create(
            model="parlour", messages=said("2**10?"), stream=True
        )
        streamed = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    assert answer.choices[0].message.content == "It is 42."
    assert answer.choices[0].message.tool_calls is None  # tools stay inside the bot
    assert streamed == "It is 1024."
    tool_results = [
        m["content"]
        for m in fake_llm.chat_requests[-1].json["messages"]
        if m["role"] == "tool"  # type: ignore[index]
    ]
    assert tool_results and "1024" in tool_results[-1]


async def test_a_reminder_is_refused_where_the_bot_can_never_post_later(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    """An http chat is answered, never posted to: the reminders tool says so rather than
    promise a message that would never arrive (and stores nothing)."""
    fake_llm.script(
        tool_calls(("set_reminder", {"text": "stand up", "in_minutes": 5})),
        reply("I can't remind you here."),
    )
    async with client(make_app, plugins=["plugins.reminders"]) as (served, sdk):
        await sdk.chat.completions.create(model="parlour", messages=said("remind me in 5 min"))
        assert served.app.scheduler is not None
        pending = served.app.scheduler.pending(REMINDERS_KIND)
    results = [
        m["content"]
        for m in fake_llm.chat_requests[-1].json["messages"]
        if m["role"] == "tool"  # type: ignore[index]
    ]
    assert results == [
        "Error: reminders cannot be delivered on http: the bot can only answer there, never"
        " post later. Tell the user."
    ]
    assert pending == []


async def test_a_client_that_leaves_mid_stream_leaves_no_answered_turn(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    gate = asyncio.Event()
    fake_llm.script(
        tool_calls(("calculate", {"expression": "1+1"}), text="Let me work that out."),
        held(gate, reply("This answer is never delivered.")),
        reply("Fresh answer"),
    )
    async with client(make_app, plugins=["plugins.calculator"]) as (served, sdk):
        stream = await sdk.chat.completions.create(
            model="parlour", messages=said("1+1?"), user="gus", stream=True
        )
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                break  # the first words arrived; the client goes away
        await stream.close()
        gate.set()  # the model now answers a client that is gone
        # the next message of the same conversation waits for the first turn to end
        again = await sdk.chat.completions.create(
            model="parlour", messages=said("still there?"), user="gus"
        )
        info = await served.app.service.history_info(_http_ctx("gus"))
    assert again.choices[0].message.content == "Fresh answer"
    assert info.turns_stored == 2 and info.unanswered == 1
    sent = "\n".join(upstream_texts(fake_llm))
    assert "never delivered" not in sent


async def test_a_failing_model_is_a_clear_server_error(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.script(error(401, message="Incorrect API key provided: sk-test-***"))
    async with client(make_app) as (served, sdk):
        with pytest.raises(openai.InternalServerError) as refused:
            await sdk.chat.completions.create(model="parlour", messages=said("hi"), user="ivy")
        info = await served.app.service.history_info(_http_ctx("ivy"))
    assert refused.value.status_code == 502 and refused.value.code == "upstream_error"
    assert refused.value.body == {
        "message": "LLM authentication failed (admins: check the API key).",
        "type": "server_error",
        "param": None,
        "code": "upstream_error",
    }
    assert "sk-" not in str(refused.value.body)  # the provider's own text stays inside
    assert info.unanswered == 1  # the user's message is kept, marked unanswered


async def test_a_failure_after_the_first_chunk_is_an_error_event(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.script(
        tool_calls(("calculate", {"expression": "1+1"}), text="Let me see."),
        error(401),
    )
    async with (
        serve_http(make_app, plugins=["plugins.calculator"]) as served,
        aiohttp.ClientSession(served.url) as http,
    ):
        body = {"model": "parlour", "messages": said("1+1?"), "stream": True}
        async with http.post("/v1/chat/completions", json=body, headers=_bearer()) as r:
            assert r.status == 200  # already sent with the first chunk
            events = [e for e in (await r.read()).decode().split("\n\n") if e]
        sdk = openai.AsyncOpenAI(base_url=served.url + "/v1", api_key=CHAT_TOKEN, max_retries=0)
        fake_llm.script(tool_calls(("calculate", {"expression": "2+2"}), text="Hm."), error(401))
        stream = await sdk.chat.completions.create(
            model="parlour", messages=said("2+2?"), stream=True
        )
        with pytest.raises(openai.APIError) as failed:
            async for _chunk in stream:
                pass
        await sdk.close()
    assert "data: [DONE]" not in events
    last = json.loads(events[-1].removeprefix("data: "))
    assert last == {
        "error": {
            "message": "LLM authentication failed (admins: check the API key).",
            "type": "server_error",
            "param": None,
            "code": "upstream_error",
        }
    }
    assert "authentication failed" in failed.value.message


async def test_no_token_reaches_the_logs(
    make_app: AppFactory, fake_llm: FakeLLM, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with client(make_app, limits={"messages_per_minute": 1, "burst": 1}) as (served, sdk):
        await sdk.chat.completions.create(model="parlour", messages=said("hi"), user="hal")
        with pytest.raises(openai.RateLimitError):
            await sdk.chat.completions.create(model="parlour", messages=said("hi"), user="hal")
        bad = openai.AsyncOpenAI(
            base_url=served.url + "/v1", api_key=CHAT_TOKEN + "x", max_retries=0
        )
        with pytest.raises(openai.AuthenticationError):
            await bad.chat.completions.create(model="parlour", messages=said("hi"))
        await bad.close()
    assert "chat completion" in caplog.text  # the requests were logged, by the token's name
    assert CHAT_TOKEN not in caplog.text and ADMIN_TOKEN not in caplog.text


def _bearer(token: str = CHAT_TOKEN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _http_ctx(user: str, token: str = "website") -> ChatContext:
    """The context the endpoint makes for ``user`` of token ``token`` (adapters.http.identity)."""
    key = f"{token}:{user}"
    return ChatContext("http", key, ChatType.PRIVATE, key, user)
