"""Compaction's rolling summaries (bot.storage.summaries)."""

from __future__ import annotations

import asyncio

from bot.storage import Storage
from bot.values import Summary, TurnStatus, Usage, WindowMark
from tests.conformance.conftest import Backend, answered, turn


async def test_counting_saving_restarting(storage: Storage) -> None:
    assert await storage.load_summary("tg:1") is None
    counts = await asyncio.gather(*(storage.count_summary_turn("tg:1", "tg:1") for _ in range(5)))
    assert sorted(counts) == [1, 2, 3, 4, 5]
    assert await storage.load_summary("tg:1") == Summary("", 0, 5)
    await storage.save_summary("tg:1", "tg:1", "they said hello", 7)
    assert await storage.load_summary("tg:1") == Summary("they said hello", 7, 0)
    assert await storage.count_summary_turn("tg:1", "tg:1") == 1
    await storage.restart_summary_count("tg:1")
    assert await storage.load_summary("tg:1") == Summary("they said hello", 7, 0)
    await storage.save_summary("tg:1", "tg:1", "newer", 9)  # replaces
    assert await storage.load_summary("tg:1") == Summary("newer", 9, 0)
    assert await storage.load_summary("tg:2") is None


async def test_turns_between_are_finished_turns_in_order(storage: Storage) -> None:
    calls = [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
    a = await answered(storage, "tg:1", "one", "1")
    b = await storage.begin_turn(turn("tg:1", "two"))
    await storage.complete_turn(
        b,
        [
            {"role": "assistant", "content": None, "tool_calls": calls},
            {"role": "tool", "tool_call_id": "c", "content": "r"},
            {"role": "assistant", "content": "2"},
        ],
        Usage(),
        "m",
    )
    c = await storage.begin_turn(turn("tg:1", "three"))
    await storage.fail_turn(c, "x")
    pending = await storage.begin_turn(turn("tg:1", "four"))
    await answered(storage, "tg:2", "elsewhere", "x")
    last = await answered(storage, "tg:1", "five", "5")
    found = await storage.turns_between("tg:1", 0, last)
    assert [t.turn_id for t in found] == [a, b, c]  # not pending, not the other conversation
    assert pending not in [t.turn_id for t in found]
    assert [m["role"] for m in found[1].messages] == ["user", "assistant", "tool", "assistant"]
    assert found[2].status is TurnStatus.UNANSWERED
    assert [t.turn_id for t in await storage.turns_between("tg:1", a, c)] == [b]


async def test_forgotten_with_the_history_and_moved_with_the_chat(storage: Storage) -> None:
    await storage.save_summary("tg:-1", "tg:-1", "kept", 1)
    await storage.save_summary("tg:-1:u:2", "tg:-1", "moves", 1)
    await storage.migrate_chat("tg:-1", "tg:-100")
    assert await storage.load_summary("tg:-1") is None
    assert await storage.load_summary("tg:-100:u:2") == Summary("moves", 1, 0)
    await storage.clear_chat("tg:-100", "a", "A")
    assert await storage.load_summary("tg:-100") is None
    await storage.save_summary("tg:3", "tg:3", "old", 1)
    await storage.delete_older_than(-1)
    assert await storage.load_summary("tg:3") is None


async def test_window_mark_beside_the_summary(storage: Storage) -> None:
    assert await storage.load_window_mark("tg:1") is None
    await storage.count_summary_turn("tg:1", "tg:1")  # a counted summary is not a mark
    assert await storage.load_window_mark("tg:1") is None
    await storage.save_window_mark("tg:1", "tg:1", WindowMark(5, "pinned"))
    assert await storage.load_window_mark("tg:1") == WindowMark(5, "pinned")
    assert await storage.load_summary("tg:1") == Summary("", 0, 1)  # the count is kept
    await storage.save_summary("tg:1", "tg:1", "newer summary", 9)  # does not move the mark
    assert await storage.load_window_mark("tg:1") == WindowMark(5, "pinned")
    await storage.save_window_mark("tg:1", "tg:1", WindowMark(12, "newer summary"))
    assert await storage.load_window_mark("tg:1") == WindowMark(12, "newer summary")
    assert await storage.load_summary("tg:1") == Summary("newer summary", 9, 0)
    await storage.save_window_mark("tg:2", "tg:2", WindowMark(0))  # a mark without a summary
    assert await storage.load_window_mark("tg:2") == WindowMark(0, "")


async def test_window_mark_forgotten_and_moved_like_the_summary(storage: Storage) -> None:
    await storage.save_window_mark("tg:-1", "tg:-1", WindowMark(3, "secret"))
    await storage.save_window_mark("tg:-1:u:2", "tg:-1", WindowMark(4, "moves"))
    await storage.migrate_chat("tg:-1", "tg:-100")
    assert await storage.load_window_mark("tg:-1") is None
    assert await storage.load_window_mark("tg:-100:u:2") == WindowMark(4, "moves")
    await storage.clear_chat("tg:-100", "a", "A")
    assert await storage.load_window_mark("tg:-100:u:2") is None
    await storage.save_window_mark("tg:5", "tg:5", WindowMark(1, "x"))
    await storage.reset("tg:5", "tg:5", "u")
    assert await storage.load_window_mark("tg:5") is None
    await storage.save_window_mark("tg:6", "tg:6", WindowMark(1, "x"))
    await storage.delete_older_than(-1)
    assert await storage.load_window_mark("tg:6") is None


async def test_window_mark_read_again_after_every_change(backend: Backend) -> None:
    """Each change shows in the next read, whoever made it (here: another instance, as another
    process would), even right after the same mark was read."""
    async with backend.open() as mine, backend.open() as other:
        assert await mine.load_window_mark("tg:-1") is None
        await other.save_window_mark("tg:-1", "tg:-1", WindowMark(3, "theirs"))
        assert await mine.load_window_mark("tg:-1") == WindowMark(3, "theirs")
        await mine.save_window_mark("tg:-1", "tg:-1", WindowMark(4, "mine"))
        assert await mine.load_window_mark("tg:-1") == WindowMark(4, "mine")
        assert await other.load_window_mark("tg:-1") == WindowMark(4, "mine")
        await other.reset("tg:-1", "tg:-1", "u")
        assert await mine.load_window_mark("tg:-1") is None
        await mine.save_window_mark("tg:-1", "tg:-1", WindowMark(5, "old"))
        assert await mine.load_window_mark("tg:-1") == WindowMark(5, "old")
        await mine.delete_older_than(-1)  # no turn is old enough: the mark still goes
        assert await mine.load_window_mark("tg:-1") is None
        await mine.save_window_mark("tg:-1:u:2", "tg:-1", WindowMark(6, "moves"))
        assert await mine.load_window_mark("tg:-1:u:2") == WindowMark(6, "moves")
        await mine.migrate_chat("tg:-1", "tg:-100")
        assert await mine.load_window_mark("tg:-1:u:2") is None
        assert await mine.load_window_mark("tg:-100:u:2") == WindowMark(6, "moves")
        await mine.clear_chat("tg:-100", "a", "A")
        assert await mine.load_window_mark("tg:-100:u:2") is None
