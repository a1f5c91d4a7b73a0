"""Bursts through the real aiogram client against the fake Bot API: a person's quick messages
answered as one turn whose request holds them all, each stored as itself; a message sent while
the answer is written is answered next; a flood costs at most the burst limit."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from bot.conversation.bursts import Bursts
from bot.errors import ContextTooLongError
from bot.testing.fake_llm import FakeLLM
from bot.testing.fake_telegram import FakeTelegram
from bot.values import TurnStatus
from tests.conftest import AppFactory, group
from tests.telegram_harness import free_port, running_bot, webhook_on

KEY = "telegram:-100"
NO_RATE = {"messages_per_minute": None, "one_in_flight": True}


def user_contents(request: Any) -> list[str]:
    return [str(m["content"]) for m in request.json["messages"] if m["role"] == "user"]


async def test_a_burst_of_three_gets_one_answer_whose_request_holds_all_three(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    team = tg.group(-100, "Team", supergroup=True)
    fake_llm.latency = 0.3  # the measurement used a slow model: 3 s
    chat = {"burst_window": 1.0}
    async with running_bot(make_app, tg, chat=chat, limits=NO_RATE) as (app, _adapter):
        for text in ("hey @parlour_bot", "@parlour_bot can you", "@parlour_bot summarise this"):
            tg.send(team, alice, text)
            await asyncio.sleep(0.3)
        await tg.wait_for_message(-100, timeout=10)
        await tg.wait_idle(quiet=1.5)
        window = await app.store.load_window(KEY, 10)
        stats = await app.store.stats(KEY)
    [request] = fake_llm.chat_requests  # one model call for the three
    users = user_contents(request)
    assert users[-3:] == ["[Alice] hey", "[Alice] can you", "[Alice] summarise this"]
    [answer] = tg.messages(-100)  # one answer, no "still answering" notice
    assert "summarise this" in answer["text"]
    # each message stored as itself, in order (its own platform id: tests/conformance)
    assert [t.status for t in window] == [TurnStatus.CONTEXT] * 2 + [TurnStatus.ANSWERED]
    assert [t.messages[0]["content"] for t in window] == ["hey", "can you", "summarise this"]
    assert stats.turns_stored == 1 and stats.unanswered == 0


async def test_the_next_request_starts_with_the_burst_as_it_was_sent(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    """The burst's earlier messages were sent where they are stored: the next prompt's prefix
    holds the same messages, so a provider's cache serves them."""
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    team = tg.group(-100, "Team", supergroup=True)
    async with running_bot(make_app, tg, chat={"burst_window": 0.6}, limits=NO_RATE):
        tg.send(team, alice, "@parlour_bot one")
        await asyncio.sleep(0.1)
        tg.send(team, alice, "@parlour_bot two")
        await tg.wait_for_message(-100, timeout=10)
        tg.send(team, alice, "@parlour_bot three")
        await tg.wait_for_message(-100, count=2, timeout=10)
    first, second = fake_llm.chat_requests
    sent = first.json["messages"]
    assert user_contents(first)[-2:] == ["[Alice] one", "[Alice] two"]
    assert second.json["messages"][: len(sent)] == sent  # the same bytes, then the answer
    assert user_contents(second)[-1] == "[Alice] three"


async def test_a_message_sent_mid_answer_is_answered_next(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    team = tg.group(-100, "Team", supergroup=True)
    fake_llm.latency = 1.0
    async with running_bot(make_app, tg, chat={"burst_window": 0.2}, limits=NO_RATE):
        tg.send(team, alice, "@parlour_bot first question")
        await tg.wait_until(lambda: len(fake_llm.chat_requests) == 1, timeout=10)
        tg.send(team, alice, "@parlour_bot and another thing")  # the model is answering
        await tg.wait_for_message(-100, count=2, timeout=15)
        await tg.wait_idle(quiet=0.5)
    first, second = fake_llm.chat_requests
    assert user_contents(first)[-1] == "[Alice] first question"
    assert user_contents(second)[-1] == "[Alice] and another thing"
    assert "[Alice] first question" in user_contents(second)  # answered after the first
    texts = [m["text"] for m in tg.messages(-100)]
    assert len(texts) == 2 and not any("still answering" in t for t in texts)


@pytest.mark.slow
async def test_a_thousand_message_flood_costs_at_most_the_burst_limit(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    spammer, bob = tg.user(7, "Spammer"), tg.user(8, "Bob")
    team = tg.group(-100, "Team", supergroup=True)
    fake_llm.latency = 0.2
    limits = {"messages_per_minute": 10, "burst": 5, "one_in_flight": True}  # the defaults
    async with running_bot(make_app, tg, chat={"burst_window": 0.5}, limits=limits) as (app, _):
        for n in range(1000):
            tg.send(team, spammer, f"@parlour_bot spam {n}")
        tg.send(team, bob, "@parlour_bot hello, still with us?")
        await tg.wait_until(lambda: len(fake_llm.chat_requests) >= 2, timeout=30)
        await tg.wait_idle(quiet=1.5)
        stats = await app.store.stats(KEY)
    spam_calls = [r for r in fake_llm.chat_requests if "spam" in user_contents(r)[-1]]
    assert 1 <= len(spam_calls) <= 5  # limits.burst at most (folded: usually one)
    texts = [m["text"] for m in tg.messages(-100)]
    assert any("hello, still with us?" in t for t in texts)
    assert sum("faster than I can answer" in t for t in texts) == 1  # said once
    assert stats.turns_stored == len(fake_llm.chat_requests)


async def test_bursts_off_answers_each_message(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    team = tg.group(-100, "Team", supergroup=True)
    async with running_bot(make_app, tg, chat={"burst_window": 0}, limits=NO_RATE):
        tg.send(team, alice, "@parlour_bot one")
        tg.send(team, alice, "@parlour_bot two")
        await tg.wait_for_message(-100, count=2, timeout=10)
    assert len(fake_llm.chat_requests) == 2


async def test_someone_elses_message_is_not_folded_into_a_burst(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    alice, bob = tg.user(7, "Alice"), tg.user(8, "Bob")
    team = tg.group(-100, "Team", supergroup=True)
    async with running_bot(make_app, tg, chat={"burst_window": 0.5}, limits=NO_RATE):
        tg.send(team, alice, "@parlour_bot alice asks")
        tg.send(team, bob, "@parlour_bot bob asks")
        await tg.wait_for_message(-100, count=2, timeout=10)
    first, second = fake_llm.chat_requests
    assert user_contents(first)[-1] == "[Alice] alice asks"
    assert user_contents(second)[-1] == "[Bob] bob asks"


async def test_a_burst_stops_at_its_message_cap() -> None:
    bursts = Bursts(window=0.05, max_messages=3, max_chars=1000)
    line = [bursts.arrive("k", "u", f"m{n}", str(n), alone=False) for n in range(5)]
    gathered = await bursts.gather("k", "u", line[0])
    assert [a.text for a in gathered] == ["m0", "m1", "m2"]
    assert [a.taken for a in line] == [False, True, True, False, False]
    for arrival in line:
        bursts.leave("k", "u", arrival)
    assert len(bursts) == 0


async def test_a_message_with_attachments_ends_the_burst() -> None:
    bursts = Bursts(window=0.05, max_messages=10, max_chars=1000)
    first = bursts.arrive("k", "u", "look", "1", alone=False)
    bursts.arrive("k", "u", "", "2", alone=True)  # a photo: its own turn
    bursts.arrive("k", "u", "and this", "3", alone=False)
    assert [a.text for a in await bursts.gather("k", "u", first)] == ["look"]


async def test_a_burst_keeps_to_the_input_limit() -> None:
    bursts = Bursts(window=0.05, max_messages=10, max_chars=10)
    first = bursts.arrive("k", "u", "12345", "1", alone=False)
    bursts.arrive("k", "u", "1234", "2", alone=False)  # 5 + 1 + 4 = 10: fits
    bursts.arrive("k", "u", "x", "3", alone=False)  # would pass 10
    assert [a.text for a in await bursts.gather("k", "u", first)] == ["12345", "1234"]


async def test_a_burst_at_the_default_limits_takes_no_waiting_places(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    """Messages that join a burst being gathered wait for nothing: five quick messages at the
    default limits (a rate burst of 5, 3 waiting) are one turn, none refused."""
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    team = tg.group(-100, "Team", supergroup=True)
    limits = {"messages_per_minute": 10, "burst": 5, "one_in_flight": True, "max_queued": 3}
    async with running_bot(make_app, tg, chat={"burst_window": 1.0}, limits=limits):
        for n in range(5):
            tg.send(team, alice, f"@parlour_bot part {n}")
            await asyncio.sleep(0.1)
        await tg.wait_for_message(-100, timeout=10)
        await tg.wait_idle(quiet=1.5)
    [request] = fake_llm.chat_requests
    assert user_contents(request)[-5:] == [f"[Alice] part {n}" for n in range(5)]
    assert [m["text"] for m in tg.messages(-100)] == ["echo: [Alice] part 4"]


async def test_messages_a_burst_took_free_their_places_for_the_next_ones(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    """Three answered as one; two more sent while that answer is written both wait (one place
    each of max_queued 2): the folded ones hold none."""
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    team = tg.group(-100, "Team", supergroup=True)
    fake_llm.latency = 1.5
    limits = {"messages_per_minute": None, "one_in_flight": True, "max_queued": 2}
    async with running_bot(make_app, tg, chat={"burst_window": 0.5}, limits=limits):
        for n in range(3):
            tg.send(team, alice, f"@parlour_bot part {n}")
            await asyncio.sleep(0.1)
        await tg.wait_until(lambda: len(fake_llm.chat_requests) == 1, timeout=10)
        tg.send(team, alice, "@parlour_bot and four")
        await asyncio.sleep(0.1)
        tg.send(team, alice, "@parlour_bot and five")
        await tg.wait_for_message(-100, count=2, timeout=15)
        await tg.wait_idle(quiet=2.5)
    texts = [m["text"] for m in tg.messages(-100)]
    assert not any("still answering" in t for t in texts)
    assert texts == ["echo: [Alice] part 2", "echo: [Alice] and five"]  # 4 and 5: one burst


async def test_when_the_leader_fails_before_its_turn_the_others_are_answered_on_their_own(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with make_app(chat={"burst_window": 0.3}) as app:
        real = app.service.prompts.build
        calls = 0

        async def too_long_once(*args: Any, **kwargs: Any) -> Any:
            nonlocal calls
            calls += 1
            if calls == 1:
                raise ContextTooLongError(needed=10, budget=5)
            return await real(*args, **kwargs)

        app.service.prompts.build = too_long_once  # type: ignore[method-assign]
        first = asyncio.ensure_future(app.service.chat(group(message_id="1"), "hey"))
        await asyncio.sleep(0.05)
        second = asyncio.ensure_future(app.service.chat(group(message_id="2"), "summarise it"))
        failed, answered = await asyncio.gather(first, second, return_exceptions=True)
        window = await app.store.load_window(KEY, 10)
    assert isinstance(failed, ContextTooLongError)
    assert not isinstance(answered, BaseException)
    assert answered.text == "echo: [Alice] summarise it"  # not lost, not folded
    assert [t.messages[0]["content"] for t in window] == ["summarise it"]


async def test_unaddressed_follow_ups_join_the_burst_in_a_group(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    """ "hey @bot" / "can you" / "summarise this": the follow-ups need no @ to be part of the
    turn; someone else's chatter meanwhile stays chatter, and so does the sender's own once
    the answer is on its way."""
    tg = fake_telegram
    tg.privacy_mode = False  # the bot reads the whole group
    alice, bob = tg.user(7, "Alice"), tg.user(8, "Bob")
    team = tg.group(-100, "Team", supergroup=True)
    fake_llm.latency = 0.5
    async with running_bot(make_app, tg, chat={"burst_window": 0.8}, limits=NO_RATE) as (
        app,
        _adapter,
    ):
        tg.send(team, alice, "hey @parlour_bot")
        await asyncio.sleep(0.2)
        tg.send(team, alice, "can you")
        await asyncio.sleep(0.1)
        tg.send(team, bob, "lunch anyone?")
        await asyncio.sleep(0.1)
        tg.send(team, alice, "summarise this thing")
        await tg.wait_until(lambda: len(fake_llm.chat_requests) == 1, timeout=10)
        tg.send(team, alice, "thanks in advance")  # the model is answering: chatter
        await tg.wait_for_message(-100, timeout=10)
        await tg.wait_idle(quiet=1.0)
        window = await app.store.load_window(KEY, 10)
        waiting = await app.store.load_overheard(KEY, 0)
    [request] = fake_llm.chat_requests
    users = user_contents(request)
    assert users[-3:] == ["[Alice] hey", "[Alice] can you", "[Alice] summarise this thing"]
    assert "[Bob] lunch anyone?" not in users  # said while the turn was read: the next one's
    [answer] = tg.messages(-100)
    assert "summarise this thing" in answer["text"]
    stored = [(t.user_name, t.status, t.messages[0]["content"]) for t in window]
    assert stored[-3:] == [
        ("Alice", TurnStatus.CONTEXT, "hey"),
        ("Alice", TurnStatus.CONTEXT, "can you"),
        ("Alice", TurnStatus.ANSWERED, "summarise this thing"),
    ]
    assert [o.text for o in waiting] == ["lunch anyone?", "thanks in advance"]


async def test_webhook_mode_answers_a_burst_waiting_in_the_inbox_once(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    """Webhook mode runs a chat's updates one at a time: the burst's later messages wait in
    the inbox while the first is answered; its turn takes them (and the inbox finishes them),
    someone else's message there is answered on its own, after."""
    tg = fake_telegram
    tg.privacy_mode = False  # the unaddressed follow-up reaches the bot too
    alice, bob = tg.user(7, "Alice"), tg.user(8, "Bob")
    team = tg.group(-100, "Team", supergroup=True)
    webhook = webhook_on(free_port())
    telegram = {"mode": "webhook", "webhook": webhook, "stream": False}
    async with running_bot(
        make_app, tg, telegram=telegram, chat={"burst_window": 1.0}, limits=NO_RATE
    ) as (app, _adapter):
        for text in ("hey @parlour_bot", "@parlour_bot can you", "summarise this thing"):
            tg.send(team, alice, text)
            await asyncio.sleep(0.3)
        tg.send(team, bob, "@parlour_bot and me?")
        await tg.wait_for_message(-100, count=2, timeout=15)
        await tg.wait_idle(quiet=1.0)
        window = await app.store.load_window(KEY, 10)
        pending = await app.store.inbox_pending("telegram:123456")
    first, second = fake_llm.chat_requests
    assert user_contents(first)[-3:] == [
        "[Alice] hey",
        "[Alice] can you",
        "[Alice] summarise this thing",
    ]
    assert user_contents(second)[-1] == "[Bob] and me?"
    texts = [m["text"] for m in tg.messages(-100)]
    assert texts == ["echo: [Alice] summarise this thing", "echo: [Bob] and me?"]
    assert [t.messages[0]["content"] for t in window if t.user_name == "Alice"] == [
        "hey",
        "can you",
        "summarise this thing",
    ]
    assert pending == 0  # the folded updates are finished, never run again


@pytest.mark.parametrize("mode", ["polling", "webhook"])
async def test_a_follow_up_that_mentions_someone_else_is_not_the_bursts(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram, mode: str
) -> None:
    """ "@bot what time is it" / "@bob can you check the door" / "in Berlin": the second is for
    Bob (or another bot), so it stays chatter. Polling: the unaddressed third still joins;
    webhook mode (the burst's messages read from the inbox, in order) ends the burst there."""
    tg = fake_telegram
    tg.privacy_mode = False  # the bot reads the whole group
    alice, _bob = tg.user(7, "Alice"), tg.user(8, "Bob", username="bob")
    team = tg.group(-100, "Team", supergroup=True)
    webhook = webhook_on(free_port())
    telegram: dict[str, Any] = {"mode": "webhook", "webhook": webhook} if mode == "webhook" else {}
    async with running_bot(
        make_app, tg, telegram=telegram, chat={"burst_window": 0.8}, limits=NO_RATE
    ):
        tg.send(team, alice, "@parlour_bot what time is it")
        await asyncio.sleep(0.2)
        tg.send(team, alice, "@bob can you check the door")
        await asyncio.sleep(0.2)
        tg.send(team, alice, "in Berlin")
        await tg.wait_for_message(-100, timeout=10)
        await tg.wait_idle(quiet=1.0)
    [request] = fake_llm.chat_requests
    users = user_contents(request)
    joined = ["[Alice] in Berlin"] if mode == "polling" else []
    assert users[-1 - len(joined) :] == ["[Alice] what time is it", *joined]
    assert not any("check the door" in text for text in users)
