"""Resets, clears and the clear audit (bot.storage.resets)."""

from __future__ import annotations

import asyncio
import contextlib

from bot.storage import Storage
from bot.values import NewTurn, Usage
from tests.conformance.conftest import answered, turn


async def test_reset_is_a_soft_cut(storage: Storage) -> None:
    await answered(storage, "tg:1", "before", "a")
    await answered(storage, "tg:1:u:9", "other conversation", "b", chat="tg:1")
    assert await storage.reset_point("tg:1") == 0
    await storage.reset("tg:1", "tg:1", "u1")
    cut = await storage.reset_point("tg:1")
    await answered(storage, "tg:1", "after", "c")
    window = await storage.load_window("tg:1", 10)
    other = await storage.load_window("tg:1:u:9", 10)
    stats = await storage.stats("tg:1")
    exported = [r async for r in storage.export("tg:1")]
    assert [t.messages[0]["content"] for t in window] == ["after"]
    assert window[0].turn_id > cut
    assert len(other) == 1
    assert (stats.turns_stored, stats.turns_in_context) == (2, 1)
    assert [r["content"] for r in exported] == ["before", "a", "after", "c"]


async def test_reset_forgets_chatter_and_summary(storage: Storage) -> None:
    await storage.record_overheard(turn("tg:1", "psst", user="2"), keep=10)
    await storage.save_summary("tg:1", "tg:1", "they talked", 1)
    await storage.reset("tg:1", "tg:1", "u1")
    assert await storage.load_overheard("tg:1", 0) == []
    assert await storage.load_summary("tg:1") is None
    first = await storage.reset_point("tg:1")
    await answered(storage, "tg:1", "more", "x")
    await storage.reset("tg:1", "tg:1", "u1")  # a later reset moves the cut forward
    assert await storage.reset_point("tg:1") > first
    assert await storage.load_window("tg:1", 10) == []


async def test_clear_deletes_the_chat_and_audits(storage: Storage) -> None:
    await answered(storage, "tg:1", "a", "b")
    await answered(storage, "tg:1:u:5", "c", "d", chat="tg:1")
    await answered(storage, "tg:1:t:3", "e", "f", chat="tg:1")
    await answered(storage, "tg:12", "neighbour", "kept")
    await storage.reset("tg:1", "tg:1", "u1")
    await storage.record_overheard(turn("tg:1", "psst", user="2"), keep=10)
    await storage.save_summary("tg:1", "tg:1", "they talked", 1)
    delivery = await storage.begin_delivery("tg", "tg:1", "1", None, None)
    result = await storage.clear_chat("tg:1", "admin7", "Alice Admin")
    audit = await storage.clear_audit("tg:1")
    assert await storage.load_window("tg:12", 5)
    assert not await storage.load_window("tg:1:u:5", 5)
    assert await storage.reset_point("tg:1") == 0
    assert await storage.load_overheard("tg:1", 0) == []
    assert await storage.load_summary("tg:1") is None
    assert delivery not in [d.delivery_id for d in await storage.deliveries("tg")]
    assert (await storage.stats("tg:1")).turns_stored == 0
    assert (result.turns, result.messages) == (3, 6)
    [row] = audit
    assert (row["actor_id"], row["actor_name"]) == ("admin7", "Alice Admin")
    assert (row["deleted_turns"], row["deleted_messages"]) == (3, 6)
    assert row["at"] > 0
    assert await storage.clear_audit("tg:12") == []


async def test_a_clear_racing_a_turn(storage: Storage) -> None:
    """A turn begun before the clear goes with it, and finishing it later changes nothing;
    a turn begun after it survives."""
    early = await storage.begin_turn(turn("tg:1", "before the clear"))
    clear = asyncio.ensure_future(storage.clear_chat("tg:1", "a", "A"))
    late_begin = asyncio.ensure_future(storage.begin_turn(turn("tg:1", "racing")))
    result, late = await asyncio.gather(clear, late_begin)
    await storage.complete_turn(early, [{"role": "assistant", "content": "x"}], Usage(1, 1), "m")
    await storage.fail_turn(early, "gone")
    await storage.complete_turn(late, [{"role": "assistant", "content": "y"}], Usage(1, 1), "m")
    window = await storage.load_window("tg:1", 10)
    assert not await storage.turn_exists(early)
    assert result.turns in (1, 2)  # the racing turn is on one side of the clear, whole
    if result.turns == 1:
        assert [t.messages for t in window] == [
            ({"role": "user", "content": "racing"}, {"role": "assistant", "content": "y"})
        ]
    else:
        assert window == []


async def test_cancelled_clears_do_not_swallow_later_writes(storage: Storage) -> None:
    store = storage
    for _ in range(20):
        clear = asyncio.ensure_future(store.clear_chat("tg:1", "a", "A"))
        await asyncio.sleep(0)
        clear.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await clear
    turn_id = await store.begin_turn(NewTurn("tg:2", "tg:2", "u", "U", "kept", None))
    await store.complete_turn(turn_id, [{"role": "assistant", "content": "x"}], Usage(), "m")
    assert await store.conversations() == [("tg:2", 1)]


async def test_the_audit_outlives_the_clear_and_follows_a_migration(storage: Storage) -> None:
    await answered(storage, "tg:-1", "a", "b")
    await storage.clear_chat("tg:-1", "7", "Ann")
    await storage.delete_older_than(-1)
    await storage.migrate_chat("tg:-1", "tg:-100")
    assert await storage.clear_audit("tg:-1") == []
    assert [r["actor_id"] for r in await storage.clear_audit("tg:-100")] == ["7"]
