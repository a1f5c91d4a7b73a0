"""End to end: the real discord.py client on the fake gateway + REST, the openai SDK on the fake
LLM. What crosses the wire (interaction callbacks, messages, allowed_mentions) and what is stored.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import re
import warnings
from typing import Any

import pytest

from bot.testing.fake_discord import FakeDiscord
from bot.testing.fake_llm import FakeLLM, reply
from tests.conftest import AppFactory
from tests.discord_harness import GENERAL, GUILD, RANDOM, THREAD, running_discord, world

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})", re.MULTILINE)


def user_texts(fake: FakeLLM, index: int = -1) -> list[str]:
    body: dict[str, Any] = fake.chat_requests[index].json
    return [str(m["content"]) for m in body["messages"] if m["role"] == "user"]


async def settled(dc: FakeDiscord, channel_id: int, count: int = 1) -> list[dict[str, Any]]:
    await dc.wait_for_message(channel_id, count=count)
    await dc.wait_idle(quiet=0.4)
    return dc.messages(channel_id)


async def silence(dc: FakeDiscord, channel_id: int, seconds: float = 0.4) -> None:
    before = len(dc.messages(channel_id))
    await asyncio.sleep(seconds)
    assert len(dc.messages(channel_id)) == before, "the bot answered when it should stay quiet"


async def answered(dc: FakeDiscord, interaction: dict[str, Any]) -> dict[str, Any]:
    """The interaction's original response once it has content (not just "thinking…")."""

    def filled() -> bool:
        original = dc.original(int(interaction["id"]))
        return bool(original and original["content"])

    await dc.wait_until(filled)
    original = dc.original(int(interaction["id"]))
    assert original is not None
    return original


def assert_no_pings(dc: FakeDiscord) -> None:
    assert dc.sent
    for message in dc.sent:
        mentions = message["allowed_mentions"]
        assert mentions is not None, message
        assert (
            mentions.get("parse") == [] and not mentions.get("users") and not mentions.get("roles")
        ), message
        assert not mentions.get("replied_user"), message


async def test_ask_defers_then_answers(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    w = world(dc)
    fake_llm.script(reply("Paris is the **capital** of France."))
    async with running_discord(make_app, dc):
        interaction = dc.slash(w.general, w.admin, "ask", {"prompt": "capital of France?"})
        await answered(dc, interaction)
        await dc.wait_idle(quiet=0.4)
    [callback, *_] = [c for c in dc.callbacks if c["interaction_id"] == int(interaction["id"])]
    assert callback["type"] == 5  # deferred, within Discord's three seconds
    original = dc.original(int(interaction["id"]))
    assert original is not None
    assert original["content"] == "Paris is the **capital** of France."
    assert user_texts(fake_llm) == ["[Alice] capital of France?"]
    assert_no_pings(dc)


async def test_mention_and_reply_trigger_and_silence_otherwise(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    w = world(dc)
    bot_id = dc.application_id
    async with running_discord(make_app, dc):
        dc.message(w.general, w.member, "lunch at noon?")
        await silence(dc, GENERAL)
        trigger = dc.message(w.general, w.admin, f"<@{bot_id}> what did Bobby ask?")
        [answer] = await settled(dc, GENERAL)
        assert answer["message_reference"]["message_id"] == trigger["id"]
        assert user_texts(fake_llm) == ["[Bobby] lunch at noon?", "[Alice] what did Bobby ask?"]
        dc.message(w.general, w.member, "thanks!", reply_to=answer)
        await settled(dc, GENERAL, count=2)
        assert user_texts(fake_llm)[-1] == "[Bobby] thanks!"
        other_bot = dc.user(9, "spam", bot=True)
        dc.member(w.guild, other_bot)
        dc.message(w.general, other_bot, f"<@{bot_id}> hi")
        await silence(dc, GENERAL)
    assert len(fake_llm.chat_requests) == 2
    assert_no_pings(dc)
    assert any(channel == GENERAL for channel, _ in dc.typing)


async def test_threads_and_channels_are_separate_conversations(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    w = world(dc)
    async with running_discord(make_app, dc):
        dc.slash(w.thread, w.admin, "ask", {"prompt": "the thread secret is 42"})
        await dc.wait_until(lambda: len(fake_llm.chat_requests) == 1)
        dc.slash(w.random, w.admin, "ask", {"prompt": "what is the secret?"})
        await dc.wait_until(lambda: len(fake_llm.chat_requests) == 2)
        await dc.wait_idle(quiet=0.4)
    assert user_texts(fake_llm) == ["[Alice] what is the secret?"]
    assert {int(m["channel_id"]) for m in dc.sent} == {THREAD, RANDOM}


async def test_direct_messages_always_answer(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    w = world(dc)
    dm = dc.dm(w.member)
    async with running_discord(make_app, dc):
        dc.message(dm, w.member, "hello, I'm Bob")
        await settled(dc, int(dm["id"]))
        dc.message(dm, w.member, "who am I?")
        await settled(dc, int(dm["id"]), count=2)
    assert user_texts(fake_llm) == ["hello, I'm Bob", "who am I?"]


async def test_clear_needs_manage_messages(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    w = world(dc)
    async with running_discord(make_app, dc) as (app, _):
        dc.slash(w.general, w.admin, "ask", {"prompt": "remember 1234"})
        await dc.wait_until(lambda: len(fake_llm.chat_requests) == 1)
        await dc.wait_idle(quiet=0.4)
        dc.allow_command(w.guild, "clear")  # a server admin opened /clear to everyone
        refused = dc.slash(w.general, w.member, "clear")
        answer = await answered(dc, refused)
        assert "Only this chat's admins" in answer["content"]
        assert answer["flags"] & 64  # ephemeral
        assert (await app.store.stats(f"discord:{GENERAL}")).turns_stored == 1
        done = dc.slash(w.general, w.admin, "clear")
        answer = await answered(dc, done)
        assert "Deleted this chat's history (1 turns)" in answer["content"]
        assert (await app.store.stats(f"discord:{GENERAL}")).turns_stored == 0
    registered = {c["name"]: c for c in dc.commands(GUILD)}
    assert registered["clear"]["default_member_permissions"] == str(1 << 13)
    assert registered["scope"]["default_member_permissions"] == str(1 << 13)
    assert {"ask", "reset", "clear", "history", "scope"} <= set(registered)


async def test_long_reply_splits_with_balanced_fences(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    w = world(dc)
    code = "\n".join(f"    print('line {n}')  # @everyone" for n in range(90))
    text = "Here is the plan:\n\n" + "Some prose. " * 160 + f"\n\n```python\n{code}\n```\n\nDone."
    assert len(text) > 5000
    fake_llm.script(reply(text))
    async with running_discord(make_app, dc, llm={"max_output_tokens": 8000}):
        dc.message(w.general, w.admin, f"<@{dc.application_id}> write it all")
        await dc.wait_until(lambda: any("Done." in m["content"] for m in dc.sent), timeout=10)
        await dc.wait_idle(quiet=0.5)
    messages = dc.messages(GENERAL)
    assert len(messages) >= 3
    for message in messages:
        assert len(message["content"]) <= 2000
        assert len(FENCE.findall(message["content"])) % 2 == 0, message["content"]
    shown = "".join(m["content"] for m in messages)
    assert shown.count("print('line 89')") == 1
    assert_no_pings(dc)


async def test_missing_message_content_intent_still_serves_slash_commands(
    make_app: AppFactory,
    fake_llm: FakeLLM,
    fake_discord: FakeDiscord,
    caplog: pytest.LogCaptureFixture,
) -> None:
    dc = fake_discord
    dc.privileged_intents = False  # not ticked in the Developer Portal
    w = world(dc)
    async with running_discord(make_app, dc):
        dc.slash(w.general, w.admin, "ask", {"prompt": "still there?"})
        await dc.wait_until(lambda: bool(dc.sent), timeout=10)
    assert "Message Content intent is not enabled" in caplog.text
    assert "slash commands" in caplog.text


async def test_fake_token_never_logged(
    make_app: AppFactory,
    fake_llm: FakeLLM,
    fake_discord: FakeDiscord,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    dc = fake_discord
    w = world(dc)
    dc.rate_limit("send_message", retry_after=0.2, times=1)
    async with running_discord(make_app, dc, discord={"stream": False}):
        dc.message(w.general, w.admin, f"<@{dc.application_id}> hi")
        await settled(dc, GENERAL)
    assert caplog.records
    assert dc.token not in caplog.text
    for part in dc.token.split("."):
        assert part not in caplog.text or len(part) < 6


async def test_a_flooding_member_is_told_once_and_others_still_answered(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    w = world(dc)
    bot_id = dc.application_id
    fake_llm.latency = 0.5
    # nothing waits behind the answer: the second message is refused (bursts: test_bursts)
    limits = {"messages_per_minute": 6, "burst": 3, "one_in_flight": True, "max_queued": 0}
    async with running_discord(make_app, dc, limits=limits):
        for n in range(30):
            dc.message(w.general, w.member, f"<@{bot_id}> spam {n}")
        dc.message(w.general, w.admin, f"<@{bot_id}> still there?")
        await dc.wait_until(lambda: len(fake_llm.chat_requests) >= 2, timeout=10)
        await dc.wait_idle(quiet=1.0)
        texts = [m["content"] for m in dc.messages(GENERAL)]
    assert len(fake_llm.chat_requests) == 2  # the member's first message, and Alice's
    assert sum("still answering your earlier messages" in t for t in texts) == 1
    assert sum("faster than I can answer" in t for t in texts) == 1
    assert len(texts) == 4
    assert_no_pings(dc)


async def test_access_lists_name_a_server_and_a_channel_covers_its_threads(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    w = world(dc)
    bot_id = dc.application_id
    access = {"deny": [f"discord:{GENERAL}"], "refusal": "Not here."}
    async with running_discord(make_app, dc, access=access):
        dc.message(w.thread, w.member, f"<@{bot_id}> in a thread of #general")
        [refusal] = await settled(dc, THREAD)
        dc.message(w.random, w.member, f"<@{bot_id}> in #random")
        await settled(dc, RANDOM)
    assert refusal["content"] == "Not here."
    assert user_texts(fake_llm) == ["[Bobby] in #random"]
    async with running_discord(make_app, dc, access={"allow": [f"discord:guild:{GUILD}"]}):
        dc.message(w.thread, w.member, f"<@{bot_id}> the whole server is allowed")
        await settled(dc, THREAD, count=2)
    assert len(fake_llm.chat_requests) == 2


async def test_a_bot_stopped_before_discord_py_is_ready_leaves_nothing_behind(
    make_app: AppFactory, fake_discord: FakeDiscord
) -> None:
    """discord.py dispatches ``ready`` up to 2 s after the last GUILD_CREATE; a bot stopped
    sooner must not have it fire on the closed client (whose loop discord.py has dropped: the
    event task would fail, ``coroutine 'Client._run_event' was never awaited``)."""
    world(fake_discord)
    failures: list[dict[str, Any]] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _loop, context: failures.append(context))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        async with running_discord(make_app, fake_discord) as (_, adapter):
            assert adapter.client is not None and not adapter.client.is_ready()
        await asyncio.sleep(2.5)  # past discord.py's guild_ready_timeout (2 s)
        gc.collect()
    assert [str(w.message) for w in caught if "never awaited" in str(w.message)] == []
    assert failures == []
