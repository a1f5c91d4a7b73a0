"""The fake model's demo markers, driven by the real ``openai`` SDK: ``[[tool:NAME {...}]]``
answers with that tool call (as ``tool_calls(...)`` scripts it) and then quotes the result;
``[[context]]`` (or ``reveal``) answers with what the model was sent."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import openai
import pytest
import pytest_asyncio

from bot.prompt.passages import PASSAGES_HEADER
from bot.prompt.safety import RECALLED_HEADER
from bot.testing import FakeLLM, reply
from bot.testing.llm import cli

MODEL = "gpt-4o-mini"
REMEMBER_MARKER = '[[tool:remember {"fact": "I like tea"}]]'


def tool(name: str) -> Any:
    """A function tool definition as a bot sends it."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"the {name} tool",
            "parameters": {"type": "object", "properties": {}},
        },
    }


TOOLS = [tool("remember"), tool("calculate")]


def user(text: str) -> list[Any]:
    return [{"role": "system", "content": "You are a test bot."}, {"role": "user", "content": text}]


@pytest_asyncio.fixture
async def client(fake_llm: FakeLLM) -> AsyncIterator[openai.AsyncOpenAI]:
    async with openai.AsyncOpenAI(
        base_url=fake_llm.base_url, api_key="sk-test", max_retries=0
    ) as sdk:
        yield sdk


async def test_a_tool_marker_calls_the_tool_then_quotes_its_result(
    client: openai.AsyncOpenAI,
) -> None:
    messages = user(f"please {REMEMBER_MARKER}")
    done = await client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
    choice = done.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    assert choice.message.tool_calls is not None
    [call] = choice.message.tool_calls
    assert call.type == "function"
    assert (call.id, call.function.name) == ("call_1", "remember")
    assert call.function.arguments == '{"fact":"I like tea"}'  # compact, as tool_calls() sends

    messages.append(choice.message.model_dump(exclude_none=True))
    result = "Remembered (#1): I like tea"
    messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    after = await client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
    assert after.choices[0].finish_reason == "stop"
    assert after.choices[0].message.tool_calls is None
    assert after.choices[0].message.content == f"Tool remember returned: {result}"


async def test_a_streamed_tool_marker_sends_openais_tool_call_deltas(
    client: openai.AsyncOpenAI,
) -> None:
    stream = await client.chat.completions.create(
        model=MODEL,
        messages=user('[[tool:calculate {"expression": "2+2"}]] and [[tool:remember]]'),
        tools=TOOLS,
        stream=True,
    )
    chunks = [chunk async for chunk in stream]
    first = chunks[0].choices[0].delta
    assert (first.role, first.content) == ("assistant", None)
    openings = [
        delta
        for chunk in chunks
        for delta in chunk.choices[0].delta.tool_calls or []
        if delta.id is not None
    ]
    assert [(d.index, d.id, d.type) for d in openings] == [
        (0, "call_1", "function"),
        (1, "call_2", "function"),
    ]
    assert all(d.function is not None and d.function.arguments == "" for d in openings)
    arguments = {0: "", 1: ""}
    for chunk in chunks:
        for delta in chunk.choices[0].delta.tool_calls or []:
            assert delta.function is not None
            arguments[delta.index] += delta.function.arguments or ""
    assert [d.function.name for d in openings if d.function] == ["calculate", "remember"]
    assert json.loads(arguments[0]) == {"expression": "2+2"}
    assert arguments[1] == "{}"  # no arguments given: an empty object
    assert [c.choices[0].finish_reason for c in chunks][-1] == "tool_calls"
    assert all(c.choices[0].finish_reason is None for c in chunks[:-1])


async def test_arguments_that_are_not_a_json_object_are_sent_verbatim(
    client: openai.AsyncOpenAI,
) -> None:
    done = await client.chat.completions.create(
        model=MODEL, messages=user("[[tool:calculate 2+2]]"), tools=TOOLS
    )
    calls = done.choices[0].message.tool_calls
    assert calls is not None
    assert calls[0].type == "function"
    assert calls[0].function.arguments == "2+2"  # like a model's broken JSON


async def test_an_unknown_tool_answers_with_the_tools_offered(
    client: openai.AsyncOpenAI,
) -> None:
    done = await client.chat.completions.create(
        model=MODEL, messages=user("[[tool:weather {}]]"), tools=TOOLS
    )
    choice = done.choices[0]
    assert choice.finish_reason == "stop"
    assert choice.message.tool_calls is None
    assert choice.message.content == (
        "Cannot call weather: not offered. Tools offered: remember, calculate."
    )
    bare = await client.chat.completions.create(model=MODEL, messages=user("[[tool:remember]]"))
    assert bare.choices[0].message.content == (
        "Cannot call remember: this request offered no tools."
    )


async def test_tool_choice_none_is_obeyed(client: openai.AsyncOpenAI) -> None:
    done = await client.chat.completions.create(
        model=MODEL, messages=user(REMEMBER_MARKER), tools=TOOLS, tool_choice="none"
    )
    assert done.choices[0].message.tool_calls is None
    assert done.choices[0].message.content == (
        'Cannot call tools: this request says tool_choice "none".'
    )


async def test_the_context_marker_reveals_what_was_sent(client: openai.AsyncOpenAI) -> None:
    recalled = f'{RECALLED_HEADER}\n{{"fact":"I like tea","by":"Alice"}}'
    messages: list[Any] = [
        {"role": "system", "content": "You are Parlour, a helpful assistant."},
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "echo: hello"},
        {"role": "user", "content": recalled},
        {"role": "user", "content": "what do I drink? [[context]]"},
    ]
    done = await client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
    text = done.choices[0].message.content
    assert text is not None
    assert done.usage is not None
    assert text.splitlines() == [
        f"What the model was sent ({MODEL}, 5 messages, {done.usage.prompt_tokens} prompt tokens):",
        "System prompt (37 characters): You are Parlour, a helpful assistant.",
        "History: 1 earlier user message, 2 messages in all; the last 2:",
        "  user: hello",
        "  assistant: echo: hello",
        "Recalled from memory (1 item):",
        '  {"fact":"I like tea","by":"Alice"}',
        "Tools offered (2): remember, calculate",
        "This message: what do I drink? [[context]]",
    ]


async def test_the_context_marker_shows_knowledge_passages_apart(
    client: openai.AsyncOpenAI,
) -> None:
    passages = f'{PASSAGES_HEADER}\n[1,"rules.md › Conduct","Be kind."]'
    messages: list[Any] = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": passages},
        {"role": "user", "content": "rules? [[context]]"},
    ]
    done = await client.chat.completions.create(model=MODEL, messages=messages)
    text = done.choices[0].message.content
    assert text is not None
    assert "History: 0 earlier user messages, 0 messages in all." in text
    assert 'From the knowledge bases (1 passage):\n  [1,"rules.md › Conduct","Be kind."]' in text


async def test_reveal_answers_every_unscripted_message(
    fake_llm: FakeLLM, client: openai.AsyncOpenAI
) -> None:
    fake_llm.reveal = True
    fake_llm.script(reply("scripted"))
    scripted = await client.chat.completions.create(model=MODEL, messages=user("hi"))
    assert scripted.choices[0].message.content == "scripted"  # scripts still come first
    revealed = await client.chat.completions.create(model=MODEL, messages=user("hi"))
    text = revealed.choices[0].message.content or ""
    assert text.startswith(f"What the model was sent ({MODEL}, 2 messages")
    assert "Recalled from memory: nothing." in text
    assert "Tools offered: none." in text
    assert text.endswith("This message: hi")


async def test_without_a_marker_the_fake_still_echoes(client: openai.AsyncOpenAI) -> None:
    done = await client.chat.completions.create(
        model=MODEL, messages=user("[[tool:remember no closing"), tools=TOOLS
    )
    assert done.choices[0].message.content == "echo: [[tool:remember no closing"


def test_the_cli_reveal_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    """``python -m bot.testing.fake_llm --reveal`` serves a fake that reveals every request."""
    answers: list[str | None] = []

    async def serve_once(fake: FakeLLM, host: str, port: int) -> None:
        await fake.start(host, 0)
        try:
            async with openai.AsyncOpenAI(base_url=fake.base_url, api_key="x") as sdk:
                done = await sdk.chat.completions.create(model=MODEL, messages=user("hi"))
            answers.append(done.choices[0].message.content)
        finally:
            await fake.stop()

    monkeypatch.setattr(cli, "_serve", serve_once)
    assert cli.main(["--reveal"]) == 0
    [text] = answers
    assert text is not None and text.startswith("What the model was sent")
