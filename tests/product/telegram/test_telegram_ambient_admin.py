"""Ambient mode switched by a group's admins (``/ambient``, audited, kept over a restart) and
its optional classifier (a yes/no model call whose tokens are the bot's own), through the real
aiogram adapter on the fake Bot API and the openai SDK on the fake LLM."""

from __future__ import annotations

from bot.guardrails.budgets import utc_day
from bot.testing.fake_llm import FakeLLM, reply
from bot.testing.fake_telegram import FakeTelegram
from bot.values import BOT_USER, AuditAction
from tests.conftest import AppFactory
from tests.product.telegram.test_telegram_ambient import AMBIENT_HERE, GROUP, decisions, people
from tests.telegram_harness import fed_bot


async def test_admins_turn_it_on_and_off_audited_and_members_cannot(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    group, alice, bob = people(tg)
    tg.set_member(GROUP, alice["id"], "administrator")
    async with fed_bot(make_app, tg, telegram={"stream": False}) as fed:
        tg.send(group, bob, "/ambient on")
        [refused] = await fed.replies(GROUP)
        assert "Only this chat's admins can use /ambient" in refused["text"]
        tg.send(group, alice, "/ambient")
        status = (await fed.replies(GROUP, count=2))[-1]["text"]
        assert status.startswith("Ambient mode is off (the default).")
        tg.send(group, alice, "/ambient on")
        assert "Ambient mode is on" in (await fed.replies(GROUP, count=3))[-1]["text"]
        tg.send(group, bob, "Parlour, what time is it?")
        await fed.replies(GROUP, count=4)
        tg.send(group, alice, "/ambient status")
        status = (await fed.replies(GROUP, count=5))[-1]["text"]
        assert status.startswith("Ambient mode is on (set here with /ambient).")
        assert "Unprompted answers in the last hour: 1 of 6." in status
        tg.send(group, alice, "/ambient off")
        assert "Ambient mode is off" in (await fed.replies(GROUP, count=6))[-1]["text"]
        tg.send(group, bob, "Parlour, what day is it?")
        await fed.silence(GROUP)
        audit = await fed.app.store.audit(f"telegram:{GROUP}")
    changes = [(e.action, e.actor_id, e.detail) for e in audit]
    assert changes == [
        (AuditAction.AMBIENT, "7", "off -> on"),
        (AuditAction.AMBIENT, "7", "on -> off"),
    ]
    assert len(fake_llm.chat_requests) == 1


async def test_an_admins_choice_overrides_the_preset_and_outlives_a_restart(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    group, alice, bob = people(tg)
    tg.set_member(GROUP, alice["id"], "creator")
    async with fed_bot(make_app, tg, telegram={"stream": False}, chats=AMBIENT_HERE) as fed:
        tg.send(group, alice, "/ambient off")
        await fed.replies(GROUP)
    async with fed_bot(make_app, tg, telegram={"stream": False}, chats=AMBIENT_HERE) as fed:
        tg.send(group, bob, "Parlour, what time is it?")
        await fed.silence(GROUP)
        tg.send(group, alice, "/ambient reset")
        text = (await fed.replies(GROUP, count=2))[-1]["text"]
        assert text.startswith("Ambient mode is on")
        assert text.startswith("Ambient mode is on (this chat's configured preset): ")
        tg.send(group, bob, "Parlour, what time is it?")
        await fed.replies(GROUP, count=3)
        audit = await fed.app.store.audit(f"telegram:{GROUP}")
    assert [e.detail for e in audit] == ["on -> off", "off -> on (the preset's)"]


async def test_private_chats_have_no_ambient_mode(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    chat = tg.private_chat(alice)
    async with fed_bot(make_app, tg, telegram={"stream": False}, admins=["telegram:7"]) as fed:
        tg.send(chat, alice, "/ambient on")  # a bot admin: the command's own answer
        [answer] = await fed.replies(chat["id"])
        menus = {
            c.params["scope"]["type"]: c.params["commands"]
            for c in tg.calls
            if c.method == "setMyCommands"
        }
    assert answer["text"] == "Ambient mode is for groups: here I answer every message."
    assert "ambient" not in {c["command"] for c in menus["all_private_chats"]}
    assert "ambient" in {c["command"] for c in menus["all_chat_administrators"]}


async def test_the_classifier_has_the_last_word_and_its_tokens_are_the_bots(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    group, alice, bob = people(tg)
    ambient = {"classifier_model": "tiny-judge", "classifier_threshold": 0.7}
    fake_llm.script(
        reply("yes 0.9", usage={"prompt_tokens": 120, "completion_tokens": 3}),
        reply("It is noon."),
        reply("no 0.8"),  # sure it is not for the bot: 0.2
        reply("yes 0.6"),  # below the threshold
        reply("I cannot say."),  # no usable answer
    )
    async with fed_bot(
        make_app, tg, telegram={"stream": False}, chats=AMBIENT_HERE, ambient=ambient
    ) as fed:
        tg.send(group, alice, "Parlour, what time is it?")
        [answer] = await fed.replies(GROUP)
        assert answer["text"] == "It is noon."
        for text in ("Parlour, are you a robot?", "hey Parlour", "Parlour, really?"):
            tg.send(group, bob, "so")  # not two in a row
            tg.send(group, bob, text)
            await fed.silence(GROUP)
        tg.send(group, bob, "just chatting")  # chatter: the model is not asked
        await fed.silence(GROUP)
        counted = decisions(fed.app)
        spent = await fed.app.store.tokens_on(utc_day(), f"telegram:{GROUP}", BOT_USER)
    asked = fake_llm.chat_requests[0].json
    assert asked["model"] == "tiny-judge"
    assert asked["max_tokens"] == 8
    assert '"text":"Parlour, what time is it?"' in asked["messages"][-1]["content"]
    assert fake_llm.chat_requests[1].json["model"] == "gpt-4o-mini"  # the answer: the chat's
    assert len(fake_llm.chat_requests) == 5
    assert counted[("answer", "name")] == 1
    assert counted[("silent", "classifier")] == 2
    assert counted[("silent", "classifier_failed")] == 1
    assert spent >= 123  # the classifier's calls, booked as the bot's own in this chat
