"""A conversation's transcript (bot.storage.transcript): what its people said, in order, with
who said it, from the history and the waiting chatter; never another conversation's, nothing
before a reset, nothing a clear deleted."""

from __future__ import annotations

import asyncio
import time

from bot.storage import Storage
from bot.storage.transcript import Said
from bot.values import Usage
from tests.conformance.conftest import answered, turn


def lines(said: list[Said]) -> list[tuple[str, str, bool, str]]:
    return [(s.user_name, s.text, s.addressed, s.answer) for s in said]


async def chatter(storage: Storage, conv: str, text: str, user: str = "2", chat: str = "") -> None:
    await storage.record_overheard(turn(conv, text, chat, user=user), keep=10)


async def test_context_rows_turns_and_waiting_chatter_in_the_order_said(storage: Storage) -> None:
    await chatter(storage, "tg:-1", "lunch at noon?", user="2")
    await chatter(storage, "tg:-1", "pizza place", user="3")
    chosen = tuple(o.overheard_id for o in await storage.load_overheard("tg:-1", 0))
    asked = await storage.begin_turn(turn("tg:-1", "where is it?", user="1", overheard=chosen))
    answer = [
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
         "function": {"name": "maps", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "Main St 5"},
        {"role": "assistant", "content": "On Main St."},
    ]  # fmt: skip
    await storage.complete_turn(asked, answer, Usage(10, 2), "m")
    await chatter(storage, "tg:-1", "see you there", user="3")
    # Other conversations of the same chat, and another chat, stay out.
    await chatter(storage, "tg:-1:t:7", "topic chatter", chat="tg:-1")
    await answered(storage, "tg:-1:u:1", "my own corner", "ok", chat="tg:-1")
    await answered(storage, "tg:-2", "next door", "hi")

    said = await storage.said("tg:-1", 0, 100)

    assert lines(said) == [
        ("name-2", "lunch at noon?", False, ""),
        ("name-3", "pizza place", False, ""),
        ("name-1", "where is it?", True, "On Main St."),
        ("name-3", "see you there", False, ""),
    ]
    assert [s.user_id for s in said] == ["2", "3", "1", "3"]
    assert [s.created_at for s in said] == sorted(s.created_at for s in said)
    assert said[0].created_at <= time.time()
    assert lines(await storage.said("tg:-1:t:7", 0, 100)) == [
        ("name-2", "topic chatter", False, "")
    ]


async def test_the_newest_within_the_limit_and_since_a_time(storage: Storage) -> None:
    for n in range(3):
        await answered(storage, "tg:-1", f"turn {n}", f"answer {n}")
        await chatter(storage, "tg:-1", f"chatter {n}")
    assert [s.text for s in await storage.said("tg:-1", 0, 3)] == [
        "chatter 1",
        "turn 2",
        "chatter 2",
    ]
    await asyncio.sleep(0.01)
    since = time.time()
    await asyncio.sleep(0.01)
    await answered(storage, "tg:-1", "later", "yes")
    await chatter(storage, "tg:-1", "later chatter")
    assert [s.text for s in await storage.said("tg:-1", since, 100)] == ["later", "later chatter"]
    assert await storage.said("tg:-1", time.time() + 60, 100) == []
    assert await storage.said("tg:-1", 0, 0) == []


async def test_each_status_shows_what_the_chat_saw(storage: Storage) -> None:
    await storage.begin_turn(turn("tg:-1", "still being answered"))
    failed = await storage.begin_turn(turn("tg:-1", "the model failed"))
    await storage.fail_turn(failed, "LLMUnavailableError")
    lost = await answered(storage, "tg:-1", "answered, never delivered", "you never saw this")
    await storage.mark_undelivered(lost, "TelegramForbiddenError")
    await answered(storage, "tg:-1", "answered", "seen")
    assert lines(await storage.said("tg:-1", 0, 10)) == [
        ("name-u1", "still being answered", True, ""),
        ("name-u1", "the model failed", True, ""),
        ("name-u1", "answered, never delivered", True, ""),
        ("name-u1", "answered", True, "seen"),
    ]


async def test_nothing_before_a_reset_or_after_a_clear(storage: Storage) -> None:
    await answered(storage, "tg:-1", "before the reset", "a")
    await chatter(storage, "tg:-1", "chatter before the reset")
    await storage.reset("tg:-1", "tg:-1", "admin")
    await answered(storage, "tg:-1", "after the reset", "b")
    await chatter(storage, "tg:-1", "chatter after the reset")
    assert [s.text for s in await storage.said("tg:-1", 0, 10)] == [
        "after the reset",
        "chatter after the reset",
    ]
    await answered(storage, "tg:-2", "next door", "c")
    await storage.clear_chat("tg:-1", "admin", "Admin")
    assert await storage.said("tg:-1", 0, 10) == []
    assert [s.text for s in await storage.said("tg:-2", 0, 10)] == ["next door"]
    await chatter(storage, "tg:-1", "after the clear")
    assert [s.text for s in await storage.said("tg:-1", 0, 10)] == ["after the clear"]


async def test_a_migrated_chat_keeps_its_transcript(storage: Storage) -> None:
    await answered(storage, "tg:-1", "before the move", "a")
    await chatter(storage, "tg:-1", "waiting chatter")
    await storage.migrate_chat("tg:-1", "tg:-100")
    assert await storage.said("tg:-1", 0, 10) == []
    assert [s.text for s in await storage.said("tg:-100", 0, 10)] == [
        "before the move",
        "waiting chatter",
    ]
