"""Deleting one person's data (bot.storage.erasure): everything they said goes, on one
platform; what others said stays; the ledger and the audit keep their rows without the name."""

from __future__ import annotations

import json

from bot.guardrails.budgets import utc_day
from bot.memory.scope import Audience
from bot.storage import Storage
from bot.storage.erasure import sent_by
from bot.values import AuditAction, MemoryScope, NewMemory, NewTurn, Usage, UserDeletion, WindowMark

GROUP, PRIVATE = "tg:-1", "tg:5"  # a group, and person 5's private chat
OWN_IN_GROUP, OWN_PRIVATE = "tg:-1:u:5", "tg:5:u:5"  # 5's own conversations
MODEL = "embed-test"


async def said(store: Storage, conv: str, chat: str, user: str, text: str) -> int:
    """``user``'s answered message in ``conv``; returns the turn id."""
    turn_id = await store.begin_turn(NewTurn(conv, chat, user, f"name-{user}", text))
    answer = [{"role": "assistant", "content": f"re: {text}"}]
    await store.complete_turn(turn_id, answer, Usage(10, 2), "m")
    return turn_id


def update(update_id: int, user: str) -> str:
    return json.dumps(
        {"update_id": update_id, "message": {"from": {"id": int(user)}, "text": "hi there"}}
    )


async def fill(store: Storage) -> dict[str, int]:
    ids = {
        "5 in group": await said(store, GROUP, GROUP, "5", "my secret plan"),
        "6 in group": await said(store, GROUP, GROUP, "6", "my own plan"),
        "5 own in group": await said(store, OWN_IN_GROUP, GROUP, "5", "just me"),
        "5 private": await said(store, OWN_PRIVATE, PRIVATE, "5", "private secret"),
        "5 private again": await said(store, OWN_PRIVATE, PRIVATE, "5", "more secret"),
        "5 elsewhere": await said(store, "dc:1", "dc:1", "5", "discord is another platform"),
    }
    await store.record_overheard(NewTurn(GROUP, GROUP, "5", "name-5", "psst secret"), keep=10)
    await store.record_overheard(NewTurn(GROUP, GROUP, "6", "name-6", "psst too"), keep=10)
    await store.reset(OWN_IN_GROUP, GROUP, "5", "name-5")
    for conv, chat in ((GROUP, GROUP), (OWN_PRIVATE, PRIVATE), ("tg:-2", "tg:-2")):
        await store.save_summary(conv, chat, "they talked about a secret plan", 1)
        await store.save_window_mark(conv, chat, WindowMark(1, "summary"))
    for key in ("5 in group", "6 in group"):
        delivery = await store.begin_delivery("tg", GROUP, "-1", None, None)
        await store.update_delivery(delivery, message_id="1", shown="re:", turn_id=ids[key])
    memories = [
        NewMemory(GROUP, GROUP, "5", "name-5", MemoryScope.MEMBER, "5 likes secret plans"),
        NewMemory(PRIVATE, OWN_PRIVATE, "5", "name-5", MemoryScope.PRIVATE, "5 has a cat"),
        NewMemory(GROUP, GROUP, "5", "name-5", MemoryScope.CHAT, "the group meets Fridays"),
        NewMemory(GROUP, GROUP, "6", "name-6", MemoryScope.MEMBER, "6 likes tea"),
        NewMemory("dc:1", "dc:1", "5", "name-5", MemoryScope.MEMBER, "5 on discord"),
    ]
    for memory in memories:
        stored = await store.add_memory(memory, [1.0, 0.0], MODEL)
        ids[memory.text] = stored.memory_id
    await store.put_turn_vectors(MODEL, [(ids["5 in group"], [1.0, 0.0])])
    await store.put_turn_vectors(MODEL, [(ids["6 in group"], [0.0, 1.0])])
    assert await store.inbox_put("tg:bot", 1, "-1", update(1, "5"))
    assert await store.inbox_put("tg:bot", 2, "-1", update(2, "6"))
    await store.record_change(GROUP, "5", "name-5", AuditAction.SCOPE, "chat -> user")
    await store.index_turns()
    return ids


async def test_a_person_is_deleted_everywhere_on_the_platform(storage: Storage) -> None:
    ids = await fill(storage)
    deleted = await storage.delete_user("tg", "5")
    assert deleted == UserDeletion(
        turns=4,
        messages=8,
        overheard=1,
        conversations=3,  # the group's shared conversation, 5's own two
        memories=2,  # member and private; the group's fact stays
        summaries=2,
        deliveries=1,
        inbox=1,
        usage_rows=2,  # one per chat and day: the group and the private chat
        audit_rows=2,  # the reset and the scope change 5 made
    )
    group = await storage.load_window(GROUP, 10)
    assert [t.messages[0]["content"] for t in group] == ["my own plan"]
    assert await storage.load_window(OWN_IN_GROUP, 10) == []
    assert (await storage.stats(OWN_PRIVATE)).turns_stored == 0
    assert await storage.reset_point(OWN_IN_GROUP) == 0
    assert [o.text for o in await storage.load_overheard(GROUP, 0)] == ["psst too"]
    for conv in (GROUP, OWN_PRIVATE):
        assert await storage.load_summary(conv) is None
        assert await storage.load_window_mark(conv) is None
    assert await storage.load_summary("tg:-2") is not None  # no turn of theirs there
    found = await storage.search_turns(GROUP, "plan", before_turn_id=10**9, limit=5, min_score=0)
    assert [t.user_id for t in found] == ["6"]
    vectors = await storage.turn_vectors(GROUP, MODEL, 2, before_turn_id=10**9, limit=5)
    assert [t.turn_id for t, _ in vectors] == [ids["6 in group"]]
    left = await storage.list_memories(GROUP)
    assert sorted((m.text, m.user_name) for m in left) == [
        ("6 likes tea", "name-6"),
        ("the group meets Fridays", ""),
    ]
    assert await storage.list_memories(PRIVATE) == []
    mine = Audience(GROUP, GROUP, "5")
    assert await storage.search_memories(mine, "secret plans", limit=5, min_score=0) == []
    kept = [d.turn_id for d in await storage.deliveries("tg")]
    assert kept == [ids["6 in group"]]
    assert await storage.inbox_pending("tg:bot") == 1
    [claimed] = await storage.inbox_claim("tg:bot", "w", 30.0, 5)
    assert sent_by(claimed.payload, "6")
    usage = {(u.chat_key, u.user_id): u for u in await storage.daily_usage(utc_day())}
    assert usage[(GROUP, "5")].user_name == "" and usage[(GROUP, "5")].turns == 2
    assert usage[(GROUP, "6")].user_name == "name-6"
    assert usage[("dc:1", "5")].user_name == "name-5"
    assert {(e.actor_id, e.actor_name) for e in await storage.audit(GROUP)} == {("5", "")}
    # Another platform's rows of the same id are someone else's.
    assert len(await storage.load_window("dc:1", 10)) == 1
    assert [m.text for m in await storage.list_memories("dc:1")] == ["5 on discord"]


async def test_deleting_twice_deletes_nothing_more(storage: Storage) -> None:
    await fill(storage)
    await storage.delete_user("tg", "5")
    again = await storage.delete_user("tg", "5")
    assert (again.turns, again.memories, again.overheard, again.inbox) == (0, 0, 0, 0)
    assert (await storage.delete_user("tg", "404")).turns == 0
    assert len(await storage.load_window(GROUP, 10)) == 1


def test_sent_by_reads_the_sender_wherever_the_update_holds_it() -> None:
    assert sent_by(update(1, "5"), "5")
    assert not sent_by(update(1, "5"), "55")
    assert sent_by('{"d": {"author": {"id": "5"}}}', "5")
    assert sent_by('{"callback_query": {"from": {"id": 5}}}', "5")
    assert not sent_by("not json", "5")
    assert not sent_by('{"message": {"chat": {"id": 5}}}', "5")  # a chat id is not a sender
