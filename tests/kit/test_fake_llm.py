"""The fake OpenAI server, driven by the real ``openai`` SDK: its answers must parse as in prod."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import openai
import pytest
import pytest_asyncio

from bot.llm.tokens import get_counter
from bot.testing import (
    FakeLLM,
    delay,
    error,
    hang,
    held,
    quota_exhausted,
    rate_limited,
    reply,
    tool_calls,
)
from bot.testing.fake_llm import default_transcript

MODEL = "gpt-4o-mini"
ROOT = Path(__file__).resolve().parents[2]  # tests/kit/ -> the project
USER: list[Any] = [{"role": "user", "content": "hello there"}]


@pytest_asyncio.fixture
async def client(fake_llm: FakeLLM) -> AsyncIterator[openai.AsyncOpenAI]:
    async with openai.AsyncOpenAI(
        base_url=fake_llm.base_url, api_key="sk-test", max_retries=0
    ) as sdk:
        yield sdk


async def test_plain_completion_counts_usage(fake_llm: FakeLLM, client: openai.AsyncOpenAI) -> None:
    raw = await client.chat.completions.with_raw_response.create(model=MODEL, messages=USER)
    completion = raw.parse()

    assert raw.headers["x-request-id"].startswith("req_")
    assert raw.headers["content-type"] == "application/json"
    assert completion.id.startswith("chatcmpl-")
    assert completion.object == "chat.completion"
    assert completion.model == MODEL
    choice = completion.choices[0]
    assert choice.finish_reason == "stop"
    assert choice.message.role == "assistant"
    assert choice.message.content == "echo: hello there"
    assert choice.message.refusal is None
    assert choice.message.tool_calls is None
    usage = completion.usage
    assert usage is not None
    assert usage.prompt_tokens == get_counter(MODEL).count_messages(USER)
    assert usage.completion_tokens == get_counter(MODEL).count_text("echo: hello there")
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens


async def test_scripted_replies_are_used_in_order_then_default(
    fake_llm: FakeLLM, client: openai.AsyncOpenAI
) -> None:
    fake_llm.script(reply("one"), reply("two", usage={"prompt_tokens": 5000}))
    texts = []
    for _ in range(3):
        done = await client.chat.completions.create(model=MODEL, messages=USER)
        texts.append(done.choices[0].message.content)
        if texts[-1] == "two":
            assert done.usage is not None
            assert done.usage.prompt_tokens == 5000
    assert texts == ["one", "two", "echo: hello there"]
    assert fake_llm.pending_scripts == 0


async def test_default_reply_callable(fake_llm: FakeLLM, client: openai.AsyncOpenAI) -> None:
    fake_llm.default_reply = lambda body: f"{len(body['messages'])} messages"
    done = await client.chat.completions.create(model=MODEL, messages=USER)
    assert done.choices[0].message.content == "1 messages"


async def test_streaming_text_with_usage(fake_llm: FakeLLM, client: openai.AsyncOpenAI) -> None:
    text = "The quick brown fox jumps over the lazy dog, twice."
    fake_llm.script(reply(text))
    stream = await client.chat.completions.create(
        model=MODEL, messages=USER, stream=True, stream_options={"include_usage": True}
    )
    chunks = [chunk async for chunk in stream]

    assert all(c.object == "chat.completion.chunk" for c in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    pieces = [
        c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content
    ]
    assert len(pieces) > 3
    assert "".join(pieces) == text
    finals = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finals[-1] == "stop"
    assert all(f is None for f in finals[:-1])
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens == get_counter(MODEL).count_text(text)


async def test_streaming_without_include_usage_sends_no_usage(
    fake_llm: FakeLLM, client: openai.AsyncOpenAI
) -> None:
    stream = await client.chat.completions.create(model=MODEL, messages=USER, stream=True)
    chunks = [chunk async for chunk in stream]
    assert all(c.usage is None and c.choices for c in chunks)


async def test_streamed_tool_calls_assemble_by_index(
    fake_llm: FakeLLM, client: openai.AsyncOpenAI
) -> None:
    fake_llm.script(
        tool_calls(("get_weather", {"city": "Paris", "unit": "celsius"}), ("lookup", "{bad json"))
    )
    stream = await client.chat.completions.create(model=MODEL, messages=USER, stream=True)
    calls: dict[int, dict[str, str]] = {}
    finish = None
    async for chunk in stream:
        for choice in chunk.choices:
            finish = choice.finish_reason or finish
            for delta in choice.delta.tool_calls or []:
                call = calls.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
                if delta.id:
                    call["id"] = delta.id
                if delta.function and delta.function.name:
                    call["name"] += delta.function.name
                if delta.function and delta.function.arguments:
                    call["arguments"] += delta.function.arguments

    assert finish == "tool_calls"
    assert calls[0]["id"] == "call_1"
    assert calls[0]["name"] == "get_weather"
    assert json.loads(calls[0]["arguments"]) == {"city": "Paris", "unit": "celsius"}
    assert calls[1] == {"id": "call_2", "name": "lookup", "arguments": "{bad json"}


async def test_tool_calls_non_streamed(fake_llm: FakeLLM, client: openai.AsyncOpenAI) -> None:
    fake_llm.script(tool_calls(("ping", {}), text="let me check"))
    done = await client.chat.completions.create(model=MODEL, messages=USER)
    choice = done.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "let me check"
    assert choice.message.tool_calls is not None
    call = choice.message.tool_calls[0]
    assert call.type == "function"
    assert (call.id, call.function.name, call.function.arguments) == ("call_1", "ping", "{}")


async def test_max_tokens_truncates_with_finish_reason_length(
    fake_llm: FakeLLM, client: openai.AsyncOpenAI
) -> None:
    fake_llm.script(reply("word " * 50))
    done = await client.chat.completions.create(model=MODEL, messages=USER, max_tokens=5)
    assert done.choices[0].finish_reason == "length"
    assert done.usage is not None
    assert done.usage.completion_tokens == 5
    content = done.choices[0].message.content or ""
    assert 0 < get_counter(MODEL).count_text(content) <= 5


async def test_a_server_that_ignores_max_tokens_answers_in_full(
    fake_llm: FakeLLM, client: openai.AsyncOpenAI
) -> None:
    fake_llm.ignore_max_tokens = True
    huge = "word " * 5_000  # 5,000 tokens where 5 were asked for (a runaway answer)
    fake_llm.script(reply(huge), reply(huge), reply(huge))
    done = await client.chat.completions.create(model=MODEL, messages=USER, max_tokens=5)
    assert done.choices[0].finish_reason == "stop"
    assert done.choices[0].message.content == huge
    assert done.usage is not None and done.usage.completion_tokens > 5

    stream = await client.chat.completions.create(
        model=MODEL, messages=USER, max_tokens=5, stream=True
    )
    parts = [c.choices[0].delta.content or "" async for c in stream if c.choices]
    assert "".join(parts) == huge
    assert not fake_llm.chat_requests[-1].disconnected

    fake_llm.stream_interval = 0.01  # still streaming (for a minute) when the client hangs up
    stream = await client.chat.completions.create(
        model=MODEL, messages=USER, max_tokens=5, stream=True
    )
    async for _ in stream:
        break
    await stream.close()  # a client that hangs up on a runaway answer
    await asyncio.sleep(0.2)
    assert fake_llm.chat_requests[-1].disconnected
    assert fake_llm.chat_requests[-1].json["max_tokens"] == 5


async def test_rate_limited_surfaces_retry_after(
    fake_llm: FakeLLM, client: openai.AsyncOpenAI
) -> None:
    fake_llm.script(rate_limited(retry_after=7))
    with pytest.raises(openai.RateLimitError) as caught:
        await client.chat.completions.create(model=MODEL, messages=USER)
    err = caught.value
    assert err.status_code == 429
    assert err.code == "rate_limit_exceeded"
    assert err.response.headers["retry-after"] == "7"
    assert err.response.headers["content-type"] == "application/json"
    assert err.request_id is not None and err.request_id.startswith("req_")
    assert "x-should-retry" not in err.response.headers


async def test_sdk_retries_after_retry_after_ms(fake_llm: FakeLLM) -> None:
    fake_llm.script(rate_limited(retry_after_ms=20), reply("made it"))
    async with openai.AsyncOpenAI(
        base_url=fake_llm.base_url, api_key="sk-test", max_retries=1
    ) as sdk:
        done = await sdk.chat.completions.create(model=MODEL, messages=USER)
    assert done.choices[0].message.content == "made it"
    assert len(fake_llm.chat_requests) == 2


async def test_should_retry_header_only_when_asked(
    fake_llm: FakeLLM, client: openai.AsyncOpenAI
) -> None:
    fake_llm.script(error(500), error(503, should_retry=False, headers={"x-custom": "1"}))
    with pytest.raises(openai.InternalServerError) as first:
        await client.chat.completions.create(model=MODEL, messages=USER)
    assert "x-should-retry" not in first.value.response.headers
    assert first.value.type == "server_error"
    with pytest.raises(openai.InternalServerError) as second:
        await client.chat.completions.create(model=MODEL, messages=USER)
    assert second.value.response.headers["x-should-retry"] == "false"
    assert second.value.response.headers["x-custom"] == "1"


async def test_quota_exhausted_is_not_a_plain_rate_limit(
    fake_llm: FakeLLM, client: openai.AsyncOpenAI
) -> None:
    fake_llm.script(quota_exhausted())
    with pytest.raises(openai.RateLimitError) as caught:
        await client.chat.completions.create(model=MODEL, messages=USER)
    assert caught.value.code == "insufficient_quota"
    assert caught.value.type == "insufficient_quota"
    assert "exceeded your current quota" in caught.value.message


async def test_wrong_key_is_rejected_without_echoing_it(fake_llm: FakeLLM) -> None:
    fake_llm.api_key = "sk-right-key-0123456789"
    wrong = "sk-wrong-key-abcdefghijklmnop"
    async with openai.AsyncOpenAI(base_url=fake_llm.base_url, api_key=wrong, max_retries=0) as sdk:
        with pytest.raises(openai.AuthenticationError) as caught:
            await sdk.chat.completions.create(model=MODEL, messages=USER)
    err = caught.value
    assert err.code == "invalid_api_key"
    assert wrong not in str(err) and wrong not in json.dumps(err.body)
    assert "Incorrect API key provided: sk-wro" in err.message
    assert "***" in err.message

    async with openai.AsyncOpenAI(
        base_url=fake_llm.base_url, api_key=fake_llm.api_key, max_retries=0
    ) as sdk:
        done = await sdk.chat.completions.create(model=MODEL, messages=USER)
    assert done.choices[0].message.content == "echo: hello there"


ASSISTANT_CALL: dict[str, Any] = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {"id": "call_x", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    ],
}


async def test_orphan_tool_message_is_400(client: openai.AsyncOpenAI) -> None:
    messages = [*USER, {"role": "tool", "tool_call_id": "call_zzz", "content": "42"}]
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(model=MODEL, messages=messages)
    assert caught.value.status_code == 400
    assert "must be a response to a preceeding message with 'tool_calls'" in caught.value.message
    assert caught.value.param == "messages.[1].role"


async def test_unanswered_tool_calls_name_the_id(client: openai.AsyncOpenAI) -> None:
    messages = [*USER, ASSISTANT_CALL, {"role": "user", "content": "and?"}]
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(model=MODEL, messages=messages)
    assert "did not have response messages: call_x" in caught.value.message
    assert caught.value.type == "invalid_request_error"


async def test_answered_tool_calls_are_accepted(client: openai.AsyncOpenAI) -> None:
    messages = [*USER, ASSISTANT_CALL, {"role": "tool", "tool_call_id": "call_x", "content": "1"}]
    done = await client.chat.completions.create(model=MODEL, messages=messages)
    assert done.choices[0].finish_reason == "stop"


async def test_invalid_name_is_400(client: openai.AsyncOpenAI) -> None:
    messages: list[Any] = [{"role": "user", "name": "Ann Lee", "content": "hi"}]
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(model=MODEL, messages=messages)
    assert caught.value.param == "messages.[0].name"
    assert "does not match pattern" in caught.value.message


def _function(name: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


REFUSED_AT_TOP = (
    "schema must have type 'object' and not have 'oneOf'/'anyOf'/'allOf'/'enum'/'not' at the "
    "top level."
)


@pytest.mark.parametrize(
    ("parameters", "detail"),
    [
        ({"type": "object", "anyOf": [{"required": ["a"]}, {"required": ["b"]}]}, REFUSED_AT_TOP),
        ({"oneOf": [{"type": "object"}]}, REFUSED_AT_TOP),
        ({"type": "object", "allOf": [{"required": ["a"]}]}, REFUSED_AT_TOP),
        ({"type": "object", "enum": [{}]}, REFUSED_AT_TOP),
        ({"type": "object", "not": {"required": ["a"]}}, REFUSED_AT_TOP),
        ({"type": "object", "properties": ["a", "b"]}, "['a', 'b'] is not of type 'object'."),
        ({"type": "array"}, "schema must be a JSON Schema of 'type: \"object\"', got "
         "'type: \"array\"'."),
    ],
)  # fmt: skip
async def test_function_schemas_the_api_refuses_are_400(
    fake_llm: FakeLLM, client: openai.AsyncOpenAI, parameters: dict[str, Any], detail: str
) -> None:
    fake_llm.script(reply("never sent"))
    tools: Any = [_function("fine", {"type": "object"}), _function("pick", parameters)]
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(model=MODEL, messages=USER, tools=tools)
    assert caught.value.status_code == 400
    body: Any = caught.value.body
    assert body["message"] == f"Invalid schema for function 'pick': {detail}"
    assert caught.value.param == "tools[1].function.parameters"
    assert caught.value.code == "invalid_function_parameters"
    assert fake_llm.pending_scripts == 1


async def test_combinators_below_the_top_are_accepted(
    fake_llm: FakeLLM, client: openai.AsyncOpenAI
) -> None:
    nested = {
        "type": "object",
        "properties": {"size": {"anyOf": [{"type": "integer"}, {"enum": ["auto"]}]}},
    }
    tools: Any = [_function("resize", nested)]
    done = await client.chat.completions.create(model=MODEL, messages=USER, tools=tools)
    assert done.choices[0].finish_reason == "stop"


def _req(**extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "messages": USER, **extra}


def _one(message: dict[str, Any]) -> dict[str, Any]:
    return {"model": MODEL, "messages": [message]}


NAMELESS_TOOL = {"type": "function", "function": {"name": "a b"}}


@pytest.mark.parametrize(
    ("body", "param", "code"),
    [
        ({"messages": USER}, None, None),
        ({"model": MODEL}, "messages", "missing_required_parameter"),
        ({"model": MODEL, "messages": []}, "messages", "empty_array"),
        (_one({"role": "bot", "content": "x"}), "messages.[0].role", "invalid_value"),
        (_one({"role": "user", "content": 3}), "messages.[0].content", "invalid_type"),
        (_one({"role": "user", "content": None}), "messages.[0].content", None),
        (_one({"role": "assistant", "content": None}), "messages.[0].content", None),
        (_one({"role": "system"}), "messages.[0].content", "missing_required_parameter"),
        (_one({"role": "tool", "content": "x"}), "messages.[0].tool_call_id",
         "missing_required_parameter"),
        (_one({"role": "user", "content": [{"type": "text"}]}), "messages.[0].content.[0].text",
         "missing_required_parameter"),
        (_one({"role": "user", "name": "x" * 65, "content": "hi"}), "messages.[0].name",
         "string_above_max_length"),
        (_req(max_tokens=0), "max_tokens", "integer_below_min_value"),
        (_req(max_completion_tokens="9"), "max_completion_tokens", "invalid_type"),
        (_req(temperature=2.5), "temperature", "decimal_above_max_value"),
        (_req(temperature=-1), "temperature", "decimal_below_min_value"),
        (_req(stream_options={"include_usage": True}), "stream_options", None),
        (_req(tools={}), "tools", "invalid_type"),
        (_req(tools=[{"type": "function"}]), "tools.[0].function", "missing_required_parameter"),
        (_req(tools=[NAMELESS_TOOL]), "tools.[0].function.name", "invalid_value"),
        (_req(tool_choice="auto"), "tool_choice", None),
    ],
)  # fmt: skip
async def test_validation_errors(
    fake_llm: FakeLLM, body: dict[str, Any], param: str | None, code: str | None
) -> None:
    fake_llm.script(reply("never sent"))
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{fake_llm.base_url}/chat/completions", json=body) as response,
    ):
        payload = await response.json()
    assert response.status == 400
    assert response.headers["content-type"] == "application/json"
    assert set(payload) == {"error"}
    assert payload["error"]["type"] == "invalid_request_error"
    assert (payload["error"]["param"], payload["error"]["code"]) == (param, code)
    assert payload["error"]["message"]
    assert fake_llm.pending_scripts == 1  # a rejected request consumes no script


async def test_body_that_is_not_json_is_400(fake_llm: FakeLLM) -> None:
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{fake_llm.base_url}/chat/completions", data=b"{nope") as response,
    ):
        payload = await response.json()
    assert response.status == 400
    assert "could not parse the JSON body" in payload["error"]["message"]
    assert fake_llm.requests[-1].json is None
    assert fake_llm.requests[-1].body == b"{nope"


async def test_context_length_exceeded(fake_llm: FakeLLM, client: openai.AsyncOpenAI) -> None:
    prompt = get_counter(MODEL).count_messages(USER)
    fake_llm.model_context_window = prompt + 10
    done = await client.chat.completions.create(model=MODEL, messages=USER, max_tokens=10)
    assert done.choices[0].message.content

    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(model=MODEL, messages=USER, max_tokens=11)
    assert caught.value.code == "context_length_exceeded"
    assert caught.value.param == "messages"
    assert f"maximum context length is {prompt + 10} tokens" in caught.value.message
    assert f"({prompt} in the messages, 11 in the completion)" in caught.value.message

    fake_llm.model_context_window = prompt - 1
    with pytest.raises(openai.BadRequestError) as plain:
        await client.chat.completions.create(model=MODEL, messages=USER)
    assert f"your messages resulted in {prompt} tokens" in plain.value.message


async def test_every_request_is_recorded(fake_llm: FakeLLM, client: openai.AsyncOpenAI) -> None:
    await client.chat.completions.create(model=MODEL, messages=USER, temperature=0.3)
    await client.models.list()
    first, second = fake_llm.requests
    assert (first.method, first.path) == ("POST", "/v1/chat/completions")
    assert first.json == {"model": MODEL, "messages": USER, "temperature": 0.3}
    assert first.headers["authorization"] == "Bearer sk-test"
    assert (second.method, second.path, second.json) == ("GET", "/v1/models", None)
    assert first.received_at <= second.received_at


async def test_models_and_paths_without_v1(fake_llm: FakeLLM) -> None:
    root = fake_llm.base_url.removesuffix("/v1")
    async with openai.AsyncOpenAI(base_url=root, api_key="sk-test", max_retries=0) as sdk:
        done = await sdk.chat.completions.create(model="my-local-model", messages=USER)
        assert done.model == "my-local-model"
        models = [m.id async for m in sdk.models.list()]
        assert "gpt-4o-mini" in models and "my-local-model" in models
        assert (await sdk.models.retrieve("gpt-4o")).id == "gpt-4o"
        with pytest.raises(openai.NotFoundError) as caught:
            await sdk.models.retrieve("nope")
    assert caught.value.code == "model_not_found"


async def test_hang_times_out_and_server_stops_cleanly() -> None:
    fake = FakeLLM()
    await fake.start()
    try:
        fake.script(hang())
        async with openai.AsyncOpenAI(
            base_url=fake.base_url, api_key="sk-test", max_retries=0, timeout=0.5
        ) as sdk:
            hung = asyncio.create_task(sdk.chat.completions.create(model=MODEL, messages=USER))
            await _until(lambda: len(fake.requests) == 1)
            # the hanging request holds nothing: others are answered meanwhile
            done = await sdk.chat.completions.create(model=MODEL, messages=USER)
            assert done.choices[0].message.content == "echo: hello there"
            with pytest.raises(openai.APITimeoutError):
                await hung
    finally:
        await asyncio.wait_for(fake.stop(), timeout=3)


async def test_stop_answers_requests_still_waiting() -> None:
    fake = FakeLLM()
    await fake.start()
    try:
        fake.script(hang(), delay(30, reply("late")))
        async with openai.AsyncOpenAI(base_url=fake.base_url, api_key="k", max_retries=0) as sdk:
            calls = [
                asyncio.create_task(sdk.chat.completions.create(model=MODEL, messages=USER))
                for _ in range(2)
            ]
            await _until(lambda: len(fake.requests) == 2)
            await asyncio.wait_for(fake.stop(), timeout=3)
            results = await asyncio.gather(*calls, return_exceptions=True)
    finally:
        await fake.stop()
    assert all(isinstance(r, openai.InternalServerError) for r in results), results
    assert all("shutting down" in str(r) for r in results)


async def _until(condition: Callable[[], bool]) -> None:
    for _ in range(1000):
        if condition():
            return
        await asyncio.sleep(0.005)
    raise AssertionError("condition not met within 5 s")


async def test_concurrent_requests_overlap(fake_llm: FakeLLM) -> None:
    """Every request is received while none has been answered: nothing serialises them (the
    answers are held by a gate, so this does not depend on how fast the machine is)."""
    gate = asyncio.Event()
    count = 200
    fake_llm.script(*(held(gate, reply(f"answer {i}")) for i in range(count)))
    async with openai.AsyncOpenAI(
        base_url=fake_llm.base_url, api_key="sk-test", max_retries=0
    ) as sdk:
        calls = asyncio.gather(
            *(
                sdk.chat.completions.create(
                    model=MODEL, messages=[{"role": "user", "content": f"n{i}"}]
                )
                for i in range(count)
            )
        )
        while len(fake_llm.chat_requests) < count and not calls.done():  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        assert not calls.done()  # all received, none answered yet
        gate.set()
        results = await calls
    assert sorted(r.choices[0].message.content or "" for r in results) == sorted(
        f"answer {i}" for i in range(count)
    )
    asked = sorted(r.json["messages"][0]["content"] for r in fake_llm.chat_requests)
    assert asked == sorted(f"n{i}" for i in range(count))


@pytest.mark.slow
def test_cli_serves_until_sigterm(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot.testing.fake_llm", "--port", "0", "--latency", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("OPENAI_BASE_URL=http://127.0.0.1:")
        base_url = line.split("=", 1)[1]
        with openai.OpenAI(base_url=base_url, api_key="x", max_retries=0) as sdk:
            done = sdk.chat.completions.create(model=MODEL, messages=USER)
        assert done.choices[0].message.content == "echo: hello there"
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert "Warning" not in err


async def test_fail_every_answers_every_nth_request_with_the_failure(
    fake_llm: FakeLLM, client: openai.AsyncOpenAI
) -> None:
    fake_llm.script(reply("scripted"))
    fake_llm.fail_every(2, rate_limited(retry_after=0.2))
    with pytest.raises(openai.BadRequestError):  # rejected requests are not counted
        await client.chat.completions.create(model=MODEL, messages=[])
    outcomes: list[str] = []
    for _ in range(4):
        try:
            done = await client.chat.completions.create(model=MODEL, messages=USER)
        except openai.RateLimitError as err:
            assert err.code == "rate_limit_exceeded"
            assert err.type == "requests"
            assert err.response.headers["retry-after"] == "0.2"
            outcomes.append("429")
        else:
            outcomes.append(done.choices[0].message.content or "")
    # The injected 429 took no script: the scripted reply went to the first request that passed.
    assert outcomes == ["scripted", "429", "echo: hello there", "429"]

    fake_llm.fail_every(0)
    done = await client.chat.completions.create(model=MODEL, messages=USER)
    assert done.choices[0].message.content == "echo: hello there"


async def test_fail_every_holds_under_concurrency(fake_llm: FakeLLM) -> None:
    fake_llm.fail_every(2)
    async with openai.AsyncOpenAI(
        base_url=fake_llm.base_url, api_key="sk-test", max_retries=0
    ) as sdk:
        results = await asyncio.gather(
            *(
                sdk.chat.completions.create(
                    model=MODEL, messages=[{"role": "user", "content": f"n{i}"}]
                )
                for i in range(20)
            ),
            return_exceptions=True,
        )
    limited = [r for r in results if isinstance(r, openai.RateLimitError)]
    assert len(limited) == 10
    assert all(r.response.headers["retry-after"] == "1" for r in limited)


def test_fail_every_takes_only_failures() -> None:
    fake = FakeLLM()
    with pytest.raises(ValueError, match="failure"):
        fake.fail_every(2, reply("not a failure"))
    with pytest.raises(ValueError, match=">= 0"):
        fake.fail_every(-1)


# -- image parts and /audio/transcriptions -------------------------------------------------------

PNG_1X1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)


def image_message(url: str, **extra: Any) -> list[Any]:
    image = {"url": url, **extra}
    return [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "what is this?"},
                {"type": "image_url", "image_url": image},
            ],
        }
    ]


async def test_image_parts_are_accepted_and_their_bytes_recorded(
    fake_llm: FakeLLM, client: openai.AsyncOpenAI
) -> None:
    url = "data:image/png;base64," + base64.b64encode(PNG_1X1).decode()
    completion = await client.chat.completions.create(model=MODEL, messages=image_message(url))
    assert completion.choices[0].message.content == "echo: what is this?"
    link = "https://example.com/cat.jpg"  # accepted, never fetched
    await client.chat.completions.create(model=MODEL, messages=image_message(link, detail="low"))
    first, second = fake_llm.chat_requests
    assert first.images == [PNG_1X1]
    assert first.image_urls == [url]
    assert (second.images, second.image_urls) == ([], [link])


@pytest.mark.parametrize(
    ("url", "extra", "message", "code"),
    [
        (
            "http://127.0.0.1/file/bot123:abc/photo.jpg",
            {},
            "Invalid image URL: 'messages[0].content[1].image_url.url'. Expected a base64-encoded "
            "data URL with an image MIME type (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), "
            "but got a value without the 'data:' prefix.",
            "invalid_value",
        ),
        (
            "data:image/png;base64,***",
            {},
            "but got an invalid base64-encoded value.",
            "invalid_value",
        ),
        ("data:image/png;base64,", {}, "but got empty base64-encoded bytes.", "invalid_value"),
        ("data:text/plain;base64,aGk=", {}, "with the MIME type 'text/plain'.", "invalid_value"),
        (
            "data:image/png;base64,aGVsbG8=",
            {},
            "You uploaded an unsupported image.",
            "invalid_image_format",
        ),
        ("https://example.com/a.png", {"detail": "max"}, "Invalid value: 'max'.", "invalid_value"),
    ],
)
async def test_bad_image_parts_get_openais_400(
    fake_llm: FakeLLM,
    client: openai.AsyncOpenAI,
    url: str,
    extra: dict[str, Any],
    message: str,
    code: str,
) -> None:
    fake_llm.script(reply("never sent"))
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(model=MODEL, messages=image_message(url, **extra))
    body = caught.value.body
    assert isinstance(body, dict)
    assert message in body["message"]
    assert body["code"] == code
    assert fake_llm.pending_scripts == 1  # a rejected request takes no script


async def test_transcription_default_is_deterministic_and_recorded(
    fake_llm: FakeLLM, client: openai.AsyncOpenAI
) -> None:
    audio = b"OggS" + bytes(range(60))
    result = await client.audio.transcriptions.create(
        model="whisper-1", file=("voice.ogg", audio, "audio/ogg"), language="en", prompt="Parlour"
    )
    assert result.text == default_transcript(audio)
    assert default_transcript(audio) == default_transcript(bytes(audio))
    assert default_transcript(audio) != default_transcript(audio + b"!")
    (request,) = fake_llm.transcription_requests
    upload = request.files["file"]
    assert (upload.filename, upload.content_type, upload.data) == ("voice.ogg", "audio/ogg", audio)
    assert request.form == {"model": "whisper-1", "language": "en", "prompt": "Parlour"}
    assert fake_llm.chat_requests == []


async def test_transcription_scripts_and_response_formats(
    fake_llm: FakeLLM, client: openai.AsyncOpenAI
) -> None:
    fake_llm.script(reply("a chat answer"))  # the chat queue is not touched by voice
    fake_llm.script_transcriptions(reply("hello there"), reply("second"), reply("third"))
    upload = ("v.mp3", b"ID3" + bytes(20), "audio/mpeg")
    as_json = await client.audio.transcriptions.create(model="whisper-1", file=upload)
    as_text = await client.audio.transcriptions.create(
        model="whisper-1", file=upload, response_format="text"
    )
    verbose = await client.audio.transcriptions.create(
        model="whisper-1", file=upload, response_format="verbose_json"
    )
    assert as_json.text == "hello there"
    assert as_text == "second\n"
    assert verbose.text == "third"
    assert fake_llm.pending_scripts == 1


async def test_transcription_failures_answer_like_the_api(
    fake_llm: FakeLLM, client: openai.AsyncOpenAI
) -> None:
    upload = ("v.ogg", b"OggS" + bytes(8), "audio/ogg")
    with pytest.raises(openai.BadRequestError, match="Invalid file format"):
        await client.audio.transcriptions.create(
            model="whisper-1", file=("v.txt", b"x", "text/plain")
        )
    async with aiohttp.ClientSession() as http:  # the SDK cannot leave out the file
        form = aiohttp.FormData({"model": "whisper-1"})
        headers = {"Authorization": "Bearer sk-test"}
        url = f"{fake_llm.base_url}/audio/transcriptions"
        async with http.post(url, data=form, headers=headers) as response:
            assert response.status == 400
            error_body = (await response.json())["error"]
    assert error_body["message"] == "Missing required parameter: 'file'."
    assert error_body["code"] == "missing_required_parameter"
    with pytest.raises(openai.BadRequestError, match=r"Invalid value: .mp3."):
        await client.audio.transcriptions.create(
            model="whisper-1",
            file=upload,
            response_format="mp3",  # type: ignore[arg-type]
        )
    fake_llm.script_transcriptions(rate_limited(retry_after=1), quota_exhausted())
    with pytest.raises(openai.RateLimitError) as busy:
        await client.audio.transcriptions.create(model="whisper-1", file=upload)
    assert busy.value.response.headers["retry-after"] == "1"
    with pytest.raises(openai.RateLimitError) as spent:
        await client.audio.transcriptions.create(model="whisper-1", file=upload)
    assert spent.value.code == "insufficient_quota"
    fake_llm.api_key = "sk-right"
    with pytest.raises(openai.AuthenticationError):
        await client.audio.transcriptions.create(model="whisper-1", file=upload)
    assert fake_llm.pending_scripts == 0
