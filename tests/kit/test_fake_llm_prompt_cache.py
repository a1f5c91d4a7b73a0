"""The fake LLM's emulated prefix cache, read through the real ``openai`` SDK like OpenAI's."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import openai
import pytest
import pytest_asyncio

from bot.llm.tokens import get_counter
from bot.testing import FakeLLM, reply

MODEL = "gpt-4o-mini"


def text_of(tokens: int, seed: str) -> str:
    """Plain text of ``tokens`` tokens (a word costs two; one less is fine) headed by ``seed``."""
    counter = get_counter(MODEL)
    words = [f"{seed}"] + [f" word{i}" for i in range(tokens)]
    low, high = 1, len(words)
    while low < high:  # the most words that still fit
        middle = (low + high + 1) // 2
        if counter.count_text("".join(words[:middle])) <= tokens:
            low = middle
        else:
            high = middle - 1
    text = "".join(words[:low])
    assert tokens - 1 <= counter.count_text(text) <= tokens
    return text


SYSTEM_2000 = text_of(2000, "Stable")


def chat(system: str, question: str) -> list[Any]:
    return [{"role": "system", "content": system}, {"role": "user", "content": question}]


@pytest_asyncio.fixture
async def client(fake_llm: FakeLLM) -> AsyncIterator[openai.AsyncOpenAI]:
    async with openai.AsyncOpenAI(
        base_url=fake_llm.base_url, api_key="sk-test", max_retries=0
    ) as sdk:
        yield sdk


async def cached(client: openai.AsyncOpenAI, messages: list[Any], **extra: Any) -> int:
    completion = await client.chat.completions.create(model=MODEL, messages=messages, **extra)
    assert completion.usage is not None
    details = completion.usage.prompt_tokens_details
    assert details is not None and details.cached_tokens is not None
    assert details.cached_tokens <= completion.usage.prompt_tokens
    return details.cached_tokens


async def test_a_shared_2000_token_prefix_is_reported_in_128_token_steps(
    fake_llm: FakeLLM, client: openai.AsyncOpenAI
) -> None:
    assert await cached(client, chat(SYSTEM_2000, "first question")) == 0

    second = await cached(client, chat(SYSTEM_2000, "another question"))
    again = await client.chat.completions.create(
        model=MODEL, messages=chat(SYSTEM_2000, "another question")
    )

    assert second == 1920  # the 2,000 shared tokens, rounded down to a multiple of 128
    assert again.usage is not None
    whole = again.usage.prompt_tokens
    assert again.usage.prompt_tokens_details is not None
    assert again.usage.prompt_tokens_details.cached_tokens == whole - whole % 128
    assert [r.cached_tokens for r in fake_llm.chat_requests] == [0, 1920, whole - whole % 128]


async def test_a_prompt_under_1024_tokens_reports_nothing_cached(
    client: openai.AsyncOpenAI,
) -> None:
    short = text_of(900, "Short")
    assert await cached(client, chat(short, "question")) == 0
    assert await cached(client, chat(short, "question")) == 0


async def test_only_requests_with_the_same_cache_key_and_model_share(
    fake_llm: FakeLLM, client: openai.AsyncOpenAI
) -> None:
    messages = chat(SYSTEM_2000, "question")
    assert await cached(client, messages, prompt_cache_key="conv-a") == 0
    assert await cached(client, messages, prompt_cache_key="conv-b") == 0
    assert await cached(client, messages) == 0  # no key is a cache of its own
    other_model = await client.chat.completions.create(
        model="gpt-4o", messages=messages, prompt_cache_key="conv-a"
    )
    assert other_model.usage is not None and other_model.usage.prompt_tokens_details is not None
    assert other_model.usage.prompt_tokens_details.cached_tokens == 0

    assert await cached(client, messages, prompt_cache_key="conv-a") >= 1920
    assert fake_llm.chat_requests[-1].json["prompt_cache_key"] == "conv-a"


async def test_streaming_reports_cached_tokens_in_the_usage_chunk(
    fake_llm: FakeLLM, client: openai.AsyncOpenAI
) -> None:
    await cached(client, chat(SYSTEM_2000, "first question"))

    stream = await client.chat.completions.create(
        model=MODEL,
        messages=chat(SYSTEM_2000, "another question"),
        stream=True,
        stream_options={"include_usage": True},
    )
    usages = [chunk.usage async for chunk in stream if chunk.usage is not None]

    assert len(usages) == 1
    assert usages[0].prompt_tokens_details is not None
    assert usages[0].prompt_tokens_details.cached_tokens == 1920
    assert fake_llm.chat_requests[-1].cached_tokens == 1920


async def test_tool_definitions_come_first_so_reordering_them_breaks_the_cache(
    client: openai.AsyncOpenAI,
) -> None:
    def tool(name: str) -> Any:
        return {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}

    messages = chat(SYSTEM_2000, "question")
    assert await cached(client, messages, tools=[tool("a"), tool("b")]) == 0
    assert await cached(client, messages, tools=[tool("b"), tool("a")]) == 0
    assert await cached(client, messages, tools=[tool("b"), tool("a")]) >= 1920


async def test_the_cache_is_bounded_and_forgets_after_its_ttl(
    fake_llm: FakeLLM, client: openai.AsyncOpenAI
) -> None:
    store = fake_llm.prompt_cache_store
    store.max_entries = 2
    now = [0.0]
    store.clock = lambda: now[0]
    first, second, third = (text_of(1500, seed) for seed in ("Alpha", "Beta", "Gamma"))
    for system in (first, second, third):
        assert await cached(client, chat(system, "question")) == 0

    assert len(store) == 2
    assert await cached(client, chat(first, "question")) == 0  # evicted, least recently used
    assert await cached(client, chat(third, "question")) >= 1024  # still held

    now[0] += store.ttl
    assert await cached(client, chat(third, "question")) == 0  # expired
    assert len(store) == 1


async def test_the_cache_can_be_switched_off(fake_llm: FakeLLM, client: openai.AsyncOpenAI) -> None:
    fake_llm.prompt_cache = False
    await cached(client, chat(SYSTEM_2000, "question"))
    assert await cached(client, chat(SYSTEM_2000, "question")) == 0
    assert [r.cached_tokens for r in fake_llm.chat_requests] == [0, 0]


async def test_a_scripted_usage_overrides_the_cached_count(
    fake_llm: FakeLLM, client: openai.AsyncOpenAI
) -> None:
    fake_llm.script(reply("ok", usage={"prompt_tokens": 5000, "cached_tokens": 4096}))
    assert await cached(client, chat("short", "question")) == 4096


async def test_a_prompt_cache_key_is_checked_as_the_api_checks_it(
    fake_llm: FakeLLM, client: openai.AsyncOpenAI
) -> None:
    assert await cached(client, chat("short", "q"), prompt_cache_key="k" * 64) == 0
    with pytest.raises(openai.BadRequestError) as long:
        await cached(client, chat("short", "q"), prompt_cache_key="k" * 65)
    assert long.value.code == "string_above_max_length"
    assert long.value.param == "prompt_cache_key"
    with pytest.raises(openai.BadRequestError) as number:
        await cached(client, chat("short", "q"), extra_body={"prompt_cache_key": 7})
    assert number.value.code == "invalid_type"


async def test_other_scripted_usage_fields_are_sent_like_deepseeks(
    fake_llm: FakeLLM, client: openai.AsyncOpenAI
) -> None:
    fake_llm.script(reply("ok", usage={"prompt_cache_hit_tokens": 900, "prompt_tokens": 1000}))
    completion = await client.chat.completions.create(model=MODEL, messages=chat("s", "q"))
    assert completion.usage is not None and completion.usage.model_extra is not None
    assert completion.usage.model_extra["prompt_cache_hit_tokens"] == 900
    assert completion.usage.prompt_tokens == 1000
