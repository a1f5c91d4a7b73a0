"""Ambient mode in a Telegram group: the real aiogram adapter on the fake Bot API (privacy mode
off, so the bot sees every message), the openai SDK on the fake LLM. The bot answers a message
clearly meant for it without an @, leaves chatter alone, and keeps to its limits."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from bot.app import App
from bot.testing.fake_llm import FakeLLM, reply
from bot.testing.fake_telegram import FakeTelegram
from tests.conftest import AppFactory
from tests.product.telegram.test_telegram import user_texts
from tests.telegram_harness import FedBot, fed_bot

GROUP = -100
AMBIENT_HERE = [{"match": f"telegram:{GROUP}", "ambient": True}]


class Clock:
    """Monotonic seconds the test moves on by hand (the limits' hour, cool-down, follow-up)."""

    def __init__(self) -> None:
        self.now = 10_000.0

    def __call__(self) -> float:
        return self.now


def with_clock(fed: FedBot) -> Clock:
    """The per-process limits on a clock the test moves. With the store shared by replicas
    (the end-to-end run on PostgreSQL) the hourly places are the database's, on its clock,
    which no test moves: they are tested in tests/product/guardrails (across replicas)."""
    clock = Clock()
    ambient = fed.app.service.ambient_mode
    ambient.limits.clock = clock
    ambient.shared = None
    return clock


def decisions(app: App) -> dict[tuple[str, str], float]:
    """``parlour_ambient_decisions_total`` by (decision, reason), as ``/metrics`` renders it."""
    found: dict[tuple[str, str], float] = {}
    for family in text_string_to_metric_families(app.metrics.exposition().decode()):
        for sample in family.samples:
            if sample.name == "parlour_ambient_decisions_total":
                found[(sample.labels["decision"], sample.labels["reason"])] = sample.value
    return found


def people(tg: FakeTelegram) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    tg.privacy_mode = False  # the bot sees messages not addressed to it
    group = tg.group(GROUP, "Team", supergroup=True)
    return group, tg.user(7, "Alice"), tg.user(8, "Bob")


async def test_it_answers_its_name_without_an_at_and_leaves_chatter_alone(
    make_app: AppFactory,
    fake_llm: FakeLLM,
    fake_telegram: FakeTelegram,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="bot.conversation.ambient")
    tg = fake_telegram
    group, alice, bob = people(tg)
    fake_llm.script(reply("It is noon."))
    async with fed_bot(make_app, tg, telegram={"stream": False}, chats=AMBIENT_HERE) as fed:
        tg.send(group, bob, "anyone up for lunch?")
        await fed.silence(GROUP)
        tg.send(group, bob, "Parlour is down again I think")  # talked about, not to
        await fed.silence(GROUP)
        asked = tg.send(group, alice, "Parlour, what time is it?")
        [answer] = await fed.replies(GROUP)
        assert answer["text"] == "It is noon."
        assert answer["reply_to_message"]["message_id"] == asked["message_id"]
        tg.send(group, bob, "nice")
        await fed.silence(GROUP)
        counted = decisions(fed.app)
    assert len(fake_llm.chat_requests) == 1
    # the chatter before it is context, as for an addressed message
    assert user_texts(fake_llm) == [
        "[Bob] anyone up for lunch?",
        "[Bob] Parlour is down again I think",
        "[Alice] Parlour, what time is it?",
    ]
    assert counted == {("silent", "chatter"): 3, ("answer", "name"): 1}
    logged = [r.getMessage() for r in caplog.records if r.name == "bot.conversation.ambient"]
    assert len(logged) == 4  # every decision, with its reason and never the text
    assert f"ambient answer chat=telegram:{GROUP} message={asked['message_id']} user=7" in logged[2]
    assert logged[2].endswith("reason=name") and logged[0].endswith("reason=chatter")
    assert not any("lunch" in line or "time is it" in line for line in logged)


async def test_it_is_off_by_default(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    group, alice, _ = people(tg)
    async with fed_bot(make_app, tg, telegram={"stream": False}) as fed:
        tg.send(group, alice, "Parlour, what time is it?")
        await fed.silence(GROUP)
        tg.send(group, alice, "@parlour_bot what time is it?")  # addressed: answered as ever
        await fed.replies(GROUP)
        counted = decisions(fed.app)
    assert len(fake_llm.chat_requests) == 1
    assert counted == {}  # no decision where it is off


async def test_it_stops_at_its_hourly_cap_until_the_hour_has_passed(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    group, alice, bob = people(tg)
    ambient = {"max_per_hour": 2}
    async with fed_bot(
        make_app, tg, telegram={"stream": False}, chats=AMBIENT_HERE, ambient=ambient
    ) as fed:
        clock = with_clock(fed)
        for n in range(2):
            tg.send(group, alice, f"Parlour, question {n}?")
            await fed.replies(GROUP, count=n + 1)
            tg.send(group, bob, "ok")  # a message between: not two in a row
            await fed.silence(GROUP)
            clock.now += 60
        tg.send(group, alice, "Parlour, one more?")
        await fed.silence(GROUP)
        clock.now += 3600 - 120  # the first answer is an hour old: room for one
        tg.send(group, alice, "Parlour, and now?")
        await fed.replies(GROUP, count=3)
        counted = decisions(fed.app)
    assert counted[("silent", "hourly_cap")] == 1
    assert counted[("answer", "name")] == 3


async def test_never_two_unprompted_answers_in_a_row(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    group, alice, bob = people(tg)
    async with fed_bot(make_app, tg, telegram={"stream": False}, chats=AMBIENT_HERE) as fed:
        tg.send(group, alice, "Parlour, what time is it?")
        await fed.replies(GROUP)
        tg.send(group, bob, "Parlour, and what day is it?")  # the very next one: left
        await fed.silence(GROUP)
        tg.send(group, bob, "Parlour, what day is it?")  # one was left between: answered
        await fed.replies(GROUP, count=2)
        tg.send(group, alice, "@parlour_bot thanks")  # addressed: answered as ever
        await fed.replies(GROUP, count=3)
        tg.send(group, alice, "Parlour, and the weather?")  # an addressed answer came between
        await fed.replies(GROUP, count=4)
        counted = decisions(fed.app)
    assert counted == {("answer", "name"): 3, ("silent", "in_a_row"): 1}


async def test_stop_shut_up_and_be_quiet_start_a_cool_down(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    group, alice, bob = people(tg)
    async with fed_bot(
        make_app, tg, telegram={"stream": False}, chats=AMBIENT_HERE, ambient={"cooldown": 600}
    ) as fed:
        clock = with_clock(fed)
        tg.send(group, alice, "Parlour, what time is it?")
        await fed.replies(GROUP)
        tg.send(group, bob, "shut up")  # right after its unprompted answer: meant for it
        await fed.silence(GROUP)
        tg.send(group, alice, "Parlour, what day is it?")
        await fed.silence(GROUP)
        clock.now += 601
        tg.send(group, alice, "Parlour, what day is it?")
        await fed.replies(GROUP, count=2)

        tg.send(group, bob, "Parlour, be quiet")  # its name: meant for it at any time
        await fed.silence(GROUP)
        clock.now += 601
        tg.send(group, bob, "@parlour_bot stop")  # addressed: answered, and a cool-down
        await fed.replies(GROUP, count=3)
        tg.send(group, alice, "Parlour, are you there?")
        await fed.silence(GROUP)
        counted = decisions(fed.app)
    assert counted[("silent", "stop")] == 2
    assert counted[("silent", "cooldown")] == 2


async def test_stop_between_people_is_not_for_the_bot(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    group, alice, bob = people(tg)
    async with fed_bot(make_app, tg, telegram={"stream": False}, chats=AMBIENT_HERE) as fed:
        tg.send(group, bob, "stop it Alice")  # it has not spoken unprompted: not to it
        await fed.silence(GROUP)
        tg.send(group, alice, "Parlour, how do I stop the timer?")  # a question, not a stop
        await fed.replies(GROUP)
        counted = decisions(fed.app)
    assert counted == {("silent", "chatter"): 1, ("answer", "name"): 1}


async def test_a_follow_up_question_from_the_person_it_just_answered(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    group, alice, bob = people(tg)
    async with fed_bot(
        make_app, tg, telegram={"stream": False}, chats=AMBIENT_HERE, ambient={"follow_up": 120}
    ) as fed:
        clock = with_clock(fed)
        tg.send(group, alice, "@parlour_bot what is the capital of France?")
        await fed.replies(GROUP)
        tg.send(group, alice, "and of Italy?")
        await fed.replies(GROUP, count=2)
        tg.send(group, bob, "what about Spain?")  # Bob was not in the exchange
        await fed.silence(GROUP)
        tg.send(group, alice, "thanks")  # not a question
        await fed.silence(GROUP)
        clock.now += 121
        tg.send(group, alice, "and Germany?")  # the exchange is over
        await fed.silence(GROUP)
        counted = decisions(fed.app)
    assert user_texts(fake_llm)[-1] == "[Alice] and of Italy?"
    assert counted == {("answer", "follow_up"): 1, ("silent", "chatter"): 3}


async def test_a_question_replying_to_someone_who_quoted_it(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    group, alice, bob = people(tg)
    fake_llm.script(reply("Four."))
    async with fed_bot(make_app, tg, telegram={"stream": False}, chats=AMBIENT_HERE) as fed:
        question = tg.send(group, alice, "@parlour_bot what is 2+2?")
        [answer] = await fed.replies(GROUP)
        quoting = tg.send(group, alice, "really?", reply_to=answer)  # a reply to the bot
        await fed.replies(GROUP, count=2)
        lol = tg.send(group, bob, "lol", reply_to=quoting)  # not a question
        await fed.silence(GROUP)
        tg.send(group, bob, "are you sure it is not 5?", reply_to=quoting)
        await fed.replies(GROUP, count=3)
        carol = tg.user(9, "Carol")
        tg.send(group, carol, "why lol?", reply_to=lol)  # a message it did not answer
        await fed.silence(GROUP)
        counted = decisions(fed.app)
    quoted = '[Bob] [replying to Alice: "really?"]\n[Bob] are you sure it is not 5?'
    assert user_texts(fake_llm)[-1] == quoted
    assert question["message_id"] < quoting["message_id"]
    assert counted[("answer", "reply")] == 1
