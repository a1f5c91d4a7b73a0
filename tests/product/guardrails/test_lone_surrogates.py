"""One message's content costs that message alone: lone UTF-16 surrogates are cleaned at every
edge, and only the provider's own failures (connection, timeout, 5xx) open the circuit breaker.
"""

from __future__ import annotations

import io
import logging
from typing import Any

import httpx2
import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.console import ConsoleAdapter
from bot.errors import LLMError, LLMUnavailableError
from bot.llm.breaker import CircuitBreaker, counts_as_down
from bot.llm.retry import classify
from bot.testing.fake_discord import FakeDiscord
from bot.testing.fake_llm import FakeLLM, error
from bot.testing.fake_telegram import FakeTelegram
from bot.text import REPLACEMENT, clean_json, clean_text
from tests.conftest import AppFactory, group
from tests.discord_harness import GENERAL, running_discord, world
from tests.telegram_harness import running_bot

BREAKER = {"circuit_breaker": 15}
REQUEST = httpx2.Request("POST", "http://127.0.0.1/v1/chat/completions")
SURROGATES = st.integers(0xD800, 0xDFFF).map(chr)
ANY_TEXT = st.text(st.one_of(st.characters(exclude_categories=()), SURROGATES))


def user_texts(fake: FakeLLM, index: int = -1) -> list[str]:
    return [str(m["content"]) for m in fake.chat_requests[index].json["messages"][1:]]


async def settled(tg: FakeTelegram, chat_id: int) -> list[dict[str, Any]]:
    """The bot's messages in the chat once it wrote one and streaming is done."""
    await tg.wait_for_message(chat_id)
    await tg.wait_idle(quiet=0.3)
    return tg.messages(chat_id)


def utf16_units(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


# -- the sanitiser ---------------------------------------------------------------------------


@given(ANY_TEXT)
def test_cleaned_text_always_encodes_and_keeps_its_utf16_length(text: str) -> None:
    cleaned = clean_text(text)
    cleaned.encode("utf-8")  # never raises
    assert utf16_units(cleaned) == utf16_units(text)  # Telegram's entity offsets still hold
    assert clean_text(cleaned) == cleaned


@given(st.text())  # hypothesis leaves surrogates out of st.text() by default
def test_text_that_encodes_is_returned_unchanged(text: str) -> None:
    assert clean_text(text) is text


def test_lone_halves_become_one_replacement_each_and_pairs_their_character() -> None:
    assert clean_text("a\ud800b\udc00c") == f"a{REPLACEMENT}b{REPLACEMENT}c"
    assert clean_text("\ud83d\ude00 \ud83d") == f"\U0001f600 {REPLACEMENT}"
    body = {"messages": [{"role": "user", "content": "hi \ud800", "name\udfff": ("x\udc00",)}]}
    assert clean_json(body) == {
        "messages": [{"role": "user", "content": "hi \ufffd", "name\ufffd": ["x\ufffd"]}]
    }


# -- the breaker: what opens it ----------------------------------------------------------------


def status_error(status: int) -> openai.APIStatusError:
    body = {"error": {"message": "m", "type": "x", "param": None, "code": None}}
    response = httpx2.Response(status, json=body, request=REQUEST)
    client = openai.AsyncOpenAI(api_key="k", base_url="http://127.0.0.1/v1")
    return client._make_status_error("m", body=body["error"], response=response)


@pytest.mark.parametrize(
    ("exc", "down"),
    [
        (UnicodeEncodeError("utf-8", "hi \ud800", 3, 4, "surrogates not allowed"), False),
        (TypeError("Object of type bytes is not JSON serializable"), False),
        (status_error(400), False),
        (status_error(404), False),
        (status_error(409), False),
        (status_error(413), False),
        (status_error(422), False),
        (status_error(429), False),
        (status_error(408), True),
        (status_error(500), True),
        (status_error(503), True),
        (openai.APIConnectionError(request=REQUEST), True),
        (openai.APITimeoutError(REQUEST), True),
        (TimeoutError(), True),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, Exception) else str(value),
)
async def test_only_provider_side_failures_open_the_breaker(exc: Exception, down: bool) -> None:
    error, _ = classify(exc, endpoint="primary")
    assert counts_as_down(error) is down
    breaker = CircuitBreaker(15, "primary")
    with breaker.attempt():
        await breaker.judge(error)
    assert breaker.is_open is down


async def test_an_error_raised_before_sending_proves_nothing_to_a_probing_breaker() -> None:
    now = [0.0]
    breaker = CircuitBreaker(15, "primary", clock=lambda: now[0])
    await breaker.failed()
    now[0] = 16.0  # the cooldown is over: the next call probes
    local, _ = classify(TypeError("not JSON serializable"), endpoint="primary")
    with breaker.attempt():
        await breaker.judge(local)  # the request never left this process
    with breaker.attempt():
        assert not breaker.admits()  # still a probe: everyone else is still told
        answered, _ = classify(status_error(404), endpoint="primary")
        await breaker.judge(answered)  # it answered, whatever it said: up
    with breaker.attempt():
        assert breaker.admits()  # closed: no probing any more


async def test_a_4xx_costs_one_request_not_everyones(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.script(error(404, code="model_not_found"), error(413), error(400))
    async with make_app(llm=BREAKER) as app:
        for _ in range(3):
            with pytest.raises(LLMError):
                await app.service.llm.complete([{"role": "user", "content": "x"}])
        reply = await app.service.llm.complete([{"role": "user", "content": "next user"}])
        assert reply.text == "echo: next user"
        assert not app.service.llm.endpoints[0].breaker.is_open


async def test_the_llm_client_sends_lone_surrogates_as_replacements(
    make_app: AppFactory, fake_llm: FakeLLM, caplog: pytest.LogCaptureFixture
) -> None:
    async with make_app(llm=BREAKER) as app:
        reply = await app.service.llm.complete([{"role": "user", "content": "hi \ud800"}])
        assert reply.text == "echo: hi \ufffd"
        assert not app.service.llm.endpoints[0].breaker.is_open
        fake_llm.script(*[error(500)] * 4)  # every retry
        with pytest.raises(LLMUnavailableError):  # and the provider's own failure still opens it
            await app.service.llm.complete([{"role": "user", "content": "x"}])
        assert app.service.llm.endpoints[0].breaker.is_open
    assert "lone surrogates" in caplog.text


# -- the edges -----------------------------------------------------------------------------------


async def test_telegram_message_with_a_lone_surrogate_is_answered_and_so_is_everyone_else(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    eve, bob = tg.user(7, "Eve\udc00"), tg.user(8, "Bob")
    group = tg.group(-100, "Team \ud800", supergroup=True)
    async with running_bot(make_app, tg, llm=BREAKER) as (app, _):
        # The update's JSON carries "\ud800" (json.dumps escapes it); aiogram decodes it to a
        # str that has no UTF-8 form.
        tg.send(tg.private_chat(eve), eve, "hi \ud800")
        [answer] = await settled(tg, eve["id"])
        assert answer["text"] == "echo: hi \ufffd"
        tg.send(tg.private_chat(bob), bob, "hello")  # the next user, another chat
        [other] = await settled(tg, bob["id"])
        assert other["text"] == "echo: hello"
        # An @mention: the adapter cuts UTF-16 entity offsets out of such a text.
        tg.send(group, eve, "@parlour_bot what is \ud800 here?")
        [in_group] = await settled(tg, group["id"])
        assert in_group["text"] == "echo: [Eve\ufffd] what is \ufffd here?"
        assert not app.service.llm.endpoints[0].breaker.is_open
        assert (await app.store.stats("telegram:7:u:7")).turns_stored == 1
        assert (await app.store.stats("telegram:-100")).turns_stored == 1


async def test_discord_message_and_slash_command_with_lone_surrogates_are_answered(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    w = world(dc)
    shady = dc.user(9, "shady", "Sh\ud800dy")
    dc.member(w.guild, shady)
    async with running_discord(make_app, dc, llm=BREAKER) as (app, _):
        dc.message(w.general, shady, f"<@{dc.application_id}> odd \udfff text")
        await dc.wait_for_message(GENERAL)
        assert user_texts(fake_llm)[-1] == "[Sh\ufffddy] odd \ufffd text"
        dc.slash(w.general, w.member, "ask", {"prompt": "and \ud801 this?"})
        await dc.wait_until(lambda: len(fake_llm.chat_requests) == 2)
        await dc.wait_idle(quiet=0.4)
        assert user_texts(fake_llm)[-1] == "[Bobby] and \ufffd this?"
        assert not app.service.llm.endpoints[0].breaker.is_open


async def test_console_line_with_undecodable_bytes_is_answered(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    out = io.StringIO()
    async with make_app(llm=BREAKER) as app:
        console = ConsoleAdapter(app.platform, stdin=io.StringIO(""), stdout=out)
        # Python reads bytes that are not UTF-8 on stdin as surrogates (surrogateescape).
        await console.handle(b"caf\xe9?".decode("utf-8", "surrogateescape"))
        assert "echo: caf\ufffd?" in out.getvalue()
        assert not app.service.llm.endpoints[0].breaker.is_open


async def test_the_service_stores_a_plugin_adapters_unclean_text_cleaned(
    make_app: AppFactory, fake_llm: FakeLLM, caplog: pytest.LogCaptureFixture
) -> None:
    async with make_app(llm=BREAKER) as app:
        reply = await app.service.chat(group("1", "Mal\ud800"), "text \udc00")
        assert reply.text == "echo: [Mal\ufffd] text \ufffd"
        [stored] = await app.store.load_window("telegram:-100", 10)
        assert stored.user_name == "Mal\ufffd"
        assert stored.messages[0]["content"] == "text \ufffd"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
