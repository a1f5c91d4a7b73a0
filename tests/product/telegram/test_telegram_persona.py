"""/persona and /reset in Telegram groups: the real adapter on the fake Bot API, where
``getChatMember`` decides who is an admin, and the menus each audience is shown (updates fed
in-process, ``fed_bot``; the menus at start-up on the polling path)."""

from __future__ import annotations

from typing import Any

from bot.testing.fake_llm import FakeLLM
from bot.testing.fake_telegram import FakeTelegram
from tests.conftest import AppFactory
from tests.product.telegram.test_telegram import user_texts
from tests.telegram_harness import fed_bot, running_bot

PIRATE = "You are a pirate. Answer in pirate speak."


def system_of(fake: FakeLLM, index: int = -1) -> str:
    body: dict[str, Any] = fake.chat_requests[index].json
    return str(body["messages"][0]["content"])


async def test_a_group_admin_sets_the_persona_and_a_member_cannot(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    admin, member = tg.user(7, "Alice"), tg.user(8, "Bob")
    team = tg.group(-100, "Team", supergroup=True)
    tg.set_member(team["id"], admin["id"], "administrator")
    tg.set_member(team["id"], member["id"], "member")
    async with fed_bot(make_app, tg, telegram={"stream": False}) as fed:
        tg.send(team, member, "/persona You obey Bob only.")
        [refused] = await fed.replies(team["id"])
        assert "Only this chat's admins can see or change its persona" in refused["text"]
        tg.send(team, admin, f"/persona {PIRATE}")
        messages = await fed.replies(team["id"], count=2)
        assert "Persona set" in messages[-1]["text"]
        tg.send(team, member, "@parlour_bot who are you?")
        await fed.replies(team["id"], count=3)
    assert system_of(fake_llm) == PIRATE
    checked = {int(c.params["user_id"]) for c in tg.calls if c.method == "getChatMember"}
    assert checked == {7, 8}


async def test_a_members_reset_in_a_shared_group_is_refused(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    admin, member = tg.user(7, "Alice"), tg.user(8, "Bob")
    team = tg.group(-100, "Team", supergroup=True)
    tg.set_member(team["id"], admin["id"], "creator")
    tg.set_member(team["id"], member["id"], "member")
    async with fed_bot(make_app, tg, telegram={"stream": False}) as fed:
        tg.send(team, admin, "@parlour_bot the plan is blue")
        await fed.replies(team["id"])
        tg.send(team, member, "/reset")
        messages = await fed.replies(team["id"], count=2)
        assert "Only this chat's admins can reset the shared conversation" in messages[-1]["text"]
        tg.send(team, member, "@parlour_bot what was the plan?")
        await fed.replies(team["id"], count=3)
        assert user_texts(fake_llm) == ["[Alice] the plan is blue", "[Bob] what was the plan?"]
        tg.send(team, admin, "/reset")
        messages = await fed.replies(team["id"], count=4)
        assert "Started a fresh conversation" in messages[-1]["text"]
        tg.send(team, member, "@parlour_bot and now?")
        await fed.replies(team["id"], count=5)
    assert user_texts(fake_llm) == ["[Bob] and now?"]


async def test_persona_is_in_the_admin_and_private_menus_only(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    async with running_bot(make_app, tg):
        await tg.wait_until(
            lambda: len([c for c in tg.calls if c.method == "setMyCommands"]) >= 3, timeout=10
        )
    menus = {
        c.params["scope"]["type"]: {cmd["command"] for cmd in c.params["commands"]}
        for c in tg.calls
        if c.method == "setMyCommands"
    }
    assert "persona" in menus["all_chat_administrators"]
    assert "persona" in menus["all_private_chats"]
    assert "persona" not in menus["all_group_chats"]


async def test_the_persona_follows_a_group_that_becomes_a_supergroup(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    small = tg.group(-5, "Small group")
    tg.set_member(small["id"], alice["id"], "creator")
    async with fed_bot(make_app, tg, telegram={"stream": False}) as fed:
        tg.send(small, alice, f"/persona {PIRATE}")
        await fed.replies(small["id"])
        supergroup = tg.migrate(small, -1005)
        tg.send(supergroup, alice, "@parlour_bot ahoy?")
        await fed.replies(supergroup["id"])
        assert system_of(fake_llm) == PIRATE
    async with fed_bot(make_app, tg, telegram={"stream": False}) as fed:  # after a restart
        tg.send(supergroup, alice, "@parlour_bot still a pirate?")
        await fed.replies(supergroup["id"], count=2)
    assert system_of(fake_llm) == PIRATE
    assert len(fake_llm.chat_requests) == 2
