"""Compaction: turns that left the window become a rolling summary (and facts) in the background;
the summary is in every later prompt, survives restarts, and a failing summariser never costs
the user a reply."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from bot.prompt.safety import SUMMARY_HEADER
from bot.testing.fake_llm import FakeLLM
from bot.testing.llm.model import last_user_text
from tests.conftest import AppFactory, private

SECTIONS: dict[str, Any] = {
    "history": {"max_turns": 4},
    "memory": {"summarize": True, "summary_every": 3},
}


def summariser(body: dict[str, Any]) -> str:
    """Answers summary requests with JSON; everything else with the usual echo."""
    system = str(body["messages"][0]["content"])
    if "long-term memory of a chat assistant" not in system:
        return f"echo: {last_user_text(body['messages'])}"
    turns = str(body["messages"][-1]["content"])
    facts = ["Mei is allergic to peanuts."] if "peanuts" in turns else []
    said = [line for line in turns.splitlines() if '"speaker":"Mei"' in line]
    return json.dumps({"summary": f"Mei talked about {len(said)} things.", "facts": facts})


async def settle(app: Any) -> None:
    for _ in range(100):
        if not app.compactor._tasks:
            return
        await asyncio.sleep(0.02)


def system_text(fake: FakeLLM) -> str:
    messages = fake.chat_requests[-1].json["messages"]
    return "\n".join(str(m["content"]) for m in messages if m["role"] == "system")


async def test_dropped_turns_become_a_summary_and_facts(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.default_reply = summariser
    mei = private("7", "Mei")
    async with make_app(**SECTIONS) as app:
        await app.service.chat(mei, "I'm allergic to peanuts")
        for n in range(9):
            await app.service.chat(mei, f"small talk {n}")
            await settle(app)
        summary = await app.compactor.summary("telegram:7:u:7")
        assert summary is not None and summary.text.startswith("Mei talked about")
        assert app.memories is not None
        facts = [m.text for m in await app.memories.list("telegram:7")]
        assert facts == ["Mei is allergic to peanuts."]
        await app.service.chat(mei, "what do you know about me?")
        assert f'{SUMMARY_HEADER}\n"Mei talked about' in system_text(fake_llm)
    async with make_app(**SECTIONS) as app:  # after a restart
        await app.service.chat(mei, "and now?")
        assert SUMMARY_HEADER in system_text(fake_llm)
        summary_requests = [
            r for r in fake_llm.chat_requests if "long-term memory" in str(r.json["messages"][0])
        ]
        assert 1 <= len(summary_requests) <= 4  # at most once per summary_every turns
        # The summaries' tokens are on the chat's bill, under the bot, not under Mei.
        rows = {r.user_id: r for r in await app.store.daily_usage("2000-01-01")}
        assert set(rows) == {"7", ""}
        assert rows[""].turns == 0 and rows[""].usage.total_tokens > 0
        mine, chat = await app.service.usage_today(mei)
        assert chat == mine + rows[""].usage.total_tokens


async def test_a_failing_summariser_never_costs_a_reply(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    def broken(body: dict[str, Any]) -> str:
        if "long-term memory" in str(body["messages"][0]["content"]):
            return "I would rather not produce JSON today."  # prose, not the asked-for JSON
        return f"echo: {last_user_text(body['messages'])}"

    fake_llm.default_reply = broken
    async with make_app(**SECTIONS) as app:
        for n in range(8):
            answer = await app.service.chat(private(), f"message {n}")
            assert answer.text == f"echo: message {n}"
            await settle(app)
        summary = await app.compactor.summary("telegram:1:u:1")
        assert summary is not None and summary.text.startswith("I would rather not")


async def test_reset_and_clear_drop_the_summary(make_app: AppFactory, fake_llm: FakeLLM) -> None:
    fake_llm.default_reply = summariser
    async with make_app(**SECTIONS) as app:
        for n in range(8):
            await app.service.chat(private("7", "Mei"), f"message {n}")
            await settle(app)
        assert await app.compactor.summary("telegram:7:u:7") is not None
        await app.service.reset(private("7", "Mei"))
        assert await app.compactor.summary("telegram:7:u:7") is None


async def test_a_summariser_that_errors_never_costs_a_reply(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    def failing(body: dict[str, Any]) -> str:
        if "long-term memory" in str(body["messages"][0]["content"]):
            raise RuntimeError("the summary model is down")  # the fake answers 500
        return f"echo: {last_user_text(body['messages'])}"

    fake_llm.default_reply = failing
    async with make_app(**SECTIONS) as app:
        for n in range(8):
            answer = await app.service.chat(private(), f"message {n}")
            assert answer.text == f"echo: message {n}"
            await settle(app)
        assert await app.compactor.summary("telegram:1:u:1") is None


async def test_compaction_never_brings_back_what_reset_dropped(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    seen: list[str] = []

    def recording(body: dict[str, Any]) -> str:
        if "long-term memory" in str(body["messages"][0]["content"]):
            seen.append(str(body["messages"][-1]["content"]))
            return json.dumps({"summary": "", "facts": ["Mei likes tea.", "Mei likes tea"]})
        return f"echo: {last_user_text(body['messages'])}"

    fake_llm.default_reply = recording
    mei = private("7", "Mei")
    async with make_app(**SECTIONS) as app:
        await app.service.chat(mei, "my password is SWORDFISH")
        for n in range(3):
            await app.service.chat(mei, f"before {n}")
        await app.service.reset(mei)
        for n in range(12):
            await app.service.chat(mei, f"after {n}")
            await settle(app)
        assert app.memories is not None
        facts = [m.text for m in await app.memories.list("telegram:7")]
    assert seen, "a summary pass ran"
    assert all("SWORDFISH" not in request and "before" not in request for request in seen)
    covered = [line for request in seen for line in request.splitlines() if line.startswith("Mei:")]
    assert len(covered) == len(set(covered))  # an empty summary still moves the mark on
    assert facts == ["Mei likes tea."]  # duplicates are not stored twice
