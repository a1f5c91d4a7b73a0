"""Several Telegram bots in one deployment (``telegram.bots``), through the real aiogram client
against two fake Bot API servers: one per bot, as each bot sees the group (Telegram delivers
the people's messages to both and neither bot's messages to the other)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from adapters.telegram import create_adapter
from adapters.telegram.bots import TelegramBots
from adapters.telegram.settings import telegram_settings
from bot.app import App
from bot.errors import ConfigError
from bot.testing.fake_llm import FakeLLM, reply
from bot.testing.fake_telegram import FakeTelegram
from tests.conftest import AppFactory
from tests.telegram_harness import free_port

HELPER_TOKEN = "654321:TEST-helper-token"


def requests_with(fake_llm: FakeLLM, persona: str) -> list[Any]:
    return [r for r in fake_llm.chat_requests if persona in r.json["messages"][0]["content"]]


def users(request: Any) -> list[str]:
    return [str(m["content"]) for m in request.json["messages"] if m["role"] == "user"]


@asynccontextmanager
async def two_bots(
    make_app: AppFactory,
    main: FakeTelegram,
    helper: FakeTelegram,
    chats: list[dict[str, Any]] | None = None,
    webhooks: tuple[dict[str, Any], dict[str, Any]] | None = None,
    **sections: Any,
) -> AsyncIterator[App]:
    """The app running both bots: polling, or with ``webhooks`` (the main bot's, the
    helper's) in webhook mode."""
    bot: dict[str, Any] = {"name": "helper", "token": helper.token, "api_server": helper.api_server}
    telegram: dict[str, Any] = {
        "enabled": True,
        "token": main.token,
        "api_server": main.api_server,
        "polling_timeout": 5,
        "stream": False,
        "bots": [bot],
    }
    if webhooks is not None:
        telegram.update(mode="webhook", webhook=webhooks[0])
        bot["webhook"] = webhooks[1]
    method = "getUpdates" if webhooks is None else "setWebhook"
    chats = chats or [
        {"match": "telegram.helper:*", "system_prompt": "You are Helper, a quiz master."},
        {"match": "telegram:*", "system_prompt": "You are Parlour, the house bot."},
    ]
    async with make_app(telegram=telegram, chats=chats, **sections) as app:
        adapter = create_adapter(app.platform)
        assert isinstance(adapter, TelegramBots)
        task = asyncio.ensure_future(adapter.run())
        try:
            for fake in (main, helper):

                def polling(f: FakeTelegram = fake) -> bool:
                    return task.done() or any(c.method == method for c in f.calls)

                await fake.wait_until(polling, timeout=10)
            if task.done():
                task.result()
            yield app
        finally:
            await adapter.stop()
            await asyncio.wait_for(task, 15)


async def test_two_bots_see_each_others_answers_and_never_answer_each_other(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    main = fake_telegram
    async with FakeTelegram(
        HELPER_TOKEN, bot_username="helper_bot", bot_name="Helper", privacy_mode=False
    ) as helper:
        main.privacy_mode = False  # both read the whole group
        alice_main = main.user(7, "Alice")
        alice_helper = helper.user(7, "Alice")
        group_main = main.group(-100, "Team", supergroup=True)
        group_helper = helper.group(-100, "Team", supergroup=True)

        def both(text: str) -> None:  # Telegram delivers a person's message to both bots
            main.send(group_main, alice_main, text)
            helper.send(group_helper, alice_helper, text)

        async with two_bots(make_app, main, helper) as app:
            both("@parlour_bot what is the capital of France?")
            await main.wait_for_message(-100, timeout=10)
            both("@helper_bot what did Parlour just say?")
            await helper.wait_for_message(-100, timeout=10)
            both("@parlour_bot and what did Helper say?")
            await main.wait_for_message(-100, count=2, timeout=10)
            await main.wait_idle(quiet=0.5)
            await helper.wait_idle(quiet=0.5)
            usage_main = await app.store.stats("telegram:-100")
            usage_helper = await app.store.stats("telegram.helper:-100")
    parlour_answer = main.messages(-100)[0]["text"]
    [helper_request] = requests_with(fake_llm, "You are Helper")
    # Helper's prompt: Parlour's answer, said by Parlour, as context before the question
    assert f"[Parlour] {parlour_answer}" in users(helper_request)
    assert users(helper_request)[-1] == "[Alice] what did Parlour just say?"
    helper_answer = helper.messages(-100)[0]["text"]
    first, second = requests_with(fake_llm, "You are Parlour")
    assert f"[Helper] {helper_answer}" in users(second)  # and Parlour sees Helper's
    assert not any("Helper" in u for u in users(first))
    # neither answered the other: exactly one answer per question addressed to it
    assert len(main.messages(-100)) == 2 and len(helper.messages(-100)) == 1
    assert len(fake_llm.chat_requests) == 3
    # each bot its own history and usage
    assert usage_main.turns_stored == 2 and usage_helper.turns_stored == 1


async def test_a_message_from_a_bot_is_never_answered(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    """Even where a platform delivers one bot's message to another, neither answers it: no
    loop between two bots that mention each other."""
    main = fake_telegram
    async with FakeTelegram(HELPER_TOKEN, bot_username="helper_bot", bot_name="Helper") as helper:
        other_bot = helper.user(123456, "Parlour", username="parlour_bot", is_bot=True)
        team = helper.group(-100, "Team", supergroup=True)
        async with two_bots(make_app, main, helper):
            helper.send(team, other_bot, "@helper_bot your turn, @parlour_bot next")
            await helper.wait_idle(quiet=0.5)
    assert helper.messages(-100) == [] and fake_llm.chat_requests == []


def test_bots_need_names_and_tokens_of_their_own(fake_llm: FakeLLM, tmp_path: Any) -> None:
    from tests.conftest import make_settings

    base = {"enabled": True, "token": "123456:TEST-fake-token"}
    same = {**base, "bots": [{"name": "a", "token": "123456:TEST-fake-token"}]}
    webhook = {
        **base,
        "mode": "webhook",
        "webhook": {"url": "https://example.org/hook"},  # the helper has none of its own
        "bots": [{"name": "a", "token": HELPER_TOKEN}],
    }
    bad_name = {**base, "bots": [{"name": "Has Space", "token": HELPER_TOKEN}]}
    twice = {
        **base,
        "bots": [{"name": "quiz", "token": HELPER_TOKEN}, {"name": "quiz", "token": "7:TEST-x"}],
    }
    shared_port = {
        **webhook,
        "bots": [{"name": "a", "token": HELPER_TOKEN, "webhook": {"url": "https://example.org/a"}}],
    }  # both listen on 8080
    cases = (
        (same, "bots[0].token is the same as telegram.token"),
        (twice, "bots[1].name is the same as bots[0]'s"),
        (webhook, "bots[0].webhook.url"),
        (shared_port, "listen_port of its own"),
        (bad_name, "name"),
    )
    for section, words in cases:
        settings = make_settings(fake_llm, tmp_path, telegram=section)
        with pytest.raises(ConfigError) as refused:
            telegram_settings(settings)
        assert words in str(refused.value)
        assert "TEST-fake-token" not in str(refused.value)  # never echoes a token


async def test_a_bots_preset_gives_it_budgets_of_its_own(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    """Each bot its own limits through its preset: the helper's small daily budget is spent
    while the main bot in the same group answers on."""
    main = fake_telegram
    fake_llm.script(*[reply("ok", usage={"prompt_tokens": 90, "completion_tokens": 10})] * 4)
    async with FakeTelegram(HELPER_TOKEN, bot_username="helper_bot", bot_name="Helper") as helper:
        alice_main, alice_helper = main.user(7, "Alice"), helper.user(7, "Alice")
        group_main = main.group(-100, "Team", supergroup=True)
        group_helper = helper.group(-100, "Team", supergroup=True)
        chats = [{"match": "telegram.helper:*", "daily_tokens_per_chat": 100}]
        async with two_bots(make_app, main, helper, chats=chats):
            for n in range(2):
                helper.send(group_helper, alice_helper, f"@helper_bot question {n}")
                await helper.wait_for_message(-100, count=n + 1, timeout=10)
            main.send(group_main, alice_main, "@parlour_bot and you?")
            await main.wait_for_message(-100, timeout=10)
    helper_texts = [m["text"] for m in helper.messages(-100)]
    assert helper_texts[0] == "ok"
    assert "used today's budget" in helper_texts[1]  # the first spent its 100: the second refused
    assert main.messages(-100)[0]["text"] == "ok"  # the main bot's budget is its own


async def test_two_bots_in_webhook_mode_each_on_its_own_listener(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    main = fake_telegram
    async with FakeTelegram(HELPER_TOKEN, bot_username="helper_bot", bot_name="Helper") as helper:
        ports = free_port(), free_port()
        hooks = tuple(
            {"url": f"http://127.0.0.1:{port}/hook", "path": "/hook", "listen_port": port,
             "listen_host": "127.0.0.1"}
            for port in ports
        )  # fmt: skip
        alice_main, alice_helper = main.user(7, "Alice"), helper.user(7, "Alice")
        group_main = main.group(-100, "Team", supergroup=True)
        group_helper = helper.group(-100, "Team", supergroup=True)
        async with two_bots(make_app, main, helper, webhooks=(hooks[0], hooks[1])):
            main.send(group_main, alice_main, "@parlour_bot hello main")
            await main.wait_for_message(-100, timeout=10)
            helper.send(group_helper, alice_helper, "@helper_bot hello helper")
            await helper.wait_for_message(-100, timeout=10)
    [set_main] = [c for c in main.calls if c.method == "setWebhook"]
    [set_helper] = [c for c in helper.calls if c.method == "setWebhook"]
    assert (set_main.params["url"], set_helper.params["url"]) == (hooks[0]["url"], hooks[1]["url"])
    assert set_main.params["secret_token"] != set_helper.params["secret_token"]  # per token
    assert [d.status for d in main.webhook_deliveries + helper.webhook_deliveries] == [200, 200]
    [helper_request] = requests_with(fake_llm, "You are Helper")
    assert users(helper_request)[-1] == "[Alice] hello helper"
    assert "[Parlour] echo" in " ".join(users(helper_request))  # told across, as in polling


async def test_a_rejected_token_of_a_further_bot_is_named_at_start(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    main = fake_telegram
    async with FakeTelegram(HELPER_TOKEN, bot_username="helper_bot") as helper:
        telegram = {
            "enabled": True,
            "token": main.token,
            "api_server": main.api_server,
            "bots": [
                {"name": "helper", "token": "999:TEST-revoked", "api_server": helper.api_server}
            ],
        }
        async with make_app(telegram=telegram) as app:
            adapter = create_adapter(app.platform)
            with pytest.raises(BaseException) as stopped:
                await asyncio.wait_for(adapter.run(), 15)
    text = str(stopped.value)
    assert "telegram.bots 'helper'" in text and "telegram.token" not in text
    assert "TEST-revoked" not in text
