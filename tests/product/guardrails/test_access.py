"""Access control: allow and deny lists, private-bot mode, bot admins never locked out."""

from __future__ import annotations

import pytest

from bot.context import ChatContext, ChatType
from bot.guardrails.access import AccessDeniedError
from bot.guardrails.rate_limit import Once
from bot.testing.fake_llm import FakeLLM
from tests.conftest import AppFactory, group, private


async def test_everyone_by_default(make_app: AppFactory) -> None:
    async with make_app() as app:
        assert app.service.access.allows(group()) and app.service.access.allows(private())


async def test_deny_wins_and_nothing_is_stored(make_app: AppFactory, fake_llm: FakeLLM) -> None:
    async with make_app(access={"allow": ["*:group"], "deny": ["telegram:user:2"]}) as app:
        with pytest.raises(AccessDeniedError) as refused:
            await app.service.chat(group("2", "Spammer"), "buy my stuff")
        assert "can't chat here" in refused.value.chat_text
        assert (await app.store.stats("telegram:-100")).turns_stored == 0
        assert not fake_llm.chat_requests
        await app.service.chat(group("1"), "hi")  # allowed: a group, not the denied user
        with pytest.raises(AccessDeniedError):
            await app.service.chat(private("1"), "hi")  # private chats are not on the list
        assert not await app.service.overhear(group("2"), "chatter")
        result = await app.commands.handle(group("2"), "history")
        assert not result.ok and "can't chat here" in result.text


async def test_private_bot_mode(make_app: AppFactory, fake_llm: FakeLLM) -> None:
    access = {"private_bot": True, "allow": ["telegram:-100", "telegram:user:7"], "refusal": "No."}
    async with make_app(access=access, admins=["telegram:99"]) as app:
        await app.service.chat(group("1", chat="-100"), "in the allowed group")
        await app.service.chat(private("7"), "the allowed user")
        await app.service.chat(private("99"), "a bot admin is never locked out")
        with pytest.raises(AccessDeniedError) as refused:
            await app.service.chat(group("1", chat="-200"), "another group")
        assert refused.value.chat_text == "No."
    async with make_app(access={"private_bot": True}) as app:
        with pytest.raises(AccessDeniedError):
            await app.service.chat(private("1"), "an empty allow list admits nobody")


async def test_the_console_owner_is_never_locked_out(make_app: AppFactory) -> None:
    owner = ChatContext(
        "console", "local", ChatType.PRIVATE, "me", "me", is_admin=True, is_owner=True
    )
    limits = {"messages_per_minute": 1, "burst": 1}
    async with make_app(access={"private_bot": True}, limits=limits) as app:
        for n in range(3):  # neither the allow list nor the rate applies to whoever runs the bot
            await app.service.chat(owner, f"line {n}")


async def test_a_refused_chat_is_told_once_a_day_not_per_message(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with make_app(access={"deny": ["telegram:-200"]}) as app:
        notices = []
        for n in range(3):
            with pytest.raises(AccessDeniedError) as refused:
                await app.service.chat(group(str(n), chat="-200"), "hello?")
            notices.append(refused.value.notify)
        command = await app.commands.handle(group("9", chat="-200"), "help")
        assert notices == [True, False, False] and not command.ok and not command.notify
        assert (await app.commands.handle(group("9", chat="-300"), "help")).ok
    assert fake_llm.chat_requests == []


def test_once_per_key_and_bounded() -> None:
    now = [0.0]
    once = Once(60, clock=lambda: now[0])
    assert once.first("a") and not once.first("a") and once.first("b")
    now[0] = 61
    assert once.first("a")
    for i in range(5000):
        once.first(f"k{i}")
    now[0] = 200
    for i in range(4000):  # past twice the live keys, the stale ones are swept
        once.first(f"later{i}")
    assert len(once) == 4000
