"""An update aiogram cannot parse is logged and skipped; polling goes on for every other chat."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from bot.testing.fake_llm import FakeLLM
from bot.testing.fake_telegram import FakeTelegram
from tests.conftest import AppFactory
from tests.telegram_harness import running_bot

# What a Bot API newer than aiogram's types might send: a message without its "chat".
NO_CHAT: dict[str, Any] = {"message": {"message_id": 900, "date": 1_700_000_000, "text": "?"}}
WRONG_TYPE: dict[str, Any] = {
    "message": {"message_id": "nine", "date": 1_700_000_000, "chat": {"id": 7, "type": 1}}
}


def polled_offsets(tg: FakeTelegram) -> list[int]:
    return [
        int(c.params["offset"])
        for c in tg.calls
        if c.method == "getUpdates" and c.ok and c.params.get("offset") is not None
    ]


async def answered(tg: FakeTelegram, chat_id: int, count: int = 1) -> None:
    await tg.wait_for_message(chat_id, count=count, timeout=8)
    await tg.wait_idle(quiet=0.3)


@pytest.mark.parametrize("bad", [NO_CHAT, WRONG_TYPE], ids=["missing-chat", "wrong-types"])
@pytest.mark.parametrize("where", ["first", "last"])
async def test_an_update_aiogram_cannot_parse_is_skipped_and_polling_goes_on(
    make_app: AppFactory,
    fake_llm: FakeLLM,
    fake_telegram: FakeTelegram,
    caplog: pytest.LogCaptureFixture,
    bad: dict[str, Any],
    where: str,
) -> None:
    tg = fake_telegram
    alice, bob = tg.user(7, "Alice"), tg.user(8, "Bob")
    async with running_bot(make_app, tg):
        # One getUpdates answer holds both: the bad update before or after a good one.
        if where == "first":
            bad_id = tg.push_update(bad)
            tg.send(tg.private_chat(alice), alice, "hello")
        else:
            tg.send(tg.private_chat(alice), alice, "hello")
            bad_id = tg.push_update(bad)
        await answered(tg, alice["id"])
        # The offset moved past it: the next poll does not get it back, and everyone is heard.
        tg.send(tg.private_chat(bob), bob, "anyone there?")
        await answered(tg, bob["id"])
        tg.send(tg.private_chat(alice), alice, "still here")
        await answered(tg, alice["id"], count=2)
    assert any(offset > bad_id for offset in polled_offsets(tg))
    skipped = [r for r in caplog.records if r.levelno == logging.WARNING and "skipp" in r.message]
    assert len(skipped) == 1, [r.message for r in caplog.records]
    assert f"update {bad_id}" in skipped[0].message
    assert tg.token not in caplog.text
    assert "Failed to fetch updates" not in caplog.text  # aiogram's retry-forever path
    assert [m["text"] for m in tg.messages(alice["id"])] == ["echo: hello", "echo: still here"]


async def test_a_failed_confirmation_loses_no_good_update(
    make_app: AppFactory,
    fake_llm: FakeLLM,
    fake_telegram: FakeTelegram,
    caplog: pytest.LogCaptureFixture,
) -> None:
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    async with running_bot(make_app, tg):  # a long poll is waiting now
        tg.fail("getUpdates", 502, "Bad Gateway")  # the next call: the confirmation
        tg.send(tg.private_chat(alice), alice, "hello")
        bad_id = tg.push_update(NO_CHAT)
        await answered(tg, alice["id"])
        await tg.wait_until(lambda: any(offset > bad_id for offset in polled_offsets(tg)))
        tg.send(tg.private_chat(alice), alice, "again")
        await answered(tg, alice["id"], count=2)
    assert f"could not confirm skipped update {bad_id}" in caplog.text
    assert [m["text"] for m in tg.messages(alice["id"])] == ["echo: hello", "echo: again"]
