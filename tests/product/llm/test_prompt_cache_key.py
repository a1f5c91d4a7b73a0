"""``prompt_cache_key``: sent where the endpoint takes one, a keyed hash of the conversation key,
the same for every request of one conversation and never its ids (bot.llm.cache_hints)."""

from __future__ import annotations

import contextlib
import hashlib
import re
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from bot.config import FallbackSettings, LLMSettings
from bot.llm.cache_hints import HINT_CHARS, cache_hint
from bot.testing.fake_llm import FakeLLM, error, reply, tool_calls
from tests.conftest import TEST_KEY, AppFactory, group, private

ON = {"prompt_cache_key": True}
USER, CHAT = "424242", "-100777"  # distinctive, so a hint that held them would show it


def keys(fake: FakeLLM) -> list[Any]:
    return [r.json.get("prompt_cache_key") for r in fake.chat_requests]


async def test_every_request_of_a_conversation_carries_one_key_and_others_get_theirs(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    alice, bob = group(USER, chat=CHAT), group("515151", "Bob", chat=CHAT)
    async with make_app(
        llm=ON, chat={"default_scope": "user"}, plugins=["plugins.calculator"]
    ) as app:
        await app.service.chat(alice, "hello")
        fake_llm.script(tool_calls(("calculate", {"expression": "6*7"})))  # two rounds
        await app.service.chat(alice, "what is 6*7?")
        async with contextlib.aclosing(app.service.stream(alice, "and streamed?")) as events:
            async for _ in events:
                pass
        await app.service.chat(bob, "hi, I am Bob")
        await app.service.chat(private(USER), "in private now")
        conversations = [app.service.conversation_key(c) for c in (alice, bob, private(USER))]
    first, *same, bobs, private_one = keys(fake_llm)
    assert len(same) == 3  # the tool round and the streamed turn too
    assert all(key == first for key in same)
    assert len({first, bobs, private_one}) == 3
    for key in (first, bobs, private_one):
        assert re.fullmatch(f"[0-9a-f]{{{HINT_CHARS}}}", key)
        assert USER not in key and CHAT.lstrip("-") not in key and "515151" not in key
    for conversation in conversations:
        assert hashlib.sha256(conversation.encode()).hexdigest()[:HINT_CHARS] not in keys(fake_llm)


async def test_the_key_is_keyed_by_the_deployment_so_ids_cannot_be_hashed_to_it(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with make_app(llm=ON) as app:
        await app.service.chat(private(USER), "hello")
    async with make_app(llm={**ON, "api_key": "sk-another-deployment-0000"}) as app:
        await app.service.chat(private(USER), "hello")
        conversation = app.service.conversation_key(private(USER))
    ours, theirs = keys(fake_llm)
    assert ours == cache_hint(conversation, TEST_KEY) != theirs


async def test_auto_sends_no_key_to_a_compatible_server_and_false_never_does(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with make_app() as app:  # the fake's base_url is not api.openai.com
        await app.service.chat(private(USER), "hello")
    async with make_app(llm={"prompt_cache_key": False}) as app:
        await app.service.chat(private(USER), "hello")
    assert [("prompt_cache_key" in r.json) for r in fake_llm.chat_requests] == [False, False]


async def test_a_fallback_is_judged_on_its_own_switch(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with FakeLLM() as plain, FakeLLM() as hinted:
        fallbacks = [
            {"base_url": plain.base_url, "model": "local"},  # auto, not OpenAI: none
            {**ON, "base_url": hinted.base_url, "model": "local", "api_key": "sk-fallback-42"},
        ]
        async with make_app(llm={**ON, "fallbacks": fallbacks}) as app:
            fake_llm.script(*[error(503)] * 4)  # the primary gives up: the first fallback
            await app.service.chat(private(USER), "one")
            fake_llm.script(*[error(503)] * 4)
            plain.script(*[error(503)] * 4)  # and that one too: the second
            await app.service.chat(private(USER), "two")
            conversation = app.service.conversation_key(private(USER))
        assert all("prompt_cache_key" not in r.json for r in plain.chat_requests)
        [received] = hinted.chat_requests
    assert received.json["prompt_cache_key"] == cache_hint(conversation, "sk-fallback-42")
    assert {r.json["prompt_cache_key"] for r in fake_llm.chat_requests} == {
        cache_hint(conversation, TEST_KEY)
    }


async def test_the_fake_takes_a_key_as_the_api_does(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.script(reply("fine"))
    async with make_app(llm=ON) as app:
        assert (await app.service.chat(private(USER), "hello")).text == "fine"
    [request] = fake_llm.chat_requests
    assert len(request.json["prompt_cache_key"]) <= 64


def test_on_by_default_only_for_openai_itself() -> None:
    def sends(base_url: str, switch: bool | None = None) -> bool:
        return LLMSettings(base_url=base_url, prompt_cache_key=switch).sends_cache_key

    assert LLMSettings(base_url="").sends_cache_key  # the SDK's default: api.openai.com
    assert sends("https://api.openai.com/v1")
    assert not sends("http://127.0.0.1:11434/v1")
    assert not sends("https://api.deepseek.com/v1")
    assert not sends("https://api.openai.com.example.net/v1")  # the host, not a substring
    assert sends("http://127.0.0.1:8000/v1", True)
    assert not sends("https://api.openai.com/v1", False)
    auto = LLMSettings.model_validate({"base_url": "http://h/v1", "prompt_cache_key": "auto"})
    assert auto.prompt_cache_key is None and not auto.sends_cache_key
    local = FallbackSettings(base_url="http://127.0.0.1:8000/v1")
    primary = LLMSettings(base_url="https://api.openai.com/v1", fallbacks=(local,))
    assert primary.sends_cache_key and not primary.fallbacks[0].sends_cache_key


@given(st.text(), st.text(), st.one_of(st.none(), st.text(min_size=1)))
def test_hints_are_short_stable_and_tell_conversations_apart(
    one: str, other: str, secret: str | None
) -> None:
    hint = cache_hint(one, secret)
    assert hint == cache_hint(one, secret)
    assert re.fullmatch(f"[0-9a-f]{{{HINT_CHARS}}}", hint) and HINT_CHARS <= 64
    assert (hint == cache_hint(other, secret)) == (one == other)  # 128 bits: no collision
