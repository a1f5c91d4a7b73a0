"""``GET /metrics``: this app's own Prometheus registry, in the text format, counting real
turns, model calls and their failures, tokens, queue waits, tool calls and platform refusals."""

from __future__ import annotations

import logging

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from bot.app import App
from bot.errors import LLMQuotaError
from bot.guardrails.access import AccessDeniedError
from bot.testing.fake_llm import FakeLLM, quota_exhausted, reply, tool_calls
from tests.conftest import AppFactory, group, private
from tests.http_harness import ADMIN_TOKEN, CHAT_TOKEN, OTHER_ADMIN_TOKEN, serve_http

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def scrape(url: str) -> tuple[str, Samples]:
    async with (
        aiohttp.ClientSession(url) as http,
        http.get("/metrics", headers=bearer(ADMIN_TOKEN)) as r,
    ):
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/plain")
        text = await r.text()
    samples: Samples = {}
    for family in text_string_to_metric_families(text):  # raises unless it is Prometheus text
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return text, samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def total(samples: Samples, name: str) -> float:
    return sum(v for (n, _), v in samples.items() if n == name)


async def test_a_turn_and_a_failed_model_call_are_counted(
    make_app: AppFactory, fake_llm: FakeLLM, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with serve_http(make_app) as served:
        fake_llm.script(
            reply("Hi!", usage={"prompt_tokens": 120, "completion_tokens": 7, "cached_tokens": 100})
        )
        await served.app.service.chat(private(), "hello")
        fake_llm.script(quota_exhausted())
        with pytest.raises(LLMQuotaError):
            await served.app.service.chat(group(), "and again")
        text, samples = await scrape(served.url)
    turns = "parlour_turns_total"
    assert value(samples, turns, platform="telegram", outcome="answered") == 1
    assert value(samples, turns, platform="telegram", outcome="unanswered") == 1
    assert value(samples, "parlour_llm_errors_total", kind="quota") == 1
    assert value(samples, "parlour_llm_request_seconds_count", model="gpt-4o-mini") == 1
    assert value(samples, "parlour_tokens_total", kind="prompt") == 120
    assert value(samples, "parlour_tokens_total", kind="completion") == 7
    assert value(samples, "parlour_tokens_total", kind="cached") == 100
    assert value(samples, "parlour_queue_wait_seconds_count", queue="conversation") == 2
    assert value(samples, "parlour_queue_wait_seconds_count", queue="llm_slot") == 2
    assert "chat_id" not in text and "-100" not in text  # no chat or user ids as labels
    for token in (ADMIN_TOKEN, OTHER_ADMIN_TOKEN, CHAT_TOKEN):
        assert token not in caplog.text


async def test_a_refused_message_and_a_tool_call_are_counted(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    access = {"deny": ["telegram:user:2"]}
    async with serve_http(make_app, plugins=["plugins.calculator"], access=access) as served:
        fake_llm.script(tool_calls(("calculate", {"expression": "6*7"})), reply("42"))
        await served.app.service.chat(private(), "six times seven?")
        with pytest.raises(AccessDeniedError):
            await served.app.service.chat(private("2", "Spammer"), "buy my stuff")
        _, samples = await scrape(served.url)
    assert value(samples, "parlour_turns_total", platform="telegram", outcome="refused") == 1
    source = "plugin:plugins.calculator"
    assert value(samples, "parlour_tool_calls_total", source=source, outcome="ok") == 1
    assert value(samples, "parlour_llm_request_seconds_count", model="gpt-4o-mini") == 2


class Refusing:
    async def send_text(self, chat_id: str, thread_id: str | None, text: str) -> None:
        raise ConnectionResetError("the platform hung up")


async def test_a_platform_refusing_a_message_is_counted_by_error_class(
    make_app: AppFactory,
) -> None:
    async with serve_http(make_app) as served:
        served.app.outbound.register("telegram", Refusing())
        assert not await served.app.outbound.send("telegram", "42", None, "hello")
        _, samples = await scrape(served.url)
    errors = "parlour_platform_errors_total"
    assert value(samples, errors, platform="telegram", kind="ConnectionResetError") == 1
    assert total(samples, "parlour_turns_total") == 0


async def test_metrics_need_an_admin_token_and_apps_count_apart(make_app: AppFactory) -> None:
    async with serve_http(make_app) as served, aiohttp.ClientSession(served.url) as http:
        async with http.get("/metrics") as r:
            assert r.status == 401
        async with http.get("/metrics", headers=bearer(CHAT_TOKEN)) as r:
            assert r.status == 403
        other = App(served.app.settings)  # a second app in this process: its own registry
        other.metrics.turn("console", "answered")
        _, samples = await scrape(served.url)
    assert total(samples, "parlour_turns_total") == 0
    assert "parlour_turns_total" in other.metrics.exposition().decode()


async def test_the_chat_endpoints_turns_count_as_platform_http(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with serve_http(make_app) as served, aiohttp.ClientSession(served.url) as http:
        fake_llm.script(reply("Hello from the bot"))
        body = {"model": "parlour", "messages": [{"role": "user", "content": "hi"}], "user": "u1"}
        async with http.post("/v1/chat/completions", json=body, headers=bearer(CHAT_TOKEN)) as r:
            assert r.status == 200
        _, samples = await scrape(served.url)
    assert value(samples, "parlour_turns_total", platform="http", outcome="answered") == 1
