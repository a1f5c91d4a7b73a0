"""Several Discord bots in one deployment (``discord.bots``): the real adapters (discord.py)
against one fake Discord hosting both applications, which delivers each bot's messages to the
other as Discord does."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from adapters.discord import create_adapter, diagnose
from adapters.discord.bots import DiscordBots
from adapters.discord.endpoints import reset_endpoints
from adapters.discord.settings import discord_settings
from bot.app import App
from bot.errors import ConfigError
from bot.testing.fake_discord import FakeBot, FakeDiscord
from bot.testing.fake_llm import FakeLLM, reply
from tests.conftest import AppFactory, make_settings
from tests.discord_harness import GENERAL, GUILD, World, discord_section, world

QUIZ_TOKEN, QUIZ_ID = "quiz-secret-token.abc.def", 1_300_000_000_000_000_001
PRESETS = [
    {"match": "discord.quiz:*", "system_prompt": "You are Quizzy, a quiz master."},
    {"match": "discord:*", "system_prompt": "You are Parlour, the house bot."},
]


def requests_with(fake_llm: FakeLLM, persona: str) -> list[Any]:
    return [r for r in fake_llm.chat_requests if persona in r.json["messages"][0]["content"]]


def users(request: Any) -> list[str]:
    return [str(m["content"]) for m in request.json["messages"] if m["role"] == "user"]


def with_quiz(dc: FakeDiscord) -> tuple[FakeBot, World]:
    """The harness's server, with Quizzy invited too."""
    quiz = dc.add_bot(QUIZ_TOKEN, QUIZ_ID, "Quizzy")
    place = world(dc)
    quiz.join(place.guild)
    return quiz, place


@asynccontextmanager
async def two_bots(
    make_app: AppFactory, dc: FakeDiscord, quiz: FakeBot, **sections: Any
) -> AsyncIterator[App]:
    section = discord_section(dc, bots=[{"name": "quiz", "token": QUIZ_TOKEN}])
    sections.setdefault("chats", PRESETS)
    async with make_app(discord=section, **sections) as app:
        adapter = create_adapter(app.platform)
        assert isinstance(adapter, DiscordBots)
        assert [a.name for a in adapter.adapters] == ["discord", "discord.quiz"]
        task = asyncio.ensure_future(adapter.run())
        try:
            main = dc.bots[0]
            await dc.wait_until(
                lambda: (
                    task.done() or all(b.connected() and b.commands(GUILD) for b in (main, quiz))
                ),
                timeout=10,
            )
            if task.done():
                task.result()
            yield app
        finally:
            await adapter.stop()
            await asyncio.wait_for(task, 15)
            reset_endpoints()


async def test_two_bots_see_each_others_answers_and_never_answer_each_other(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    quiz, place = with_quiz(dc)
    main_id = dc.application_id
    async with two_bots(make_app, dc, quiz) as app:
        dc.message(place.general, place.admin, f"<@{main_id}> what is the capital of France?")
        await dc.wait_for_message(GENERAL, timeout=10)
        await dc.wait_idle(quiet=0.3)  # the answer streamed in full (then it is told)
        dc.message(place.general, place.admin, f"<@{QUIZ_ID}> what did Parlour just say?")
        await dc.wait_until(lambda: len(quiz.messages(GENERAL)) == 1, timeout=10)
        await dc.wait_idle(quiet=0.3)
        dc.message(place.general, place.admin, f"<@{main_id}> and what did Quizzy say?")
        await dc.wait_for_message(GENERAL, count=2, timeout=10)
        await dc.wait_idle(quiet=0.5)
        usage_main = await app.store.stats(f"discord:{GENERAL}")
        usage_quiz = await app.store.stats(f"discord.quiz:{GENERAL}")
    parlour_answer = dc.messages(GENERAL)[0]["content"]
    quiz_answer = quiz.messages(GENERAL)[0]["content"]
    [quiz_request] = requests_with(fake_llm, "You are Quizzy")  # its own persona: its preset
    # Quizzy's prompt: Parlour's answer, said by Parlour, as context before the question
    assert f"[Parlour] {parlour_answer}" in users(quiz_request)
    assert users(quiz_request)[-1] == "[Alice] what did Parlour just say?"
    first, second = requests_with(fake_llm, "You are Parlour")
    assert users(second).count(f"[Quizzy] {quiz_answer}") == 1  # told once, not also overheard
    assert not any("Quizzy" in u for u in users(first))
    # neither answered the other: one answer per question addressed to it, three model calls
    assert len(dc.messages(GENERAL)) == 2 and len(quiz.messages(GENERAL)) == 1
    assert len(fake_llm.chat_requests) == 3
    assert usage_main.turns_stored == 2 and usage_quiz.turns_stored == 1  # each its own


async def test_a_bots_message_that_mentions_the_other_is_never_answered(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    """Parlour's answer @mentions Quizzy, and Quizzy posts a ping to Parlour: Discord delivers
    both to the other bot, which keeps the first as context and answers neither."""
    dc = fake_discord
    quiz, place = with_quiz(dc)
    main_id = dc.application_id
    fake_llm.script(reply(f"<@{QUIZ_ID}> over to you"), reply("ok"))
    # a server's access entry, written for discord, covers discord.quiz (and what it is told)
    access = {"allow": [f"discord:guild:{GUILD}"]}
    async with two_bots(make_app, dc, quiz, access=access):
        dc.message(place.general, place.admin, f"<@{main_id}> start the quiz")
        await dc.wait_for_message(GENERAL, timeout=10)
        await dc.wait_idle(quiet=0.3)
        dc.message(place.general, quiz.user, f"<@{main_id}> your turn, <@{QUIZ_ID}> mine")
        await dc.wait_idle(quiet=0.5)
        assert len(fake_llm.chat_requests) == 1 and quiz.messages(GENERAL) == []
        dc.message(place.general, place.member, f"<@{QUIZ_ID}> what was said?")
        await dc.wait_until(lambda: len(quiz.messages(GENERAL)) == 1, timeout=10)
        await dc.wait_idle(quiet=0.3)
    assert len(dc.messages(GENERAL)) == 1 and len(fake_llm.chat_requests) == 2
    [quiz_request] = requests_with(fake_llm, "You are Quizzy")
    told = [u for u in users(quiz_request) if u.startswith("[Parlour]")]
    assert told == [f"[Parlour] <@{QUIZ_ID}> over to you"]
    assert users(quiz_request)[-1] == "[Bobby] what was said?"


async def test_ask_on_the_second_bot_is_its_own_and_told_to_the_first(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    quiz, place = with_quiz(dc)
    fake_llm.script(reply("Round one: name a planet."), reply("ok"))
    async with two_bots(make_app, dc, quiz) as app:
        with quiz.acting():  # Quizzy's /ask, as the Discord client sends it to its application
            interaction = dc.slash(place.general, place.admin, "ask", {"prompt": "start"})
            await dc.wait_until(lambda: bool(quiz.sent()), timeout=10)
        await dc.wait_idle(quiet=0.3)
        dc.message(place.general, place.member, f"<@{dc.application_id}> what did Quizzy ask?")
        await dc.wait_for_message(GENERAL, timeout=10)
        await dc.wait_idle(quiet=0.3)
        usage_quiz = await app.store.stats(f"discord.quiz:{GENERAL}")
    assert interaction["application_id"] == str(QUIZ_ID)
    assert [m["content"] for m in quiz.sent()] == ["Round one: name a planet."]
    [main_request] = requests_with(fake_llm, "You are Parlour")
    assert "[Quizzy] Round one: name a planet." in users(main_request)
    assert usage_quiz.turns_stored == 1


def test_bots_need_names_and_tokens_of_their_own(fake_llm: FakeLLM, tmp_path: Path) -> None:
    base = {"enabled": True, "token": "main-secret-token"}
    cases = [
        ({"bots": [{"name": "quiz", "token": "main-secret-token"}]}, "bots[0].token"),
        (
            {"bots": [{"name": "a", "token": QUIZ_TOKEN}, {"name": "b", "token": QUIZ_TOKEN}]},
            "bots[1].token",
        ),
        (
            {"bots": [{"name": "a", "token": QUIZ_TOKEN}, {"name": "a", "token": "other"}]},
            "bots[1].name",
        ),
        ({"bots": [{"name": "Has Space", "token": QUIZ_TOKEN}]}, "name"),
    ]
    for extra, field in cases:
        settings = make_settings(fake_llm, tmp_path, discord={**base, **extra})
        with pytest.raises(ConfigError) as refused:
            discord_settings(settings)
        message = str(refused.value)
        assert field in message and "discord" in message
        assert "secret" not in message  # never echoes a token


async def test_a_rejected_token_of_one_bot_stops_them_with_its_name(
    make_app: AppFactory, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    world(dc)
    wrong = {"name": "trivia", "token": "not-a-token-of-this-discord"}
    async with make_app(discord=discord_section(dc, bots=[wrong])) as app:
        adapter = create_adapter(app.platform)
        try:
            with pytest.raises(ConfigError) as refused:  # a sentence, not a task group
                await asyncio.wait_for(adapter.run(), 15)
        finally:
            reset_endpoints()
    assert "discord.trivia" in str(refused.value) and "rejected" in str(refused.value)
    assert "not-a-token" not in str(refused.value)


async def test_doctor_checks_each_bots_token(
    fake_llm: FakeLLM, fake_discord: FakeDiscord, tmp_path: Path
) -> None:
    dc = fake_discord
    with_quiz(dc)
    good = {"name": "quiz", "token": QUIZ_TOKEN}
    wrong = {"name": "trivia", "token": "not-a-token-of-this-discord"}
    settings = make_settings(fake_llm, tmp_path, discord=discord_section(dc, bots=[good, wrong]))
    try:
        rows = {check.name: check for check in await diagnose(settings)}
    finally:
        reset_endpoints()
    assert list(rows) == [
        "discord token",
        "discord intents",
        f"discord server {GUILD}",
        "discord.quiz token",
        "discord.quiz intents",
        "discord.trivia token",
    ]
    assert rows["discord.quiz token"].ok and f"id {QUIZ_ID}" in rows["discord.quiz token"].detail
    assert rows["discord.quiz intents"].ok
    trivia = rows["discord.trivia token"]
    assert not trivia.ok and "rejected" in trivia.detail
    assert "not-a-token" not in f"{trivia.detail} {trivia.fix}"
