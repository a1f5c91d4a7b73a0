"""A turn's reads before its prompt in one call (bot.storage.prompt_windows.load_prompt_rows):
the same window, chatter and mark as the three separate reads."""

from __future__ import annotations

import time

from bot.storage import Storage
from bot.values import PromptRows, WindowMark
from tests.conformance.conftest import answered, turn


async def separately(store: Storage, key: str, max_turns: int, since: float | None) -> PromptRows:
    overheard = [] if since is None else await store.load_overheard(key, since)
    window = await store.load_window(key, max_turns)
    return PromptRows(window, overheard, await store.load_window_mark(key))


async def test_a_new_conversation_has_nothing(storage: Storage) -> None:
    assert await storage.load_prompt_rows("tg:-1", 10, 0) == PromptRows([], [], None)


async def test_the_same_as_the_three_reads(storage: Storage) -> None:
    for n in range(4):
        await answered(storage, "tg:-1", f"question {n}", f"answer {n}")
    await answered(storage, "tg:-2", "elsewhere", "no")
    for n in range(5):  # chatter that joins the next turn: context rows fill the first page
        await storage.record_overheard(turn("tg:-1", f"chatter {n}", user="2"), keep=10)
    waiting = await storage.load_overheard("tg:-1", 0)
    chosen = tuple(o.overheard_id for o in waiting[:4])
    await storage.begin_turn(turn("tg:-1", "and you?", overheard=chosen))
    await storage.record_overheard(turn("tg:-1", "later chatter", user="3"), keep=10)
    await storage.save_window_mark("tg:-1", "tg:-1", WindowMark(2, "they talked"))
    for key in ("tg:-1", "tg:-2", "tg:-3"):
        for max_turns in (1, 2, 3, 50):  # history.max_turns >= 1
            for since in (None, 0.0, time.time() + 60):
                rows = await storage.load_prompt_rows(key, max_turns, since)
                assert rows == await separately(storage, key, max_turns, since), (key, max_turns)
    rows = await storage.load_prompt_rows("tg:-1", 2, 0)
    assert [t.messages[0]["content"] for t in rows.window][-2:] == ["chatter 3", "and you?"]
    assert [o.text for o in rows.overheard] == ["chatter 4", "later chatter"]
    assert rows.mark == WindowMark(2, "they talked")


async def test_a_reset_starts_the_window_after_it(storage: Storage) -> None:
    await answered(storage, "tg:-1", "before", "yes")
    await storage.reset("tg:-1", "tg:-1", "1", "Alice")
    await answered(storage, "tg:-1", "after", "yes")
    rows = await storage.load_prompt_rows("tg:-1", 10, None)
    assert [t.messages[0]["content"] for t in rows.window] == ["after"]
    assert rows == await separately(storage, "tg:-1", 10, None)
