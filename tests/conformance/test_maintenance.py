"""Maintenance (bot.storage.maintenance): interrupted turns, retention, chat migration."""

from __future__ import annotations

from bot.memory.scope import Audience
from bot.storage import Storage
from bot.values import MemoryScope, NewMemory, TurnStatus, Usage
from tests.conformance.conftest import Backend, answered, turn


async def test_turns_of_a_gone_process_are_closed_at_open(backend: Backend) -> None:
    async with backend.open() as neighbour:  # a live process sharing the database
        live = await neighbour.begin_turn(turn("tg:2", "live"))
        async with backend.open() as dying:
            killed = await dying.begin_turn(turn("tg:1", "killed"))
        async with backend.open() as store:
            [closed] = await store.load_window("tg:1", 5)
            assert (closed.turn_id, closed.status) == (killed, TurnStatus.UNANSWERED)
            [running] = await store.load_window("tg:2", 5)
            assert (running.turn_id, running.status) == (live, TurnStatus.PENDING)
            assert await store.close_interrupted_turns() == 0  # young, owner alive
        answer = [{"role": "assistant", "content": "ok"}]
        await neighbour.complete_turn(live, answer, Usage(), "m")
        [done] = await neighbour.load_window("tg:2", 5)
        assert done.status is TurnStatus.ANSWERED


async def test_retention_deletes_old_finished_turns_only(storage: Storage) -> None:
    await answered(storage, "tg:1", "old", "a")
    pending = await storage.begin_turn(turn("tg:1", "in flight"))
    memory = NewMemory("tg:1", "tg:1", "u1", "U", MemoryScope.PRIVATE, "peanuts")
    await storage.add_memory(memory)
    await storage.kv_set("p", "k", 1)
    assert await storage.delete_older_than(3600) == 0  # nothing is an hour old
    assert await storage.delete_older_than(-1) == 1  # "older" than a second from now
    [left] = await storage.load_window("tg:1", 5)
    assert (left.turn_id, left.status) == (pending, TurnStatus.PENDING)
    assert len(await storage.list_memories("tg:1")) == 1
    assert await storage.kv_get("p", "k") == 1
    found = await storage.search_turns("tg:1", "old", before_turn_id=pending, limit=5, min_score=0)
    assert found == []


async def test_migration_moves_every_conversation_of_the_chat(storage: Storage) -> None:
    await answered(storage, "tg:-1", "shared", "a")
    await answered(storage, "tg:-1:u:2", "mine", "b", chat="tg:-1")
    await answered(storage, "tg:-10", "a neighbour with a longer id", "c")
    await storage.reset("tg:-1:u:2", "tg:-1", "2")
    await answered(storage, "tg:-1:u:2", "after the reset", "d", chat="tg:-1")
    await storage.record_overheard(turn("tg:-1", "chatter", user="3"), keep=5)
    memory = NewMemory("tg:-1", "tg:-1:u:2", "2", "B", MemoryScope.MEMBER, "B likes tea")
    await storage.add_memory(memory)
    assert await storage.migrate_chat("tg:-1", "tg:-100") == 3
    assert await storage.load_window("tg:-1", 5) == []
    assert [t.messages[0]["content"] for t in await storage.load_window("tg:-100", 5)] == ["shared"]
    moved = await storage.load_window("tg:-100:u:2", 5)
    assert [t.messages[0]["content"] for t in moved] == ["after the reset"]  # reset kept
    assert [o.text for o in await storage.load_overheard("tg:-100", 0)] == ["chatter"]
    assert len(await storage.load_window("tg:-10", 5)) == 1
    [kept] = await storage.list_memories("tg:-100")
    assert kept.conversation_key == "tg:-100:u:2"
    audience = Audience("tg:-100", "tg:-100:u:2", "2")
    [found] = await storage.search_memories(audience, "tea", limit=5, min_score=0)
    assert found.memory_id == kept.memory_id
    assert await storage.move_memories("tg:-100", "tg:-1000") == 1
    assert await storage.list_memories("tg:-100") == []
